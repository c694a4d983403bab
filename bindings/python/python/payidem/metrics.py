"""Metrics of a :class:`payidem.Client` or a :class:`payidem.Verifier`, as
the core's snapshot (a dict) or Prometheus text; see docs/metrics.md."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Dict, List, TypedDict, Union, cast

from . import _native

if TYPE_CHECKING:  # typing only; avoids an import cycle
    from .client import Client

__all__ = ["Bucket", "Metric", "MetricsSnapshot", "Series", "metrics", "metric_sum", "prometheus_text"]


class Bucket(TypedDict):
    """A histogram bucket: observations of at most ``le`` seconds
    (cumulative; ``+Inf`` is the series' ``count``)."""

    le: float
    count: int


class Series(TypedDict, total=False):
    """One labelled series: ``value`` for a counter or gauge; ``count``,
    ``sum`` (seconds) and ``buckets`` for a histogram."""

    labels: Dict[str, str]
    value: float
    count: int
    sum: float
    buckets: List[Bucket]


class Metric(TypedDict):
    """One metric family: ``name`` (``payidem_…``), ``type`` (``counter``,
    ``gauge``, ``histogram``), ``help`` and its series."""

    name: str
    type: str
    help: str
    series: List[Series]


class MetricsSnapshot(TypedDict):
    """Every metric of a client or a verifier at one moment."""

    metrics: List[Metric]


Source = Union["Client", _native.Verifier]


def _text(source: Source, prometheus: bool) -> str:
    if isinstance(source, _native.Verifier):
        return _native.verifier_metrics(source, prometheus)
    native = getattr(source, "_native", None)
    if isinstance(native, _native.Client):
        return _native.client_metrics(native, prometheus)
    raise TypeError(f"expected a payidem.Client or payidem.Verifier, not {type(source).__name__}")


def metrics(source: Source) -> MetricsSnapshot:
    """The metrics of ``source`` (a :class:`payidem.Client` or a
    :class:`payidem.Verifier`) now."""
    return cast(MetricsSnapshot, json.loads(_text(source, False)))


def prometheus_text(source: Source) -> str:
    """The metrics of ``source`` in the Prometheus text exposition format
    0.0.4."""
    return _text(source, True)


def metric_sum(snapshot: MetricsSnapshot, name: str, **labels: str) -> float:
    """The metric ``name`` summed over every series whose labels include
    ``labels``: values of a counter or gauge, observation counts of a
    histogram; 0 when nothing matches."""
    total = 0.0
    for metric in snapshot["metrics"]:
        if metric["name"] != name:
            continue
        for series in metric["series"]:
            have = series.get("labels", {})
            if all(have.get(k) == v for k, v in labels.items()):
                total += series["count"] if metric["type"] == "histogram" else series.get("value", 0.0)
    return total
