"""``python -m ratchet.worker``: the ``ratchet worker`` command (``ratchet.cli._worker``).

A module of its own, so the library in ``ratchet.worker`` never imports the CLI
that imports it.
"""

from ratchet._exit import hard_exit
from ratchet.cli._worker import main

if __name__ == "__main__":
    hard_exit(main())
