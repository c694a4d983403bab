"""The operation state machine, for callers that send with their own HTTP
stack.

Two levels, both the Rust core's own code (no rule is applied in Python):

- :class:`Call` is one call of a :class:`~payidem.Client`'s operation with
  the client's journal, signer, retry budget and clock. It hands out signed
  attempts (:class:`SendStep`), waits (:class:`WaitStep`) and the end
  (:class:`DoneStep`); the caller sends each attempt with any HTTP client and
  reports what happened (:class:`Reply`). The journal is written by the call
  itself: every attempt of the operation is recorded (durably before the
  first) before :meth:`Call.step` hands it out, so a process killed
  mid-call is resumed with :meth:`Client.resume <payidem.Client.resume>`
  (or :meth:`Call.resume`) with the same key. ``payidem.requests`` and
  ``payidem.httpx`` drive it for ``requests`` and ``httpx``.

- :class:`Operation` is the bare machine without a journal: time comes in as
  arguments (``now`` in Unix seconds, ``elapsed`` seconds since the call
  started), so every transition can be replayed exactly; the caller records
  what :class:`PersistStep` asks before confirming with
  :meth:`Operation.persisted`. The conformance vectors
  (``core/tests/vectors/operation-v1.json``) run through it.

    with payidem.Call.begin(client, "ord-1", "POST", "/v1/payments", body,
                            status_path="/v1/payments?order_id=ord-1") as call:
        outcome = call.run(my_send)   # my_send(attempt, timeout) -> Reply

Every re-try is a new attempt, signed afresh (new nonce, timestamp and
signature, same key and body): never let the HTTP stack resend an attempt
by itself (urllib3 ``Retry``, a proxy that replays); the platform refuses a
copy with ``409 nonce_reused``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING,
    Callable,
    Iterable,
    Literal,
    Mapping,
    Optional,
    Tuple,
    Union,
    cast,
)

from . import _native
from ._delegate import NativeResource, NativeWrapper, native_attribute
from ._native import RetryBudget
from ._types import (
    AttemptKind,
    EndName,
    Headers,
    Landed,
    NextAction,
    OperationState,
    Outcome,
    ReplyKind,
    Response,
    _outcome,
)
from .errors import Error

if TYPE_CHECKING:
    from .client import Body, Client

__all__ = [
    "Attempt",
    "Call",
    "CallStep",
    "DoneStep",
    "End",
    "EndStep",
    "Operation",
    "PersistStep",
    "Reaction",
    "Reply",
    "RetryBudget",
    "SendStep",
    "Step",
    "WaitStep",
]

_Pairs = Tuple[Tuple[str, str], ...]
_OutcomeTuple = Tuple[str, str, int, int, list, bytes, bool, Optional[Exception]]  # type: ignore[type-arg]


@dataclass(frozen=True)
class Attempt:
    """One signed request to send now, exactly as given: ``method`` to
    ``path`` (the request target, base URL prefix included; ``url`` is the
    full URL for a :class:`Call`'s attempt), with every header of
    ``headers`` (signature headers included) and ``body``. Add
    ``Content-Type`` for a non-empty body if your stack does not.

    ``kind`` is ``operation`` (the operation's own request: same key and
    body every time) or ``status_query`` (a signed GET of the status path);
    ``number`` counts the operation's attempts over every call (1 = first
    ever)."""

    kind: AttemptKind
    number: int
    method: str
    path: str
    headers: _Pairs
    body: bytes = field(repr=False)
    url: Optional[str] = None

    def header(self, name: str) -> Optional[str]:
        """The value of header ``name`` (case-insensitive), or ``None``."""
        wanted = name.lower()
        return next((v for n, v in self.headers if n.lower() == wanted), None)


@dataclass(frozen=True)
class Reply:
    """What one attempt produced, as the caller saw it. Build it with
    :meth:`response`, :meth:`not_sent` or :meth:`sent_no_response`.

    Say ``not_sent`` only when no byte of the request can have reached the
    platform (DNS, connect, TLS handshake failed); when in doubt it is
    ``sent_no_response``, which keeps the key and asks the status."""

    kind: ReplyKind
    status: Optional[int] = None
    headers: _Pairs = ()
    body: bytes = field(default=b"", repr=False)
    reason: str = ""

    @classmethod
    def response(
        cls,
        status: int,
        headers: Union[Mapping[str, str], Iterable[Tuple[str, str]]] = (),
        body: bytes = b"",
    ) -> Reply:
        """A response came back: its status, headers (every one, in order)
        and body. Whether it was replayed is read from
        ``Idempotent-Replayed`` by the core."""
        items = headers.items() if isinstance(headers, Mapping) else headers
        return cls("response", status, tuple((str(n), str(v)) for n, v in items), bytes(body))

    @classmethod
    def not_sent(cls, reason: str) -> Reply:
        """Nothing reached the platform; ``reason`` is for people."""
        return cls("not_sent", reason=reason)

    @classmethod
    def sent_no_response(cls, reason: str) -> Reply:
        """The request was (or may have been) sent and no answer came."""
        return cls("sent_no_response", reason=reason)


@dataclass(frozen=True)
class Reaction:
    """What the machine decided after an attempt: ``next`` step, the
    ``wait`` in seconds before it (if any), the answer's ``status`` and
    ``error_code`` (if a response came), and whether the operation may have
    ``landed`` over every attempt so far."""

    next: NextAction
    wait: Optional[float]
    status: Optional[int]
    error_code: Optional[str]
    landed: Landed


@dataclass(frozen=True)
class End:
    """How a call ended. ``final`` tells whether the operation is settled for
    good (never sent again) or may be completed by a later call with the
    same key; ``landed`` whether it may have taken effect; ``state`` the
    journal state it leaves. ``response`` is the platform's answer for
    ``succeeded``, ``rejected``, ``conflict`` and ``refused``; ``reason`` says
    why, for the others. :meth:`result` gives the caller's view."""

    name: EndName
    final: bool
    landed: Landed
    state: OperationState
    response: Optional[Response]
    reason: Optional[str]
    _result: Union[Outcome, Error] = field(repr=False, compare=False)

    def result(self) -> Outcome:
        """The :class:`~payidem.Outcome` of a success; otherwise raises the
        error the end stands for (whose ``final`` equals :attr:`final`):
        :class:`~payidem.Rejected`, :class:`~payidem.IdempotencyConflict`,
        :class:`~payidem.KeyExpired`, :class:`~payidem.Refused`,
        :class:`~payidem.TransportError` or :class:`~payidem.OutcomeUnknown`."""
        if isinstance(self._result, Error):
            raise self._result
        return self._result

    @property
    def error(self) -> Optional[Error]:
        """The error of :meth:`result`, or ``None`` for a success."""
        return self._result if isinstance(self._result, Error) else None


