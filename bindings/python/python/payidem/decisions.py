"""``payidem.decide``: the protocol's decision after one attempt, for callers
that drive their own HTTP stack."""

from __future__ import annotations

from typing import Iterable, Mapping, Optional, Tuple, Union

from . import _native
from ._types import Decision

__all__ = ["decide"]


def decide(
    outcome: str,
    status: Optional[int] = None,
    error_code: Optional[str] = None,
    headers: Union[Mapping[str, str], Iterable[Tuple[str, str]], None] = None,
    has_status_path: bool = False,
    now: Optional[int] = None,
) -> Decision:
    """What to do after one attempt (protocol section 4).

    ``outcome`` is ``"response"`` (give ``status``, the ``error.code`` of the
    JSON error body if any, and the response ``headers``), ``"not_sent"``
    (nothing reached the platform) or ``"sent_no_response"`` (timeout or reset
    after sending). ``now`` (Unix seconds, default the local clock) resolves a
    ``Retry-After`` given as an HTTP date.
    """
    kind, replayed, error, unknown, seconds, server_time = _native.decide(
        outcome, status, error_code, headers, has_status_path, now
    )
    return Decision(
        kind=kind,
        replayed=replayed,
        error=error,
        unknown=unknown,
        seconds=seconds,
        server_time=server_time,
    )
