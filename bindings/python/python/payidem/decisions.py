"""``payidem.decide``: the protocol's decision after one attempt, for callers
that drive their own HTTP stack."""

from __future__ import annotations

from typing import Iterable, Mapping, Optional, Tuple, Union, cast

from . import _native
from ._types import Decision, DecisionKind, Landed

__all__ = ["decide", "decide_status_query"]


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
    after sending). ``now`` is the platform's clock in Unix seconds (local
    time plus any offset learnt from it; default the local clock), which
    resolves a ``Retry-After`` given as an HTTP date. ``landed`` of the
    answer tells whether the operation may have taken effect.
    """
    return _decision(
        _native.decide("operation", outcome, status, error_code, headers, has_status_path, now)
    )


def decide_status_query(
    outcome: str,
    status: Optional[int] = None,
    error_code: Optional[str] = None,
    headers: Union[Mapping[str, str], Iterable[Tuple[str, str]], None] = None,
    now: Optional[int] = None,
) -> Decision:
    """What to do after one status query (a signed GET of the operation's
    status path): a 2xx settles the operation with that answer (``done``),
    404 means it did not land (``send_operation``: send it again with the
    same key), clock and replay answers as for the operation, anything else
    is asked again after a backoff. Arguments as for :func:`decide`.
    """
    return _decision(_native.decide("status_query", outcome, status, error_code, headers, False, now))


def _decision(t: Tuple[str, bool, Optional[str], str, Optional[int], Optional[int]]) -> Decision:
    kind, replayed, error, landed, seconds, server_time = t
    return Decision(
        kind=cast(DecisionKind, kind),
        landed=cast(Landed, landed),
        replayed=replayed,
        error=error,
        seconds=seconds,
        server_time=server_time,
    )
