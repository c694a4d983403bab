"""The exceptions payidem raises: one class per stable error code.

Every exception derives from :class:`Error` and carries ``code``, the stable
snake_case name shared with the Rust core, the C ABI and the Go binding,
``number``, the code's stable number there, and ``final``, whether the
operation the error concerns is settled for good. Verification failures
derive from :class:`VerificationError`, whose ``http_status`` is the status a
platform answers with. An error that came with the platform's answer carries
its ``http_status`` and, when the answer is the protocol's error body, the
platform's own ``platform_code`` (e.g. ``"card_declined"``) and
``platform_message``; a local error (an invalid argument, a journal error)
has ``http_status`` ``None``: nothing was sent nor answered.

The table of codes is the Rust core's (``payidem._native.error_codes()``):
importing this module fails if a code of the core has no class here, or a
class has a code the core does not know. Numbers, finality and verification
statuses come from that table, never from a copy.

None of them ever holds a secret.
"""

from __future__ import annotations

from typing import Any, ClassVar, Dict, Iterable, Literal, Optional, Tuple, Type, get_args

from . import _native

__all__ = [
    "Error",
    "ErrorCodeName",
    "InvalidArgument",
    "IdempotencyConflict",
    "Rejected",
    "Refused",
    "OutcomeUnknown",
    "KeyExpired",
    "OperationBusy",
    "TransportError",
    "JournalError",
    "Cancelled",
    "InternalError",
    "VerificationError",
    "MissingSignature",
    "UnknownApiKey",
    "TimestampOutOfWindow",
    "InvalidSignature",
    "NonceReused",
    "ReplayCacheFull",
    "IdempotencyKeyRequired",
    "ReplayStoreUnavailable",
    "error_class",
]

ErrorCodeName = Literal[
    "invalid_argument",
    "idempotency_conflict",
    "rejected",
    "outcome_unknown",
    "key_expired",
    "operation_busy",
    "transport_error",
    "journal_error",
    "missing_signature",
    "unknown_api_key",
    "timestamp_out_of_window",
    "invalid_signature",
    "nonce_reused",
    "replay_cache_full",
    "idempotency_key_required",
    "internal_error",
    "cancelled",
    "refused",
    "replay_store_unavailable",
]
"""Every stable error code, in the core's number order (1, 2, ...)."""


