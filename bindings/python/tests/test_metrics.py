"""Metrics and events in Python: the client's counters match the mock's
oracle during a run with faults, the Prometheus text parses with
prometheus_client's own parser, the prometheus_client collector exposes the
same values, and the logging hooks use the core's level policy."""

from __future__ import annotations

import logging
import urllib.request
from typing import Any, Callable, Dict, List

import pytest

import payidem
from conftest import Mock, new_order, payment, status_path

MakeClient = Callable[..., payidem.Client]

text_string_to_metric_families = pytest.importorskip(
    "prometheus_client.parser"
).text_string_to_metric_families


def mock_verdicts_accepted(mock: Mock) -> float:
    with urllib.request.urlopen(mock.url + "/metrics") as resp:
        assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = resp.read().decode()
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "payidem_verifier_verdicts_total" and s.labels == {"code": "accepted"}:
                return float(s.value)
    return 0.0


def test_metrics_match_the_mock_during_a_run_with_faults(mock: Mock, make_client: MakeClient) -> None:
    accepted_before = mock_verdicts_accepted(mock)
    faulted_before: Dict[str, int] = mock.stats()["faults"]
    mock.faults(timeout_504_after_commit=0.3, error_500_before_commit=0.2)
    events: List[payidem.Event] = []
    client = make_client(on_event=events.append)
    n = 20
    for i in range(n):
        order = new_order("metrics")
        client.execute(order, "POST", "/v1/payments", payment(order, 100 + i), status_path=status_path(order))
    faulted = {k: v - faulted_before.get(k, 0) for k, v in mock.stats()["faults"].items()}
    snap = client.metrics()
    total = payidem.metric_sum
    attempts = "payidem_client_attempts_total"
    assert faulted["timeout_504_after_commit"] > 0 and faulted["error_500_before_commit"] > 0
    assert total(snap, attempts, http_response_status_code="504") == faulted["timeout_504_after_commit"]
    assert total(snap, attempts, http_response_status_code="500", next="retry_later") == faulted["error_500_before_commit"]
    assert total(snap, attempts, kind="status_query") == faulted["timeout_504_after_commit"]
    assert total(snap, "payidem_client_calls_ended_total", end="succeeded") == n
    assert total(snap, "payidem_client_settle_duration_seconds") == n
    assert total(snap, "payidem_client_journal_write_duration_seconds", write="open") == n
    assert total(snap, "payidem_client_unknown_operations") == 0
    # Every signed request the client sent was accepted by the mock's verifier.
    assert mock_verdicts_accepted(mock) - accepted_before == total(snap, attempts)

    # Events: every attempt and every call's end, with the core's levels.
    ends = [e for e in events if e.type == "call_ended"]
    assert len(ends) == n
    assert all(e.end == "succeeded" and e.final and e.landed == "yes" for e in ends)
    assert all(e.level == (logging.DEBUG if e.attempts == 1 else logging.INFO) for e in ends)
    assert len([e for e in events if e.type == "attempt"]) == total(snap, attempts)

    # The Prometheus text parses, with the same values.
    families = {f.name: f for f in text_string_to_metric_families(client.prometheus_text())}
    succeeded = [s for s in families["payidem_client_calls_ended"].samples if s.labels.get("end") == "succeeded"]
    assert [s.value for s in succeeded] == [n]
    settle = families["payidem_client_settle_duration_seconds"]
    assert settle.type == "histogram"
    assert [s.value for s in settle.samples if s.name.endswith("_count")] == [n]


def test_the_collector_exposes_a_client_and_a_verifier_to_prometheus_client(
    mock: Mock, make_client: MakeClient
) -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    client = make_client()
    order = new_order("collector")
    client.execute(order, "POST", "/v1/payments", payment(order))
    verifier = payidem.Verifier({"key_test_1": [b"sk_test_payidem_mock_secret_0001"]})
    registry = CollectorRegistry()
    registry.register(payidem.prometheus.Collector(client))
    registry.register(payidem.prometheus.Collector(verifier))
    assert registry.get_sample_value("payidem_client_calls_ended_total", {"end": "succeeded"}) == 1
    assert (
        registry.get_sample_value(
            "payidem_client_attempts_total",
            {"kind": "operation", "http_request_method": "POST", "http_response_status_code": "201", "next": "settle"},
        )
        == 1
    )
    assert registry.get_sample_value("payidem_client_settle_duration_seconds_count") == 1
    assert registry.get_sample_value("payidem_client_settle_duration_seconds_bucket", {"le": "+Inf"}) == 1
    assert registry.get_sample_value("payidem_verifier_replay_cache_capacity") is not None
    exposed = generate_latest(registry).decode()
    assert "payidem_client_journal_write_duration_seconds_bucket" in exposed
    assert payidem.metrics(verifier)["metrics"][0]["name"] == "payidem_verifier_verdicts_total"
    with pytest.raises(TypeError):
        payidem.prometheus.Collector(object())  # type: ignore[arg-type]
    client.close()
    with pytest.raises(ValueError, match="closed"):
        client.metrics()


def test_the_logging_levels_are_the_cores(mock: Mock, make_client: MakeClient, caplog: pytest.LogCaptureFixture) -> None:
    # Parity: the binding's level names are the core's, mapped one to one.
    assert list(payidem.events.LOG_LEVELS) == payidem._native.LOG_LEVELS
    assert [payidem.events.logging_level(n) for n in payidem._native.LOG_LEVELS] == [
        logging.DEBUG,
        logging.INFO,
        logging.WARNING,
    ]
    cases: List[Any] = [
        (1, "settle", 201, "debug"),
        (2, "settle", 201, "info"),
        (1, "settle", 402, "info"),
        (1, "retry_later", 500, "info"),
        (1, "query_status", 504, "info"),
        (3, "query_later", None, "info"),
        (8, "give_up", 504, "warn"),
    ]
    for attempt, nxt, status, want in cases:
        assert payidem._native.attempt_log_level(attempt, nxt, status) == want
    assert payidem._native.call_end_log_level("succeeded", 1) == "debug"
    assert payidem._native.call_end_log_level("unknown", 3) == "warn"

    # log_attempts logs retries at INFO and the give-up at WARNING.
    mock.faults(error_500_before_commit=1.0)
    logger = logging.getLogger("payidem.test.levels")
    client = make_client(max_attempts=3, on_attempt=payidem.log_attempts(logger), on_event=payidem.log_events(logger))
    order = new_order("levels")
    with caplog.at_level(logging.DEBUG, logger="payidem.test.levels"):
        with pytest.raises(payidem.OutcomeUnknown):
            client.execute(order, "POST", "/v1/payments", payment(order))
    attempt_levels = [r.levelname for r in caplog.records if "attempt=" in r.getMessage() and "ended=" not in r.getMessage()]
    assert attempt_levels[::2] == ["INFO", "INFO", "WARNING"]  # log_attempts
    assert attempt_levels[1::2] == ["INFO", "INFO", "WARNING"]  # log_events, same policy
    ended = [r for r in caplog.records if "ended=unknown" in r.getMessage()]
    assert [r.levelname for r in ended] == ["WARNING"]
