"""Client events for logs: attempts, call ends and journal failures, each
with the log level of the library's one policy (the Rust core's, the same
in C and Go)."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Union

from . import _native
from ._types import AttemptEvent

__all__ = ["Event", "LOG_LEVELS", "logging_level", "log_events"]

LOG_LEVELS: Dict[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
}
"""The core's level names mapped onto :mod:`logging` levels (a test checks
the names against the core's)."""


def logging_level(name: str) -> int:
    """The :mod:`logging` level of one of the core's level names
    (``debug``, ``info``, ``warn``); ``WARNING`` for any other."""
    return LOG_LEVELS.get(name, logging.WARNING)


@dataclass(frozen=True)
class Event:
    """One event of a :class:`payidem.Client`. Holds no secret and no body.

    ``type`` is ``"attempt"``, ``"call_ended"`` or ``"journal_failed"``;
    ``level`` the :mod:`logging` level of the core's policy: DEBUG for a
    first-attempt success, INFO for retries, backoffs, status queries and a
    success after them, WARNING for a give-up (unknown, key expired,
    refused, nothing sent) and a journal failure. Fields that do not apply
    to the type are ``None``.
    """

    type: str
    level: int
    order_id: str
    idempotency_key: Optional[str] = None
    #: attempt events: number, kind, next action, HTTP status, error code or
    #: transport failure, whether the platform replayed the answer
    attempt: Optional[int] = None
    kind: Optional[str] = None
    next: Optional[str] = None
    status: Optional[int] = None
    error_code: Optional[str] = None
    transport_error: Optional[str] = None
    replayed: Optional[bool] = None
    #: call ends: the end's name, whether it is final, whether it may have
    #: landed (``yes``/``no``/``maybe``), attempts over every call
    end: Optional[str] = None
    final: Optional[bool] = None
    landed: Optional[str] = None
    attempts: Optional[int] = None
    #: journal failures: the write, whether durable, the journal's message
    write: Optional[str] = None
    durable: Optional[bool] = None
    message: Optional[str] = None
    #: seconds the attempt or the call took
    duration: Optional[float] = None

    @staticmethod
    def from_json(text: str) -> "Event":
        """The event the core describes in ``text`` (its event JSON)."""
        raw: Dict[str, Any] = json.loads(text)
        duration_us = raw.get("duration_us")
        return Event(
            type=raw["type"],
            level=logging_level(raw["level"]),
            order_id=raw["order_id"],
            idempotency_key=raw.get("idempotency_key"),
            attempt=raw.get("attempt"),
            kind=raw.get("kind"),
            next=raw.get("next"),
            status=raw.get("http_status"),
            error_code=raw.get("error_code"),
            transport_error=raw.get("transport_error"),
            replayed=raw.get("replayed"),
            end=raw.get("end"),
            final=raw.get("final"),
            landed=raw.get("landed"),
            attempts=raw.get("attempts"),
            write=raw.get("write"),
            durable=raw.get("durable"),
            message=raw.get("message"),
            duration=None if duration_us is None else duration_us / 1e6,
        )


def _listener(hook: Callable[[Event], object]) -> Callable[[str], None]:
    def deliver(text: str) -> None:
        hook(Event.from_json(text))

    return deliver


def _check_names() -> None:
    if list(LOG_LEVELS) != list(_native.LOG_LEVELS):
        raise ImportError(f"payidem: level names {list(LOG_LEVELS)} differ from the core's {_native.LOG_LEVELS}")


_check_names()


def log_events(logger: logging.Logger) -> Callable[[Event], None]:
    """An ``on_event`` hook that logs each event to ``logger`` at its
    level (attempts, call ends, journal failures). The event is attached to
    the record as ``payidem_event``. Nothing secret is logged.

    ``Client(..., on_event=payidem.log_events(logging.getLogger("payidem")))``
    """

    def hook(event: Event) -> None:
        if not logger.isEnabledFor(event.level):
            return
        if event.type == "call_ended":
            logger.log(
                event.level,
                "payidem order=%s key=%s ended=%s final=%s landed=%s attempts=%s duration=%.3fs",
                event.order_id,
                event.idempotency_key,
                event.end,
                event.final,
                event.landed,
                event.attempts,
                event.duration or 0.0,
                extra={"payidem_event": event},
            )
        elif event.type == "journal_failed":
            logger.log(
                event.level,
                "payidem order=%s journal write %s failed: %s",
                event.order_id,
                event.write,
                event.message,
                extra={"payidem_event": event},
            )
        else:
            log_attempt(logger, event.level, event)

    return hook


def log_attempt(logger: logging.Logger, level: int, event: Union[Event, AttemptEvent]) -> None:
    """Logs the one line of an attempt, from an attempt :class:`Event` or an
    :class:`~payidem.AttemptEvent` (which also knows the wait), with the
    event attached as ``payidem_event``."""
    wait = event.wait if isinstance(event, AttemptEvent) else None
    logger.log(
        level,
        "payidem order=%s key=%s attempt=%s kind=%s status=%s error=%s next=%s wait=%s replayed=%s duration=%.3fs",
        event.order_id,
        event.idempotency_key,
        event.attempt,
        event.kind,
        event.status,
        event.error_code or event.transport_error,
        event.next,
        "-" if wait is None else f"{wait:.3f}s",
        event.replayed,
        event.duration or 0.0,
        extra={"payidem_event": event},
    )
