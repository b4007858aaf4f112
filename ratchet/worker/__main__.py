"""``python -m ratchet.worker``: the ``ratchet worker`` command.

A module of its own, so the library in ``ratchet.worker`` never imports the CLI
that imports it.
"""

import sys

from ratchet.cli import entry

if __name__ == "__main__":
    entry(["worker", *sys.argv[1:]])
