"""Issue #14, verifier hardening: ``verify`` returns what it verified (the
WSGI middleware puts it in the environ), an empty Idempotency-Key header is
an error, key ids can be added and removed, the nonce capacity is exact and
a clock stepped back re-accepts nothing."""

from __future__ import annotations

import io
from typing import Any, Dict, List, Tuple

import pytest

import payidem
from payidem.wsgi import VerifyingMiddleware

SECRET = b"sk_test_0123456789abcdef0123456789abcdef"
NOW = 1_767_225_600


def sign(method: str = "POST", key: str = "create-o1", at: int = NOW) -> Dict[str, str]:
    signer = payidem.Signer("key_live_1", SECRET)
    return signer.sign_attempt(method, "/v1/payments", b"{}", idempotency_key=key if method == "POST" else None, timestamp=at)


def test_verify_returns_key_id_idempotency_key_timestamp_and_nonce() -> None:
    v = payidem.Verifier({"key_live_1": [SECRET]})
    headers = sign()
    verified = v.verify("POST", "/v1/payments", headers, b"{}", now=NOW)
    assert (verified.key_id, verified.idempotency_key, verified.timestamp, verified.nonce) == (
        "key_live_1",
        "create-o1",
        NOW,
        headers["X-Nonce"],
    )
    assert headers["X-Nonce"] in repr(verified)


def test_an_empty_idempotency_key_header_is_an_error() -> None:
    v = payidem.Verifier({"key_live_1": [SECRET]})
    headers: List[Tuple[str, str]] = list(sign("GET").items()) + [("Idempotency-Key", "")]
    with pytest.raises(payidem.InvalidArgument) as info:
        v.verify("GET", "/v1/payments", headers, b"{}", now=NOW)
    assert info.value.field == "idempotency_key"


def test_add_and_remove_key() -> None:
    v = payidem.Verifier({"key_live_1": [SECRET]})
    v.remove_key("key_live_1")
    with pytest.raises(payidem.UnknownApiKey):
        v.verify("POST", "/v1/payments", sign(), b"{}", now=NOW)
    with pytest.raises(payidem.InvalidArgument) as info:
        v.remove_key("key_live_1")
    assert info.value.field == "key_id"
    v.add_key("key_live_1", [SECRET])
    v.verify("POST", "/v1/payments", sign(), b"{}", now=NOW)


def test_capacity_is_exact_and_the_total_is_a_cap() -> None:
    v = payidem.Verifier({"key_live_1": [SECRET]}, nonce_capacity_per_key=3)
    assert v.nonce_capacity_total == 16_000_000
    for _ in range(3):
        v.verify("POST", "/v1/payments", sign(), b"{}", now=NOW)
    with pytest.raises(payidem.ReplayCacheFull) as info:
        v.verify("POST", "/v1/payments", sign(), b"{}", now=NOW)
    assert info.value.http_status == 503
    total = payidem.Verifier({"a": [SECRET], "key_live_1": [SECRET]}, nonce_capacity_total=2)
    total.verify("POST", "/v1/payments", sign(), b"{}", now=NOW)
    total.verify("POST", "/v1/payments", sign(), b"{}", now=NOW)
    with pytest.raises(payidem.ReplayCacheFull):
        total.verify("POST", "/v1/payments", sign(), b"{}", now=NOW)
    with pytest.raises(payidem.InvalidArgument) as bad:
        payidem.Verifier({"a": [SECRET]}, nonce_capacity_total=0)
    assert bad.value.field == "nonce_capacity_total"


def test_a_clock_stepped_back_reaccepts_nothing() -> None:
    v = payidem.Verifier({"key_live_1": [SECRET]}, nonce_capacity_per_key=100)
    captured = [sign(key=f"k{i}") for i in range(50)]
    for h in captured:
        v.verify("POST", "/v1/payments", h, b"{}", now=NOW)
    for i in range(100):
        v.verify("POST", "/v1/payments", sign(key=f"l{i}", at=NOW + 301), b"{}", now=NOW + 301)
    for behind in (1, 120):
        for h in captured:
            with pytest.raises(payidem.VerificationError):
                v.verify("POST", "/v1/payments", h, b"{}", now=NOW + 301 - behind)


def test_wsgi_puts_what_was_verified_in_the_environ() -> None:
    seen: Dict[str, Any] = {}

    def app(environ: Dict[str, Any], start_response: Any) -> List[bytes]:
        seen["verified"] = environ["payidem.verified"]
        start_response("200 OK", [])
        return [b""]

    mw = VerifyingMiddleware(app, payidem.Verifier({"key_live_1": [SECRET]}), clock=lambda: NOW)
    headers = sign(key="create-wsgi")
    environ: Dict[str, Any] = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/v1/payments",
        "CONTENT_LENGTH": "2",
        "wsgi.input": io.BytesIO(b"{}"),
    }
    for name, value in headers.items():
        environ["HTTP_" + name.upper().replace("-", "_")] = value
    mw(environ, lambda status, headers: None)
    verified = seen["verified"]
    assert isinstance(verified, payidem.Verified)
    assert (verified.key_id, verified.idempotency_key, verified.nonce) == ("key_live_1", "create-wsgi", headers["X-Nonce"])
