"""ratchet web: HTTP, SSE, AG-UI (with the official client) and the page."""
