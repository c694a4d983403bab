"""``payidem.requests``: payments with ``requests`` that happen once.

Mount :class:`PayidemAdapter` on a session for the platform's base URL; a
request that names its operation with the ``Payidem-Order-Id`` header
becomes a :class:`payidem.Call` of that operation, driven to its end by the
adapter: journaled first, every try signed afresh by the core's machine
(new nonce, timestamp and signature; same key and body), 5xx, timeouts and
lost answers handled by the protocol's rules (status queries, backoff,
``Retry-After``, clock correction), and the settled answer returned.

    import requests, payidem
    from payidem.requests import PayidemAdapter

    client = payidem.Client("https://api.example.com", "key_live_1", secret,
                            journal="/var/lib/shop/payidem.sqlite3")
    session = requests.Session()
    session.mount("https://api.example.com/", PayidemAdapter(client))
    r = session.post("https://api.example.com/v1/payments", json=payment,
                     headers=payidem.operation_headers(
                         "ord-1001", status_path="/v1/payments?order_id=ord-1001"))
    r.status_code   # 201, or 200 from the status path, or a final 4xx

Control headers, read by the adapter and never sent: ``Payidem-Order-Id``
(required), ``Payidem-Status-Path`` (relative to the client's base URL),
``Payidem-Deadline`` (seconds) and ``Idempotency-Key`` (an explicit key;
default ``create-{order_id}``). :func:`payidem.operation_headers` builds
them. The URL must be under the client's base URL (``InvalidArgument``
naming ``url`` otherwise); the body must be known in full (``bytes``,
``str``, ``json=``, ``data=`` of a dict; not a stream or file). Every other
header of the request is sent on every try.

What comes back:

- the platform's **settled** answer as a ``requests.Response``: the 2xx
  (which may be the status path's 200 when that is how the outcome was
  learnt, or ``Idempotent-Replayed: true``), or a **final** refusal kept
  under the key (e.g. ``402``) or ``409 idempotency_conflict`` — check
  ``status_code`` as usual; it is never sent again;
- otherwise the call raises the payidem error of its end, the operation
  kept with its key: :class:`~payidem.OutcomeUnknown` (resume it),
  :class:`~payidem.Refused` (nothing happened), :class:`~payidem.TransportError`
  (nothing reached the platform), :class:`~payidem.KeyExpired`,
  :class:`~payidem.OperationBusy`, :class:`~payidem.Cancelled`; or
  :class:`~payidem.InvalidArgument` / :class:`~payidem.JournalError`.
  These are not ``requests.RequestException``\\ s.

Sending the same order id again continues the same operation (a settled one
answers from the journal without any network call). After a crash,
``client.resume(order_id)`` (or ``client.resume_unknown()``) finishes it with
the client's own transport.

The adapter's urllib3 pool never retries (``max_retries`` is fixed at 0 and
cannot be set): a resend of the same signed bytes would be refused with
``409 nonce_reused``. Timeouts: each try has at most the client's
``request_timeout`` (shortened to the call's deadline); a ``timeout=`` given
to ``requests`` shortens it further. TLS settings are the session's
(``verify=``, ``cert=``), not the client's. ``stream=True`` is ignored (the
answer is read in full, in the try). Redirects are never followed.

Proxies: ``requests`` reads ``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``ALL_PROXY``
from the environment (``Session.trust_env``) for every request; a proxy
sees the signed request, and could answer in the platform's place. The
adapter uses the proxies ``requests`` hands it (the environment's, the
session's and the request's) only when the client was made with
``proxy_from_env=True``; otherwise it connects directly, or through the
client's own ``proxy`` when one was given.
Ctrl-C during a call cancels it (the key is kept) and propagates.
"""

from __future__ import annotations

import io
import ssl
from typing import Any, Dict, List, Optional, Tuple, Union, cast

