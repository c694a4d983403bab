"""Feeding attempt events to :mod:`logging`."""

from __future__ import annotations

import logging
from typing import Callable

from typing import Optional

from . import _native
from ._types import AttemptEvent
from .events import log_attempt, logging_level

__all__ = ["log_attempts"]


def log_attempts(
    logger: logging.Logger, level: Optional[int] = None
) -> Callable[[AttemptEvent], None]:
    """An ``on_attempt`` hook that logs one line per attempt to ``logger``
    at the level of the library's one policy (the Rust core's, the same in
    C and Go): DEBUG for a first attempt that succeeded, INFO for retries,
    backoffs, clock adjustments and status queries, WARNING when the client
    gives up. A ``level`` given replaces INFO and DEBUG (a give-up stays
    WARNING). The event itself is attached to the record as
    ``payidem_event``. Nothing secret is logged.

    ``Client(..., on_attempt=payidem.log_attempts(logging.getLogger("payidem")))``
    """

    def hook(event: AttemptEvent) -> None:
        lvl = logging_level(_native.attempt_log_level(event.attempt, event.next, event.status))
        if level is not None and lvl < logging.WARNING:
            lvl = level
        if not logger.isEnabledFor(lvl):
            return
        log_attempt(logger, lvl, event)

    return hook
