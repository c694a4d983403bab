"""Value types: responses, outcomes, attempt events, operation status,
decisions, the client's defaults, and the stable names they use.

Every type here is a frozen dataclass (or a read-only mapping) that users can
build themselves, e.g. in tests; instances compare by value. The ``Literal``
names (:data:`AttemptKind`, :data:`NextAction`, :data:`OperationState`) are
the Rust core's own: importing payidem fails if they ever differ.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import (
    Any,
    FrozenSet,
    Iterable,
    Iterator,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
    cast,
    get_args,
)

from . import _native
from .errors import Error, InvalidArgument

__all__ = [
    "AttemptEvent",
    "AttemptKind",
    "CallStepKind",
    "ClientDefaults",
    "Decision",
    "DecisionKind",
    "EndName",
    "Headers",
    "Landed",
    "NextAction",
    "OperationState",
    "OperationStatus",
    "Outcome",
    "ReplyKind",
    "Response",
    "StepKind",
]

AttemptKind = Literal["operation", "status_query"]
"""What an attempt was: the operation's own request, or a signed GET of its
status path."""

NextAction = Literal[
    "settle",
    "retry_now",
    "retry_later",
    "adjust_clock",
    "query_status",
    "query_later",
    "give_up",
]
"""What the client does after an attempt: ``settle`` (the call is over),
``retry_now`` (re-sign and resend at once), ``retry_later`` (after a backoff
or ``Retry-After``), ``adjust_clock`` (correct the clock offset and resend),
``query_status`` (ask the status path), ``query_later`` (ask it after a
backoff) or ``give_up`` (attempts, deadline or retry budget exhausted)."""

Landed = Literal["no", "maybe", "yes"]
"""Whether an operation may have taken effect: ``no`` (the answer came
before the platform's idempotency step, nothing was sent, or another request
holds the key), ``maybe`` (keep the key, never re-key; if retries run out the
outcome is unknown) or ``yes`` (the platform ran it or runs it)."""

DecisionKind = Literal[
    "done",
    "fail",
    "retry_now",
    "retry_backoff",
    "retry_after",
    "adjust_clock_retry",
    "query_status",
    "send_operation",
]
"""What to do after an attempt (``payidem.decide``,
``payidem.decide_status_query``)."""

OperationState = Literal["pending", "in_flight", "unknown", "succeeded", "rejected", "conflict"]
"""Where an operation stands in the journal: ``pending`` (nothing sent),
``in_flight`` (an attempt may have reached the platform), ``unknown``
(resume it), or settled: ``succeeded``, ``rejected``, ``conflict``."""


EndName = Literal["succeeded", "rejected", "conflict", "refused", "not_sent", "unknown", "key_expired"]
"""How a call driving an operation ended (:class:`payidem.operation.End`):
final (never sent again) ``succeeded``, ``rejected``, ``conflict``,
``key_expired``; not final (the key is kept, a later call may complete it)
``refused`` (nothing happened), ``not_sent``, ``unknown``."""

ReplyKind = Literal["response", "not_sent", "sent_no_response"]
"""What one attempt produced (:class:`payidem.operation.Reply`): a
``response``, nothing sent (``not_sent``: nothing reached the platform), or
sent without an answer (``sent_no_response``: it may have landed)."""

StepKind = Literal["persist", "send", "wait", "end"]
"""The steps of :class:`payidem.operation.Operation`."""

CallStepKind = Literal["send", "wait", "done"]
"""The steps of :class:`payidem.operation.Call`."""


def _check_names(alias: object, core: Sequence[str], what: str) -> None:
    """Raises ``ImportError`` when a ``Literal`` of this package and the
    core's list of names differ (a binding built against another core)."""
    ours = tuple(get_args(alias))
    if ours != tuple(core):
        raise ImportError(
            f"payidem: the {what} names {ours!r} differ from the Rust core's {tuple(core)!r}"
        )


_check_names(AttemptKind, _native.ATTEMPT_KINDS, "attempt kind")
_check_names(NextAction, _native.NEXT_ACTIONS, "next action")
_check_names(OperationState, _native.OPERATION_STATES, "operation state")
_check_names(Landed, _native.LANDED, "landed")
_check_names(DecisionKind, _native.DECISION_KINDS, "decision kind")
_check_names(EndName, _native.END_NAMES, "end")
_check_names(ReplyKind, _native.REPLY_KINDS, "reply kind")
_check_names(StepKind, _native.STEP_KINDS, "step kind")
_check_names(CallStepKind, _native.CALL_STEP_KINDS, "call step kind")

_ATTEMPT_KINDS = frozenset(_native.ATTEMPT_KINDS)
_NEXT_ACTIONS = frozenset(_native.NEXT_ACTIONS)
# The core's is_settled / is_unresolved, read once.
_SETTLED: FrozenSet[str] = frozenset(_native.SETTLED_STATES)
_UNRESOLVED: FrozenSet[str] = frozenset(_native.UNRESOLVED_STATES)


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
    journal_error: Optional[Error] = None
    """Set (a :class:`payidem.errors.JournalError`) when the platform
    answered 2xx but the journal could not record the success: the payment
    was made and this outcome says so. The journal still holds the
    operation unsettled with its key; the next ``execute`` or ``resume`` of
    the order gets the same answer replayed by the platform and records it
    then. ``None`` when the journal recorded the success."""


