"""``payidem.httpx.PayidemTransport`` (and its async twin) end to end
against payidem-mock: every try goes through the wrapped transport, signed
afresh by the core's machine, and a payment whose answers are lost after
commit is made exactly once."""

from __future__ import annotations

import asyncio
from typing import Any, Callable, List

import pytest

import payidem
from conftest import MakeClient, Mock, clear_faults_after_first_try, closed_port_url, holding_mock, new_order, payment, status_path

httpx = pytest.importorskip("httpx")

from payidem.httpx import AsyncPayidemTransport, PayidemTransport  # noqa: E402


class Recording(httpx.BaseTransport):
    """Wraps a transport and keeps every request it is handed."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.requests: List[Any] = []

    def handle_request(self, request: Any) -> Any:
        self.requests.append(request)
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


class Failing(httpx.BaseTransport):
    """Raises ``error`` for every request."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.calls = 0

    def handle_request(self, request: Any) -> Any:
        self.calls += 1
        raise self.error


def test_a_lost_answer_is_retried_with_a_fresh_signature_and_pays_once(mock: Mock, make_client: MakeClient) -> None:
    mock.faults(drop_after_commit=1.0)
    client = make_client(on_attempt=clear_faults_after_first_try(mock))
    recording = Recording(httpx.HTTPTransport())
    order = new_order("hx-drop")
    with httpx.Client(transport=PayidemTransport(client, recording)) as http:
        r = http.post(mock.url + "/v1/payments", json=payment(order),
                      headers=payidem.operation_headers(order))
    assert r.status_code == 201, r.text
    assert r.headers["Idempotent-Replayed"] == "true"
    assert r.json()["order_id"] == order
    assert mock.payments_created(order) == 1
    first, second = (req.headers for req in recording.requests)
    assert [req.method for req in recording.requests] == ["POST", "POST"]
    assert first["Idempotency-Key"] == second["Idempotency-Key"] == f"create-{order}"
    assert first["X-Nonce"] != second["X-Nonce"]
    assert first["X-Signature"] != second["X-Signature"]
    assert recording.requests[0].content == recording.requests[1].content
    assert all("Payidem-Order-Id" not in req.headers for req in recording.requests)


def test_a_504_after_commit_is_settled_by_the_status_query(mock: Mock, make_client: MakeClient) -> None:
    mock.faults(timeout_504_after_commit=1.0)
    client = make_client()
    recording = Recording(httpx.HTTPTransport())
    order = new_order("hx-504")
    with httpx.Client(transport=PayidemTransport(client, recording)) as http:
        r = http.post(mock.url + "/v1/payments", json=payment(order),
                      headers=payidem.operation_headers(order, status_path=status_path(order)))
    assert r.status_code == 200 and r.json()["order_id"] == order
    assert [req.method for req in recording.requests] == ["POST", "GET"]
    assert str(recording.requests[1].url) == mock.url + status_path(order)
    assert mock.payments_created(order) == 1


def test_a_final_refusal_is_the_response(mock: Mock, make_client: MakeClient) -> None:
    client = make_client()
    order = new_order("hx-402")
    with httpx.Client(transport=PayidemTransport(client)) as http:
        r = http.post(mock.url + "/v1/payments", json=payment(order, amount=2402),
                      headers=payidem.operation_headers(order))
        assert r.status_code == 402 and r.json()["error"]["code"] == "card_declined"
        # Settled: answered from the journal.
        again = http.post(mock.url + "/v1/payments", json=payment(order, amount=2402),
                          headers=payidem.operation_headers(order))
    assert again.status_code == 402 and again.json() == r.json()


def test_connect_errors_are_not_sent(make_client: MakeClient) -> None:
    url = closed_port_url()
    client = make_client(base_url=url, max_attempts=2)
    order = new_order("hx-closed")
    with httpx.Client(transport=PayidemTransport(client)) as http:
        with pytest.raises(payidem.TransportError):
            http.post(url + "/v1/payments", json=payment(order), headers=payidem.operation_headers(order))
    status = client.status(order)
    assert status is not None and status.state == "pending"


@pytest.mark.parametrize(
    "error, state, raised",
    [
        (httpx.ConnectError("refused"), "pending", payidem.TransportError),
        (httpx.ConnectTimeout("slow connect"), "pending", payidem.TransportError),
        (httpx.ReadTimeout("slow answer"), "unknown", payidem.OutcomeUnknown),
        (httpx.RemoteProtocolError("closed"), "unknown", payidem.OutcomeUnknown),
        (httpx.WriteError("broken pipe"), "unknown", payidem.OutcomeUnknown),
    ],
)
def test_transport_errors_map_to_not_sent_or_maybe_landed(
    mock: Mock, make_client: MakeClient, error: Exception, state: str, raised: type
) -> None:
    client = make_client(max_attempts=2)
    failing = Failing(error)
    order = new_order("hx-map")
    with httpx.Client(transport=PayidemTransport(client, failing)) as http:
        with pytest.raises(raised):
            http.post(mock.url + "/v1/payments", json=payment(order),
                      headers=payidem.operation_headers(order))
    assert failing.calls == 2
    status = client.status(order)
    assert status is not None and status.state == state


def test_the_async_transport_pays_once(mock: Mock, make_client: MakeClient) -> None:
    mock.faults(drop_after_commit=1.0)
    client = make_client(on_attempt=clear_faults_after_first_try(mock))
    order = new_order("hx-async")

    async def pay() -> Any:
        async with httpx.AsyncClient(transport=AsyncPayidemTransport(client)) as http:
            return await http.post(mock.url + "/v1/payments", json=payment(order),
                                   headers=payidem.operation_headers(order))

    r = asyncio.run(pay())
    assert r.status_code == 201 and r.headers["Idempotent-Replayed"] == "true"
    assert mock.payments_created(order) == 1
    status = client.status(order)
    assert status is not None and status.state == "succeeded" and status.attempts == 2


def test_a_cancelled_task_cancels_the_call_and_keeps_the_key(
    make_client: MakeClient,
) -> None:
    # The answer is held 8 s; the task is cancelled after 3 s, by when the
    # attempt has left, however loaded the host.
    with holding_mock(8000, make_client, request_timeout=15.0) as (server, client):
        order = new_order("hx-cancel")

        async def pay() -> None:
            async with httpx.AsyncClient(transport=AsyncPayidemTransport(client)) as http:
                await asyncio.wait_for(
                    http.post(server.url + "/v1/payments", json=payment(order),
                              headers=payidem.operation_headers(order)),
                    timeout=3.0,
                )

        with pytest.raises(asyncio.TimeoutError):
            asyncio.run(pay())
        # The attempt had left: the outcome is unknown, the key kept and the
        # lease free, so resume learns it.
        status = client.status(order)
        assert status is not None and status.state == "unknown"
        server.faults()
        outcome = client.resume(order)
        assert outcome.status == 201 and outcome.replayed
        assert server.payments_created(order) == 1
