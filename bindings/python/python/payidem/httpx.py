"""``payidem.httpx``: payments with ``httpx`` that happen once.

:class:`PayidemTransport` wraps any ``httpx`` transport (by default a plain
``httpx.HTTPTransport()``). A request that names its operation with the
``Payidem-Order-Id`` header becomes a :class:`payidem.Call` of that
operation, driven to its end by the transport: journaled first, every try
signed afresh by the core's machine (new nonce, timestamp and signature;
same key and body) and sent through the wrapped transport, 5xx, timeouts
and lost answers handled by the protocol's rules, and the settled answer
returned.

    import httpx, payidem
    from payidem.httpx import PayidemTransport

    client = payidem.Client("https://api.example.com", "key_live_1", secret,
                            journal="/var/lib/shop/payidem.sqlite3")
    with httpx.Client(transport=PayidemTransport(client)) as http:
        r = http.post("https://api.example.com/v1/payments", json=payment,
                      headers=payidem.operation_headers(
                          "ord-1001", status_path="/v1/payments?order_id=ord-1001"))

Control headers (read by the transport, never sent), the URL and body rules
and what comes back are those of :mod:`payidem.requests`: the settled
answer as an ``httpx.Response`` (a 2xx, a final refusal kept under the key
such as ``402``, or ``409 idempotency_conflict``), or the payidem error of
an unsettled end (:class:`~payidem.OutcomeUnknown`, :class:`~payidem.Refused`,
:class:`~payidem.TransportError`, :class:`~payidem.KeyExpired`,
:class:`~payidem.OperationBusy`, :class:`~payidem.Cancelled`), which is not
an ``httpx.HTTPError``.

Errors of the wrapped transport: ``httpx.ConnectError``,
``httpx.ConnectTimeout``, ``httpx.PoolTimeout``, ``httpx.ProxyError`` and
``httpx.UnsupportedProtocol`` happen before the request is written and are
reported as *not sent*; every other ``httpx.TransportError`` (read or write
errors and timeouts, a connection closed by the peer) as *sent without an
answer*, so the key is kept and the status is asked. Each try's connect,
read, write and pool timeouts are at most the client's ``request_timeout``
(shortened to the call's deadline; ``httpx`` applies them per phase) and at
most the request's own. The wrapped transport must not retry by itself
(``httpx.HTTPTransport(retries=...)`` only retries connecting, which is
harmless). Ctrl-C during a call cancels it (the key is kept) and
propagates.

``AsyncPayidemTransport`` does the same for ``httpx.AsyncClient`` over any
async transport: the journal-bound steps run in a worker thread
(``anyio.to_thread``), sends go through the async transport, waits are
``anyio.sleep``; a cancelled task cancels the call (the key is kept).
"""

from __future__ import annotations

from typing import Callable, Generic, List, Optional, Tuple, TypeVar

import anyio
import anyio.to_thread
import httpx

from ._control import OperationRequest, operation_headers, read_operation
from .client import Client
from .errors import Error, IdempotencyConflict, Rejected
from .operation import Attempt, Call, DoneStep, Reply, WaitStep

__all__ = ["AsyncPayidemTransport", "PayidemTransport", "operation_headers"]

T = TypeVar("T")
W = TypeVar("W")

_NOT_SENT = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
    httpx.ProxyError,
    httpx.UnsupportedProtocol,
)


def _reply_for(error: httpx.TransportError) -> Reply:
    why = f"{type(error).__name__}: {error}"
    if isinstance(error, _NOT_SENT):
        return Reply.not_sent(why)
    return Reply.sent_no_response(why)


def _timeouts(request: httpx.Request, limit: float) -> dict[str, Optional[float]]:
    given = request.extensions.get("timeout") or {}
    out: dict[str, Optional[float]] = {}
    for phase in ("connect", "read", "write", "pool"):
        value = given.get(phase)
        out[phase] = limit if value is None else min(float(value), limit)
    return out


def _read_operation(client: Client, request: httpx.Request, deadline: Optional[float]) -> OperationRequest:
    return read_operation(
        client,
        request.method,
        str(request.url),
        request.headers.multi_items(),
        request.content,
        deadline,
    )


def _attempt_request(
    original: httpx.Request, operation: OperationRequest, attempt: Attempt, limit: float
) -> httpx.Request:
    assert attempt.url is not None
    extensions = dict(original.extensions)
    extensions["timeout"] = _timeouts(original, limit)
    return httpx.Request(
        attempt.method,
        attempt.url,
        headers=operation.attempt_headers(attempt),
        content=attempt.body if attempt.body else None,
        extensions=extensions,
    )


def _without_framing(headers: List[Tuple[str, str]]) -> List[Tuple[str, str]]:
    # The body is handed over whole: its length is recomputed.
    return [(n, v) for n, v in headers if n.lower() not in ("transfer-encoding", "content-length")]


def _settled(
    request: httpx.Request,
    last: List[Tuple[int, List[Tuple[str, str]], bytes]],
    status: int,
    headers: List[Tuple[str, str]],
    body: bytes,
) -> httpx.Response:
    """The response the call settled on: the last try's own (raw bytes,
    headers as received) when it brought it, else one built from the
    journal's answer."""
    if last and last[0][0] == status:
        status, headers, raw = last[0]
    else:
        raw = body
        headers = [(n, v) for n, v in headers if n.lower() != "content-encoding"]
    return httpx.Response(status, headers=_without_framing(headers), content=raw, request=request)


