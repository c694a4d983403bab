"""Type stubs of ``payidem._native``, the PyO3 module over the Rust core."""

from typing import Any, Callable, ClassVar, Dict, Iterable, List, Mapping, Optional, Tuple, Union, final

from payidem._types import AttemptEvent as _AttemptEvent
from payidem._types import Landed as _Landed
from payidem._types import OperationState as _OperationState
from payidem.errors import Error as _Error

__all__ = [
    "ATTEMPT_KINDS",
    "CALL_STEP_KINDS",
    "Call",
    "Client",
    "END_NAMES",
    "LANDED",
    "DECISION_KINDS",
    "LARGE_BODY_BYTES",
    "LOG_LEVELS",
    "MEMORY_JOURNAL",
    "NEXT_ACTIONS",
    "OPERATION_STATES",
    "SETTLED_STATES",
    "SIGNED_HEADERS",
    "UNRESOLVED_STATES",
    "IDEMPOTENCY_KEY_HEADER",
    "Operation",
    "PROTOCOL",
    "REPLY_KINDS",
    "RetryBudget",
    "STEP_KINDS",
    "Signer",
    "Verified",
    "Verifier",
    "__version__",
    "attempt_log_level",
    "body_sha256_hex",
    "call_end_log_level",
    "call_limits_defaults",
    "canonical_string",
    "client_defaults",
    "client_metrics",
    "decide",
    "default_journal_path",
    "derive_journal_key_hex",
    "error_codes",
    "relative_path",
    "resolve_settings",
    "resolve_settings_json",
    "set_event_listener",
    "verifier_metrics",
]

__version__: str
PROTOCOL: str
LARGE_BODY_BYTES: int
MEMORY_JOURNAL: str
"""The core's name of a memory-only journal (``":memory:"``)."""
ATTEMPT_KINDS: List[str]
"""The core's attempt kinds (``payidem.AttemptKind``), in order."""
NEXT_ACTIONS: List[str]
"""The core's next actions (``payidem.NextAction``), in order."""
OPERATION_STATES: List[str]
"""The core's journal states (``payidem.OperationState``), in order."""
SETTLED_STATES: List[str]
"""The journal states the core calls settled (``is_settled``), in order."""
UNRESOLVED_STATES: List[str]
"""The journal states the core calls unresolved (``is_unresolved``)."""
SIGNED_HEADERS: List[str]
"""The headers the core's signer sets on every attempt (never the caller's)."""
IDEMPOTENCY_KEY_HEADER: str
"""The core's name of the idempotency-key header."""
LANDED: List[str]
DECISION_KINDS: List[str]
"""The core's landed values (``payidem.Landed``), in order."""
END_NAMES: List[str]
"""The core's ends of a call (``payidem.EndName``), in order."""
REPLY_KINDS: List[str]
"""What an attempt can produce (``payidem.ReplyKind``)."""
STEP_KINDS: List[str]
"""The machine's steps (``payidem.StepKind``), in order."""
CALL_STEP_KINDS: List[str]
"""A call's steps (``payidem.CallStepKind``), in order."""
LOG_LEVELS: List[str]
"""The core's log-level names (``debug``, ``info``, ``warn``), quietest first."""

_Headers = Union[Mapping[str, str], Iterable[Tuple[str, str]]]
_Response = Tuple[int, List[Tuple[str, str]], bytes, bool]
_Outcome = Tuple[str, str, int, int, List[Tuple[str, str]], bytes, bool, Optional[Exception]]
_Status = Tuple[str, _OperationState, int, str, int, int, str, str, Optional[str], str]
# An operation as the public wrappers hand it over: ``(order_id, method, path,
# body, status_path, idempotency_key)``.
_OperationArgs = Tuple[str, str, str, bytes, Optional[str], Optional[str]]

@final
class Signer:
    """Signs attempts with one key id and secret (16..=1024 bytes)."""

    def __new__(cls, key_id: str, secret: bytes) -> Signer: ...
    @property
    def key_id(self) -> str: ...
    def sign_attempt(
        self,
        method: str,
        path: str,
        body: Optional[bytes] = None,
        idempotency_key: Optional[str] = None,
        timestamp: Optional[int] = None,
        nonce: Optional[str] = None,
    ) -> dict[str, str]:
        """The headers of one signed attempt; a fresh nonce and the current
        time unless given."""
    def sign(
        self,
        method: str,
        path: str,
        timestamp: Union[str, int],
        nonce: str,
        idempotency_key: Optional[str] = None,
        body: Optional[bytes] = None,
    ) -> str:
        """The signature (64 lower-case hex digits) of explicit parts."""

@final
class Verified:
    """What a successful verification established: act on these values, not
    on headers read again."""

    @property
    def key_id(self) -> str: ...
    @property
    def timestamp(self) -> int: ...
    @property
    def idempotency_key(self) -> Optional[str]: ...
    @property
    def nonce(self) -> str: ...

_RefusalParts = Tuple[int, List[Tuple[str, str]], bytes]

