"""Ratchet: durable agents for Python on Temporal.

The public API lives in three packages:

- ``ratchet.agents``: write agents (plain async Python, no Temporal imports).
- ``ratchet.workflows``: run them (workflows, the workflow-side helper, the client).
- ``ratchet.worker``: host them (``build_worker``).

``ratchet.run_main(main)`` runs a script's async ``main`` and exits with its real code.
"""

from ratchet._exit import run_main

__version__ = "0.1.0"
__all__ = ["__version__", "run_main"]
