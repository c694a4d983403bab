"""Bad input raises a typed error (InvalidArgument naming the field, or
TypeError for a wrong Python type) and never crashes the interpreter."""

from __future__ import annotations

from typing import Any, Callable

import pytest

import payidem
from payidem import _native
from conftest import MOCK_SECRET, Mock, new_order, payment

MakeClient = Callable[..., payidem.Client]
SECRET = b"sk_test_0123456789abcdef0123456789abcdef"


def field_of(call: Callable[[], Any]) -> str:
    with pytest.raises(payidem.InvalidArgument) as info:
        call()
    assert info.value.field is not None
    assert info.value.message.startswith(info.value.field)
    return info.value.field


@pytest.mark.parametrize(
    "order_id", ["", "a b", "x" * 129, "ord\n1", "ord/1", "ordé", "\x00"]
)
def test_invalid_order_ids(mock: Mock, make_client: MakeClient, order_id: str) -> None:
    client = make_client()
    assert field_of(lambda: client.execute(order_id, "POST", "/v1/payments", b"{}")) == "order_id"
    assert field_of(lambda: client.status(order_id)) == "order_id"
    assert field_of(lambda: client.resume(order_id)) == "order_id"


def test_invalid_fields_of_execute(mock: Mock, make_client: MakeClient) -> None:
    client = make_client()
    o = new_order()
    assert field_of(lambda: client.execute(o, "post", "/v1/payments", b"{}")) == "method"
    assert field_of(lambda: client.execute(o, "POST", "v1/payments", b"{}")) == "path"
    assert field_of(lambda: client.execute(o, "POST", "/v1/pay ments", b"{}")) == "path"
    assert field_of(lambda: client.execute(o, "POST", "/p", b"{}", idempotency_key="a b")) == "idempotency_key"
    assert field_of(lambda: client.execute(o, "POST", "/p", b"{}", status_path="/a b")) == "status_path"
    assert field_of(lambda: client.execute(o, "POST", "/p", b"{}", deadline=-1)) == "deadline"
    assert field_of(lambda: client.execute(o, "POST", "/p", {"x": float("nan")})) == "body"
    assert field_of(lambda: client.execute(o, "POST", "/p", {"x": object()})) == "body"
    assert field_of(lambda: client.resume("never-seen")) == "order_id"
    assert field_of(lambda: client.get("no-slash")) == "path"
    assert client.status(o) is None


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.execute(None, "POST", "/p", b"{}"),
        lambda c: c.execute("o", None, "/p", b"{}"),
        lambda c: c.execute("o", "POST", b"/p", b"{}"),
        lambda c: c.execute("o", "POST", "/p", "a str body"),
        lambda c: c.execute("o", "POST", "/p", None),
        lambda c: c.execute("o", "POST", "/p", 42),
        lambda c: c.execute("o", "POST", "/p", b"{}", deadline="soon"),
        lambda c: c.status(7),
        lambda c: c.get(None),
    ],
)
def test_wrong_python_types_are_type_errors(mock: Mock, make_client: MakeClient, call: Callable[[Any], Any]) -> None:
    with pytest.raises(TypeError):
        call(make_client())


def test_client_settings(mock: Mock) -> None:
    def make(**kw: Any) -> Callable[[], Any]:
        kw.setdefault("journal", ":memory:")
        return lambda: payidem.Client(kw.pop("base_url", mock.url), kw.pop("key_id", "key_test_1"), kw.pop("secret", MOCK_SECRET), **kw)

    assert field_of(make(base_url="ftp://x")) == "base_url"
    assert field_of(make(base_url="not a url")) == "base_url"
    assert field_of(make(key_id="key id")) == "key_id"
    assert field_of(make(secret=b"short")) == "secret"
    assert field_of(make(secret=b"x" * 1025)) == "secret"
    assert field_of(make(max_attempts=0)) == "max_attempts"
    assert field_of(make(max_attempts=-1)) == "max_attempts"
    assert field_of(make(backoff_base=20.0, backoff_cap=10.0)) == "backoff_base"
    assert field_of(make(connect_timeout=0)) == "connect_timeout"
    assert field_of(make(request_timeout=float("inf"))) == "request_timeout"
    assert field_of(make(deadline=float("nan"))) == "deadline"
    # Beyond what C and Go accept, the core's time arithmetic would overflow
    # (a panic, not a typed error) once a call runs.
    assert field_of(make(deadline=1e19, request_timeout=1e19)) == "request_timeout"
    assert field_of(make(backoff_base=1.0, backoff_cap=1e19)) == "backoff_cap"
    # Every duration is at most 10**9 s (the core's one rule, in every language).
    client = make(deadline=1e9, request_timeout=1e9, backoff_cap=1e9)()
    assert field_of(lambda: client.execute("ord-1", "POST", "/v1/payments", b"{}", deadline=1e19)) == "deadline"
    client.close()
    assert field_of(make(key_retention=172801)) == "key_retention"
    assert field_of(make(deadline=1e9 + 1)) == "deadline"
    for bad in (dict(secret="a str secret" * 3), dict(secret=None), dict(journal=42),
                dict(max_attempts=2.5), dict(deadline="60"), dict(on_attempt=5)):
        with pytest.raises(TypeError):
            make(**bad)()