@dataclass(frozen=True)
class PersistStep:
    """Record attempt number ``attempt`` in your journal (marking the
    operation in flight), durably when ``first`` (no attempt was ever sent),
    then call :meth:`Operation.persisted`. Nothing is sent before."""

    attempt: int
    first: bool
    kind: Literal["persist"] = field(default="persist", init=False)


@dataclass(frozen=True)
class SendStep:
    """Send ``attempt`` now and report what happened. A :class:`Call`'s
    step gives ``timeout``, the most seconds the exchange may take."""

    attempt: Attempt
    timeout: Optional[float] = None
    kind: Literal["send"] = field(default="send", init=False)


@dataclass(frozen=True)
class WaitStep:
    """Sleep ``seconds`` (or less, to check for cancellation), then ask
    again."""

    seconds: float
    kind: Literal["wait"] = field(default="wait", init=False)


@dataclass(frozen=True)
class EndStep:
    """The call is over: ``end`` says how."""

    end: End
    kind: Literal["end"] = field(default="end", init=False)


@dataclass(frozen=True)
class DoneStep:
    """A :class:`Call` is over and its end is in the journal: ``outcome``
    for a success, else ``error`` (its ``final`` says whether the operation
    is settled). :meth:`result` returns the one or raises the other."""

    outcome: Optional[Outcome]
    error: Optional[Error] = None
    kind: Literal["done"] = field(default="done", init=False)

    def result(self) -> Outcome:
        """The outcome, or raises the error."""
        if self.error is not None:
            raise self.error
        assert self.outcome is not None
        return self.outcome


Step = Union[PersistStep, SendStep, WaitStep, EndStep]
"""A step of :class:`Operation`."""

CallStep = Union[SendStep, WaitStep, DoneStep]
"""A step of :class:`Call`."""


def _result(value: object) -> Union[Outcome, Error]:
    if isinstance(value, Error):
        return value
    return _outcome(cast(_OutcomeTuple, value))


