"""Result types: responses, outcomes, operation status and decisions."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, List, Mapping, Optional, Tuple, Union

__all__ = ["Headers", "Response", "Outcome", "OperationStatus", "Decision"]


class Headers(Mapping[str, str]):
    """Response headers: a read-only mapping with case-insensitive names.

    ``headers["content-type"]`` gives the first value of that header;
    :meth:`get_all` gives every value; :attr:`pairs` keeps every
    ``(name, value)`` in the order received, repeated headers included.
    """

    __slots__ = ("_pairs", "_first")

    def __init__(self, pairs: Iterable[Tuple[str, str]] = ()) -> None:
        self._pairs: Tuple[Tuple[str, str], ...] = tuple((str(n), str(v)) for n, v in pairs)
        first: dict[str, Tuple[str, str]] = {}
        for name, value in self._pairs:
            first.setdefault(name.lower(), (name, value))
        self._first = first

    @property
    def pairs(self) -> List[Tuple[str, str]]:
        """Every header as received, in order."""
        return list(self._pairs)

    def get_all(self, name: str) -> List[str]:
        """Every value of header ``name`` (case-insensitive), in order."""
        wanted = name.lower()
        return [v for n, v in self._pairs if n.lower() == wanted]

    def __getitem__(self, name: str) -> str:
        if not isinstance(name, str):
            raise KeyError(name)
        return self._first[name.lower()][1]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._first

    def __iter__(self) -> Iterator[str]:
        return (original for original, _ in self._first.values())

    def __len__(self) -> int:
        return len(self._first)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Headers):
            return self._pairs == other._pairs
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._pairs)

    def __repr__(self) -> str:
        return f"Headers({list(self._pairs)!r})"


class _Body:
    """Helpers shared by responses and outcomes."""

    status: int
    headers: Headers
    body: bytes

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)

    def header(self, name: str) -> Optional[str]:
        """The first value of header ``name`` (case-insensitive), or ``None``."""
        return self.headers.get(name)

    @property
    def ok(self) -> bool:
        """Whether the status is 2xx."""
        return 200 <= self.status < 300


@dataclass(frozen=True)
class Response(_Body):
    """The platform's answer to one signed request (``Client.get``)."""

    status: int
    headers: Headers
    body: bytes = field(repr=False)
    replayed: bool = False


@dataclass(frozen=True)
class Outcome(_Body):
    """A settled, successful operation: the platform's 2xx answer (``status``,
    ``headers``, ``body``), whether the platform replayed it from its
    idempotency store, the operation's ``order_id`` and ``idempotency_key``,
    and the ``attempts`` made over every call."""

    order_id: str
    idempotency_key: str
    attempts: int
    status: int
    headers: Headers
    body: bytes = field(repr=False)
    replayed: bool = False


@dataclass(frozen=True)
class OperationStatus:
    """What the journal knows of one operation.

    ``state`` is one of ``pending`` (nothing sent), ``in_flight`` (an attempt
    may have reached the platform), ``unknown`` (resume it), ``succeeded``,
    ``rejected`` or ``conflict``. Times are Unix seconds.
    """

    order_id: str
    state: str
    attempts: int
    idempotency_key: str
    created_at: int
    updated_at: int
    method: str
    path: str
    status_path: Optional[str]
    body_sha256: str

    @property
    def settled(self) -> bool:
        """Whether the outcome is final."""
        return self.state in ("succeeded", "rejected", "conflict")

    @property
    def unresolved(self) -> bool:
        """Whether an attempt may have landed without the outcome being known."""
        return self.state in ("in_flight", "unknown")


@dataclass(frozen=True)
class Decision:
    """The protocol's decision after one attempt (``payidem.decide``).

    ``kind`` is ``done``, ``fail``, ``retry_now``, ``retry_backoff``,
    ``retry_after``, ``adjust_clock_retry`` or ``query_status``; ``replayed``
    (done), ``error`` (fail: ``idempotency_conflict`` or ``rejected``),
    ``unknown`` (the attempt may have taken effect), ``seconds``
    (retry_after) and ``server_time`` (adjust_clock_retry) complete it.
    """

    kind: str
    replayed: bool = False
    error: Optional[str] = None
    unknown: bool = False
    seconds: Optional[int] = None
    server_time: Optional[int] = None


StatusTuple = Tuple[str, str, int, str, int, int, str, str, Optional[str], str]
HeaderInput = Union[Mapping[str, str], Iterable[Tuple[str, str]]]


def _status(t: StatusTuple) -> OperationStatus:
    return OperationStatus(*t)
