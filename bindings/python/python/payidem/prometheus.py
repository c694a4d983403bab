"""``payidem.prometheus.Collector``: a client's or a verifier's metrics for
``prometheus_client`` (an optional dependency, imported when the collector
is created).

    from prometheus_client import REGISTRY
    REGISTRY.register(payidem.prometheus.Collector(client))
"""

from __future__ import annotations

from typing import Any, Iterator, List, Tuple

from .metrics import Source, metrics

__all__ = ["Collector"]


class Collector:
    """A ``prometheus_client`` custom collector (``collect()`` yields metric
    families) reading ``source``'s metrics at every scrape. Counter names
    lose their ``_total`` suffix here: ``prometheus_client`` adds it back."""

    def __init__(self, source: Source) -> None:
        import prometheus_client.core  # noqa: F401  (fails early when missing)

        metrics(source)  # a closed client or a wrong type fails here
        self._source = source

    def describe(self) -> List[Any]:
        """Nothing: the registry then calls :meth:`collect` to learn the
        names, and every scrape reads the metrics afresh."""
        return []

    def collect(self) -> Iterator[Any]:
        """One metric family per metric of the snapshot."""
        from prometheus_client.core import (
            CounterMetricFamily,
            GaugeMetricFamily,
            HistogramMetricFamily,
        )

        for metric in metrics(self._source)["metrics"]:
            series = metric["series"]
            names = sorted({k for s in series for k in s.get("labels", {})})
            kind = metric["type"]
            family: Any
            if kind == "counter":
                name = metric["name"]
                if name.endswith("_total"):
                    name = name[: -len("_total")]
                family = CounterMetricFamily(name, metric["help"], labels=names)
                for s in series:
                    family.add_metric(_values(s, names), s.get("value", 0.0))
            elif kind == "gauge":
                family = GaugeMetricFamily(metric["name"], metric["help"], labels=names)
                for s in series:
                    family.add_metric(_values(s, names), s.get("value", 0.0))
            else:
                family = HistogramMetricFamily(metric["name"], metric["help"], labels=names)
                for s in series:
                    buckets: List[Tuple[str, float]] = [
                        (_le(b["le"]), float(b["count"])) for b in s.get("buckets", [])
                    ]
                    buckets.append(("+Inf", float(s.get("count", 0))))
                    family.add_metric(_values(s, names), buckets, s.get("sum", 0.0))
            yield family


def _values(series: Any, names: List[str]) -> List[str]:
    labels = series.get("labels", {})
    return [labels.get(n, "") for n in names]


def _le(bound: float) -> str:
    return repr(float(bound))
