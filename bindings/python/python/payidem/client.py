"""``payidem.Client``: payments that happen once, however often they are retried."""

from __future__ import annotations

import json
import os
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from . import _native
from ._delegate import NativeResource, native_attribute
from ._types import AttemptEvent, ClientDefaults, Headers, OperationStatus, Outcome, Response, _outcome, _status
from .errors import Error, InvalidArgument, _WrongType
from .events import Event, _listener
from .metrics import MetricsSnapshot, metrics, prometheus_text

__all__ = [
    "Client",
    "Body",
    "CLIENT_DEFAULTS",
    "MEMORY",
    "default_journal_path",
    "derive_journal_key",
    "freeze_body",
]

CLIENT_DEFAULTS: ClientDefaults = ClientDefaults(**_native.client_defaults())
"""The Rust core's default settings of a client: the keyword defaults of
:class:`Client` (taken from here, so every language has the same ones)."""

_D = CLIENT_DEFAULTS

Body = Union[bytes, bytearray, memoryview, Dict[str, Any], List[Any]]
"""What ``Client.execute`` accepts as a body."""

MEMORY: str = _native.MEMORY_JOURNAL
"""``":memory:"``: the ``journal`` that keeps operations in memory only.

UNSAFE FOR PRODUCTION. Operations die with the process: a payment whose
process crashes, is killed or is redeployed mid-flight cannot be resumed with
its idempotency key, so the crash guarantee of :class:`Client` is gone. For
tests and throw-away scripts only. (The value comes from the Rust core, the
same name in every language.)
"""


def default_journal_path() -> str:
    """Where ``Client(journal=None)`` keeps its operations for this user, as
    the environment is now: ``$XDG_STATE_HOME/payidem/journal.sqlite3`` when
    ``XDG_STATE_HOME`` is an absolute path, else
    ``$HOME/.local/state/payidem/journal.sqlite3``.

    Nothing is created. Raises :class:`JournalError` when neither variable
    is an absolute path (a service without a home must name its journal).
    """
    return _native.default_journal_path()


def derive_journal_key(secret: bytes) -> bytes:
    """The journal key a client derives from the API secret ``secret`` when
    it is given no ``journal_key=`` of its own (32 bytes; a secret itself,
    never log it).

    A journal is sealed under its key: after the API secret is rotated, a
    journal created under the old one opens only with
    ``journal_key=derive_journal_key(old_secret)``. Raises
    :class:`InvalidArgument` naming ``secret`` when it is not 16 to 1024
    bytes.
    """
    return bytes.fromhex(_native.derive_journal_key_hex(secret))


