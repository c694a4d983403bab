"""``payidem.Call``: a client's operation driven by the caller's own HTTP
stack, with the client's journal. A process killed half-way through a
payment sent with requests or httpx is resumed with ``client.resume`` and
pays exactly once."""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import textwrap
import time
import urllib.parse
from pathlib import Path
from typing import Callable, List, get_args

import pytest

import payidem
from payidem import _native
from conftest import MakeClient, MOCK_KEY_ID, MOCK_SECRET, PYTHON, Mock, fast_options, new_order, payment, status_path


def send_with_http_client(attempt: payidem.Attempt, timeout: float) -> payidem.Reply:
    """A minimal sender on the standard library."""
    assert attempt.url is not None
    url = urllib.parse.urlsplit(attempt.url)
    try:
        conn = http.client.HTTPConnection(url.hostname or "", url.port, timeout=timeout)
        conn.connect()
    except OSError as e:
        return payidem.Reply.not_sent(str(e))
    try:
        headers = dict(attempt.headers)
        if attempt.body:
            headers["Content-Type"] = "application/json"
        conn.request(attempt.method, attempt.path, body=attempt.body or None, headers=headers)
        r = conn.getresponse()
        return payidem.Reply.response(r.status, r.getheaders(), r.read())
    except OSError as e:
        return payidem.Reply.sent_no_response(str(e))
    finally:
        conn.close()


def test_the_literal_names_are_the_cores() -> None:
    assert get_args(payidem.EndName) == tuple(_native.END_NAMES)
    assert get_args(payidem.Landed) == tuple(_native.LANDED)
    assert get_args(payidem.ReplyKind) == tuple(_native.REPLY_KINDS)
    assert get_args(payidem.StepKind) == tuple(_native.STEP_KINDS)
    assert get_args(payidem.CallStepKind) == tuple(_native.CALL_STEP_KINDS)
    steps = [payidem.PersistStep(1, True), payidem.SendStep(_attempt()), payidem.WaitStep(0.1)]
    assert [s.kind for s in steps] == list(_native.STEP_KINDS[:3])
    assert payidem.DoneStep(None, payidem.Cancelled("x")).kind == "done"


def _attempt() -> payidem.Attempt:
    return payidem.Attempt("operation", 1, "POST", "/v1/payments", (), b"{}")


def test_a_call_journals_before_it_hands_out_the_first_attempt(mock: Mock, make_client: MakeClient) -> None:
    client = make_client()
    order = new_order("call")
    call = payidem.Call.begin(client, order, "POST", "/v1/payments", payment(order))
    assert (call.order_id, call.idempotency_key) == (order, f"create-{order}")
    # Opening a new operation records it in flight with its first attempt
    # (durably) before the call hands that attempt out.
    status = client.status(order)
    assert status is not None and status.state == "in_flight" and status.attempts == 1
    step = call.step()
    assert isinstance(step, payidem.SendStep)
    status = client.status(order)
    assert status is not None and status.state == "in_flight" and status.attempts == 1
    assert step.attempt.url == mock.url + "/v1/payments"
    assert step.timeout is not None and 0 < step.timeout <= 2.0
    call.report(send_with_http_client(step.attempt, step.timeout))
    done = call.step()
    assert isinstance(done, payidem.DoneStep) and call.done
    outcome = done.result()
    assert outcome.status == 201 and outcome.attempts == 1
    assert mock.payments_created(order) == 1
    # A settled operation is done at once, from the journal.
    again = payidem.Call.begin(client, order, "POST", "/v1/payments", payment(order))
    assert again.done
    step = again.step()
    assert isinstance(step, payidem.DoneStep) and step.result() == outcome


def test_run_drives_a_call_through_lost_answers(mock: Mock, make_client: MakeClient) -> None:
    mock.faults(timeout_504_after_commit=1.0)
    events: List[payidem.AttemptEvent] = []
    client = make_client(on_attempt=events.append)
    order = new_order("call-run")
    with payidem.Call.begin(
        client, order, "POST", "/v1/payments", payment(order), status_path=status_path(order)
    ) as call:
        outcome = call.run(send_with_http_client)
    assert outcome.status == 200 and outcome.json()["order_id"] == order
    assert [(e.kind, e.status, e.next) for e in events] == [
        ("operation", 504, "query_status"),
        ("status_query", 200, "settle"),
    ]
    assert mock.payments_created(order) == 1