def _attempt(t: Tuple[str, int, str, str, list, bytes], url: Optional[str] = None) -> Attempt:  # type: ignore[type-arg]
    kind, number, method, path, headers, body = t
    return Attempt(
        kind=cast(AttemptKind, kind),
        number=number,
        method=method,
        path=path,
        headers=tuple((n, v) for n, v in headers),
        body=body,
        url=url,
    )


def _end(t: Tuple[object, ...]) -> End:
    name, final, landed, state, response, reason, result = t
    r = None
    if response is not None:
        status, headers, body, replayed = cast(Tuple[int, list, bytes, bool], response)  # type: ignore[type-arg]
        r = Response(status=status, headers=Headers(headers), body=body, replayed=replayed)
    return End(
        name=cast(EndName, name),
        final=bool(final),
        landed=cast(Landed, landed),
        state=cast(OperationState, state),
        response=r,
        reason=cast(Optional[str], reason),
        _result=_result(result),
    )


def _native_reply(reply: Reply) -> Tuple[str, Optional[int], _Pairs, bytes, str]:
    if not isinstance(reply, Reply):
        raise TypeError(f"reply must be a payidem.operation.Reply, not {type(reply).__name__}")
    return (reply.kind, reply.status, reply.headers, reply.body, reply.reason)


def _freeze(body: Body) -> bytes:
    from .client import freeze_body

    return freeze_body(body)


class Operation(NativeWrapper):
    """One call of one operation driven by the core's state machine, with
    no journal and no clock of its own: for callers that keep their own
    journal, and for tests that replay exact sequences.

    The operation is checked and frozen (``body`` as by
    :func:`~payidem.freeze_body`; the key is ``create-{order_id}`` unless
    ``idempotency_key`` is given). The call starts from what your journal
    knows: ``state`` (an :data:`~payidem.OperationState`), ``attempts`` made
    so far and ``created_at`` (Unix seconds the key was made; the key's age
    decides whether it may still be sent). An ``in_flight`` or ``unknown``
    operation asks its status first when it has a ``status_path``.
    ``first_recorded`` says your journal recorded the first attempt as it
    opened the operation (``in_flight`` with 1 attempt) and it was not sent:
    it is sent without a first ``persist`` step, and a call that ends before
    sending it asks for a ``persist`` of 0 attempts before its end.

    Limits left ``None`` are the core's defaults (those of
    :class:`~payidem.Client`): ``max_attempts``, ``backoff_base``,
    ``backoff_cap``, ``deadline``, ``key_retention``, ``max_clock_offset``
    (seconds). ``clock_offset`` is the offset learnt so far (seconds added to
    the local clock when signing); ``clock_trusted`` whether clock answers
    may be believed (false over plain http to a non-loopback host);
    ``retry_budget`` a :class:`RetryBudget` shared between calls.

    Time is an input: ``now`` (local Unix seconds, default the clock) and
    ``elapsed`` (seconds since the call started, default measured from when
    this object was made; rounded to the nanosecond).
    """

    def __init__(
        self,
        order_id: str,
        method: str,
        path: str,
        body: Body,
        *,
        idempotency_key: Optional[str] = None,
        status_path: Optional[str] = None,
        state: OperationState = "pending",
        attempts: int = 0,
        created_at: Optional[int] = None,
        now: Optional[int] = None,
        first_recorded: bool = False,
        max_attempts: Optional[int] = None,
        backoff_base: Optional[float] = None,
        backoff_cap: Optional[float] = None,
        deadline: Optional[float] = None,
        key_retention: Optional[float] = None,
        max_clock_offset: Optional[float] = None,
        clock_offset: int = 0,
        clock_trusted: bool = True,
        retry_budget: Optional[RetryBudget] = None,
    ) -> None:
        now = int(time.time()) if now is None else now
        self._started = time.monotonic()
        self._native = _native.Operation(
            order_id,
            method,
            path,
            _freeze(body),
            idempotency_key=idempotency_key,
            status_path=status_path,
            state=state,
            attempts=attempts,
            created_at=now if created_at is None else created_at,
            now=now,
            first_recorded=first_recorded,
            max_attempts=max_attempts,
            backoff_base=backoff_base,
            backoff_cap=backoff_cap,
            deadline=deadline,
            key_retention=key_retention,
            max_clock_offset=max_clock_offset,
            clock_offset=clock_offset,
            clock_trusted=clock_trusted,
            retry_budget=retry_budget,
        )

    def _time(self, now: Optional[int], elapsed: Optional[float]) -> Tuple[int, float]:
        return (
            int(time.time()) if now is None else now,
            time.monotonic() - self._started if elapsed is None else elapsed,
        )

    order_id: native_attribute[str] = native_attribute("The operation's order id.")
    idempotency_key: native_attribute[str] = native_attribute("The frozen idempotency key.")
    attempts: native_attribute[int] = native_attribute("Attempts over every call so far.")
    landed: native_attribute[Landed] = native_attribute("Whether an attempt may have taken effect, over every call.")
    clock_offset: native_attribute[int] = native_attribute("The clock offset in force, in seconds.")

    def poll(
        self, signer: _native.Signer, *, now: Optional[int] = None, elapsed: Optional[float] = None
    ) -> Step:
        """What to do next. After a :class:`PersistStep` confirm with
        :meth:`persisted`; after a :class:`SendStep` report with
        :meth:`handle` before polling again (polling first ends the call:
        that attempt's outcome is unknown)."""
        if not isinstance(signer, _native.Signer):
            raise TypeError(f"signer must be a payidem.Signer, not {type(signer).__name__}")
        t = self._native.poll(signer, *self._time(now, elapsed))
        kind = t[0]
        if kind == "persist":
            return PersistStep(attempt=cast(int, t[1]), first=cast(bool, t[2]))
        if kind == "send":
            return SendStep(_attempt(cast(Tuple[str, int, str, str, list, bytes], t[1])))  # type: ignore[type-arg]
        if kind == "wait":
            return WaitStep(cast(float, t[1]))
        return EndStep(_end(cast(Tuple[object, ...], t[1])))

    def persisted(self) -> None:
        """Confirms the record the last :class:`PersistStep` asked for."""
        self._native.persisted()

    def handle(
        self, reply: Reply, *, now: Optional[int] = None, elapsed: Optional[float] = None
    ) -> Reaction:
        """Reports the result of the attempt last handed out; returns the
        machine's decision."""
        t_now, t_elapsed = self._time(now, elapsed)
        nxt, wait, st, code, landed = self._native.handle(_native_reply(reply), now=t_now, elapsed=t_elapsed)
        return Reaction(
            next=cast(NextAction, nxt),
            wait=wait,
            status=st,
            error_code=code,
            landed=cast(Landed, landed),
        )

    def abandon(self, reason: str) -> End:
        """Ends the call now, as a cancel does: ``unknown`` if an attempt may
        have landed, else ``not_sent`` or ``refused``; the key is kept."""
        return _end(self._native.abandon(reason))


