"""The web page ``ratchet web`` serves at ``/``: plain HTML, CSS and JavaScript
modules shipped in the package (``static/``), with no build step and nothing
loaded from elsewhere, so it works offline.

The files are public: they hold no data, and every API call they make sends the
token the user pasted into the page.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

STATIC = Path(__file__).resolve().parent / "static"
# The page loads only its own files and calls only its own origin: an injected
# script could not run, nor send the token anywhere else.
POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def mount_page(app: FastAPI) -> None:
    """Serves the page at ``/`` and its files under ``/static/``."""

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html", headers=HEADERS)

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
