"""End to end against payidem-mock: outcomes, faults, journal, resume."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any, Callable, List

import pytest

import payidem
from conftest import Mock, new_order, payment, status_path

MakeClient = Callable[..., payidem.Client]


def test_execute_creates_one_payment(mock: Mock, make_client: MakeClient) -> None:
    client = make_client()
    order = new_order()
    outcome = client.execute(order, "POST", "/v1/payments", payment(order), status_path=status_path(order))
    assert outcome.status == 201
    assert outcome.order_id == order
    assert outcome.idempotency_key == f"create-{order}"
    assert outcome.attempts == 1
    assert outcome.replayed is False
    assert outcome.json()["order_id"] == order
    assert outcome.header("content-type") == outcome.headers["Content-Type"]
    assert "LOCATION" in outcome.headers
    assert mock.payments_created(order) == 1
    # The same order again answers from the journal: no second request.
    before = mock.stats()["requests"]["by_route"]["POST /v1/payments"]
    again = client.execute(order, "POST", "/v1/payments", payment(order))
    assert again.body == outcome.body
    assert mock.stats()["requests"]["by_route"]["POST /v1/payments"] == before
    status = client.status(order)
    assert status is not None and status.state == "succeeded" and status.settled
    assert status.idempotency_key == f"create-{order}"
    assert status.attempts == 1 and status.created_at <= status.updated_at


def test_dict_body_is_frozen_as_sorted_compact_json(mock: Mock, make_client: MakeClient) -> None:
    client = make_client()
    order = new_order()
    body = {"order_id": order, "currency": "EUR", "amount": 10}
    client.execute(order, "POST", "/v1/payments", body)
    status = client.status(order)
    assert status is not None
    frozen = json.dumps(body, separators=(",", ":"), sort_keys=True).encode()
    assert status.body_sha256 == payidem.body_sha256_hex(frozen)
    assert payidem.freeze_body(body) == frozen
    assert payidem.freeze_body(bytearray(b"{}")) == b"{}"


def test_explicit_key_and_get(mock: Mock, make_client: MakeClient) -> None:
    client = make_client()
    order = new_order()
    outcome = client.execute(order, "POST", "/v1/payments", payment(order), idempotency_key=f"pay.{order}")
    assert outcome.idempotency_key == f"pay.{order}"
    payment_id = outcome.json()["payment_id"]
    response = client.get(f"/v1/payments/{payment_id}")
    assert response.ok and response.status == 200
    assert response.json()["order_id"] == order
    missing = client.get("/v1/payments/pay_missing")
    assert missing.status == 404 and not missing.ok


@pytest.mark.parametrize(
    "fault",
    ["drop_after_commit", "timeout_504_after_commit", "error_500_after_commit", "error_502", "error_500_before_commit"],
)
def test_faults_still_make_exactly_one_payment(mock: Mock, make_client: MakeClient, fault: str) -> None:
    mock.faults(**{fault: 0.5})
    client = make_client()
    orders = [new_order(fault) for _ in range(12)]
    for order in orders:
        outcome = client.execute(order, "POST", "/v1/payments", payment(order), status_path=status_path(order))
        assert outcome.status in (200, 201)
        assert outcome.json()["order_id"] == order
    mock.faults()
    stats = mock.stats()
    for order in orders:
        assert stats["orders"][order]["payments_created"] == 1, order
        assert stats["orders"][order]["duplicate_keys"] == []
    assert stats["faults"].get(fault, 0) > 0


def test_outcome_unknown_then_resume(mock: Mock, make_client: MakeClient, tmp_path: Path) -> None:
    journal = tmp_path / "journal.sqlite3"
    mock.faults(timeout_504_after_commit=1.0)
    client = make_client(journal=journal, max_attempts=2)
    order = new_order()
    with pytest.raises(payidem.OutcomeUnknown) as info:
        client.execute(order, "POST", "/v1/payments", payment(order))
    assert info.value.order_id == order
    assert info.value.idempotency_key == f"create-{order}"
    assert [s.order_id for s in client.list_unknown()] == [order]
    status = client.status(order)
    assert status is not None and status.state == "unknown" and status.unresolved
    client.close()
    mock.faults()
    # A new process (a new client on the same journal) finishes it, with the
    # same key: the platform replays the payment it made.
    with payidem.Client(mock.url, "key_test_1", b"sk_test_payidem_mock_secret_0001", journal=journal) as again:
        outcome = again.resume(order)
        assert outcome.replayed is True and outcome.status == 201
        assert again.list_unknown() == []
    assert mock.payments_created(order) == 1


def test_resume_unknown_reports_each_operation(mock: Mock, make_client: MakeClient) -> None:
    mock.faults(timeout_504_after_commit=1.0)
    client = make_client(max_attempts=1)
    orders = [new_order() for _ in range(3)]
    for order in orders:
        with pytest.raises(payidem.OutcomeUnknown):
            client.execute(order, "POST", "/v1/payments", payment(order))
    mock.faults()
    results = client.resume_unknown()
    assert [order for order, _ in results] == orders
    for order, result in results:
        assert isinstance(result, payidem.Outcome) and result.replayed
        assert mock.payments_created(order) == 1


def test_attempt_events_reach_the_hook_and_logging(
    mock: Mock, make_client: MakeClient, caplog: pytest.LogCaptureFixture
) -> None:
    mock.faults(error_502=1.0)
    events: List[payidem.AttemptEvent] = []
    client = make_client(max_attempts=3, on_attempt=events.append)
    order = new_order()
    with pytest.raises(payidem.OutcomeUnknown):
        client.execute(order, "POST", "/v1/payments", payment(order))
    assert [e.attempt for e in events] == [1, 2, 3]
    assert [e.status for e in events] == [502, 502, 502]
    assert events[0].next == "retry_later" and events[-1].next == "give_up"
    assert all(e.order_id == order and e.kind == "operation" for e in events)
    assert "AttemptEvent(" in repr(events[0])
    mock.faults()
    logger = logging.getLogger("payidem.test")
    logged = make_client(on_attempt=payidem.log_attempts(logger))
    with caplog.at_level(logging.DEBUG, logger="payidem.test"):
        logged.execute(order, "POST", "/v1/payments", payment(order))
    assert any("attempt=1" in r.getMessage() and "status=201" in r.getMessage() for r in caplog.records)


def test_a_raising_hook_never_breaks_a_payment(
    mock: Mock, make_client: MakeClient, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(event: payidem.AttemptEvent) -> None:
        raise RuntimeError("hook bug")

    client = make_client(on_attempt=broken)
    order = new_order()
    with caplog.at_level(logging.ERROR, logger="payidem"):
        outcome = client.execute(order, "POST", "/v1/payments", payment(order))
    assert outcome.status == 201
    assert any("on_attempt hook raised" in r.getMessage() for r in caplog.records)
    assert mock.payments_created(order) == 1


def test_close_is_idempotent_and_a_closed_client_refuses(mock: Mock) -> None:
    with payidem.Client(mock.url, "key_test_1", b"sk_test_payidem_mock_secret_0001", journal=":memory:") as client:
        assert not client.closed
        assert "redacted" in repr(client) and "sk_test" not in repr(client)
    assert client.closed
    client.close()
    with pytest.raises(ValueError, match="closed"):
        client.execute("o-1", "POST", "/v1/payments", b"{}")
    with pytest.raises(ValueError, match="closed"):
        client.status("o-1")
    with pytest.raises(ValueError, match="closed"):
        with client:
            pass


def test_sixteen_threads_share_one_client(mock: Mock, make_client: MakeClient) -> None:
    mock.faults(drop_after_commit=0.2, error_503=0.1)
    client = make_client()
    orders = [new_order("mt") for _ in range(64)]
    results: List[Any] = [None] * len(orders)

    def worker(k: int) -> None:
        for i in range(k, len(orders), 16):
            try:
                results[i] = client.execute(
                    orders[i], "POST", "/v1/payments", payment(orders[i]), status_path=status_path(orders[i])
                )
            except payidem.Error as e:  # pragma: no cover - reported below
                results[i] = e

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    mock.faults()
    stats = mock.stats()
    for order, result in zip(orders, results):
        assert isinstance(result, payidem.Outcome), f"{order}: {result!r}"
        assert stats["orders"][order]["payments_created"] == 1


def test_threads_run_while_a_call_waits(mock: Mock, make_client: MakeClient) -> None:
    """The GIL is released during a call: Python threads keep running."""
    mock.faults(error_503=1.0)  # Retry-After: 1 on every attempt
    client = make_client(max_attempts=2)
    ticks = 0
    done = threading.Event()

    def count() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1

    counter = threading.Thread(target=count)
    counter.start()
    order = new_order()
    with pytest.raises(payidem.OutcomeUnknown):
        client.execute(order, "POST", "/v1/payments", payment(order))
    done.set()
    counter.join()
    assert ticks > 10_000