def test_cancel_keeps_the_key_and_frees_the_lease(mock: Mock, make_client: MakeClient) -> None:
    client = make_client()
    order = new_order("call-cancel")
    call = payidem.Call.begin(client, order, "POST", "/v1/payments", payment(order))
    # Held: a second call of the same operation is busy.
    with pytest.raises(payidem.OperationBusy):
        payidem.Call.begin(client, order, "POST", "/v1/payments", payment(order))
    step = call.step()
    assert isinstance(step, payidem.SendStep)
    # The attempt may have left: cancelled, outcome unknown, key kept.
    with pytest.raises(payidem.Cancelled) as info:
        call.cancel()
    assert not info.value.final
    status = client.status(order)
    assert status is not None and status.state == "unknown"
    # The lease is free: resume finishes it with the same key.
    outcome = client.resume(order)
    assert outcome.idempotency_key == f"create-{order}" and outcome.status == 201
    assert mock.payments_created(order) == 1


def test_an_exception_in_send_cancels_the_call(mock: Mock, make_client: MakeClient) -> None:
    client = make_client()
    order = new_order("call-raise")

    def send(attempt: payidem.Attempt, timeout: float) -> payidem.Reply:
        raise KeyboardInterrupt

    call = payidem.Call.begin(client, order, "POST", "/v1/payments", payment(order))
    with pytest.raises(KeyboardInterrupt):
        call.run(send)
    assert call.done
    status = client.status(order)
    assert status is not None and status.state == "unknown"


def test_bad_input_names_its_field(make_client: MakeClient) -> None:
    client = make_client()
    with pytest.raises(payidem.InvalidArgument) as info:
        payidem.Call.begin(client, "bad id", "POST", "/v1/payments", b"{}")
    assert info.value.field == "order_id"
    with pytest.raises(payidem.InvalidArgument) as info:
        payidem.Call.begin(client, "ord-x", "POST", "/v1/payments", b"{}", deadline=-1)
    assert info.value.field == "deadline"
    with pytest.raises(payidem.InvalidArgument) as info:
        payidem.Call.resume(client, "ord-never-seen")
    assert info.value.field == "order_id"
    with pytest.raises(TypeError):
        payidem.Call.begin("not a client", "ord-x", "POST", "/v1/payments", b"{}")  # type: ignore[arg-type]
    with pytest.raises(payidem.InvalidArgument) as info:
        payidem.Operation("ord-x", "POST", "/v1/payments", b"{}", state="lost")  # type: ignore[arg-type]
    assert info.value.field == "state"


CHILD = textwrap.dedent(
    """
    import sys
    import payidem

    url, key_id, secret, journal, order, stack = sys.argv[1:]
    client = payidem.Client(url, key_id, secret.encode(), journal=journal,
                            request_timeout=30.0, deadline=60.0)
    headers = payidem.operation_headers(order)
    body = {"order_id": order, "amount": 1250, "currency": "EUR"}

    def announce():
        print("SENT", flush=True)

    if stack == "requests":
        import requests
        from requests.adapters import HTTPAdapter
        from payidem.requests import PayidemAdapter

        real = HTTPAdapter.send
        def send(self, *args, **kwargs):
            announce()
            return real(self, *args, **kwargs)
        HTTPAdapter.send = send
        session = requests.Session()
        session.mount(url + "/", PayidemAdapter(client))
        session.post(url + "/v1/payments", json=body, headers=headers)
    else:
        import httpx
        from payidem.httpx import PayidemTransport

        class Announcing(httpx.BaseTransport):
            inner = httpx.HTTPTransport()
            def handle_request(self, request):
                announce()
                return self.inner.handle_request(request)

        with httpx.Client(transport=PayidemTransport(client, Announcing())) as http:
            http.post(url + "/v1/payments", json=body, headers=headers)
    print("FINISHED", flush=True)
    """
)