class Call(NativeResource):
    """One call of a :class:`~payidem.Client`'s operation whose attempts the
    caller sends with its own HTTP client: the same checks, journal, signer,
    retry budget, clock offset and ``on_attempt`` events as
    :meth:`Client.execute <payidem.Client.execute>`, which is this plus the
    client's own transport.

    Start it with :meth:`begin` (a new or known operation) or :meth:`resume`
    (an unsettled operation of the journal). Then loop: :meth:`step` gives a
    :class:`SendStep` (send ``attempt`` to ``attempt.url`` within
    ``timeout`` seconds, then :meth:`report` a :class:`Reply`), a
    :class:`WaitStep` (sleep) or a :class:`DoneStep` (over; the journal holds
    the end). :meth:`run` does the loop for a ``send`` function.

    A call that is not finished holds the operation's lease (another call
    gets :class:`~payidem.OperationBusy`): end it with :meth:`cancel`, or
    use it as a context manager, which cancels it on exit if it is not done.
    A call garbage-collected before its end is abandoned the same way.
    ``step``, ``report``, ``begin`` and ``cancel`` release the GIL (they may
    write the journal). One call is not meant to be driven by two threads at
    once (it is safe, but the steps interleave).
    """

    __slots__ = ("_native",)

    def __init__(self, native: _native.Call) -> None:
        """Internal: use :meth:`begin` or :meth:`resume`."""
        if not isinstance(native, _native.Call):
            raise TypeError("use payidem.Call.begin(...) or payidem.Call.resume(...)")
        self._native = native

    @classmethod
    def begin(
        cls,
        client: Client,
        order_id: str,
        method: str,
        path: str,
        body: Body,
        *,
        status_path: Optional[str] = None,
        idempotency_key: Optional[str] = None,
        deadline: Optional[float] = None,
    ) -> Call:
        """Checks the operation, journals it (or finds it: an order id the
        journal holds with the same request continues that operation, and a
        settled one is done at once, without any network call) and starts a
        call. Arguments as for :meth:`Client.execute
        <payidem.Client.execute>`; ``path`` and ``status_path`` are relative
        to the client's base URL."""
        return cls(
            _native.Call.begin(
                _client_native(client),
                (order_id, method, path, _freeze(body), status_path, idempotency_key),
                deadline=deadline,
            )
        )

    @classmethod
    def resume(cls, client: Client, order_id: str, *, deadline: Optional[float] = None) -> Call:
        """Starts a call resuming an unsettled operation of the journal with
        its own key and body (a settled one is done at once)."""
        return cls(_native.Call.resume(_client_native(client), order_id, deadline=deadline))

    order_id: native_attribute[str] = native_attribute("The operation's order id.")
    idempotency_key: native_attribute[str] = native_attribute("The operation's frozen key.")
    done: native_attribute[bool] = native_attribute("Whether the call is over (the next step is a :class:`DoneStep`).")

    @property
    def end(self) -> Optional[End]:
        """How the machine ended the call, once it has (for a cancelled
        call, the end the cancel left); ``None`` while it runs."""
        t = self._native.end
        return None if t is None else _end(t)

    def step(self, *, now: Optional[int] = None, elapsed: Optional[float] = None) -> CallStep:
        """The next step. Asking again before reporting a :class:`SendStep`
        ends the call (that attempt's outcome is unknown).

        ``now`` (Unix seconds) and ``elapsed`` (seconds since the call
        began), given together, are the caller's clocks (a simulation, the
        shared operation vectors): the attempts are signed and the journal
        written at ``now``, the deadline and waits count ``elapsed``; once
        given, the call keeps to them. Without them, the system's clocks."""
        t = self._native.step(now=now, elapsed=elapsed)
        kind = t[0]
        if kind == "send":
            attempt = _attempt(cast(Tuple[str, int, str, str, list, bytes], t[1]), cast(str, t[3]))  # type: ignore[type-arg]
            return SendStep(attempt, cast(float, t[2]))
        if kind == "wait":
            return WaitStep(cast(float, t[1]))
        result = _result(t[1])
        if isinstance(result, Error):
            return DoneStep(None, result)
        return DoneStep(result)

    def report(
        self, reply: Reply, *, now: Optional[int] = None, elapsed: Optional[float] = None
    ) -> None:
        """Reports what the attempt of the last :class:`SendStep` produced
        (``now`` and ``elapsed`` as for :meth:`step`)."""
        self._native.report(_native_reply(reply), now=now, elapsed=elapsed)

    def cancel(self) -> Outcome:
        """Ends the call now and returns its result: raises
        :class:`~payidem.Cancelled` (key kept; resume to learn the outcome if
        an attempt may have landed), unless the call had already ended, whose
        outcome is returned or error raised as it is."""
        return _outcome(self._native.cancel())

    def run(
        self,
        send: Callable[[Attempt, float], Reply],
        *,
        sleep: Callable[[float], object] = time.sleep,
    ) -> Outcome:
        """Drives the call to its end: ``send(attempt, timeout)`` sends one
        attempt and returns its :class:`Reply` (it should catch its stack's
        errors and say whether anything can have been sent); waits use
        ``sleep``. Returns the outcome or raises the end's error. An
        exception from ``send`` or ``sleep`` (e.g. ``KeyboardInterrupt``)
        cancels the call (the key is kept) and propagates."""
        try:
            while True:
                step = self.step()
                if isinstance(step, DoneStep):
                    return step.result()
                if isinstance(step, WaitStep):
                    sleep(step.seconds)
                    continue
                assert step.timeout is not None
                self.report(send(step.attempt, step.timeout))
        except BaseException:
            if not self.done:
                self._cancel_quietly()
            raise

    def _cancel_quietly(self) -> None:
        try:
            self.cancel()
        except Error:
            pass

    def _on_exit(self) -> None:
        if not self.done:
            self._cancel_quietly()


def _client_native(client: Client) -> _native.Client:
    from .client import Client

    if not isinstance(client, Client):
        raise TypeError(f"client must be a payidem.Client, not {type(client).__name__}")
    return client._native


def _relative_path(client: Client, url: str) -> str:
    """``url`` as a path relative to the client's base URL (origin and path
    prefix stripped); :class:`~payidem.InvalidArgument` naming ``url`` when
    it is not under it."""
    return _native.relative_path(_client_native(client), url)
