"""The WSGI middleware and the requests auth, end to end."""

from __future__ import annotations

import json
import threading
from typing import Any, Dict, Iterable, Optional
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest

import payidem
from payidem.wsgi import VerifyingMiddleware, header_pairs, request_target
from conftest import MOCK_KEY_ID, MOCK_SECRET, Mock, payment_request, wsgi_call

SECRET = b"sk_test_0123456789abcdef0123456789abcdef"
NOW = 1_767_225_600


def echo_app(environ: Dict[str, Any], start_response: Any) -> Iterable[bytes]:
    verified = environ["payidem.verified"]
    body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    answer = json.dumps(
        {"key_id": verified.key_id, "idempotency_key": verified.idempotency_key, "body": body.decode()}
    ).encode()
    start_response("200 OK", [("Content-Type", "application/json")])
    return [answer]


def middleware() -> VerifyingMiddleware:
    return VerifyingMiddleware(echo_app, payidem.Verifier({"key_live_1": [SECRET]}), clock=lambda: NOW)


def test_wsgi_accepts_a_signed_request_and_refuses_a_replay() -> None:
    app = middleware()
    signer = payidem.Signer("key_live_1", SECRET)
    body = b'{"amount":5}'
    headers = signer.sign_attempt("POST", "/v1/payments?x=1", body, "create-w1", timestamp=NOW)
    status, _, out = wsgi_call(app, "POST", "/v1/payments?x=1", headers, body)
    assert status.startswith("200")
    assert json.loads(out) == {"key_id": "key_live_1", "idempotency_key": "create-w1", "body": body.decode()}
    status, _, out = wsgi_call(app, "POST", "/v1/payments?x=1", headers, body)
    assert status.startswith("409")
    assert json.loads(out)["error"]["code"] == "nonce_reused"


def test_wsgi_answers_the_protocols_errors() -> None:
    app = middleware()
    signer = payidem.Signer("key_live_1", SECRET)
    headers = signer.sign_attempt("POST", "/v1/payments", b"{}", "create-w2", timestamp=NOW - 1000)
    status, response_headers, out = wsgi_call(app, "POST", "/v1/payments", headers, b"{}")
    assert status.startswith("401")
    assert json.loads(out)["error"]["code"] == "timestamp_out_of_window"
    assert response_headers["X-Server-Time"] == str(NOW)
    assert "Date" in response_headers
    tampered = signer.sign_attempt("POST", "/v1/payments", b"{}", "create-w3", timestamp=NOW)
    status, _, out = wsgi_call(app, "POST", "/v1/payments", tampered, b'{"amount":999}')
    assert status.startswith("401") and json.loads(out)["error"]["code"] == "invalid_signature"
    status, _, out = wsgi_call(app, "GET", "/v1/payments", {}, b"")
    assert status.startswith("401") and json.loads(out)["error"]["code"] == "missing_signature"
    small = VerifyingMiddleware(echo_app, payidem.Verifier({"key_live_1": [SECRET]}), max_body=4)
    status, _, _ = wsgi_call(small, "POST", "/v1/payments", tampered, b"0123456789")
    assert status.startswith("413")


def test_wsgi_over_a_real_socket_with_requests() -> None:
    requests = pytest.importorskip("requests")
    from payidem.requests_auth import PayidemAuth

    class Quiet(WSGIRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    app = VerifyingMiddleware(echo_app, payidem.Verifier({"key_live_1": [SECRET]}))
    server = make_server("127.0.0.1", 0, app, handler_class=Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}"
        auth = PayidemAuth("key_live_1", SECRET)
        assert "redacted" in repr(auth) and "sk_test" not in repr(auth)
        r = requests.post(
            url + "/v1/payments?order_id=a%20b",
            data=b'{"amount":1}',
            headers={"Idempotency-Key": "create-r1", "Content-Type": "application/json"},
            auth=auth,
            timeout=10,
        )
        assert r.status_code == 200, r.text
        assert r.json()["idempotency_key"] == "create-r1"
        r = requests.get(url + "/v1/payments/p_1", auth=auth, timeout=10)
        assert r.status_code == 200 and r.json()["idempotency_key"] is None
        r = requests.get(url + "/v1/payments/p_1", timeout=10)
        assert r.status_code == 401
    finally:
        server.shutdown()
        server.server_close()


def test_requests_auth_against_the_mock(mock: Mock) -> None:
    requests = pytest.importorskip("requests")
    from payidem.requests_auth import PayidemAuth

    auth = PayidemAuth(MOCK_KEY_ID, MOCK_SECRET)
    order, body, headers = payment_request("req")
    first = requests.post(mock.url + "/v1/payments", data=body, headers=headers, auth=auth, timeout=10)
    assert first.status_code == 201, first.text
    again = requests.post(mock.url + "/v1/payments", data=body, headers=headers, auth=auth, timeout=10)
    assert again.status_code == 201 and again.headers["Idempotent-Replayed"] == "true"
    by_order = requests.get(mock.url + f"/v1/payments?order_id={order}", auth=auth, timeout=10)
    assert by_order.status_code == 200
    with pytest.raises(payidem.InvalidArgument):
        requests.post(mock.url + "/v1/payments", data=body, auth=auth, timeout=10)
    assert mock.payments_created(order) == 1


def test_wsgi_helpers() -> None:
    environ: Dict[str, Any] = {"PATH_INFO": "/v1/a b", "QUERY_STRING": "x=1", "HTTP_X_API_KEY": "k", "CONTENT_TYPE": "application/json"}
    assert request_target(environ) == "/v1/a%20b?x=1"
    assert request_target({**environ, "RAW_URI": "/v1/a%20b?x=1"}) == "/v1/a%20b?x=1"
    assert ("X-Api-Key", "k") in header_pairs(environ)
    assert ("Content-Type", "application/json") in header_pairs(environ)