import requests
import urllib3
import urllib3.exceptions
from requests.adapters import DEFAULT_POOLBLOCK, DEFAULT_POOLSIZE, HTTPAdapter
from requests.models import PreparedRequest, Response
from requests.structures import CaseInsensitiveDict
from requests.utils import get_encoding_from_headers
from urllib3.util.retry import Retry

from ._control import OperationRequest, operation_headers, read_operation
from .client import Client
from .errors import IdempotencyConflict, Rejected
from .operation import Attempt, Reply
from .requests_auth import _body_bytes, _refuse_redirect

__all__ = ["PayidemAdapter", "operation_headers"]

_Timeout = Union[None, float, Tuple[Optional[float], Optional[float]]]

# Errors of urllib3 and ssl raised before any byte of the request was
# written: connecting, resolving, a proxy's CONNECT, a certificate refused
# in the handshake.
_BEFORE_SENDING = (
    urllib3.exceptions.NewConnectionError,
    urllib3.exceptions.ConnectTimeoutError,
    urllib3.exceptions.NameResolutionError,
    urllib3.exceptions.ProxyError,
    ssl.SSLCertVerificationError,
)


def _nothing_sent(error: BaseException) -> bool:
    """Whether ``error`` (a ``requests`` exception) certainly happened
    before the request was written: it wraps one of the errors above. In
    doubt, no: the attempt may have reached the platform."""
    if isinstance(error, requests.exceptions.ConnectTimeout):
        return True
    seen: List[BaseException] = []
    todo: List[object] = [error]
    while todo:
        e = todo.pop()
        if not isinstance(e, BaseException) or any(e is s for s in seen):
            continue
        seen.append(e)
        if isinstance(e, _BEFORE_SENDING):
            return True
        todo.extend(e.args)
        todo.extend([getattr(e, "reason", None), e.__cause__, e.__context__])
    return False


_UNFREEZABLE = (
    "PayidemAdapter sends an operation's body on every try, so it must be known in full "
    "(bytes, str, json=, or data= of a dict); streamed bodies and files cannot be frozen"
)


def _text(value: Union[str, bytes]) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value


def _limit(a: Optional[float], b: float) -> float:
    return b if a is None else min(a, b)


def _timeout(given: object, attempt: float) -> urllib3.Timeout:
    """The try's timeout: at most ``attempt`` seconds in all, and the
    caller's connect and read timeouts when shorter."""
    connect: Optional[float] = None
    read: Optional[float] = None
    if isinstance(given, tuple) and len(given) == 2:
        connect, read = given
    elif isinstance(given, (int, float)) and not isinstance(given, bool):
        connect = read = float(given)
    return urllib3.Timeout(total=attempt, connect=_limit(connect, attempt), read=_limit(read, attempt))


def _response_pairs(response: Response) -> List[Tuple[str, str]]:
    raw_headers = getattr(response.raw, "headers", None)
    if raw_headers is not None and hasattr(raw_headers, "items"):
        return [(str(n), str(v)) for n, v in raw_headers.items()]
    return [(str(n), str(v)) for n, v in response.headers.items()]


