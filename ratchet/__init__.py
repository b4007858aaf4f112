"""Ratchet: durable agents for Python on Temporal.

The public API lives in three packages:

- ``ratchet.agents``: write agents (plain async Python, no Temporal imports).
- ``ratchet.workflows``: run them (workflows, the workflow-side helper, the client).
- ``ratchet.worker``: host them (``build_worker``).
"""

__version__ = "0.1.0"
