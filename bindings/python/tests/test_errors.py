"""Every exception class, raised by a real situation."""

from __future__ import annotations

import pickle
import threading
import time
from pathlib import Path
from typing import Callable, Dict, List

import pytest

import payidem
from payidem import _native, errors
from conftest import MOCK_SECRET, Mock, closed_port_url, new_order, payment, status_path

MakeClient = Callable[..., payidem.Client]
SECRET = b"sk_test_0123456789abcdef0123456789abcdef"


def test_every_core_code_has_its_class() -> None:
    for number, code, http_status, final in _native.error_codes():
        cls = errors.error_class(code)
        assert cls.CODE == code and issubclass(cls, payidem.Error)
        assert (cls.NUMBER, cls.HTTP_STATUS, cls.FINAL) == (number, http_status, final)
    # The VerificationError classes are exactly the core's verification codes
    # but invalid_argument, which is every caller's error.
    verification = set(payidem.Verifier.VERIFICATION_CODES) - {"invalid_argument"}
    assert {"missing_signature", "replay_store_unavailable"} <= verification
    for _, code, _, _ in _native.error_codes():
        is_verification = issubclass(errors.error_class(code), payidem.VerificationError)
        assert is_verification == (code in verification), code
    # A code from a newer core still raises a payidem error.
    assert errors.error_class("from_the_future") is payidem.InternalError
    unknown = errors._from_native("from_the_future", "text")
    assert isinstance(unknown, payidem.InternalError) and "from_the_future" in unknown.message


def test_final_or_not_is_the_cores() -> None:
    final = {cls.CODE for cls in errors._BY_CODE.values() if cls.FINAL}
    assert final == {"rejected", "idempotency_conflict", "key_expired"}
    rejected = errors._from_native("rejected", "no", status=402, body=b"{}")
    refused = errors._from_native("refused", "later", status=429, body=b"{}", order_id="o", idempotency_key="k")
    assert isinstance(rejected, payidem.Rejected) and rejected.final
    assert isinstance(refused, payidem.Refused) and not refused.final
    assert not isinstance(refused, payidem.Rejected)
    assert (refused.status, refused.body, refused.order_id, refused.number) == (429, b"{}", "o", 18)
    assert "Final" in (payidem.Rejected.__doc__ or "")
    assert "NOT final" in (payidem.Refused.__doc__ or "")


def test_python_raised_errors_carry_the_cores_status() -> None:
    # No status given: a verification error answers with its class's, from
    # the core's table; any other error is local and has none.
    assert payidem.NonceReused("again").http_status == 409
    assert payidem.InvalidArgument("bad", field="x").http_status is None
    assert payidem.OutcomeUnknown("?").http_status is None


def test_errors_pickle_with_their_context() -> None:
    e = errors._from_native(
        "rejected",
        "no",
        http_status=402,
        status=402,
        body=b"{}",
        platform_code="card_declined",
        platform_message="declined",
        order_id="o",
        idempotency_key="k",
    )
    back = pickle.loads(pickle.dumps(e))
    assert isinstance(back, payidem.Rejected)
    assert (back.status, back.body, back.order_id, back.idempotency_key) == (402, b"{}", "o", "k")
    assert (back.platform_code, back.platform_message) == ("card_declined", "declined")


def test_invalid_argument(mock: Mock, make_client: MakeClient) -> None:
    with pytest.raises(payidem.InvalidArgument) as info:
        make_client().execute("ord 1", "POST", "/v1/payments", b"{}")
    assert info.value.field == "order_id" and info.value.code == "invalid_argument"
    # Local: nothing was sent, so no HTTP status and no platform error.
    assert info.value.http_status is None
    assert (info.value.platform_code, info.value.platform_message) == (None, None)
    with pytest.raises(payidem.InvalidArgument) as bad_url:
        make_client(base_url="not a url")
    assert bad_url.value.field == "base_url" and bad_url.value.http_status is None


def test_idempotency_conflict_local_and_platform(mock: Mock, make_client: MakeClient) -> None:
    client = make_client()
    order = new_order()
    client.execute(order, "POST", "/v1/payments", payment(order, 100))
    with pytest.raises(payidem.IdempotencyConflict) as local:
        client.execute(order, "POST", "/v1/payments", payment(order, 200))
    assert local.value.code == "idempotency_conflict"
    # Another client (its own journal) reusing the key for another body: the
    # platform refuses, and the key is never re-keyed.
    other = make_client()
    with pytest.raises(payidem.IdempotencyConflict) as platform:
        other.execute(order, "POST", "/v1/payments", payment(order, 300))
    assert platform.value.status == 409
    assert platform.value.body is not None and b"idempotency_conflict" in platform.value.body
    assert mock.payments_created(order) == 1