@final
class Verifier:
    """Verifies signed requests for a set of key ids, refusing replays."""

    def __new__(
        cls,
        keys: dict[str, List[bytes]],
        window_seconds: int = 300,
        nonce_capacity_per_key: int = 4000000,
        nonce_capacity_total: Optional[int] = None,
        replay_store: Optional[str] = None,
    ) -> Verifier: ...
    @property
    def window_seconds(self) -> int: ...
    @property
    def nonce_capacity_total(self) -> int: ...
    def add_key(self, key_id: str, secrets: Iterable[bytes]) -> None: ...
    def remove_key(self, key_id: str) -> None: ...
    def set_secrets(self, key_id: str, secrets: Iterable[bytes]) -> None: ...
    def verify(
        self,
        method: str,
        path: str,
        headers: _Headers,
        body: Optional[bytes] = None,
        now: Optional[int] = None,
    ) -> Verified:
        """Raises the ``VerificationError`` of the protocol's answer."""
    VERIFICATION_CODES: ClassVar[Tuple[str, ...]]
    """Every code ``verify`` raises, in number order, as the core lists them."""
    @staticmethod
    def refusal(code: str, message: str, server_time: Optional[int] = None) -> _RefusalParts:
        """The core's HTTP refusal ``(status, headers, body)`` of this error."""
    @staticmethod
    def body_too_large_refusal(limit: int) -> _RefusalParts:
        """The core's 413 ``payload_too_large`` refusal."""
    @staticmethod
    def bad_request_refusal(why: str) -> _RefusalParts:
        """The core's 400 ``bad_request`` refusal."""

@final
class Client:
    """The core's client; ``payidem.Client`` is the public face."""

    def __new__(
        cls,
        base_url: str,
        key_id: str,
        secret: bytes,
        *,
        journal: Optional[str] = None,
        on_attempt: Optional[Callable[[_AttemptEvent], object]] = None,
        proxy: Optional[str] = None,
        ca_bundle: Optional[str] = None,
        client_cert: Optional[str] = None,
        client_key: Optional[str] = None,
        journal_key: Optional[bytes] = None,
        **settings: Union[float, bool, None],
    ) -> Client:
        """``settings``: ``payidem.Client``'s other setting keywords
        (``connect_timeout``, ``max_attempts``, ...; the core's list). Every
        option absent or ``None`` keeps the core's default."""
    @property
    def key_id(self) -> str: ...
    @property
    def closed(self) -> bool: ...
    def close(self) -> None: ...
    def execute(
        self,
        operation: _OperationArgs,
        *,
        deadline: Optional[float],
        cancel: Optional[Callable[[], object]],
    ) -> _Outcome: ...
    def resume(
        self,
        order_id: str,
        *,
        deadline: Optional[float],
        cancel: Optional[Callable[[], object]],
    ) -> _Outcome: ...
    def status(self, order_id: str) -> Optional[_Status]: ...
    def list_unknown(self) -> List[_Status]: ...
    def outbox_insert(
        self, operation: _OperationArgs, *, paramstyle: str
    ) -> Tuple[str, List[Union[str, bytes, None]]]: ...
    def take_over(self, limit: int) -> List[Tuple[str, Union[_Outcome, _Error]]]: ...
    def take_over_loop(self, batch: int, idle: float, stop: Callable[[], object]) -> int: ...
    def get(self, path: str) -> _Response: ...
    def purge_settled(self) -> int: ...

def canonical_string(
    method: str,
    path: str,
    timestamp: Union[str, int],
    nonce: str,
    idempotency_key: Optional[str] = None,
    body: Optional[bytes] = None,
) -> str:
    """``method\\npath\\ntimestamp\\nnonce\\nidempotency_key\\nbody_sha256``."""

def body_sha256_hex(body: bytes) -> str:
    """The body's SHA-256 as 64 lower-case hex digits."""

def client_defaults() -> Dict[str, Any]:
    """The core's default client settings (``ClientConfig::new``) by
    ``payidem.Client`` keyword; durations in seconds. Its keys and their
    types are the fields of ``payidem.ClientDefaults``, which takes it
    whole (a key either lacks is a ``TypeError`` at import)."""

def resolve_settings(kind: str, **kwargs: object) -> str:
    """Every setting's effective value (the core's settings document, JSON)
    for the keywords of ``kind``: ``"client"``, ``payidem.Client``'s (no
    journal is opened), or ``"start"``, ``payidem.Operation``'s limit
    keywords (the start object's settings)."""

def resolve_settings_json(kind: str, doc: str) -> str:
    """The core's settings rules on a JSON document (``kind`` ``"client"``
    or ``"start"``): every setting's effective value, as JSON."""

def error_codes() -> List[Tuple[int, str, Optional[int], bool]]:
    """Every error code of the core, in number order: ``(number, name,
    http_status, final)``."""

def client_metrics(client: Client, prometheus: bool = False) -> str:
    """The client's metrics as JSON, or Prometheus text (format 0.0.4)."""

def verifier_metrics(verifier: Verifier, prometheus: bool = False) -> str:
    """The verifier's metrics as JSON, or Prometheus text (format 0.0.4)."""