@pytest.mark.parametrize("stack", ["requests", "httpx"])
def test_a_process_killed_mid_call_is_resumed_and_pays_once(tmp_path: Path, stack: str) -> None:
    pytest.importorskip(stack)
    # The platform makes the payment, then holds the answer for 30 s.
    server = Mock("--delay-ms", "30000")
    journal = tmp_path / "journal.sqlite3"
    order = new_order(f"kill-{stack}")
    try:
        server.faults(delay_after_commit=1.0)
        child = subprocess.Popen(
            [PYTHON, "-c", CHILD, server.url, MOCK_KEY_ID, MOCK_SECRET.decode(), str(journal), order, stack],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "SENT"
            deadline = time.monotonic() + 10
            while server.payments_created(order) == 0:
                assert time.monotonic() < deadline, "the payment was never made"
                time.sleep(0.02)
            os.kill(child.pid, signal.SIGKILL)
        finally:
            child.kill()
            child.wait(timeout=10)
        assert child.returncode == -signal.SIGKILL
        server.faults()
        with payidem.Client(server.url, MOCK_KEY_ID, MOCK_SECRET, **fast_options(journal=journal)) as client:
            status = client.status(order)
            assert status is not None and status.state == "in_flight" and status.attempts == 1
            assert [s.order_id for s in client.list_unknown()] == [order]
            outcome = client.resume(order)
            assert outcome.status == 201 and outcome.replayed
            assert outcome.idempotency_key == f"create-{order}"
            assert outcome.attempts == 2
        assert server.payments_created(order) == 1
        assert server.stats()["orders"][order]["idempotency_keys"] == [f"create-{order}"]
    finally:
        server.stop()


def test_operation_time_is_an_input() -> None:
    signer = payidem.Signer("key_test_1", b"0123456789abcdef0123")
    op = payidem.Operation(
        "ord-t", "POST", "/v1/payments", b"{}", now=1_767_225_600, backoff_base=0.2, backoff_cap=10
    )
    assert isinstance(op.poll(signer, now=1_767_225_600, elapsed=0), payidem.PersistStep)
    op.persisted()
    step = op.poll(signer, now=1_767_225_600, elapsed=0)
    assert isinstance(step, payidem.SendStep)
    assert step.attempt.header("X-Timestamp") == "1767225600"
    reaction = op.handle(payidem.Reply.response(429, {"Retry-After": "2"}, b""), now=1_767_225_600, elapsed=0)
    assert (reaction.next, reaction.wait, reaction.landed) == ("retry_later", 2.0, "no")
    wait = op.poll(signer, now=1_767_225_600, elapsed=0.5)
    assert isinstance(wait, payidem.WaitStep) and wait.seconds == pytest.approx(1.5)
    end = op.abandon("stopped")
    assert (end.name, end.final, end.landed, end.state) == ("refused", False, "no", "pending")
    assert end.response is not None and end.response.status == 429
    with pytest.raises(payidem.Refused):
        end.result()
    assert op.attempts == 1 and op.landed == "no"


def test_a_default_port_is_the_same_origin_as_none() -> None:
    from payidem.operation import _relative_path

    with payidem.Client("https://pay.example/", MOCK_KEY_ID, MOCK_SECRET, **fast_options()) as client:
        assert _relative_path(client, "https://pay.example:443/v1/p%20q") == "/v1/p%20q"
        assert _relative_path(client, "https://PAY.example/v1") == "/v1"
        for outside in ("http://pay.example/v1", "https://pay.example:8443/v1", "https://other.example/v1"):
            with pytest.raises(payidem.InvalidArgument):
                _relative_path(client, outside)


def test_urls_are_read_relative_to_the_base_url_and_its_prefix() -> None:
    from payidem.operation import _relative_path

    with payidem.Client("http://127.0.0.1:9/pay/", MOCK_KEY_ID, MOCK_SECRET, **fast_options()) as client:
        assert _relative_path(client, "http://127.0.0.1:9/pay/v1/payments?x=1") == "/v1/payments?x=1"
        assert _relative_path(client, "HTTP://127.0.0.1:9/pay/v1/payments") == "/v1/payments"
        for outside in ("http://127.0.0.1:9/payments", "http://127.0.0.1:10/pay/v1", "http://evil/pay/v1",
                        "http://127.0.0.1:9/pay"):
            with pytest.raises(payidem.InvalidArgument) as info:
                _relative_path(client, outside)
            assert info.value.field == "url", outside
        for userinfo in ("http://u:p@127.0.0.1:9/pay/v1", "http://u@127.0.0.1:9/pay/v1"):
            with pytest.raises(payidem.InvalidArgument) as info:
                _relative_path(client, userinfo)
            assert info.value.field == "url" and "p@" not in str(info.value)
        # The prefix is sent and signed, and the attempt's URL carries it.
        call = payidem.Call.begin(client, new_order("prefix"), "POST", "/v1/payments", b"{}")
        step = call.step()
        assert isinstance(step, payidem.SendStep)
        assert step.attempt.path == "/pay/v1/payments"
        assert step.attempt.url == "http://127.0.0.1:9/pay/v1/payments"
        call.report(payidem.Reply.not_sent("test"))
        with pytest.raises(payidem.Cancelled):
            call.cancel()
