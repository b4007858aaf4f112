"""Evaluation reports on the web: ``ratchet web --reports DIR`` serves the reports
``ratchet eval`` writes (``--out DIR/NAME``: a directory holding ``report.json``).

A report quotes other people's conversations, so only the identities named by
``--report-readers`` may read them (anyone, on a server without tokens, which is
loopback only). The server reads the files as they are: no evaluator runs here.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel

from ratchet.errors import NotFoundError

from ._principal import Principal
from ._problems import Forbidden
from ._routes import Caller, may_read_reports, principal

evals = APIRouter(prefix="/v1/evals", dependencies=[Depends(principal)])


class ReportSummary(BaseModel):
    name: str
    agent: str
    cases: int
    old_score: float
    new_score: float
    old_cost_usd: float
    new_cost_usd: float
    written_at: datetime


@evals.get("")
async def list_reports(request: Request, caller: Caller) -> list[ReportSummary]:
    """The reports under the server's ``--reports`` directory, newest first."""
    root = _reports(request, caller)
    found = await asyncio.to_thread(lambda: [_summary(p) for p in root.glob("*/report.json")])
    return sorted((s for s in found if s is not None), key=lambda s: s.written_at, reverse=True)


@evals.get("/{name}")
async def get_report(request: Request, name: str, caller: Caller) -> dict[str, Any]:
    """One report as ``report.json`` holds it: per case, both sides and their scores.
    To a caller who may not read reports, any name is unknown (nothing leaks)."""
    unknown = NotFoundError(f"There is no report {name!r}; GET /v1/evals lists them.")
    if request.app.state.reports is not None and not may_read_reports(request, caller):
        raise unknown
    root = _reports(request, caller)
    found = await asyncio.to_thread(_read_report, root, name)
    if found is not None:
        return found
    raise unknown


def _reports(request: Request, caller: Principal) -> Path:
    root: Path | None = request.app.state.reports
    if root is None:
        raise NotFoundError(
            "This server serves no evaluation reports: start it with --reports DIR "
            "(the directory `ratchet eval ... --out DIR/NAME` writes into)."
        )
    if not may_read_reports(request, caller):
        raise Forbidden(
            f"{caller.identity} may not read evaluation reports (they quote other people's "
            "conversations); operators and the server's --report-readers may."
        )
    return root


def _read_report(root: Path, name: str) -> dict[str, Any] | None:
    names = {p.parent.name for p in root.glob("*/report.json")}
    if name not in names:  # never a path: only the names the directory lists
        return None
    try:
        return json.loads((root / name / "report.json").read_text())
    except (OSError, ValueError):
        return None  # not a report, or one being written: as GET /v1/evals, not listed


def _summary(path: Path) -> ReportSummary | None:
    try:
        data = json.loads(path.read_text())
        return ReportSummary(
            name=path.parent.name,
            agent=data["agent"],
            cases=len(data["cases"]),
            old_score=data["old_score"],
            new_score=data["new_score"],
            old_cost_usd=data["old_cost_usd"],
            new_cost_usd=data["new_cost_usd"],
            written_at=datetime.fromtimestamp(path.stat().st_mtime, UTC),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None  # not a report (or one being written): not listed
