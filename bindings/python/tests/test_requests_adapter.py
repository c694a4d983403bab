"""``payidem.requests.PayidemAdapter`` end to end against payidem-mock: the
core's machine drives every try, each one signed afresh, and a payment
whose answers are lost after commit is made exactly once."""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, Iterator, List, Tuple

import pytest

import payidem
from conftest import MakeClient, Mock, clear_faults_after_first_try, closed_port_url, holding_mock, new_order, payment, status_path

requests = pytest.importorskip("requests")

from payidem.requests import PayidemAdapter  # noqa: E402

Sent = List[Tuple[str, str, Dict[str, str]]]


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Iterator[Sent]:
    """Every try the adapter hands to urllib3: (method, url, headers)."""
    from requests.adapters import HTTPAdapter

    tries: Sent = []
    real = HTTPAdapter.send

    def recording(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        tries.append((request.method, request.url, dict(request.headers)))
        return real(self, request, *args, **kwargs)

    monkeypatch.setattr(HTTPAdapter, "send", recording)
    yield tries


def session_for(client: payidem.Client, url: str) -> Any:
    session = requests.Session()
    session.mount(url + "/", PayidemAdapter(client))
    return session


@pytest.fixture
def adapter_session(mock: Mock, make_client: MakeClient) -> Tuple[payidem.Client, Any]:
    """A default client of the mock and a session sending through its
    adapter."""
    client = make_client()
    return client, session_for(client, mock.url)


def test_a_lost_answer_is_retried_with_a_fresh_signature_and_pays_once(
    mock: Mock, make_client: MakeClient, sent: Sent
) -> None:
    # The first answer is lost after the payment was made; the hook clears
    # the fault once the machine has seen it.
    mock.faults(drop_after_commit=1.0)
    client = make_client(on_attempt=clear_faults_after_first_try(mock))
    order = new_order("rq-drop")
    r = session_for(client, mock.url).post(
        mock.url + "/v1/payments", json=payment(order), headers=payidem.operation_headers(order)
    )
    assert r.status_code == 201, r.text
    assert r.headers["Idempotent-Replayed"] == "true"
    assert r.json()["order_id"] == order
    assert mock.payments_created(order) == 1
    # Two tries of the same operation: same key and body, each signed afresh.
    assert [m for m, _, _ in sent] == ["POST", "POST"]
    first, second = sent[0][2], sent[1][2]
    assert first["Idempotency-Key"] == second["Idempotency-Key"] == f"create-{order}"
    assert first["X-Nonce"] != second["X-Nonce"]
    assert first["X-Signature"] != second["X-Signature"]
    # The control header never reaches the platform.
    assert all("Payidem-Order-Id" not in h for _, _, h in sent)
    status = client.status(order)
    assert status is not None and status.state == "succeeded" and status.attempts == 2


def test_a_504_after_commit_is_settled_by_the_status_query(
    mock: Mock, make_client: MakeClient, sent: Sent
) -> None:
    mock.faults(timeout_504_after_commit=1.0)
    client = make_client()
    order = new_order("rq-504")
    r = session_for(client, mock.url).post(
        mock.url + "/v1/payments",
        json=payment(order),
        headers=payidem.operation_headers(order, status_path=status_path(order)),
    )
    # The settled answer is the status path's: the payment exists.
    assert r.status_code == 200, r.text
    assert r.json()["order_id"] == order and r.json()["status"] == "succeeded"
    assert [m for m, _, _ in sent] == ["POST", "GET"]
    assert sent[1][1] == mock.url + status_path(order)
    assert "Idempotency-Key" not in sent[1][2] and "Content-Type" not in sent[1][2]
    assert mock.payments_created(order) == 1


def test_a_final_refusal_is_the_response_and_is_never_sent_again(
    mock: Mock, adapter_session: Tuple[payidem.Client, Any], sent: Sent
) -> None:
    client, session = adapter_session
    order = new_order("rq-402")
    body = payment(order, amount=1402)
    r = session.post(mock.url + "/v1/payments", json=body, headers=payidem.operation_headers(order))
    assert r.status_code == 402 and r.json()["error"]["code"] == "card_declined"
    tries = len(sent)
    again = session.post(mock.url + "/v1/payments", json=body, headers=payidem.operation_headers(order))
    # From the journal, without any network call.
    assert len(sent) == tries
    assert again.status_code == 402 and again.json() == r.json()
    assert not again.is_redirect


def test_an_unsettled_end_raises_the_payidem_error(mock: Mock, make_client: MakeClient) -> None:
    client = make_client(secret=b"not-the-mock-secret-0123456789")
    order = new_order("rq-401")
    with pytest.raises(payidem.Refused) as info:
        session_for(client, mock.url).post(
            mock.url + "/v1/payments", json=payment(order), headers=payidem.operation_headers(order)
        )
    assert info.value.status == 401 and not info.value.final
    status = client.status(order)
    assert status is not None and status.state == "pending"
    assert mock.payments_created(order) == 0


def test_a_refused_connection_is_not_sent(make_client: MakeClient) -> None:
    url = closed_port_url()
    client = make_client(base_url=url, max_attempts=2)
    order = new_order("rq-closed")
    with pytest.raises(payidem.TransportError) as info:
        session_for(client, url).post(
            url + "/v1/payments", json=payment(order), headers=payidem.operation_headers(order)
        )
    assert not info.value.final
    status = client.status(order)
    assert status is not None and status.state == "pending"


def test_a_read_timeout_keeps_the_key_and_asks_the_status(
    make_client: MakeClient,
) -> None:
    # The mock runs the payment, then holds the answer past the timeout.
    with holding_mock(1500, make_client, request_timeout=0.5) as (server, client):
        order = new_order("rq-slow")
        r = session_for(client, server.url).post(
            server.url + "/v1/payments",
            json=payment(order),
            headers=payidem.operation_headers(order, status_path=status_path(order)),
        )
        assert r.status_code == 200 and r.json()["order_id"] == order
        assert server.payments_created(order) == 1


def test_bad_requests_are_refused_before_anything_is_journaled(
    mock: Mock, adapter_session: Tuple[payidem.Client, Any], sent: Sent
) -> None:
    client, session = adapter_session
    with pytest.raises(payidem.InvalidArgument) as info:
        session.post(mock.url + "/v1/payments", json=payment("x"))
    assert info.value.field == "order_id"
    # Mounted on another prefix: the URL is not under the client's base URL.
    other = requests.Session()
    other.mount("http://", PayidemAdapter(client))
    order = new_order("rq-elsewhere")
    with pytest.raises(payidem.InvalidArgument) as info:
        other.post("http://example.invalid/v1/payments", json=payment(order),
                   headers=payidem.operation_headers(order))
    assert info.value.field == "url"
    with pytest.raises(payidem.InvalidArgument) as info:
        session.post(mock.url + "/v1/payments", json=payment(order),
                     headers={**payidem.operation_headers(order), "Payidem-Deadline": "soon"})
    assert info.value.field == "deadline"
    with pytest.raises(TypeError, match="known in full"):
        session.post(mock.url + "/v1/payments", data=iter([b"{}"]),
                     headers=payidem.operation_headers(order))
    assert client.status(order) is None
    assert sent == []


def test_urllib3_never_retries(make_client: MakeClient) -> None:
    from urllib3.util.retry import Retry

    adapter = PayidemAdapter(make_client())
    assert adapter.max_retries.total == 0 and adapter.max_retries.read is False
    with pytest.raises(ValueError, match="nonce_reused"):
        adapter.max_retries = Retry(total=3, allowed_methods=None)
    with pytest.raises(ValueError):
        adapter.max_retries = 2  # type: ignore[assignment]
    assert adapter.max_retries.total == 0


def test_the_body_and_caller_headers_are_sent_as_given(
    mock: Mock, make_client: MakeClient, sent: Sent
) -> None:
    client = make_client()
    order = new_order("rq-body")
    raw = json.dumps(payment(order)).encode()
    r = session_for(client, mock.url).post(
        mock.url + "/v1/payments",
        data=raw,
        headers={**payidem.operation_headers(order, idempotency_key=f"pay-{order}"),
                 "Content-Type": "application/json", "X-Request-Id": "abc"},
    )
    assert r.status_code == 201
    _, _, headers = sent[0]
    assert headers["Idempotency-Key"] == f"pay-{order}"
    assert headers["X-Request-Id"] == "abc"
    assert headers["Content-Length"] == str(len(raw))
    status = client.status(order)
    assert status is not None and status.body_sha256 == payidem.body_sha256_hex(raw)