def test_rejected(mock: Mock, make_client: MakeClient) -> None:
    order = new_order()
    with pytest.raises(payidem.Rejected) as info:
        make_client().execute(order, "POST", "/v1/payments", payment(order, 1402))
    assert info.value.status == 402 and info.value.http_status == 402
    assert info.value.body is not None and b"card_declined" in info.value.body
    assert info.value.order_id == order
    # The platform's code and message, read by the core from the body.
    assert info.value.platform_code == "card_declined"
    assert info.value.platform_message == "the card was declined"
    assert "HTTP 402 card_declined: the card was declined (final)" in info.value.message


def test_refused_with_a_wrong_secret_is_not_final(mock: Mock, make_client: MakeClient) -> None:
    order = new_order()
    with pytest.raises(payidem.Refused) as info:
        make_client(secret=b"x" * 32).execute(order, "POST", "/v1/payments", payment(order))
    assert info.value.status == 401
    assert not info.value.final
    assert mock.payments_created(order) == 0
    # Nothing happened: the same operation with the right secret pays once.
    outcome = make_client().execute(order, "POST", "/v1/payments", payment(order))
    assert outcome.status == 201 and mock.payments_created(order) == 1


def test_outcome_unknown(mock: Mock, make_client: MakeClient) -> None:
    mock.faults(drop_after_commit=1.0)
    order = new_order()
    with pytest.raises(payidem.OutcomeUnknown) as info:
        make_client(max_attempts=2).execute(order, "POST", "/v1/payments", payment(order))
    assert info.value.order_id == order and info.value.idempotency_key == f"create-{order}"


def test_key_expired(mock: Mock, make_client: MakeClient) -> None:
    mock.faults(timeout_504_after_commit=1.0)
    client = make_client(max_attempts=1, key_retention=1)
    order = new_order()
    with pytest.raises(payidem.OutcomeUnknown):
        client.execute(order, "POST", "/v1/payments", payment(order))
    mock.faults()
    time.sleep(2.2)
    with pytest.raises(payidem.KeyExpired) as info:
        client.resume(order)
    assert info.value.order_id == order
    assert mock.payments_created(order) == 1


def test_operation_busy(mock: Mock, make_client: MakeClient) -> None:
    # The first call's answer comes 4 s late: it holds the order all along.
    mock.control("POST", "/_mock/faults", {"delay_after_commit": 1.0, "delay_ms": 4000})
    client = make_client(request_timeout=15.0)
    order = new_order()
    results: List[object] = []

    def first() -> None:
        results.append(client.execute(order, "POST", "/v1/payments", payment(order)))

    t = threading.Thread(target=first)
    t.start()
    give_up = time.monotonic() + 10
    while (status := client.status(order)) is None or status.state != "in_flight":
        assert time.monotonic() < give_up, "the first call never went in flight"
        time.sleep(0.005)
    with pytest.raises(payidem.OperationBusy):
        client.execute(order, "POST", "/v1/payments", payment(order))
    t.join(timeout=30)
    assert isinstance(results[0], payidem.Outcome)
    assert mock.payments_created(order) == 1


def test_transport_error(make_client: MakeClient) -> None:
    client = make_client(base_url=closed_port_url(), max_attempts=2)
    with pytest.raises(payidem.TransportError) as info:
        client.execute("ord-t", "POST", "/v1/payments", payment("ord-t"))
    assert info.value.order_id == "ord-t"
    status = client.status("ord-t")
    assert status is not None and status.state == "pending"
    with pytest.raises(payidem.TransportError):
        client.get("/v1/payments/p")


def test_journal_error(mock: Mock, tmp_path: Path) -> None:
    garbage = tmp_path / "not-a-database"
    garbage.write_bytes(b"this is not SQLite" * 100)
    with pytest.raises(payidem.JournalError):
        payidem.Client(mock.url, "key_test_1", MOCK_SECRET, journal=garbage)
    with pytest.raises(payidem.JournalError):
        payidem.Client(mock.url, "key_test_1", MOCK_SECRET, journal=tmp_path / "missing-dir" / "j.sqlite3")


