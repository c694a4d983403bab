"""A small typed program over payidem's public API, checked with
``mypy --strict`` (see test_typing.py)."""

from __future__ import annotations

import dataclasses
import logging
from typing import Dict, List, NoReturn, Optional, Tuple, Union

import payidem
from payidem.requests_auth import PayidemAuth
from payidem.wsgi import VerifyingMiddleware


def pay(client: payidem.Client, order_id: str, amount: int) -> Optional[int]:
    try:
        outcome: payidem.Outcome = client.execute(
            order_id,
            "POST",
            "/v1/payments",
            {"order_id": order_id, "amount": amount, "currency": "EUR"},
            status_path=f"/v1/payments?order_id={order_id}",
            deadline=30.0,
        )
    except payidem.Rejected as e:
        status: int | None = e.status
        body: bytes | None = e.body
        settled: bool = e.final
        platform_code: Optional[str] = e.platform_code
        platform_message: Optional[str] = e.platform_message
        if platform_code == "card_declined" and platform_message is not None:
            return None
        return status if body is not None and settled else None
    except payidem.Refused as e:
        number: int = e.number
        return e.status if number else None
    except payidem.OutcomeUnknown as e:
        key: Optional[str] = e.idempotency_key
        return None if key else None
    replayed: bool = outcome.replayed
    content_type: Optional[str] = outcome.header("Content-Type")
    parsed = outcome.json()
    return outcome.status if replayed or content_type or parsed else outcome.attempts


def recover(client: payidem.Client) -> List[str]:
    done: List[str] = []
    for order_id, result in client.resume_unknown():
        if isinstance(result, payidem.Outcome):
            done.append(order_id)
        else:
            code: str = result.code
            done.append(code)
    for status in client.list_unknown():
        created: int = status.created_at
        state: payidem.OperationState = status.state
        done.append(f"{state}:{created}")
    return done


def never(value: NoReturn) -> NoReturn:
    raise AssertionError(value)


def describe(event: payidem.AttemptEvent) -> str:
    """Narrowing over the Literal names: mypy proves every case is handled."""
    next_action: payidem.NextAction = event.next
    if next_action == "settle":
        return "done"
    elif next_action == "retry_now" or next_action == "retry_later" or next_action == "adjust_clock":
        return "again"
    elif next_action == "query_status" or next_action == "query_later":
        return "asking"
    elif next_action == "give_up":
        return "gave up"
    else:
        never(next_action)


def kind_of(event: payidem.AttemptEvent) -> str:
    kind = event.kind
    if kind == "operation":
        return "POST"
    elif kind == "status_query":
        return "GET"
    else:
        never(kind)


def hook_under_test() -> List[str]:
    seen: List[str] = []

    def hook(event: payidem.AttemptEvent) -> None:
        seen.append(describe(event) + kind_of(event))

    event = payidem.AttemptEvent(
        order_id="ord-1",
        idempotency_key="create-ord-1",
        attempt=1,
        kind="operation",
        next="retry_later",
        wait=0.5,
        status=503,
    )
    hook(event)
    hook(dataclasses.replace(event, next="give_up"))
    outcome = payidem.Outcome(
        order_id="ord-1",
        idempotency_key="create-ord-1",
        attempts=2,
        status=201,
        headers=payidem.Headers([("Content-Type", "application/json")]),
        body=b"{}",
    )
    same: bool = outcome == dataclasses.replace(outcome)
    defaults: payidem.ClientDefaults = payidem.CLIENT_DEFAULTS
    timeout: float = defaults.request_timeout
    code: payidem.ErrorCodeName = payidem.Refused.CODE
    return seen if same and timeout and code else []


def sign_and_verify() -> Tuple[Dict[str, str], payidem.Verified]:
    secret = b"sk_test_0123456789abcdef0123456789abcdef"
    signer = payidem.Signer("key_live_1", secret)
    headers: Dict[str, str] = signer.sign_attempt("POST", "/v1/payments", b"{}", "create-o1")
    verifier = payidem.Verifier({"key_live_1": [secret]}, window_seconds=300)
    try:
        verified = verifier.verify("POST", "/v1/payments", headers, b"{}")
    except payidem.VerificationError as e:
        http_status: int = e.http_status
        raise RuntimeError(http_status) from e
    digest: str = payidem.body_sha256_hex(b"{}")
    canonical: str = payidem.canonical_string("GET", "/x", 1, "6f1c2a4e-9b3d-4c5e-8f70-1a2b3c4d5e6f", "", b"")
    assert digest and canonical
    return headers, verified


def decision() -> Union[int, None]:
    d: payidem.Decision = payidem.decide("response", status=503, headers=[("Retry-After", "2")])
    return d.seconds


def journals() -> List[str]:
    where: str = payidem.default_journal_path()
    memory: str = payidem.MEMORY
    return [where, memory]


def wiring() -> None:
    with payidem.Client(
        "http://127.0.0.1:1",
        "key_test_1",
        b"sk_test_payidem_mock_secret_0001",
        journal=payidem.MEMORY,
        on_attempt=payidem.log_attempts(logging.getLogger("payidem")),
    ) as client:
        pay(client, "ord-1", 100)
        recover(client)
    auth = PayidemAuth("key_live_1", b"sk_test_0123456789abcdef0123456789abcdef")
    assert auth.signer.key_id == "key_live_1"
    verifier = payidem.Verifier({"key_live_1": [b"sk_test_0123456789abcdef0123456789abcdef"]})
    VerifyingMiddleware(lambda environ, start_response: [b""], verifier)
