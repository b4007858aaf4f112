"""How long a stopping worker lets its turns in flight finish.

One number that ``build_worker`` and ``ratchet worker --grace-period`` share; it
lives below both, in a module of plain constants, so the CLI can name it in
``--help`` without loading Temporal.
"""

DEFAULT_GRACE_PERIOD = 20.0
"""Seconds a stopping worker gives its turns in flight (``build_worker``'s default too).
Docker Compose (``stop_grace_period``) and Kubernetes (``terminationGracePeriodSeconds``)
kill a container 30 s after SIGTERM by default; the last 10 s are for cancelling what
is still running, reporting it, closing resources and flushing traces."""
