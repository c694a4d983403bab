"""Every case of the shared conformance vectors, through the Python API."""

from __future__ import annotations

import base64
import json
from typing import Any, Dict, List, Tuple

import pytest

import payidem
from conftest import VECTORS

V = json.loads(VECTORS.read_text())


def b64(text: str) -> bytes:
    return base64.b64decode(text)


@pytest.mark.parametrize("case", V["sign"], ids=[c["name"] for c in V["sign"]])
def test_sign(case: Dict[str, Any]) -> None:
    body = b64(case["body_b64"])
    expect = case["expect"]
    parts = (case["method"], case["path"], case["timestamp"], case["nonce"], case["idempotency_key"])
    assert payidem.canonical_string(*parts, body) == expect["canonical"]
    assert payidem.body_sha256_hex(body) == expect["body_sha256"]
    signer = payidem.Signer("key_live_1", b64(case["secret_b64"]))
    assert signer.sign(*parts, body) == expect["signature"]
    if case["method"] == "POST" and not case["idempotency_key"]:
        return
    # The one-call form gives the same signature for valid integer timestamps.
    headers = signer.sign_attempt(
        case["method"],
        case["path"],
        body,
        case["idempotency_key"] or None,
        timestamp=int(case["timestamp"]),
        nonce=case["nonce"],
    )
    assert headers["X-Signature"] == expect["signature"]
    assert headers["X-Timestamp"] == case["timestamp"]
    assert headers["X-Nonce"] == case["nonce"]
    assert headers["X-Api-Key"] == "key_live_1"
    assert headers.get("Idempotency-Key") == (case["idempotency_key"] or None)


def test_vector_counts() -> None:
    assert len(V["sign"]) == 11
    assert len(V["sign_invalid"]) == 18
    assert len(V["verify_sequence"]["requests"]) == 20
    assert len(V["decide"]) == 21


@pytest.mark.parametrize("case", V["sign_invalid"], ids=[c["name"] for c in V["sign_invalid"]])
def test_sign_invalid(case: Dict[str, Any]) -> None:
    assert case["expect_error"] == "invalid_argument"
    body = b64(case["body_b64"])
    with pytest.raises(payidem.InvalidArgument) as info:
        signer = payidem.Signer("key_live_1", b64(case["secret_b64"]))
        signer.sign(case["method"], case["path"], case["timestamp"], case["nonce"], case["idempotency_key"], body)
    err = info.value
    assert err.code == "invalid_argument"
    assert err.field == case["field"]
    assert err.message.startswith(case["field"])
    if case["field"] != "secret":
        with pytest.raises(payidem.InvalidArgument) as again:
            payidem.canonical_string(
                case["method"], case["path"], case["timestamp"], case["nonce"], case["idempotency_key"], body
            )
        assert again.value.field == case["field"]


def test_verify_sequence() -> None:
    seq = V["verify_sequence"]
    keys = {k: [b64(s) for s in secrets] for k, secrets in seq["keys_b64"].items()}
    verifier = payidem.Verifier(keys, window_seconds=seq["window_seconds"])
    for req in seq["requests"]:
        name = req["name"]
        headers: List[Tuple[str, str]] = list(req["headers"].items())
        body = b64(req["body_b64"])
        expect = req["expect"]
        now = req["server_now"]
        if expect["code"] is None:
            verified = verifier.verify(req["method"], req["path"], headers, body, now=now)
            assert expect["status"] == 200, name
            assert verified.key_id == req["headers"]["X-Api-Key"], name
            assert verified.idempotency_key == req["headers"].get("Idempotency-Key"), name
        else:
            with pytest.raises(payidem.Error) as info:
                verifier.verify(req["method"], req["path"], headers, body, now=now)
            err = info.value
            assert err.code == expect["code"], f"{name}: {err!r}"
            assert err.http_status == expect["status"], name
            assert type(err) is payidem.errors.error_class(expect["code"]), name
            if expect["code"] == "timestamp_out_of_window":
                assert isinstance(err, payidem.TimestampOutOfWindow)
                assert err.server_time == now, name


@pytest.mark.parametrize("case", V["decide"], ids=[c["name"] for c in V["decide"]])
def test_decide(case: Dict[str, Any]) -> None:
    given = case["given"]
    got = payidem.decide(
        given["outcome"],
        status=given.get("status"),
        error_code=given.get("error_code"),
        headers=given.get("headers"),
        has_status_path=given.get("has_status_path", False),
        now=1_767_225_600,
    )
    expect = case["expect"]
    assert got.kind == expect["decision"]
    if expect["decision"] == "done":
        assert got.replayed == expect["replayed"]
    if expect["decision"] == "fail":
        assert got.error == expect["error"]
    # The vectors' "unknown": true is payidem's "may have landed"; where they
    # say nothing they assert nothing.
    if expect.get("unknown"):
        assert got.landed == "maybe"
    if expect["decision"] == "done":
        assert got.landed == "yes"
    if expect["decision"] == "retry_after":
        assert got.seconds == expect["seconds"]
    if expect["decision"] == "adjust_clock_retry":
        assert got.server_time == expect["server_time"]
