"""What ``payidem.requests`` and ``payidem.httpx`` share: the control
headers that turn an HTTP request into an operation, and how a request of
the caller becomes one attempt of the machine."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Tuple

from . import _native
from .client import Client
from .errors import InvalidArgument
from .operation import Attempt, Call, _relative_path

__all__ = [
    "DEADLINE_HEADER",
    "ORDER_ID_HEADER",
    "STATUS_PATH_HEADER",
    "operation_headers",
]

ORDER_ID_HEADER = "Payidem-Order-Id"
"""The request header naming the business operation (required)."""

STATUS_PATH_HEADER = "Payidem-Status-Path"
"""The request header with the operation's status path, relative to the
client's base URL (optional; e.g. ``/v1/payments?order_id=ord-1``)."""

DEADLINE_HEADER = "Payidem-Deadline"
"""The request header shortening the client's deadline for this call, in
seconds (optional)."""

IDEMPOTENCY_KEY_HEADER: str = _native.IDEMPOTENCY_KEY_HEADER

# Never sent as the caller gave them: the control headers (read, then
# dropped), the headers the machine signs and sets, and the framing the HTTP
# stack computes for the attempt's own body.
_DROPPED = frozenset(
    name.lower()
    for name in (
        ORDER_ID_HEADER,
        STATUS_PATH_HEADER,
        DEADLINE_HEADER,
        *_native.SIGNED_HEADERS,
        "Content-Length",
        "Transfer-Encoding",
    )
)


def operation_headers(
    order_id: str,
    *,
    status_path: Optional[str] = None,
    idempotency_key: Optional[str] = None,
    deadline: Optional[float] = None,
) -> Dict[str, str]:
    """The headers that make a request an operation for
    :class:`payidem.requests.PayidemAdapter` and
    :class:`payidem.httpx.PayidemTransport`: ``Payidem-Order-Id``, and when
    given ``Payidem-Status-Path``, ``Idempotency-Key`` (an explicit key; the
    default is ``create-{order_id}``) and ``Payidem-Deadline`` (seconds).
    The control headers are read by the adapter and never sent."""
    headers = {ORDER_ID_HEADER: order_id}
    if status_path is not None:
        headers[STATUS_PATH_HEADER] = status_path
    if idempotency_key is not None:
        headers[IDEMPOTENCY_KEY_HEADER] = idempotency_key
    if deadline is not None:
        headers[DEADLINE_HEADER] = repr(float(deadline))
    return headers


@dataclass(frozen=True)
class OperationRequest:
    """An HTTP request of the caller read as an operation."""

    order_id: str
    method: str
    path: str
    body: bytes
    status_path: Optional[str]
    idempotency_key: Optional[str]
    deadline: Optional[float]
    # The caller's own headers that every attempt carries (Accept,
    # Content-Type, User-Agent, ...), without the dropped ones.
    passed: Tuple[Tuple[str, str], ...]

    def begin(self, client: Client) -> Call:
        """Journals the operation and starts its call."""
        return Call.begin(
            client,
            self.order_id,
            self.method,
            self.path,
            self.body,
            status_path=self.status_path,
            idempotency_key=self.idempotency_key,
            deadline=self.deadline,
        )

    def attempt_headers(self, attempt: Attempt) -> List[Tuple[str, str]]:
        """The headers of one attempt: the caller's passed headers (only
        ``Content-Type`` dropped for a status query, which has no body),
        then the machine's signed ones; ``Content-Type: application/json``
        when a body has none."""
        headers = [
            (n, v)
            for n, v in self.passed
            if attempt.body or n.lower() != "content-type"
        ]
        headers.extend(attempt.headers)
        if attempt.body and not any(n.lower() == "content-type" for n, _ in headers):
            headers.append(("Content-Type", "application/json"))
        return headers


def read_operation(
    client: Client,
    method: str,
    url: str,
    headers: Iterable[Tuple[str, str]],
    body: bytes,
    default_deadline: Optional[float],
) -> OperationRequest:
    """Reads the control headers of a request; ``InvalidArgument`` naming
    the field when one is missing or malformed, or when ``url`` is not under
    the client's base URL."""
    pairs = list(headers)

    def first(name: str) -> Optional[str]:
        wanted = name.lower()
        return next((v for n, v in pairs if n.lower() == wanted), None)

    order_id = first(ORDER_ID_HEADER)
    if order_id is None:
        raise InvalidArgument(
            f"order_id: a request sent through payidem needs the {ORDER_ID_HEADER} header"
            " (see payidem.operation_headers); use client.get for reads",
            field="order_id",
        )
    deadline = default_deadline
    deadline_text = first(DEADLINE_HEADER)
    if deadline_text is not None:
        deadline = _seconds(deadline_text)
    key = first(IDEMPOTENCY_KEY_HEADER)
    return OperationRequest(
        order_id=order_id,
        method=method,
        path=_relative_path(client, url),
        body=body,
        status_path=first(STATUS_PATH_HEADER),
        idempotency_key=key,
        deadline=deadline,
        passed=tuple((n, v) for n, v in pairs if n.lower() not in _DROPPED),
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise InvalidArgument(
            f"deadline: the {DEADLINE_HEADER} header must be a positive number of seconds",
            field="deadline",
        )
    return value