class Error(Exception):
    """Base class of every payidem error.

    ``code`` is the stable machine code, ``message`` the text for people,
    ``http_status`` the platform's HTTP status for an error that came with its
    answer or the status a verifier answers with (``None`` for a local
    error), ``platform_code`` / ``platform_message`` the platform's error code
    and message read by the core from that answer's error body (bounded,
    control characters escaped; ``None`` without one), and
    ``order_id`` / ``idempotency_key`` name the operation the error concerns
    when it concerns one. ``number`` is the code's stable number (the C ABI's
    result and Go's code) and ``final`` tells whether the operation is
    settled for good (never sent again, ``execute``/``resume`` answer the same
    error) or may still be completed by ``execute``/``resume``.
    """

    CODE: ClassVar[ErrorCodeName] = "internal_error"
    #: The code's stable number (set from the core's table at import).
    NUMBER: ClassVar[int]
    #: Whether an operation that ended with this code is settled for good
    #: (set from the core's table at import).
    FINAL: ClassVar[bool]
    #: The HTTP status tied to the code, if any (a verifier's answer; set
    #: from the core's table at import).
    HTTP_STATUS: ClassVar[Optional[int]]
    #: The base's attributes beside ``message`` (each a keyword of its
    #: constructor): what pickling keeps and what the core's error fills in.
    _BASE: ClassVar[Tuple[str, ...]] = (
        "http_status",
        "platform_code",
        "platform_message",
        "order_id",
        "idempotency_key",
    )
    #: The attributes this class adds to the base's, likewise.
    _EXTRA: ClassVar[Tuple[str, ...]] = ()

    code: ErrorCodeName
    message: str
    http_status: Optional[int]
    platform_code: Optional[str]
    platform_message: Optional[str]
    order_id: Optional[str]
    idempotency_key: Optional[str]

    def __init__(
        self,
        message: str,
        *,
        http_status: Optional[int] = None,
        platform_code: Optional[str] = None,
        platform_message: Optional[str] = None,
        order_id: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.code = self.CODE
        self.message = message
        self.http_status = http_status
        self.platform_code = platform_code
        self.platform_message = platform_message
        self.order_id = order_id
        self.idempotency_key = idempotency_key

    @property
    def number(self) -> int:
        """The code's stable number, as in the C ABI and Go."""
        return self.NUMBER

    @property
    def final(self) -> bool:
        """Whether the operation is settled for good: ``True`` for
        :class:`Rejected`, :class:`IdempotencyConflict` and
        :class:`KeyExpired`; ``False`` for every other error, whose operation
        (if any) keeps its key and may still be completed."""
        return self.FINAL

    def _context(self) -> Dict[str, Any]:
        return {name: getattr(self, name) for name in self._BASE + self._EXTRA}

    def __reduce__(self) -> Tuple[Any, ...]:
        return (_rebuild, (type(self), self.message, self._context()))

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"


def _rebuild(cls: Type[Error], message: str, context: Dict[str, Any]) -> Error:
    return cls(message, **context)


class InvalidArgument(Error):
    """An input broke its rule; ``field`` names it (e.g. ``"order_id"``)."""

    CODE = "invalid_argument"
    _EXTRA = ("field",)
    field: Optional[str]

    def __init__(self, message: str, *, field: Optional[str] = None, **context: Any) -> None:
        super().__init__(message, **context)
        self.field = field


class _WrongType(InvalidArgument, TypeError):
    """A setting given a value of the wrong Python type: the core's answer
    (``invalid_argument`` naming the setting, as in every language) that is
    also the :class:`TypeError` Python code expects for a wrong type."""


class _WithResponse(Error):
    """An error that may carry the platform's answer (``status``, ``body``)."""

    _EXTRA = ("status", "body")
    status: Optional[int]
    body: Optional[bytes]

    def __init__(
        self,
        message: str,
        *,
        status: Optional[int] = None,
        body: Optional[bytes] = None,
        **context: Any,
    ) -> None:
        super().__init__(message, **context)
        self.status = status
        self.body = body


class IdempotencyConflict(_WithResponse):
    """The idempotency key is already used with another request (here or by
    the platform). Never retried and never re-keyed: a new key would be a
    second charge."""

    CODE = "idempotency_conflict"


class Rejected(_WithResponse):
    """The platform refused the operation with a final answer; ``status`` and
    ``body`` are that answer (e.g. 402 ``card_declined``).

    Final: the operation is settled and never sent again; ``execute`` with the
    same order id answers the same error. Compare :class:`Refused`."""

    CODE = "rejected"


class Refused(_WithResponse):
    """Every attempt of the call was refused before the platform's
    idempotency check (e.g. 401 authentication or 429 rate limiting until
    the retries ran out): nothing happened. ``status`` and ``body`` are the
    last answer.

    NOT final: the operation is kept in the journal with its key, and
    ``execute`` again (once the cause is fixed) or ``resume`` may still
    complete it. Compare :class:`Rejected`."""

    CODE = "refused"


class OutcomeUnknown(Error):
    """The operation may or may not have happened. Its key is kept: call
    ``Client.resume(order_id)`` later to learn the outcome."""

    CODE = "outcome_unknown"


class KeyExpired(Error):
    """The outcome is unknown and the key is older than the platform keeps
    keys: the operation is never sent again. Reconcile it by hand."""

    CODE = "key_expired"


class OperationBusy(Error):
    """Another thread or process is driving the same operation right now."""

    CODE = "operation_busy"


class TransportError(Error):
    """A network failure; for an operation, nothing reached the platform and
    the operation is kept with its key."""

    CODE = "transport_error"


class JournalError(Error):
    """The journal could not be opened, read or written."""

    CODE = "journal_error"


class Cancelled(Error):
    """The call was cancelled (``cancel`` callable, or the context of a
    ``KeyboardInterrupt``). The operation keeps its key; resume it."""

    CODE = "cancelled"


class InternalError(Error):
    """A broken invariant inside payidem; never expected."""

    CODE = "internal_error"


class VerificationError(Error):
    """A request failed verification; ``http_status`` is the answer to send
    (the code's status from the core's table when none is given) and
    ``code`` goes into the error body."""

    http_status: int

    def __init__(self, message: str, *, http_status: Optional[int] = None, **context: Any) -> None:
        super().__init__(message, http_status=http_status if http_status is not None else self.HTTP_STATUS, **context)


class MissingSignature(VerificationError):
    """A signature header is missing, repeated or malformed (401)."""

    CODE = "missing_signature"


class UnknownApiKey(VerificationError):
    """The key id in ``X-Api-Key`` is not known (401)."""

    CODE = "unknown_api_key"


class TimestampOutOfWindow(VerificationError):
    """The timestamp is outside the window (401); ``server_time`` is the
    server's clock, to send back in ``X-Server-Time``."""

    CODE = "timestamp_out_of_window"
    _EXTRA = ("server_time",)
    server_time: Optional[int]

    def __init__(self, message: str, *, server_time: Optional[int] = None, **context: Any) -> None:
        super().__init__(message, **context)
        self.server_time = server_time


class InvalidSignature(VerificationError):
    """The signature matches no active secret of the key id (401)."""

    CODE = "invalid_signature"


class NonceReused(VerificationError):
    """The nonce was already used inside the window (409)."""

    CODE = "nonce_reused"


class ReplayCacheFull(VerificationError):
    """The replay cache is full and fails closed (503)."""

    CODE = "replay_cache_full"


class IdempotencyKeyRequired(VerificationError):
    """A POST carried no ``Idempotency-Key`` (400)."""

    CODE = "idempotency_key_required"


class ReplayStoreUnavailable(VerificationError):
    """The verifier's shared replay store (Redis) could not claim the nonce:
    unreachable, timed out, out of memory, or restarted after the request was
    signed (its epoch guard). Verification fails closed (503, answered with
    ``Retry-After``); nothing was accepted."""

    CODE = "replay_store_unavailable"


_CLASSES: Tuple[Type[Error], ...] = (
    InvalidArgument,
    IdempotencyConflict,
    Rejected,
    OutcomeUnknown,
    KeyExpired,
    OperationBusy,
    TransportError,
    JournalError,
    MissingSignature,
    UnknownApiKey,
    TimestampOutOfWindow,
    InvalidSignature,
    NonceReused,
    ReplayCacheFull,
    IdempotencyKeyRequired,
    InternalError,
    Cancelled,
    Refused,
    ReplayStoreUnavailable,
)

_CodeRow = Tuple[int, str, Optional[int], bool]


def _class_table(classes: Iterable[Type[Error]], core: Iterable[_CodeRow]) -> Dict[str, Type[Error]]:
    """The class of every code of ``core`` (the core's ``(number, name,
    http_status, final)`` rows), each class given its ``NUMBER``, ``FINAL``
    and ``HTTP_STATUS``. Raises ``ImportError`` when a code has no class, a
    class has a code the core lacks, two classes share a code, or
    :data:`ErrorCodeName` differs from the core's names."""
    rows = list(core)
    by_code: Dict[str, Type[Error]] = {}
    for cls in classes:
        if cls.CODE in by_code:
            raise ImportError(
                f"payidem.errors: {by_code[cls.CODE].__name__} and {cls.__name__} share code {cls.CODE!r}"
            )
        by_code[cls.CODE] = cls
    names = [name for _, name, _, _ in rows]
    missing = [name for name in names if name not in by_code]
    extra = sorted(set(by_code) - set(names))
    if missing or extra:
        raise ImportError(
            "payidem.errors does not match the Rust core's error codes: "
            f"no class for {missing}, classes for unknown codes {extra}"
        )
    if tuple(get_args(ErrorCodeName)) != tuple(names):
        raise ImportError(f"payidem.errors: ErrorCodeName differs from the Rust core's codes {names}")
    for number, name, http_status, final in rows:
        cls = by_code[name]
        cls.NUMBER, cls.FINAL, cls.HTTP_STATUS = number, final, http_status
    return by_code


_BY_CODE: Dict[str, Type[Error]] = _class_table(_CLASSES, _native.error_codes())
# The base class stands for internal_error when raised as it is.
Error.NUMBER, Error.FINAL, Error.HTTP_STATUS = (
    InternalError.NUMBER,
    InternalError.FINAL,
    InternalError.HTTP_STATUS,
)


def error_class(code: str) -> Type[Error]:
    """The exception class for a stable code (``InternalError`` for a code
    this version does not know)."""
    return _BY_CODE.get(code, InternalError)


def _from_native(code: str, message: str, **attributes: Any) -> Error:
    """Builds the exception for an error of the Rust core (called by
    ``payidem._native`` with every attribute the error holds; the class of
    ``code`` keeps its own, an absent one is ``None``)."""
    cls = error_class(code)
    context = {name: attributes.get(name) for name in cls._BASE + cls._EXTRA}
    if cls is InternalError and code != InternalError.CODE:
        message = f"{code}: {message}"
    return cls(message, **context)