def test_cancelled(mock: Mock, make_client: MakeClient) -> None:
    mock.faults(error_503=1.0, retry_after_seconds=8)
    stop = threading.Event()
    client = make_client(on_attempt=lambda event: stop.set(), backoff_cap=10.0)
    order = new_order()
    started = time.monotonic()
    with pytest.raises(payidem.Cancelled) as info:
        client.execute(order, "POST", "/v1/payments", payment(order), cancel=stop.is_set)
    # The 8 s Retry-After was cut short (with seconds to spare on a loaded machine).
    assert time.monotonic() - started < 4
    assert info.value.order_id == order
    mock.faults()
    assert client.resume(order).status == 201


def test_a_raising_cancel_callable_propagates(mock: Mock, make_client: MakeClient) -> None:
    def broken() -> bool:
        raise LookupError("cancel bug")

    order = new_order()
    with pytest.raises(LookupError) as info:
        make_client().execute(order, "POST", "/v1/payments", payment(order), cancel=broken)
    assert isinstance(info.value.__context__, payidem.Cancelled)


def make_verifier(**options: int) -> payidem.Verifier:
    return payidem.Verifier({"key_live_1": [SECRET]}, **options)


def signed(body: bytes = b"{}", key: str = "create-o1", now: int = 1_767_225_600) -> Dict[str, str]:
    return payidem.Signer("key_live_1", SECRET).sign_attempt("POST", "/v1/payments", body, key, timestamp=now)


NOW = 1_767_225_600


def test_verification_errors() -> None:
    v = make_verifier()
    headers = signed()
    missing = {k: val for k, val in headers.items() if k != "X-Nonce"}
    cases = [
        (payidem.MissingSignature, 401, missing, b"{}"),
        (payidem.UnknownApiKey, 401, {**headers, "X-Api-Key": "key_other"}, b"{}"),
        (payidem.InvalidSignature, 401, headers, b'{"x":1}'),
    ]
    for cls, status, h, body in cases:
        with pytest.raises(cls) as info:
            v.verify("POST", "/v1/payments", h, body, now=NOW)
        assert info.value.http_status == status and info.value.code == cls.CODE
    # A verifier's clock never steps back, so the late request gets its own.
    with pytest.raises(payidem.TimestampOutOfWindow) as late:
        make_verifier().verify("POST", "/v1/payments", headers, b"{}", now=NOW + 301)
    assert late.value.http_status == 401 and late.value.code == "timestamp_out_of_window"
    v.verify("POST", "/v1/payments", headers, b"{}", now=NOW)
    with pytest.raises(payidem.NonceReused) as reused:
        v.verify("POST", "/v1/payments", headers, b"{}", now=NOW)
    assert reused.value.http_status == 409


def test_timestamp_out_of_window_carries_server_time() -> None:
    with pytest.raises(payidem.TimestampOutOfWindow) as info:
        make_verifier().verify("POST", "/v1/payments", signed(), b"{}", now=NOW - 1000)
    assert info.value.server_time == NOW - 1000


def test_replay_cache_full() -> None:
    # The capacity is exact: one live nonce is kept, the next new one is
    # refused (the verifier fails closed rather than forget a live nonce).
    v = make_verifier(nonce_capacity_per_key=1)
    v.verify("POST", "/v1/payments", signed(), b"{}", now=NOW)
    with pytest.raises(payidem.ReplayCacheFull) as info:
        v.verify("POST", "/v1/payments", signed(), b"{}", now=NOW)
    assert info.value.http_status == 503


def test_idempotency_key_required() -> None:
    signer = payidem.Signer("key_live_1", SECRET)
    nonce = "6f1c2a4e-9b3d-4c5e-8f70-1a2b3c4d5e6f"
    signature = signer.sign("POST", "/v1/payments", NOW, nonce, "", b"{}")
    headers = {"X-Api-Key": "key_live_1", "X-Timestamp": str(NOW), "X-Nonce": nonce, "X-Signature": signature}
    with pytest.raises(payidem.IdempotencyKeyRequired) as info:
        make_verifier().verify("POST", "/v1/payments", headers, b"{}", now=NOW)
    assert info.value.http_status == 400
