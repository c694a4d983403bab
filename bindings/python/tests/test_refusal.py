"""Issue #12: the WSGI middleware answers a failed verification with the Rust
core's refusal, byte for byte, for every code the core lists; a code added to
the core without a request here that provokes it fails the test."""

from __future__ import annotations

import email.utils
import io
import json
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest

import payidem
from payidem.errors import error_class
from payidem.wsgi import Refusal, VerifyingMiddleware, refusal

SECRET = b"sk_test_0123456789abcdef0123456789abcdef"
NOW = 1_767_225_600
BODY = b'{"amount":1}'
PATH = "/v1/payments"

Headers = Dict[str, str]


def sign(method: str = "POST", key: Optional[str] = "create-a", at: int = NOW, path: str = PATH) -> Headers:
    signer = payidem.Signer("key_live_1", SECRET)
    return dict(signer.sign_attempt(method, path, BODY, idempotency_key=key, timestamp=at))


def unsigned_key_post() -> Headers:
    """A POST signed without an Idempotency-Key (a signer refuses to make
    one, so it is signed from its parts)."""
    nonce = "6f1c2a4e-9b3d-4c5e-8f70-1a2b3c4d5e6f"
    signature = payidem.Signer("key_live_1", SECRET).sign("POST", PATH, NOW, nonce, body=BODY)
    return {"X-Api-Key": "key_live_1", "X-Timestamp": str(NOW), "X-Nonce": nonce, "X-Signature": signature}


def without(headers: Headers, name: str) -> Headers:
    return {k: v for k, v in headers.items() if k != name}


# code -> (requests verified first, method, the failing request's headers)
Scenario = Tuple[List[Headers], str, List[Tuple[str, str]]]


def scenarios() -> Dict[str, Callable[[], Scenario]]:
    def reused() -> Scenario:
        h = sign()
        return [h], "POST", list(h.items())

    return {
        "invalid_argument": lambda: ([], "GET", list(sign("GET", None).items()) + [("Idempotency-Key", "")]),
        "missing_signature": lambda: ([], "POST", list(without(sign(), "X-Signature").items())),
        "unknown_api_key": lambda: ([], "POST", list({**sign(), "X-Api-Key": "key_other"}.items())),
        "timestamp_out_of_window": lambda: ([], "POST", list(sign(at=NOW - 301).items())),
        "invalid_signature": lambda: ([], "POST", list(sign(path="/v1/other").items())),
        "nonce_reused": reused,
        "replay_cache_full": lambda: ([sign(key="create-b")], "POST", list(sign().items())),
        "idempotency_key_required": lambda: ([], "POST", list(unsigned_key_post().items())),
        # A Redis replay store that cannot be reached fails closed.
        "replay_store_unavailable": lambda: ([], "POST", list(sign().items())),
    }


# The verifiers' replay store for a code, when not in memory.
STORES = {"replay_store_unavailable": "unix:///nonexistent-payidem-dir/redis.sock"}


def verifier(replay_store: Optional[str] = None) -> payidem.Verifier:
    return payidem.Verifier({"key_live_1": [SECRET]}, nonce_capacity_per_key=1, replay_store=replay_store)


def serve(mw: VerifyingMiddleware, method: str, headers: List[Tuple[str, str]]) -> Tuple[str, List[Tuple[str, str]], bytes]:
    environ: Dict[str, Any] = {
        "REQUEST_METHOD": method,
        "PATH_INFO": PATH,
        "CONTENT_LENGTH": str(len(BODY)),
        "wsgi.input": io.BytesIO(BODY),
    }
    for name, value in headers:
        key = "HTTP_" + name.upper().replace("-", "_")
        # A repeated header reaches WSGI joined; an empty one stays empty.
        environ[key] = f"{environ[key]},{value}" if key in environ else value
    answer: Dict[str, Any] = {}

    def start_response(status: str, response_headers: List[Tuple[str, str]]) -> None:
        answer["status"], answer["headers"] = status, response_headers

    body = b"".join(mw(environ, start_response))
    return answer["status"], answer["headers"], body


def never_called(environ: Dict[str, Any], start_response: Any) -> List[bytes]:
    raise AssertionError(f"{environ['REQUEST_METHOD']} reached the app")


def test_the_core_lists_the_verification_codes() -> None:
    codes = payidem.Verifier.VERIFICATION_CODES
    assert isinstance(codes, tuple)
    for code in codes:
        cls = error_class(code)
        assert cls.CODE == code, f"{code} has no exception class"
        assert issubclass(cls, (payidem.VerificationError, payidem.InvalidArgument))
    assert {"nonce_reused", "replay_cache_full", "invalid_argument"} <= set(codes)
    assert "rejected" not in codes


