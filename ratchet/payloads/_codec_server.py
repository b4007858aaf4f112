"""A codec server: Temporal's remote codec HTTP protocol over a ``PayloadCodec``.

The Temporal Web UI and CLI POST ``{"payloads": [...]}`` (protobuf JSON: metadata
values and data in base64) to ``<endpoint>/decode`` or ``<endpoint>/encode`` (the
UI may put the namespace in the path and sends it in ``X-Namespace``), and show
what comes back. Only the last path segment decides the operation. Standard
library only: one ``ThreadingHTTPServer``.

- **Auth**: every POST needs ``Authorization: Bearer <token>`` (compared in constant
  time) unless the server was built with ``token=None`` explicitly.
- **CORS**: only the configured UI origin gets CORS headers, so no other web page
  can read answers (or even send its JSON POST: the preflight fails).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from google.protobuf import json_format
from temporalio.api.common.v1 import Payloads
from temporalio.converter import PayloadCodec

from ratchet.errors import RatchetError

log = logging.getLogger(__name__)

ALLOWED_HEADERS = "Content-Type, X-Namespace, Authorization"
MAX_BODY_BYTES = 16 * 1024 * 1024


class CodecServer:
    """Serves ``codec`` over HTTP; use as a context manager or call :meth:`serve_forever`.

    ``token`` is the bearer token clients must send (``None`` turns auth off);
    ``ui_origin`` is the one browser origin (e.g. ``http://localhost:8233``) that
    gets CORS headers.
    """

    def __init__(
        self,
        codec: PayloadCodec,
        *,
        token: str | None,
        ui_origin: str | None = None,
        host: str = "127.0.0.1",
        port: int = 8081,
    ) -> None:
        self.codec = codec
        self.token = token
        self.ui_origin = ui_origin.rstrip("/") if ui_origin else None
        self._httpd = ThreadingHTTPServer((host, port), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.owner = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def serve_forever(self) -> None:
        self._httpd.serve_forever(poll_interval=0.02)

    def shutdown(self) -> None:
        """Stop serving (from another thread) and close the socket."""
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> CodecServer:
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        if self._thread is not None:
            self._thread.join()

    def authorized(self, header: str | None) -> bool:
        if self.token is None:
            return True
        scheme, _, credentials = (header or "").partition(" ")
        # Digests first: compare_digest on inputs of different lengths returns early.
        given = hashlib.sha256(credentials.strip().encode()).digest()
        expected = hashlib.sha256(self.token.encode()).digest()
        return hmac.compare_digest(given, expected) and scheme.lower() == "bearer"

    def transform(self, operation: str, body: bytes) -> bytes:
        payloads = Payloads()
        json_format.Parse(body, payloads)
        if operation == "decode":
            result = asyncio.run(self.codec.decode(payloads.payloads))
        else:
            result = asyncio.run(self.codec.encode(payloads.payloads))
        return json_format.MessageToJson(Payloads(payloads=result)).encode()


class _Handler(BaseHTTPRequestHandler):
    server_version = "ratchet-codec"
    protocol_version = "HTTP/1.1"

    @property
    def owner(self) -> CodecServer:
        return self.server.owner  # type: ignore[attr-defined]

    def do_OPTIONS(self) -> None:
        self._reply(HTTPStatus.NO_CONTENT, b"", preflight=True)

    def do_POST(self) -> None:
        operation = self.path.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
        length = int(self.headers.get("content-length") or 0)
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            return self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "request body too large")
        body = self.rfile.read(length)
        if operation not in ("encode", "decode"):
            return self._error(HTTPStatus.NOT_FOUND, "POST to /encode or /decode")
        if self.headers.get_content_type() != "application/json":
            # A browser sends a JSON POST only after a CORS preflight the UI origin passes.
            return self._error(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "send application/json")
        if not self.owner.authorized(self.headers.get("authorization")):
            return self._error(
                HTTPStatus.UNAUTHORIZED,
                "send Authorization: Bearer <token> (the codec server's RATCHET_CODEC_TOKEN)",
            )
        try:
            answer = self.owner.transform(operation, body)
        except json_format.ParseError as e:
            return self._error(HTTPStatus.BAD_REQUEST, f'expected {{"payloads": [...]}}: {e}')
        except RatchetError as e:
            return self._error(HTTPStatus.BAD_REQUEST, str(e))
        except Exception:
            log.exception("codec %s failed", operation)
            return self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"{operation} failed")
        self._reply(HTTPStatus.OK, answer)

    def do_GET(self) -> None:
        self._error(HTTPStatus.METHOD_NOT_ALLOWED, "POST to /encode or /decode")

    def _error(self, status: HTTPStatus, message: str) -> None:
        self._reply(status, json.dumps({"error": message}).encode())

    def _reply(self, status: HTTPStatus, body: bytes, *, preflight: bool = False) -> None:
        self.send_response(status)
        for name, value in self._cors_headers(preflight).items():
            self.send_header(name, value)
        if status == HTTPStatus.UNAUTHORIZED:
            self.send_header("WWW-Authenticate", 'Bearer realm="ratchet-codec"')
        if body:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _cors_headers(self, preflight: bool) -> dict[str, str]:
        origin = self.headers.get("origin")
        headers: dict[str, str] = {"Vary": "Origin"}
        if not origin or origin != self.owner.ui_origin:
            return headers
        headers |= {
            "Access-Control-Allow-Origin": origin,
            "Access-Control-Allow-Credentials": "true",
        }
        if preflight:
            headers |= {
                "Access-Control-Allow-Methods": "POST, OPTIONS",
                "Access-Control-Allow-Headers": ALLOWED_HEADERS,
                "Access-Control-Max-Age": "600",
            }
        return headers

    def log_message(self, format: str, *args: Any) -> None:
        log.info("%s %s", self.address_string(), format % args)