def test_signer_and_verifier_inputs() -> None:
    with pytest.raises(TypeError):
        payidem.Signer("k", "a str secret of length")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        payidem.Signer(None, SECRET)  # type: ignore[arg-type]
    signer = payidem.Signer("key_live_1", SECRET)
    assert field_of(lambda: signer.sign_attempt("POST", "/p", b"{}")) == "idempotency_key"
    assert field_of(lambda: signer.sign_attempt("POST", "/p", b"{}", "k", timestamp=-1)) == "timestamp"
    assert field_of(lambda: signer.sign_attempt("POST", "/p", b"{}", "k", timestamp=2**64)) == "timestamp"
    assert field_of(lambda: signer.sign_attempt("POST", "/p", b"{}", "k", nonce="not-a-nonce")) == "nonce"
    with pytest.raises(TypeError):
        signer.sign_attempt("POST", "/p", "str body", "k")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        signer.sign_attempt("POST", "/p", b"{}", "k", timestamp="1")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        payidem.Verifier({"k": b"one secret, not a list"})
    with pytest.raises(TypeError):
        payidem.Verifier({"k": ["str secret" * 2]})  # type: ignore[list-item]
    with pytest.raises(TypeError):
        payidem.Verifier([("k", [SECRET])])  # type: ignore[arg-type]
    assert field_of(lambda: payidem.Verifier({})) == "keys"
    assert field_of(lambda: payidem.Verifier({"k": []})) == "secrets"
    assert field_of(lambda: payidem.Verifier({"k": [SECRET]}, window_seconds=-5)) == "window_seconds"
    assert field_of(lambda: payidem.Verifier({"k": [SECRET]}, nonce_capacity_per_key=0)) == "nonce_capacity_per_key"
    v = payidem.Verifier({"key_live_1": [SECRET]})
    for headers in ("X-Api-Key: k", b"raw", 42, [("a",)], {"a": 1}, [(1, "x")]):
        with pytest.raises(TypeError):
            v.verify("POST", "/p", headers, b"{}")  # type: ignore[arg-type]
    with pytest.raises(payidem.MissingSignature):
        v.verify("POST", "/p", [], b"{}")
    assert field_of(lambda: v.set_secrets("other", [SECRET])) == "key_id"
    assert field_of(lambda: payidem.decide("weird")) == "outcome"
    assert field_of(lambda: payidem.decide("response")) == "status"
    assert field_of(lambda: payidem.decide("response", status=70000)) == "status"
    assert field_of(lambda: payidem.decide_status_query("weird")) == "outcome"
    # The one native decision takes the core's attempt kind names only.
    assert field_of(lambda: _native.decide("operation_", "not_sent")) == "kind"
    assert _native.decide("operation", "not_sent")[0] == payidem.decide("not_sent").kind
    assert _native.decide("status_query", "response", 404)[0] == "send_operation"


def test_huge_bodies(mock: Mock, make_client: MakeClient) -> None:
    huge = b"{" + b" " * (64 * 1024 * 1024) + b"}"
    signer = payidem.Signer("key_live_1", SECRET)
    headers = signer.sign_attempt("POST", "/v1/payments", huge, "create-big")
    v = payidem.Verifier({"key_live_1": [SECRET]})
    assert v.verify("POST", "/v1/payments", headers, huge).key_id == "key_live_1"
    assert len(payidem.body_sha256_hex(huge)) == 64
    # The mock refuses bodies over 1 MiB: a final answer, nothing created.
    order = new_order()
    with pytest.raises(payidem.Rejected) as info:
        make_client().execute(order, "POST", "/v1/payments", huge[: 2 * 1024 * 1024])
    assert info.value.status == 413
    assert mock.payments_created(order) == 0


def test_secrets_never_show(mock: Mock, make_client: MakeClient) -> None:
    signer = payidem.Signer("key_live_1", SECRET)
    assert "sk_test" not in repr(signer)
    v = payidem.Verifier({"key_live_1": [SECRET]})
    assert "sk_test" not in repr(v)
    with pytest.raises(payidem.InvalidArgument) as info:
        payidem.Signer("key_live_1", b"sk_short")
    assert "sk_short" not in str(info.value) and "sk_short" not in repr(info.value)


def test_payment_body_helper_is_valid(mock: Mock, make_client: MakeClient) -> None:
    # A control: the same client setup succeeds with a good body.
    order = new_order()
    assert make_client().execute(order, "POST", "/v1/payments", payment(order)).status == 201
