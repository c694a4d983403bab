"""The exceptions payidem raises: one class per stable error code.

Every exception derives from :class:`Error` and carries ``code``, the stable
snake_case name shared with the Rust core, the C ABI and the Go binding.
Verification failures derive from :class:`VerificationError`, whose
``http_status`` is the status a platform answers with.

None of them ever holds a secret.
"""

from __future__ import annotations

from typing import Any, ClassVar, Dict, Optional, Tuple, Type

__all__ = [
    "Error",
    "InvalidArgument",
    "IdempotencyConflict",
    "Rejected",
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
    "error_class",
]


class Error(Exception):
    """Base class of every payidem error.

    ``code`` is the stable machine code, ``message`` the text for people,
    ``http_status`` the HTTP status tied to the error when there is one, and
    ``order_id`` / ``idempotency_key`` name the operation the error concerns
    when it concerns one.
    """

    CODE: ClassVar[str] = "internal_error"

    code: str
    message: str
    http_status: Optional[int]
    order_id: Optional[str]
    idempotency_key: Optional[str]

    def __init__(
        self,
        message: str,
        *,
        http_status: Optional[int] = None,
        order_id: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.code = self.CODE
        self.message = message
        self.http_status = http_status
        self.order_id = order_id
        self.idempotency_key = idempotency_key

    def _context(self) -> Dict[str, Any]:
        return {
            "http_status": self.http_status,
            "order_id": self.order_id,
            "idempotency_key": self.idempotency_key,
        }

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
    field: Optional[str]

    def __init__(self, message: str, *, field: Optional[str] = None, **context: Any) -> None:
        super().__init__(message, **context)
        self.field = field

    def _context(self) -> Dict[str, Any]:
        return {**super()._context(), "field": self.field}


class _WithResponse(Error):
    """An error that may carry the platform's answer (``status``, ``body``)."""

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

    def _context(self) -> Dict[str, Any]:
        return {**super()._context(), "status": self.status, "body": self.body}


class IdempotencyConflict(_WithResponse):
    """The idempotency key is already used with another request (here or by
    the platform). Never retried and never re-keyed: a new key would be a
    second charge."""

    CODE = "idempotency_conflict"


class Rejected(_WithResponse):
    """The platform refused the operation with a final answer; ``status`` and
    ``body`` are that answer (e.g. 402 ``card_declined``)."""

    CODE = "rejected"


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
    and ``code`` goes into the error body."""

    http_status: int

    def __init__(self, message: str, *, http_status: Optional[int] = None, **context: Any) -> None:
        status = http_status if http_status is not None else _VERIFICATION_STATUS[self.CODE]
        super().__init__(message, http_status=status, **context)


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
    server_time: Optional[int]

    def __init__(self, message: str, *, server_time: Optional[int] = None, **context: Any) -> None:
        super().__init__(message, **context)
        self.server_time = server_time

    def _context(self) -> Dict[str, Any]:
        return {**super()._context(), "server_time": self.server_time}


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


_VERIFICATION_STATUS: Dict[str, int] = {
    MissingSignature.CODE: 401,
    UnknownApiKey.CODE: 401,
    TimestampOutOfWindow.CODE: 401,
    InvalidSignature.CODE: 401,
    NonceReused.CODE: 409,
    ReplayCacheFull.CODE: 503,
    IdempotencyKeyRequired.CODE: 400,
}

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
)

_BY_CODE: Dict[str, Type[Error]] = {cls.CODE: cls for cls in _CLASSES}


def error_class(code: str) -> Type[Error]:
    """The exception class for a stable code (``InternalError`` for a code
    this version does not know)."""
    return _BY_CODE.get(code, InternalError)


_ACCEPTS: Dict[Type[Error], Tuple[str, ...]] = {
    InvalidArgument: ("field",),
    IdempotencyConflict: ("status", "body"),
    Rejected: ("status", "body"),
    TimestampOutOfWindow: ("server_time",),
}


def _from_native(
    code: str,
    message: str,
    *,
    field: Optional[str] = None,
    http_status: Optional[int] = None,
    status: Optional[int] = None,
    body: Optional[bytes] = None,
    order_id: Optional[str] = None,
    idempotency_key: Optional[str] = None,
    server_time: Optional[int] = None,
) -> Error:
    """Builds the exception for an error of the Rust core (called by
    ``payidem._native``)."""
    cls = error_class(code)
    extra = {"field": field, "status": status, "body": body, "server_time": server_time}
    context: Dict[str, Any] = {
        "http_status": http_status,
        "order_id": order_id,
        "idempotency_key": idempotency_key,
    }
    for name in _ACCEPTS.get(cls, ()):
        context[name] = extra[name]
    if cls is InternalError and code != InternalError.CODE:
        message = f"{code}: {message}"
    return cls(message, **context)