def attempt_log_level(attempt: int, next: str, status: Optional[int] = None) -> str:
    """The core's level name of an attempt (``debug``, ``info``, ``warn``)."""

def call_end_log_level(end: str, attempts: int) -> str:
    """The core's level name of a call's end."""

def set_event_listener(client: Client, callback: Optional[Callable[[str], object]]) -> None:
    """Sets (or removes) the callable receiving each event of the client as
    the core's event JSON."""

def derive_journal_key_hex(secret: bytes) -> str:
    """The journal key a client derives from ``secret``, in hex."""

def default_journal_path() -> str:
    """The durable default journal of this user, from ``XDG_STATE_HOME`` or
    ``HOME`` as they are now; raises ``JournalError`` when neither is an
    absolute path."""

def decide(
    kind: str,
    outcome: str,
    status: Optional[int] = None,
    error_code: Optional[str] = None,
    headers: Optional[_Headers] = None,
    has_status_path: bool = False,
    now: Optional[int] = None,
) -> Tuple[str, bool, Optional[str], str, Optional[int], Optional[int]]:
    """The decision after one attempt of ``kind`` (``operation`` or
    ``status_query``, the core's attempt kind names)."""

_Attempt = Tuple[str, int, str, str, List[Tuple[str, str]], bytes]
_ResponseOrNone = Optional[_Response]
_End = Tuple[str, bool, str, str, _ResponseOrNone, Optional[str], object]
_Reaction = Tuple[str, Optional[float], Optional[int], Optional[str], str]
# What ``payidem.Reply`` hands over: ``(kind, status, headers, body, reason)``.
_Reply = Tuple[str, Optional[int], _Headers, bytes, str]

@final
class RetryBudget:
    """A retry token bucket shared by calls: retries spend, successes
    refund. Settings left ``None`` are the core's defaults."""

    def __new__(
        cls,
        capacity: Optional[int] = None,
        retry_cost: Optional[int] = None,
        timeout_cost: Optional[int] = None,
        success_refund: Optional[int] = None,
    ) -> RetryBudget: ...
    @property
    def capacity(self) -> int: ...
    @property
    def retry_cost(self) -> int: ...
    @property
    def timeout_cost(self) -> int: ...
    @property
    def success_refund(self) -> int: ...
    @property
    def available(self) -> int:
        """Tokens left now."""

@final
class Operation:
    """The core's operation state machine; ``payidem.Operation`` is the
    public face."""

    def __new__(
        cls,
        order_id: str,
        method: str,
        path: str,
        body: bytes,
        *,
        idempotency_key: Optional[str],
        status_path: Optional[str],
        state: str,
        attempts: int,
        created_at: int,
        now: int,
        first_recorded: bool = False,
        clock_offset: int = 0,
        clock_trusted: bool = True,
        retry_budget: Optional[RetryBudget] = None,
        **limits: Optional[float],
    ) -> Operation:
        """``limits``: ``payidem.Operation``'s limit keywords
        (``max_attempts``, ``backoff_base``, ...; the core's list)."""
    @property
    def order_id(self) -> str: ...
    @property
    def idempotency_key(self) -> str: ...
    @property
    def attempts(self) -> int: ...
    @property
    def landed(self) -> _Landed: ...
    @property
    def clock_offset(self) -> int: ...
    def poll(self, signer: Signer, now: int, elapsed: float) -> Tuple[object, ...]:
        """``("persist", attempt, first)``, ``("send", attempt)``,
        ``("wait", seconds)`` or ``("end", end)``."""
    def persisted(self) -> None: ...
    def handle(self, reply: _Reply, *, now: int, elapsed: float) -> _Reaction: ...
    def abandon(self, reason: str) -> _End: ...

@final
class Call:
    """The core's ``client::Call``; ``payidem.Call`` is the public face."""

    @staticmethod
    def begin(client: Client, operation: _OperationArgs, *, deadline: Optional[float]) -> Call: ...
    @staticmethod
    def resume(client: Client, order_id: str, *, deadline: Optional[float]) -> Call: ...
    @property
    def order_id(self) -> str: ...
    @property
    def idempotency_key(self) -> str: ...
    @property
    def done(self) -> bool: ...
    @property
    def end(self) -> Optional[Tuple[object, ...]]: ...
    def step(
        self, *, now: Optional[int] = None, elapsed: Optional[float] = None
    ) -> Tuple[object, ...]:
        """``("send", attempt, timeout, url)``, ``("wait", seconds)`` or
        ``("done", outcome_or_error)``."""
    def report(
        self, reply: _Reply, *, now: Optional[int] = None, elapsed: Optional[float] = None
    ) -> None: ...
    def cancel(self) -> _Outcome: ...

def call_limits_defaults() -> List[Tuple[str, float]]:
    """The core's default limits of one call, by ``payidem.Operation``
    keyword."""

def relative_path(client: Client, url: str) -> str:
    """``url`` relative to the client's base URL; ``InvalidArgument`` naming
    ``url`` when it is not under it."""
