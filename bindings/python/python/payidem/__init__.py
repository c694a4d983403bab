"""payidem: request signing, verification and idempotent retries for a
payment API (protocol v1), backed by the audited payidem Rust core.

    import payidem
    with payidem.Client("https://api.example.com", "key_live_1", secret,
                        journal="payments.sqlite3") as client:
        outcome = client.execute("ord-1001", "POST", "/v1/payments",
                                 {"order_id": "ord-1001", "amount": 1250, "currency": "EUR"},
                                 status_path="/v1/payments?order_id=ord-1001")
        print(outcome.status, outcome.json())

Everything protocol-related runs in Rust (``payidem._native``); this package
adds the Pythonic surface and the exception classes.
"""

from __future__ import annotations

from ._native import (
    PROTOCOL,
    AttemptEvent,
    Signer,
    Verified,
    Verifier,
    body_sha256_hex,
    canonical_string,
)
from ._native import __version__ as __version__
from ._types import Decision, Headers, OperationStatus, Outcome, Response
from .client import Body, Client, freeze_body
from .decisions import decide
from .errors import (
    Cancelled,
    Error,
    IdempotencyConflict,
    IdempotencyKeyRequired,
    InternalError,
    InvalidArgument,
    InvalidSignature,
    JournalError,
    KeyExpired,
    MissingSignature,
    NonceReused,
    OperationBusy,
    OutcomeUnknown,
    Rejected,
    ReplayCacheFull,
    TimestampOutOfWindow,
    TransportError,
    UnknownApiKey,
    VerificationError,
)
from .logs import log_attempts

__all__ = [
    "PROTOCOL",
    "AttemptEvent",
    "Body",
    "Cancelled",
    "Client",
    "Decision",
    "Error",
    "Headers",
    "IdempotencyConflict",
    "IdempotencyKeyRequired",
    "InternalError",
    "InvalidArgument",
    "InvalidSignature",
    "JournalError",
    "KeyExpired",
    "MissingSignature",
    "NonceReused",
    "OperationBusy",
    "OperationStatus",
    "Outcome",
    "OutcomeUnknown",
    "Rejected",
    "ReplayCacheFull",
    "Response",
    "Signer",
    "TimestampOutOfWindow",
    "TransportError",
    "UnknownApiKey",
    "VerificationError",
    "Verified",
    "Verifier",
    "body_sha256_hex",
    "canonical_string",
    "decide",
    "freeze_body",
    "log_attempts",
]
