"""A ``str`` argument that cannot be UTF-8 (a lone surrogate such as
"\\ud800") raises ``InvalidArgument`` naming its field, for every str argument
of the package (signer, verifier, client, decide). Before the fix each raised
``UnicodeEncodeError``."""

from __future__ import annotations

from typing import Any, Callable, List, Tuple

import pytest

import payidem
from payidem.requests_auth import PayidemAuth

SECRET = b"sk_test_0123456789abcdef0123456789abcdef"
BAD = "\ud800"
NOW = 1_767_225_600
NONCE = "6f1c2a4e-9b3d-4c5e-8f70-1a2b3c4d5e6f"


def signer() -> payidem.Signer:
    return payidem.Signer("key_live_1", SECRET)


def verifier() -> payidem.Verifier:
    return payidem.Verifier({"key_live_1": [SECRET]})


def client() -> payidem.Client:
    return payidem.Client("http://127.0.0.1:9", "key_live_1", SECRET, journal=payidem.MEMORY)


def signed_headers() -> Any:
    return signer().sign_attempt("POST", "/v1/p", b"{}", idempotency_key="k", timestamp=NOW)


CASES: List[Tuple[str, str, Callable[[], Any]]] = [
    # Signer
    ("Signer", "key_id", lambda: payidem.Signer(BAD, SECRET)),
    ("sign_attempt", "method", lambda: signer().sign_attempt(BAD, "/p")),
    ("sign_attempt", "path", lambda: signer().sign_attempt("GET", BAD)),
    ("sign_attempt", "idempotency_key", lambda: signer().sign_attempt("POST", "/p", b"", idempotency_key=BAD)),
    ("sign_attempt", "nonce", lambda: signer().sign_attempt("GET", "/p", nonce=BAD)),
    ("sign", "method", lambda: signer().sign(BAD, "/p", NOW, NONCE)),
    ("sign", "path", lambda: signer().sign("GET", BAD, NOW, NONCE)),
    ("sign", "timestamp", lambda: signer().sign("GET", "/p", BAD, NONCE)),
    ("sign", "nonce", lambda: signer().sign("GET", "/p", NOW, BAD)),
    ("sign", "idempotency_key", lambda: signer().sign("GET", "/p", NOW, NONCE, idempotency_key=BAD)),
    ("canonical_string", "method", lambda: payidem.canonical_string(BAD, "/p", NOW, NONCE)),
    ("canonical_string", "path", lambda: payidem.canonical_string("GET", BAD, NOW, NONCE)),
    ("canonical_string", "timestamp", lambda: payidem.canonical_string("GET", "/p", BAD, NONCE)),
    ("canonical_string", "nonce", lambda: payidem.canonical_string("GET", "/p", NOW, BAD)),
    ("canonical_string", "idempotency_key", lambda: payidem.canonical_string("GET", "/p", NOW, NONCE, BAD)),
    ("PayidemAuth", "key_id", lambda: PayidemAuth(BAD, SECRET)),
    # Verifier
    ("Verifier", "key_id", lambda: payidem.Verifier({BAD: [SECRET]})),
    ("set_secrets", "key_id", lambda: verifier().set_secrets(BAD, [SECRET])),
    ("add_key", "key_id", lambda: verifier().add_key(BAD, [SECRET])),
    ("remove_key", "key_id", lambda: verifier().remove_key(BAD)),
    ("verify", "method", lambda: verifier().verify(BAD, "/p", {})),
    ("verify", "path", lambda: verifier().verify("GET", BAD, {})),
    ("verify", "headers", lambda: verifier().verify("POST", "/v1/p", {**signed_headers(), "X-Extra": BAD}, b"{}")),
    ("verify", "headers", lambda: verifier().verify("POST", "/v1/p", [(BAD, "v")], b"{}")),
    # Client
    ("Client", "base_url", lambda: payidem.Client(BAD, "key_live_1", SECRET, journal=payidem.MEMORY)),
    ("Client", "key_id", lambda: payidem.Client("http://127.0.0.1:9", BAD, SECRET, journal=payidem.MEMORY)),
    ("Client", "journal", lambda: payidem.Client("http://127.0.0.1:9", "key_live_1", SECRET, journal=BAD)),
    ("Client", "proxy", lambda: payidem.Client("http://127.0.0.1:9", "k", SECRET, journal=payidem.MEMORY, proxy=BAD)),
    ("Client", "ca_bundle", lambda: payidem.Client("http://127.0.0.1:9", "k", SECRET, journal=payidem.MEMORY, ca_bundle=BAD)),
    ("Client", "client_cert", lambda: payidem.Client("http://127.0.0.1:9", "k", SECRET, journal=payidem.MEMORY, client_cert=BAD)),
    ("Client", "client_key", lambda: payidem.Client("http://127.0.0.1:9", "k", SECRET, journal=payidem.MEMORY, client_key=BAD)),
    ("execute", "order_id", lambda: client().execute(BAD, "POST", "/p", b"{}")),
    ("execute", "method", lambda: client().execute("o", BAD, "/p", b"{}")),
    ("execute", "path", lambda: client().execute("o", "POST", BAD, b"{}")),
    ("execute", "status_path", lambda: client().execute("o", "POST", "/p", b"{}", status_path=BAD)),
    ("execute", "idempotency_key", lambda: client().execute("o", "POST", "/p", b"{}", idempotency_key=BAD)),
    ("resume", "order_id", lambda: client().resume(BAD)),
    ("status", "order_id", lambda: client().status(BAD)),
    ("get", "path", lambda: client().get(BAD)),
    # Decisions
    ("decide", "outcome", lambda: payidem.decide(BAD)),
    ("decide", "error_code", lambda: payidem.decide("response", 409, BAD)),
    ("decide", "headers", lambda: payidem.decide("response", 429, None, {"Retry-After": BAD})),
]


@pytest.mark.parametrize("call,field,run", CASES, ids=[f"{c}-{f}-{i}" for i, (c, f, _) in enumerate(CASES)])
def test_a_lone_surrogate_is_invalid_argument_naming_the_field(call: str, field: str, run: Callable[[], Any]) -> None:
    with pytest.raises(payidem.InvalidArgument) as info:
        run()
    assert info.value.field == field, f"{call}: {info.value!r}"
    assert info.value.message.startswith(field)
    assert not isinstance(info.value, UnicodeError)