def _decoded(status: int, headers: List[Tuple[str, str]], raw: bytes) -> bytes:
    """The body as the machine reads it: decoded as ``Content-Encoding``
    says."""
    return httpx.Response(status, headers=_without_framing(headers), content=raw).read()


class _OperationTransport(Generic[W]):
    """What both transports hold: the ``client`` whose operations they run,
    the wrapped ``transport`` each try goes through (a new default one when
    none is given) and the ``deadline`` (seconds) of every call."""

    def __init__(
        self,
        client: Client,
        transport: Optional[W] = None,
        *,
        deadline: Optional[float] = None,
    ) -> None:
        if not isinstance(client, Client):
            raise TypeError(f"client must be a payidem.Client, not {type(client).__name__}")
        self.client = client
        self.transport: W = transport if transport is not None else self._default_transport()
        self.deadline = deadline

    def _default_transport(self) -> W:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(client={self.client!r}, transport={self.transport!r})"


class PayidemTransport(_OperationTransport[httpx.BaseTransport], httpx.BaseTransport):
    """An ``httpx`` transport that runs every request as an operation of
    ``client`` (see the module's documentation) and sends each try through
    ``transport``. ``deadline`` (seconds) shortens the client's deadline for
    every call (the ``Payidem-Deadline`` header for one). Closing it closes
    the wrapped transport, not the client."""

    def _default_transport(self) -> httpx.BaseTransport:
        return httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Runs ``request`` as an operation; returns its settled response or
        raises the payidem error of an unsettled end."""
        operation = _read_operation(self.client, request, self.deadline)
        last: List[Tuple[int, List[Tuple[str, str]], bytes]] = []

        def send_one(attempt: Attempt, limit: float) -> Reply:
            last.clear()
            try:
                response = self.transport.handle_request(
                    _attempt_request(request, operation, attempt, limit)
                )
                try:
                    raw = b"".join(response.iter_raw())
                finally:
                    response.close()
            except httpx.TransportError as e:
                return _reply_for(e)
            headers = list(response.headers.multi_items())
            last.append((response.status_code, headers, raw))
            return Reply.response(response.status_code, headers, _decoded(response.status_code, headers, raw))

        with operation.begin(self.client) as call:
            try:
                outcome = call.run(send_one)
            except (Rejected, IdempotencyConflict) as e:
                return _settled(request, last, e.status or 0, [], e.body or b"")
        return _settled(request, last, outcome.status, outcome.headers.pairs, outcome.body)

    def close(self) -> None:
        self.transport.close()


class AsyncPayidemTransport(_OperationTransport[httpx.AsyncBaseTransport], httpx.AsyncBaseTransport):
    """:class:`PayidemTransport` for ``httpx.AsyncClient``: tries go through
    the async ``transport`` (default ``httpx.AsyncHTTPTransport()``); the
    call's journal-bound steps run in a worker thread so the event loop is
    never blocked by a journal write."""

    def _default_transport(self) -> httpx.AsyncBaseTransport:
        return httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Runs ``request`` as an operation; returns its settled response or
        raises the payidem error of an unsettled end."""
        await request.aread()
        operation = _read_operation(self.client, request, self.deadline)
        call = await _in_thread(lambda: operation.begin(self.client))
        last: List[Tuple[int, List[Tuple[str, str]], bytes]] = []
        try:
            while True:
                step = await _in_thread(call.step)
                if isinstance(step, DoneStep):
                    break
                if isinstance(step, WaitStep):
                    await anyio.sleep(step.seconds)
                    continue
                last.clear()
                assert step.timeout is not None
                reply = await self._send(request, operation, step.attempt, step.timeout, last)
                await _in_thread(lambda: call.report(reply))
        except BaseException:
            with anyio.CancelScope(shield=True):
                await _in_thread(lambda: _cancel_quietly(call))
            raise
        try:
            outcome = step.result()
        except (Rejected, IdempotencyConflict) as e:
            return _settled(request, last, e.status or 0, [], e.body or b"")
        return _settled(request, last, outcome.status, outcome.headers.pairs, outcome.body)

    async def _send(
        self,
        request: httpx.Request,
        operation: OperationRequest,
        attempt: Attempt,
        limit: float,
        last: List[Tuple[int, List[Tuple[str, str]], bytes]],
    ) -> Reply:
        try:
            response = await self.transport.handle_async_request(
                _attempt_request(request, operation, attempt, limit)
            )
            try:
                raw = b"".join([chunk async for chunk in response.aiter_raw()])
            finally:
                await response.aclose()
        except httpx.TransportError as e:
            return _reply_for(e)
        headers = list(response.headers.multi_items())
        last.append((response.status_code, headers, raw))
        return Reply.response(response.status_code, headers, _decoded(response.status_code, headers, raw))

    async def aclose(self) -> None:
        await self.transport.aclose()


async def _in_thread(fn: Callable[[], T]) -> T:
    return await anyio.to_thread.run_sync(fn)


def _cancel_quietly(call: Call) -> None:
    if not call.done:
        try:
            call.cancel()
        except Error:
            pass