def _outcome(t: Tuple[str, str, int, int, List[Tuple[str, str]], bytes, bool, Optional[Exception]]) -> Outcome:
    """The :class:`Outcome` of the native layer's outcome tuple."""
    order_id, key, attempts, status, headers, body, replayed, journal_error = t
    return Outcome(
        order_id=order_id,
        idempotency_key=key,
        attempts=attempts,
        status=status,
        headers=Headers(headers),
        body=body,
        replayed=replayed,
        journal_error=cast(Optional[Error], journal_error),
    )


@dataclass(frozen=True, init=False)
class AttemptEvent:
    """What happened in one attempt, as an ``on_attempt`` hook receives it.
    Holds no secret and no body.

    ``attempt`` counts every attempt of the operation over all calls (1 =
    first); ``kind`` and ``next`` are an :data:`AttemptKind` and a
    :data:`NextAction`; ``wait`` is the seconds waited before the next
    attempt, if any; ``status`` and ``error_code`` (the ``error.code`` of
    the platform's JSON error body) are set when a response came,
    ``transport_error`` when none did; ``replayed`` tells whether the
    platform answered from its idempotency store; ``duration`` is the
    attempt's seconds.

    Build one with keywords, e.g. to test a hook::

        AttemptEvent(order_id="ord-1", idempotency_key="create-ord-1",
                     attempt=1, kind="operation", next="settle", status=201)

    A ``kind`` or ``next`` that is not one of the core's names raises
    :class:`~payidem.InvalidArgument` naming the field.
    """

    order_id: str
    idempotency_key: str
    attempt: int
    kind: AttemptKind
    next: NextAction
    wait: Optional[float]
    status: Optional[int]
    error_code: Optional[str]
    transport_error: Optional[str]
    replayed: bool
    duration: float

    def __init__(
        self,
        *,
        order_id: str,
        idempotency_key: str,
        attempt: int,
        kind: AttemptKind,
        next: NextAction,
        wait: Optional[float] = None,
        status: Optional[int] = None,
        error_code: Optional[str] = None,
        transport_error: Optional[str] = None,
        replayed: bool = False,
        duration: float = 0.0,
    ) -> None:
        if kind not in _ATTEMPT_KINDS:
            raise _invalid("kind", f"must be one of {sorted(_ATTEMPT_KINDS)}, not {kind!r}")
        if next not in _NEXT_ACTIONS:
            raise _invalid("next", f"must be one of {sorted(_NEXT_ACTIONS)}, not {next!r}")
        values = dict(
            order_id=order_id,
            idempotency_key=idempotency_key,
            attempt=attempt,
            kind=kind,
            next=next,
            wait=wait,
            status=status,
            error_code=error_code,
            transport_error=transport_error,
            replayed=replayed,
            duration=duration,
        )
        for name, value in values.items():
            object.__setattr__(self, name, value)


def _invalid(name: str, message: str) -> InvalidArgument:
    return InvalidArgument(f"{name}: {message}", field=name)


@dataclass(frozen=True)
class ClientDefaults:
    """The Rust core's default settings of a client (``ClientConfig::new``),
    by the keyword of :class:`~payidem.Client` that sets each. Durations are
    seconds. ``payidem.CLIENT_DEFAULTS`` holds them; ``Client``'s keyword
    defaults are these values, never a copy."""

    connect_timeout: float
    request_timeout: float
    max_attempts: int
    backoff_base: float
    backoff_cap: float
    deadline: float
    key_retention: float
    settled_retention: float
    retry_budget: int
    allow_insecure_http: bool
    proxy_from_env: bool
    max_clock_offset: float


@dataclass(frozen=True)
class OperationStatus:
    """What the journal knows of one operation.

    ``state`` is an :data:`OperationState`: ``pending`` (nothing sent),
    ``in_flight`` (an attempt may have reached the platform), ``unknown``
    (resume it), ``succeeded``, ``rejected`` or ``conflict``. Times are Unix
    seconds.
    """

    order_id: str
    state: OperationState
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
        return self.state in _SETTLED

    @property
    def unresolved(self) -> bool:
        """Whether an attempt may have landed without the outcome being known."""
        return self.state in _UNRESOLVED


@dataclass(frozen=True)
class Decision:
    """The protocol's decision after one attempt (``payidem.decide``,
    ``payidem.decide_status_query``).

    ``kind`` says what to do; ``landed`` whether the operation may have taken
    effect (anything but ``"no"``: keep the key; a ``fail`` with ``"no"`` is a
    refusal before the idempotency step, nothing happened, not final);
    ``replayed`` (done), ``error`` (fail: ``idempotency_conflict`` or
    ``rejected``), ``seconds`` (retry_after) and ``server_time``
    (adjust_clock_retry) complete it.
    """

    kind: DecisionKind
    landed: Landed
    replayed: bool = False
    error: Optional[str] = None
    seconds: Optional[int] = None
    server_time: Optional[int] = None


StatusTuple = Tuple[str, OperationState, int, str, int, int, str, str, Optional[str], str]
HeaderInput = Union[Mapping[str, str], Iterable[Tuple[str, str]]]


def _status(t: StatusTuple) -> OperationStatus:
    return OperationStatus(*t)