class PayidemAdapter(HTTPAdapter):
    """A ``requests`` transport adapter that runs every request as an
    operation of ``client`` (see the module's documentation): journaled,
    re-signed on every try by the core's machine, retried by the protocol's
    rules, and answered with the settled response.

    ``deadline`` (seconds) shortens the client's deadline for every call
    (the ``Payidem-Deadline`` header shortens it for one). The pool options
    are ``HTTPAdapter``'s; ``max_retries`` is always 0."""

    def __init__(
        self,
        client: Client,
        *,
        deadline: Optional[float] = None,
        pool_connections: int = DEFAULT_POOLSIZE,
        pool_maxsize: int = DEFAULT_POOLSIZE,
        pool_block: bool = DEFAULT_POOLBLOCK,
    ) -> None:
        if not isinstance(client, Client):
            raise TypeError(f"client must be a payidem.Client, not {type(client).__name__}")
        self.client = client
        self.deadline = deadline
        super().__init__(
            pool_connections=pool_connections,
            pool_maxsize=pool_maxsize,
            max_retries=0,
            pool_block=pool_block,
        )

    @property
    def max_retries(self) -> Retry:
        """Always no retries: urllib3 would resend the same signed bytes."""
        return Retry(0, read=False, redirect=False)

    @max_retries.setter
    def max_retries(self, value: object) -> None:
        retry = value if isinstance(value, Retry) else Retry.from_int(value)  # type: ignore[arg-type]
        if retry.total not in (0, False) or retry.connect or retry.read or retry.status:
            raise ValueError(
                "PayidemAdapter never lets urllib3 retry: a resend carries the same signature and "
                "is refused with 409 nonce_reused; the payidem machine re-signs every try itself"
            )

    def send(
        self,
        request: PreparedRequest,
        stream: bool = False,
        timeout: _Timeout = None,
        verify: Union[bool, str] = True,
        cert: Union[None, str, Tuple[str, str]] = None,
        proxies: Optional[Dict[str, str]] = None,
    ) -> Response:
        """Runs ``request`` as an operation and returns its settled
        response, or raises the payidem error of an unsettled end.
        ``proxies`` apply only to a client made with ``proxy_from_env=True``
        (see the module's documentation)."""
        proxies = self.client._adapter_proxies(proxies)
        operation = read_operation(
            self.client,
            str(request.method).upper(),
            str(request.url),
            [(n, _text(v)) for n, v in request.headers.items()],
            _body_bytes(request.body, _UNFREEZABLE),
            self.deadline,
        )
        last: List[Response] = []

        def send_one(attempt: Attempt, attempt_timeout: float) -> Reply:
            last.clear()
            prepared = self._attempt_request(request, operation, attempt)
            try:
                r = HTTPAdapter.send(
                    self,
                    prepared,
                    stream=False,
                    # requests hands a urllib3 Timeout to urllib3 as it is.
                    timeout=cast(Any, _timeout(timeout, attempt_timeout)),
                    verify=verify,
                    cert=cert,
                    proxies=proxies,
                )
                body = r.content  # read in full, within the try
            except requests.RequestException as e:
                why = f"{type(e).__name__}: {e}"
                return Reply.not_sent(why) if _nothing_sent(e) else Reply.sent_no_response(why)
            last.append(r)
            return Reply.response(r.status_code, _response_pairs(r), body or b"")

        with operation.begin(self.client) as call:
            try:
                outcome = call.run(send_one)
            except (Rejected, IdempotencyConflict) as e:
                return self._settled(request, last, e.status or 0, [], e.body or b"")
        return self._settled(request, last, outcome.status, outcome.headers.pairs, outcome.body)

    def _attempt_request(
        self, original: PreparedRequest, operation: OperationRequest, attempt: Attempt
    ) -> PreparedRequest:
        p = original.copy()
        p.method = attempt.method
        p.url = attempt.url
        headers: CaseInsensitiveDict[Union[str, bytes]] = CaseInsensitiveDict()
        for name, value in operation.attempt_headers(attempt):
            headers[name] = value
        if attempt.body:
            headers["Content-Length"] = str(len(attempt.body))
            p.body = attempt.body
        else:
            p.body = None
        p.headers = headers
        return p

    def _settled(
        self,
        request: PreparedRequest,
        last: List[Response],
        status: int,
        headers: List[Tuple[str, str]],
        body: bytes,
    ) -> Response:
        """The response the call settled on: the try's own response when the
        last try brought it, else one built from the journal's answer."""
        if last and last[0].status_code == status:
            r = last[0]
        else:
            r = Response()
            r.status_code = status
            r.headers = CaseInsensitiveDict(dict(headers))
            r._content = body
            r._content_consumed = True
            r.raw = io.BytesIO(body)
            r.url = str(request.url)
            r.request = request
            r.encoding = get_encoding_from_headers(r.headers)
            r.connection = self
        _refuse_redirect(r)
        return r

    def __repr__(self) -> str:
        return f"PayidemAdapter(client={self.client!r})"
