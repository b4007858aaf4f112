"""Deploying new code under running agents: the replay gate, which build serves
what, and promoting a build (``ratchet replay``, ``ratchet deploy``;
docs/deploying.md)."""

from ._replay import Mismatch, ReplayReport, load_history, replay, replay_open
from ._versions import BuildStatus, DeploymentStatus, PromoteResult, deployment_status, promote

__all__ = [
    "BuildStatus",
    "DeploymentStatus",
    "Mismatch",
    "PromoteResult",
    "ReplayReport",
    "deployment_status",
    "load_history",
    "promote",
    "replay",
    "replay_open",
]