def freeze_body(body: Body) -> bytes:
    """The exact bytes an operation sends, on every attempt.

    ``bytes`` are taken as they are (``bytearray`` and ``memoryview`` are
    copied once). A ``dict`` or ``list`` is serialised once, as compact JSON
    with sorted keys (``json.dumps(body, separators=(",", ":"),
    sort_keys=True)``, ASCII-only, no NaN or infinity), encoded as UTF-8.
    """
    if isinstance(body, bytes):
        return body
    if isinstance(body, (bytearray, memoryview)):
        return bytes(body)
    if isinstance(body, (dict, list)):
        try:
            text = json.dumps(body, separators=(",", ":"), sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise InvalidArgument(f"body: cannot be serialised as JSON ({e})", field="body") from e
        return text.encode("utf-8")
    raise TypeError(
        f"body must be bytes, a dict or a list, not {type(body).__name__}"
        " (encode text yourself: the bytes are what gets signed)"
    )


def _wrong_type(name: str, what: str, value: object) -> _WrongType:
    """The error for setting ``name`` given ``value``, not ``what``."""
    return _WrongType(f"{name}: must be {what}, not {type(value).__name__}", field=name)


def _text(name: str, value: str) -> str:
    if not isinstance(value, str):
        raise _wrong_type(name, "a str", value)
    return value


def _seconds(name: str, value: Union[int, float]) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _wrong_type(name, "a number of seconds", value)
    return float(value)


def _optional_seconds(name: str, value: Optional[Union[int, float]]) -> Optional[float]:
    return None if value is None else _seconds(name, value)


def _count(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _wrong_type(name, "an int", value)
    return value


def _flag(name: str, value: bool) -> bool:
    if not isinstance(value, bool):
        raise _wrong_type(name, "a bool", value)
    return value


def _optional_text(name: str, value: Optional[str]) -> Optional[str]:
    if value is not None and not isinstance(value, str):
        raise _wrong_type(name, "a str or None", value)
    return value


def _optional_path(name: str, value: Union[str, "os.PathLike[str]", None]) -> Optional[str]:
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise _wrong_type(name, "a path or None", value)
    return os.fsdecode(os.fspath(value))


def _journal_setting(journal: Union[str, "os.PathLike[str]", None]) -> Optional[str]:
    """The ``journal`` argument as the core's setting: ``None`` (the durable
    default), :data:`MEMORY` unchanged, or a file path."""
    if journal is None:
        return None
    if not isinstance(journal, (str, os.PathLike)):
        raise _wrong_type("journal", "a path, ':memory:' or None", journal)
    return os.fsdecode(os.fspath(journal))


class Client(NativeResource):
    """Runs payment operations against the platform with protocol v1:
    every operation gets one idempotency key, frozen with its body in a
    durable journal, and is retried (with the same key) until its outcome is
    known, so a payment happens at most once.

    One client is safe to share between threads; every network call, backoff
    sleep and journal write runs with the GIL released. Use it as a context
    manager, or call :meth:`close` (idempotent). A closed client raises
    ``ValueError``.

    ``journal`` is the SQLite file that keeps operations across crashes and
    restarts. ``None`` (the default, or ``""``) is this user's durable
    default journal, :func:`default_journal_path`
    (``$XDG_STATE_HOME/payidem/journal.sqlite3``, else
    ``$HOME/.local/state/payidem/journal.sqlite3``), its missing directories
    created readable by the owner only (0700) and the file 0600; a path names
    another file (created 0600; its directory must exist). Clients and
    processes that share a journal file share its operations.
    :data:`MEMORY` (``":memory:"``) keeps operations in memory only, which
    loses the crash guarantee: tests only, never production. An unusable
    journal raises :class:`JournalError` naming the path.
    Durations are seconds; every keyword default is the Rust core's
    (:data:`CLIENT_DEFAULTS`). ``on_attempt`` receives an
    :class:`AttemptEvent` after every attempt, from the calling thread; an
    exception it raises is logged to the ``payidem`` logger and never breaks
    the payment (a Ctrl-C while it runs stops the call, as it would anywhere
    else). ``on_event`` receives every :class:`Event` the same way:
    attempts, call ends and journal failures, each with its log level. ``retry_budget`` is the capacity of the retry token bucket
    shared by every call of this client (each retry spends tokens, a retry
    after a timeout more than one after an error answer; successes refund).

    Transport: ``base_url`` must be ``https://`` except for loopback hosts
    (``localhost``, ``127.0.0.0/8``, ``[::1]``) unless
    ``allow_insecure_http=True``; its path prefix is sent and signed. No
    proxy is used unless ``proxy`` (an ``http://`` or ``https://`` URL) is
    given, or ``proxy_from_env=True`` lets ``HTTPS_PROXY`` / ``HTTP_PROXY``
    / ``ALL_PROXY`` / ``NO_PROXY`` in (never ``HTTP_PROXY`` under CGI).
    Servers are checked against the system's trust store, or only against
    the CAs of the PEM file ``ca_bundle``; ``client_cert`` and
    ``client_key`` (PEM files, both or neither) present a client
    certificate (mutual TLS); the key is read once and never shown. A clock
    offset learnt from a ``401 timestamp_out_of_window`` larger than
    ``max_clock_offset`` seconds (0 never adjusts) is not trusted: the call
    fails and the operation is kept.
    Redirects are never followed.

    Every journaled operation carries a MAC over its immutable fields; a
    row that fails it is refused with :class:`JournalError` naming the order
    id, and nothing is sent (docs/journal-integrity.md). ``journal_key``
    (16 to 1024 bytes) is the MAC's key; ``None`` derives it from
    ``secret``. Set it to keep reading operations journaled before a
    rotation of ``secret``. It is never shown.

    ``lease_ttl`` (seconds; ``None``: the deadline plus 30 s, longer than
    any call) is how long a call's lease on an operation holds past its
    last renewal (beyond the request timeout, which every renewal adds so
    that an attempt in flight stays covered) before another call (another
    instance sharing the journal) may take it over. ``lease_heartbeat``
    (seconds, at least 0.1 and shorter than the lease ttl; ``None``: a
    third of it) is how often a call renews its lease while it waits; a
    call that finds its lease lost never sends again
    (:class:`OperationBusy`).

    Every setting is judged by the Rust core's one rule for it, the same in
    every language (core/src/settings): ranges, what 0 means (e.g. a zero
    ``backoff_base`` retries without waiting, a zero ``max_clock_offset``
    never adjusts the clock, a zero ``connect_timeout`` is
    :class:`InvalidArgument`).
    """

    def __init__(
        self,
        base_url: str,
        key_id: str,
        secret: bytes,
        *,
        journal: Union[str, "os.PathLike[str]", None] = None,
        connect_timeout: float = _D.connect_timeout,
        request_timeout: float = _D.request_timeout,
        max_attempts: int = _D.max_attempts,
        backoff_base: float = _D.backoff_base,
        backoff_cap: float = _D.backoff_cap,
        deadline: float = _D.deadline,
        key_retention: float = _D.key_retention,
        settled_retention: float = _D.settled_retention,
        retry_budget: int = _D.retry_budget,
        on_attempt: Optional[Callable[[AttemptEvent], object]] = None,
        on_event: Optional[Callable[[Event], object]] = None,
        allow_insecure_http: bool = _D.allow_insecure_http,
        proxy: Optional[str] = None,
        proxy_from_env: bool = _D.proxy_from_env,
        ca_bundle: Union[str, "os.PathLike[str]", None] = None,
        client_cert: Union[str, "os.PathLike[str]", None] = None,
        client_key: Union[str, "os.PathLike[str]", None] = None,
        max_clock_offset: float = _D.max_clock_offset,
        journal_key: Optional[bytes] = None,
        lease_ttl: Optional[float] = None,
        lease_heartbeat: Optional[float] = None,
    ) -> None:
        if not isinstance(secret, bytes):
            raise TypeError(f"secret must be bytes, not {type(secret).__name__}")
        if journal_key is not None and not isinstance(journal_key, bytes):
            raise _wrong_type("journal_key", "bytes or None", journal_key)
        if on_attempt is not None and not callable(on_attempt):
            raise TypeError("on_attempt must be callable or None")
        if on_event is not None and not callable(on_event):
            raise TypeError("on_event must be callable or None")
        self._native = _native.Client(
            _text("base_url", base_url),
            _text("key_id", key_id),
            secret,
            journal=_journal_setting(journal),
            connect_timeout=_seconds("connect_timeout", connect_timeout),
            request_timeout=_seconds("request_timeout", request_timeout),
            max_attempts=_count("max_attempts", max_attempts),
            backoff_base=_seconds("backoff_base", backoff_base),
            backoff_cap=_seconds("backoff_cap", backoff_cap),
            deadline=_seconds("deadline", deadline),
            key_retention=_seconds("key_retention", key_retention),
            settled_retention=_seconds("settled_retention", settled_retention),
            retry_budget=_count("retry_budget", retry_budget),
            on_attempt=on_attempt,
            allow_insecure_http=_flag("allow_insecure_http", allow_insecure_http),
            proxy=_optional_text("proxy", proxy),
            proxy_from_env=_flag("proxy_from_env", proxy_from_env),
            ca_bundle=_optional_path("ca_bundle", ca_bundle),
            client_cert=_optional_path("client_cert", client_cert),
            client_key=_optional_path("client_key", client_key),
            max_clock_offset=_seconds("max_clock_offset", max_clock_offset),
            journal_key=journal_key,
            lease_ttl=_optional_seconds("lease_ttl", lease_ttl),
            lease_heartbeat=_optional_seconds("lease_heartbeat", lease_heartbeat),
        )
        self._proxy_from_env = bool(proxy_from_env)
        self._proxy = proxy or None
        if on_event is not None:
            _native.set_event_listener(self._native, _listener(on_event))

    def metrics(self) -> MetricsSnapshot:
        """The client's metrics now (shared by every call): attempts by
        kind, HTTP status and next action, calls ended by end, time to
        settle, journal write latency and failures, and the journal's count
        of operations whose outcome is unknown (docs/metrics.md). For
        ``prometheus_client``, see :class:`payidem.prometheus.Collector`."""
        return metrics(self)

    def prometheus_text(self) -> str:
        """The client's metrics in the Prometheus text exposition format
        0.0.4."""
        return prometheus_text(self)

    key_id: native_attribute[str] = native_attribute("The key id this client signs with.")

    @property
    def proxy_from_env(self) -> bool:
        """Whether this client was made with ``proxy_from_env=True``: only
        then do the environment's proxy variables apply to it, and to a
        :class:`payidem.requests.PayidemAdapter` serving it."""
        return self._proxy_from_env

    def _adapter_proxies(self, given: Optional[Dict[str, str]]) -> Dict[str, str]:
        """The proxies an HTTP adapter serving this client uses: those its
        library computed (environment, session, request) when the client
        was made with ``proxy_from_env=True``; else the client's own
        ``proxy`` for every scheme; else none (a direct connection)."""
        if self._proxy_from_env:
            return dict(given or {})
        if self._proxy:
            return {"http": self._proxy, "https": self._proxy}
        return {}

    closed: native_attribute[bool] = native_attribute("Whether :meth:`close` was called.")

    def close(self) -> None:
        """Closes the client; calls still running finish first. Idempotent."""
        self._native.close()

    def _check_usable(self) -> None:
        if self._native.closed:
            raise ValueError("this payidem.Client is closed")

    def _on_exit(self) -> None:
        self.close()

    def execute(
        self,
        order_id: str,
        method: str,
        path: str,
        body: Body,
        *,
        status_path: Optional[str] = None,
        idempotency_key: Optional[str] = None,
        deadline: Optional[float] = None,
        cancel: Optional[Callable[[], object]] = None,
    ) -> Outcome:
        """Runs one business operation to a settled outcome.

        ``body`` is frozen once (see :func:`freeze_body`): those exact bytes
        are journaled and sent on every attempt, and calling ``execute`` again
        with the same ``order_id`` continues the same operation (a settled one
        answers from the journal without any network call). The key is
        ``create-{order_id}`` unless ``idempotency_key`` is given.
        ``status_path`` is where a signed GET tells whether the operation
        landed (e.g. ``/v1/payments?order_id=...``), used when an attempt's
        outcome is unknown. ``deadline`` shortens the client's deadline for
        this call. ``cancel`` is polled between attempts and during waits; a
        true answer ends the call with :class:`~payidem.Cancelled`.

        Ctrl-C (or any signal handler that raises) during a wait or between
        attempts stops the call promptly: the handler's exception (e.g.
        ``KeyboardInterrupt``) propagates with the ``Cancelled`` error as its
        ``__context__``, and the operation stays in the journal with its key
        for :meth:`resume`. An attempt already on the wire finishes first
        (at most ``request_timeout``).

        Raises :class:`~payidem.Rejected`, :class:`~payidem.IdempotencyConflict`
        or :class:`~payidem.KeyExpired` (final: the operation is settled), or,
        with the operation kept with its key (``error.final`` is false),
        :class:`~payidem.Refused` (nothing happened),
        :class:`~payidem.OutcomeUnknown`,
        :class:`~payidem.TransportError` (nothing reached the platform),
        :class:`~payidem.OperationBusy` or :class:`~payidem.Cancelled`; or
        :class:`~payidem.JournalError` or :class:`~payidem.InvalidArgument`.
        """
        frozen = freeze_body(body)
        return _outcome(
            self._native.execute(
                (order_id, method, path, frozen, status_path, idempotency_key),
                deadline=_optional_seconds("deadline", deadline),
                cancel=cancel,
            )
        )

    def resume(
        self,
        order_id: str,
        *,
        deadline: Optional[float] = None,
        cancel: Optional[Callable[[], object]] = None,
    ) -> Outcome:
        """Drives an unsettled operation of the journal again, with its own
        key and body (after a crash or after ``OutcomeUnknown``); a settled one
        answers its stored outcome. An order id the journal does not hold
        raises :class:`~payidem.InvalidArgument` (``field == "order_id"``)."""
        return _outcome(
            self._native.resume(
                order_id,
                deadline=_optional_seconds("deadline", deadline),
                cancel=cancel,
            )
        )

    def status(self, order_id: str) -> Optional[OperationStatus]:
        """The journal's record of an operation, or ``None``."""
        record = self._native.status(order_id)
        return None if record is None else _status(record)

    def list_unknown(self) -> List[OperationStatus]:
        """Operations whose outcome is unknown (``in_flight`` or ``unknown``),
        oldest first."""
        return [_status(r) for r in self._native.list_unknown()]

    def resume_unknown(self) -> List[Tuple[str, Union[Outcome, Error]]]:
        """Resumes every operation whose outcome is unknown; returns each
        order id with its outcome or its error."""
        results: List[Tuple[str, Union[Outcome, Error]]] = []
        for record in self.list_unknown():
            try:
                results.append((record.order_id, self.resume(record.order_id)))
            except Error as e:
                results.append((record.order_id, e))
        return results

    def outbox_insert(
        self,
        order_id: str,
        method: str,
        path: str,
        body: Body,
        *,
        status_path: Optional[str] = None,
        idempotency_key: Optional[str] = None,
        paramstyle: str = "format",
    ) -> Tuple[str, List[Union[str, bytes, None]]]:
        """The SQL statement and its parameters that record an operation as
        pending in a PostgreSQL journal's tables, for the application to run
        in its own database transaction together with its business rows (the
        outbox: both are committed, or neither), e.g.
        ``cursor.execute(sql, params)``. Any client on that journal later
        sends it with :meth:`take_over`, with its key and body unchanged.

        The arguments are those of :meth:`execute`, checked and frozen the
        same way (the base URL's path prefix joins the paths, the key is
        defaulted); nothing is journaled or sent. ``params`` holds seven
        values: order id, idempotency key, method, path, body (``bytes``,
        for a ``bytea``), body SHA-256 (hex), status path (``None`` when
        there is none). ``paramstyle`` is ``"format"`` (``%s``, the DB-API
        style of psycopg) or ``"dollar"`` (``$1``, asyncpg and PostgreSQL
        itself); another value raises :class:`~payidem.InvalidArgument`
        naming ``paramstyle``. The journal's tables must exist (a client
        opened the PostgreSQL journal once); the statement fails with a
        unique violation when the order id or the key is already there.
        """
        frozen = freeze_body(body)
        return self._native.outbox_insert(
            (order_id, method, path, frozen, status_path, idempotency_key), paramstyle=paramstyle
        )

    def take_over(self, limit: int = 100) -> List[Tuple[str, Union[Outcome, Error]]]:
        """Takes over and drives up to ``limit`` unsettled operations of the
        journal that no live call holds (leases free or expired, outbox
        inserts), one after the other, oldest first, each with its own key
        and body; returns each order id with its outcome or its error, in
        the order driven (an empty list when there was nothing to take). An
        operation whose call failed (e.g. :class:`~payidem.OutcomeUnknown`)
        stays unsettled for the next takeover. Several clients (a fleet's
        instances, a sidecar, a cron job) may run it at once on one
        journal: each operation is taken by one of them. Raises
        :class:`~payidem.JournalError` when the journal cannot be asked,
        :class:`~payidem.InvalidArgument` (``field == "limit"``) for a
        ``limit`` outside ``0..=4294967295``."""
        results: List[Tuple[str, Union[Outcome, Error]]] = []
        for order_id, result in self._native.take_over(_count("limit", limit)):
            results.append((order_id, result if isinstance(result, Error) else _outcome(result)))
        return results

    def take_over_loop(self, batch: int = 100, idle: float = 1.0, *, stop: threading.Event) -> int:
        """Runs :meth:`take_over` in a loop, for a sidecar or a worker thread,
        until ``stop`` is set: batches of up to ``batch`` operations (0 counts
        as 1), sleeping ``idle`` seconds when there was nothing to take, but
        never longer than the lease heartbeat (``lease_heartbeat``), so that
        an operation whose holder died is picked up within one heartbeat of
        its lease lapsing; an ``idle`` of 0 sleeps a whole heartbeat, so the
        loop never spins on the journal. A journal that cannot be asked (the database
        restarting) is retried after the same sleep, not raised. The GIL is
        released while it runs; ``stop`` (and Ctrl-C) are looked at between
        operations and during the sleep, not during an operation's call,
        which ends as it would without them. Returns how many operations it
        drove (each one's end is in the journal: :meth:`status`). A signal
        handler's exception (e.g. ``KeyboardInterrupt``) ends the loop and
        propagates. Raises :class:`~payidem.InvalidArgument` for a ``batch``
        outside ``0..=4294967295``, an ``idle`` that is negative or not a
        finite number of seconds, or a ``stop`` without ``is_set``."""
        is_set = getattr(stop, "is_set", None)
        if not callable(is_set):
            raise _wrong_type("stop", "a threading.Event", stop)
        return self._native.take_over_loop(_count("batch", batch), _seconds("idle", idle), is_set)

    def get(self, path: str) -> Response:
        """One signed GET of ``path`` (no journal, no retries), e.g. to read a
        payment. A network failure raises :class:`~payidem.TransportError`."""
        status, headers, body, replayed = self._native.get(path)
        return Response(status=status, headers=Headers(headers), body=body, replayed=replayed)

    def purge_settled(self) -> int:
        """Deletes settled operations older than ``settled_retention``; never
        an unsettled one. Returns how many went."""
        return self._native.purge_settled()