@pytest.mark.parametrize("code", payidem.Verifier.VERIFICATION_CODES)
def test_the_middleware_answers_with_the_cores_refusal(code: str) -> None:
    build = scenarios().get(code)
    assert build is not None, f"no request here provokes {code}: add one"
    first, method, headers = build()
    # Two verifiers in the same state: one raises, the other serves.
    direct, served = verifier(STORES.get(code)), verifier(STORES.get(code))
    for h in first:
        direct.verify("POST", PATH, h, BODY, now=NOW)
        served.verify("POST", PATH, h, BODY, now=NOW)
    with pytest.raises(payidem.Error) as info:
        direct.verify(method, PATH, headers, BODY, now=NOW)
    error = info.value
    assert error.code == code
    want = Refusal(*payidem.Verifier.refusal(error.code, error.message, getattr(error, "server_time", None)))

    status, response_headers, body = serve(VerifyingMiddleware(never_called, served, clock=lambda: NOW), method, headers)

    assert body == want.body
    assert status == want.status_line
    assert response_headers == want.headers + [("Content-Length", str(len(want.body)))]
    # What the protocol asks of every refusal, apart from the core's words.
    assert int(status.split()[0]) == error.http_status
    assert json.loads(body) == {"error": {"code": code, "message": error.message}}
    assert ("Content-Type", "application/json") in response_headers
    clock = code == "timestamp_out_of_window"
    named = dict(response_headers)
    assert (named.get("X-Server-Time") == str(NOW)) is clock
    assert (named.get("Date") == email.utils.formatdate(NOW, usegmt=True)) is clock
    assert ("X-Server-Time" in named) is clock and ("Date" in named) is clock
    assert (named.get("Retry-After") == "1") is (code == "replay_store_unavailable")
    assert ("Retry-After" in named) is (code == "replay_store_unavailable")


def test_body_bytes_are_the_cores_not_pythons_json() -> None:
    status, headers, body = payidem.Verifier.refusal("invalid_signature", 'a "q" <é>')
    assert status == 401
    assert headers == [("Content-Type", "application/json")]
    assert body == '{"error":{"code":"invalid_signature","message":"a \\"q\\" <é>"}}'.encode()


def test_other_errors_are_a_hidden_500_and_unknown_codes_are_refused() -> None:
    r = refusal(payidem.JournalError("/var/lib/shop/journal.sqlite3"))
    assert (r.status, r.status_line) == (500, "500 Internal Server Error")
    assert b"journal" not in r.body and json.loads(r.body)["error"]["code"] == "internal_error"
    with pytest.raises(payidem.InvalidArgument) as info:
        payidem.Verifier.refusal("no_such_code", "x")
    assert info.value.field == "code"
    with pytest.raises(payidem.InvalidArgument) as info:
        payidem.Verifier.refusal("timestamp_out_of_window", "x", -1)
    assert info.value.field == "server_time"


def test_timestamp_refusal_without_server_time_uses_now() -> None:
    r = refusal(payidem.TimestampOutOfWindow("late"), now=1_000)
    assert dict(r.headers)["X-Server-Time"] == "1000"
    assert dict(r.headers)["Date"] == "Thu, 01 Jan 1970 00:16:40 GMT"


def test_framing_refusals_come_from_the_core() -> None:
    mw = VerifyingMiddleware(never_called, verifier(), max_body=4)
    answers: List[Tuple[str, List[Tuple[str, str]]]] = []

    def start_response(status: str, headers: List[Tuple[str, str]]) -> None:
        answers.append((status, headers))

    big = b"".join(mw({"REQUEST_METHOD": "POST", "CONTENT_LENGTH": "5", "wsgi.input": io.BytesIO(b"12345")}, start_response))
    assert answers[-1][0].startswith("413 ")
    assert big == payidem.Verifier.body_too_large_refusal(4)[2]
    assert json.loads(big)["error"] == {"code": "payload_too_large", "message": "the body is larger than 4 bytes"}
    bad = b"".join(mw({"REQUEST_METHOD": "POST", "CONTENT_LENGTH": "x", "wsgi.input": io.BytesIO(b"")}, start_response))
    assert answers[-1][0] == "400 Bad Request"
    assert json.loads(bad)["error"] == {"code": "bad_request", "message": "Content-Length is not a number"}
