"""payidem: request signing, verification and idempotent retries for a
payment API (protocol v1), backed by the audited payidem Rust core.

    import payidem
    with payidem.Client("https://api.example.com", "key_live_1", secret) as client:
        outcome = client.execute("ord-1001", "POST", "/v1/payments",
                                 {"order_id": "ord-1001", "amount": 1250, "currency": "EUR"},
                                 status_path="/v1/payments?order_id=ord-1001")
        print(outcome.status, outcome.json())

Operations are journaled durably by default, in
``payidem.default_journal_path()`` (``$XDG_STATE_HOME/payidem/journal.sqlite3``
or ``~/.local/state/payidem/journal.sqlite3``); pass ``journal=`` to name
another file. ``journal=payidem.MEMORY`` (``":memory:"``) loses operations
with the process: tests only.

Everything protocol-related runs in Rust (``payidem._native``); this package
adds the Pythonic surface, the value types and the exception classes. Every
table they share with the core (error codes, state and action names, client
defaults) comes from the core and is checked when the package is imported.
"""

from __future__ import annotations

from ._native import (
    PROTOCOL,
    Signer,
    Verified,
    Verifier,
    body_sha256_hex,
    canonical_string,
)
from ._native import __version__ as __version__
from ._types import (
    AttemptEvent,
    AttemptKind,
    CallStepKind,
    ClientDefaults,
    Decision,
    DecisionKind,
    EndName,
    Headers,
    Landed,
    NextAction,
    OperationState,
    OperationStatus,
    Outcome,
    ReplyKind,
    Response,
    StepKind,
)
from ._control import operation_headers
from .client import (
    CLIENT_DEFAULTS,
    MEMORY,
    Body,
    Client,
    default_journal_path,
    derive_journal_key,
    freeze_body,
)
from .decisions import decide, decide_status_query
from .errors import (
    Cancelled,
    Error,
    ErrorCodeName,
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
    Refused,
    Rejected,
    ReplayCacheFull,
    ReplayStoreUnavailable,
    TimestampOutOfWindow,
    TransportError,
    UnknownApiKey,
    VerificationError,
)
from .logs import log_attempts
from . import prometheus as prometheus
from .events import Event, log_events
from .metrics import MetricsSnapshot, metric_sum, metrics, prometheus_text
from .operation import (
    Attempt,
    Call,
    CallStep,
    DoneStep,
    End,
    EndStep,
    Operation,
    PersistStep,
    Reaction,
    Reply,
    RetryBudget,
    SendStep,
    Step,
    WaitStep,
)

__all__ = [
    "CLIENT_DEFAULTS",
    "PROTOCOL",
    "Attempt",
    "AttemptEvent",
    "AttemptKind",
    "Body",
    "Call",
    "CallStep",
    "CallStepKind",
    "Cancelled",
    "Client",
    "ClientDefaults",
    "Decision",
    "DecisionKind",
    "DoneStep",
    "End",
    "EndName",
    "EndStep",
    "Landed",
    "Error",
    "ErrorCodeName",
    "Headers",
    "IdempotencyConflict",
    "IdempotencyKeyRequired",
    "InternalError",
    "InvalidArgument",
    "InvalidSignature",
    "JournalError",
    "KeyExpired",
    "MEMORY",
    "MissingSignature",
    "NextAction",
    "NonceReused",
    "Operation",
    "OperationBusy",
    "OperationState",
    "OperationStatus",
    "Outcome",
    "OutcomeUnknown",
    "PersistStep",
    "Reaction",
    "Refused",
    "Rejected",
    "ReplayCacheFull",
    "ReplayStoreUnavailable",
    "Reply",
    "ReplyKind",
    "Response",
    "RetryBudget",
    "SendStep",
    "Signer",
    "Step",
    "StepKind",
    "TimestampOutOfWindow",
    "TransportError",
    "UnknownApiKey",
    "VerificationError",
    "Verified",
    "Verifier",
    "WaitStep",
    "body_sha256_hex",
    "canonical_string",
    "decide",
    "decide_status_query",
    "default_journal_path",
    "derive_journal_key",
    "freeze_body",
    "log_attempts",
    "Event",
    "log_events",
    "MetricsSnapshot",
    "metric_sum",
    "metrics",
    "prometheus_text",
    "operation_headers",
]
