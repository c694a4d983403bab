"""A WSGI middleware that verifies protocol v1 signatures before the app runs.

    from payidem import Verifier
    from payidem.wsgi import VerifyingMiddleware

    app = VerifyingMiddleware(app, Verifier({"key_live_1": [secret]}))

A request that fails verification is answered by the middleware with the
protocol's status and ``{"error": {"code": ..., "message": ...}}``; the app
never sees it. A verified request reaches the app with
``environ["payidem.verified"]`` set to the :class:`~payidem.Verified` result
(key id, idempotency key, timestamp, nonce) and ``wsgi.input`` rewound to the
body that was verified. Act on ``environ["payidem.verified"].idempotency_key``
rather than on ``HTTP_IDEMPOTENCY_KEY``: it is the key that was verified (an
empty or repeated header is refused).
"""

from __future__ import annotations

import email.utils
import io
import json
import time
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple
from urllib.parse import quote

from ._native import Verifier
from .errors import Error, TimestampOutOfWindow

__all__ = ["VerifyingMiddleware", "request_target", "header_pairs"]

StartResponse = Callable[..., Any]
WSGIApp = Callable[[Dict[str, Any], StartResponse], Iterable[bytes]]

ENVIRON_KEY = "payidem.verified"


def request_target(environ: Dict[str, Any]) -> str:
    """The request target as the client sent (and signed) it.

    Servers that keep the raw target (``RAW_URI`` in gunicorn, ``REQUEST_URI``
    in uWSGI and others) give it exactly; otherwise it is rebuilt from
    ``SCRIPT_NAME``, ``PATH_INFO`` and ``QUERY_STRING``, which is exact for
    targets whose path needs no percent-encoding beyond the usual.
    """
    for raw in ("RAW_URI", "REQUEST_URI"):
        value = environ.get(raw)
        if isinstance(value, str) and value.startswith("/"):
            return value
    path = environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")
    path = quote(path.encode("latin-1"), safe="/;=,:@!$&'()*+-._~") or "/"
    query = environ.get("QUERY_STRING", "")
    return f"{path}?{query}" if query else path


def header_pairs(environ: Dict[str, Any]) -> List[Tuple[str, str]]:
    """The request headers of a WSGI environ as ``(name, value)`` pairs."""
    pairs: List[Tuple[str, str]] = []
    for key, value in environ.items():
        if key.startswith("HTTP_") and isinstance(value, str):
            pairs.append((key[5:].replace("_", "-").title(), value))
    if environ.get("CONTENT_TYPE"):
        pairs.append(("Content-Type", environ["CONTENT_TYPE"]))
    return pairs


class VerifyingMiddleware:
    """Verifies every request with ``verifier`` and refuses those that fail.

    Bodies above ``max_body`` bytes are refused with 413 before they are read.
    ``clock`` gives the server's time in Unix seconds (default: the local
    clock).
    """

    def __init__(
        self,
        app: WSGIApp,
        verifier: Verifier,
        *,
        max_body: int = 1024 * 1024,
        clock: Optional[Callable[[], int]] = None,
    ) -> None:
        self.app = app
        self.verifier = verifier
        self.max_body = max_body
        self.clock = clock if clock is not None else (lambda: int(time.time()))

    def __call__(self, environ: Dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return _answer(start_response, 400, "invalid_request", "Content-Length is not a number")
        if length < 0:
            return _answer(start_response, 400, "invalid_request", "Content-Length is negative")
        if length > self.max_body:
            return _answer(start_response, 413, "payload_too_large", "the body is too large")
        body = environ["wsgi.input"].read(length) if length else b""
        now = self.clock()
        try:
            verified = self.verifier.verify(
                environ.get("REQUEST_METHOD", "GET"),
                request_target(environ),
                header_pairs(environ),
                body,
                now,
            )
        except TimestampOutOfWindow as e:
            server_time = e.server_time if e.server_time is not None else now
            extra = [
                ("X-Server-Time", str(server_time)),
                ("Date", email.utils.formatdate(server_time, usegmt=True)),
            ]
            return _answer(start_response, e.http_status, e.code, e.message, extra)
        except Error as e:
            return _answer(start_response, e.http_status or 400, e.code, e.message)
        environ[ENVIRON_KEY] = verified
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        return self.app(environ, start_response)


_REASONS = {400: "Bad Request", 401: "Unauthorized", 409: "Conflict", 413: "Payload Too Large", 503: "Service Unavailable"}


def _answer(
    start_response: StartResponse,
    status: int,
    code: str,
    message: str,
    extra: Optional[List[Tuple[str, str]]] = None,
) -> List[bytes]:
    body = json.dumps({"error": {"code": code, "message": message}}).encode("utf-8")
    headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    start_response(f"{status} {_REASONS.get(status, 'Error')}", headers + (extra or []))
    return [body]
