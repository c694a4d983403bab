"""A WSGI middleware that verifies protocol v1 signatures before the app runs.

    from payidem import Verifier
    from payidem.wsgi import VerifyingMiddleware

    app = VerifyingMiddleware(app, Verifier({"key_live_1": [secret]}))

A request that fails verification is answered by the middleware with the
refusal the Rust core builds for it (:func:`refusal`): the protocol's status,
``Content-Type: application/json``, ``X-Server-Time`` and ``Date`` for
``timestamp_out_of_window``, and the body
``{"error":{"code":"...","message":"..."}}``, byte for byte what the mock
platform, the C ABI and the Go middleware send; the app never sees it. A verified request reaches the app with
``environ["payidem.verified"]`` set to the :class:`~payidem.Verified` result
(key id, idempotency key, timestamp, nonce) and ``wsgi.input`` rewound to the
body that was verified. Act on ``environ["payidem.verified"].idempotency_key``
rather than on ``HTTP_IDEMPOTENCY_KEY``: it is the key that was verified (an
empty or repeated header is refused).
"""

from __future__ import annotations

import io
import time
from http import HTTPStatus
from typing import Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Tuple
from urllib.parse import quote

from ._native import Verifier
from .errors import Error

__all__ = ["Refusal", "VerifyingMiddleware", "refusal", "request_target", "header_pairs"]

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


class Refusal(NamedTuple):
    """The HTTP answer that refuses a request, as the Rust core builds it."""

    status: int
    """The HTTP status (401, 409, 503, 400, 413; 500 for a failure of the
    server itself)."""
    headers: List[Tuple[str, str]]
    """The headers to send besides ``Content-Length``: ``Content-Type``, and
    ``X-Server-Time`` and ``Date`` for ``timestamp_out_of_window``."""
    body: bytes
    """The exact body, ``{"error":{"code":"...","message":"..."}}``."""

    @property
    def status_line(self) -> str:
        """The WSGI status line, e.g. ``"409 Conflict"``."""
        return f"{self.status} {HTTPStatus(self.status).phrase}"

    def respond(self, start_response: StartResponse) -> List[bytes]:
        """Answers with this refusal through ``start_response``; returns the
        body to hand back to the server."""
        start_response(self.status_line, [*self.headers, ("Content-Length", str(len(self.body)))])
        return [self.body]


def refusal(error: Error, *, now: Optional[int] = None) -> Refusal:
    """The core's answer to a request whose verification raised ``error``.

    A verification error (``Verifier.VERIFICATION_CODES``) is answered with
    its status, code and message; ``timestamp_out_of_window`` carries the
    error's ``server_time`` (else ``now``, else the local clock) as
    ``X-Server-Time`` and ``Date``. Any other error is a failure of the
    server: 500 ``internal_error`` with a message that shows nothing of it.
    """
    server_time = getattr(error, "server_time", None)
    if server_time is None:
        server_time = now if now is not None else int(time.time())
    return Refusal(*Verifier.refusal(error.code, error.message, server_time))


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
            return _refuse(start_response, Verifier.bad_request_refusal("Content-Length is not a number"))
        if length < 0:
            return _refuse(start_response, Verifier.bad_request_refusal("Content-Length is negative"))
        if length > self.max_body:
            return _refuse(start_response, Verifier.body_too_large_refusal(self.max_body))
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
        except Error as e:
            return refusal(e, now=now).respond(start_response)
        environ[ENVIRON_KEY] = verified
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        return self.app(environ, start_response)


def _refuse(start_response: StartResponse, parts: Tuple[int, List[Tuple[str, str]], bytes]) -> List[bytes]:
    return Refusal(*parts).respond(start_response)
