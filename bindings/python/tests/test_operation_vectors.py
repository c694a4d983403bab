"""The operation vectors (core/tests/vectors/operation-v1.json) through
``payidem.Operation``, the core's machine, with the runner rules of the
file's ``about`` — the same logic as core/tests/operation_vectors.rs:

- wall clock = now + (elapsed rounded down to seconds); elapsed starts at
  0 ms and grows only by waits, each rounded up to whole milliseconds;
- ``persist`` steps are confirmed at once; every operation attempt carries
  the operation's key and body; ``timestamp`` checks ``X-Timestamp``;
- a ``wait`` with ``max_ms`` is a full-jitter backoff (0 < ms <= max_ms),
  with ``ms`` an exact wait;
- ``restart`` starts a new call from the given journal state with the
  elapsed clock back at 0; ``abandon`` ends the call as a cancel does;
- ``end`` checks the name, ``final``, ``landed``, the journal state, the
  caller's error code (null for success) and the last response's status.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Optional, Tuple

import pytest

import payidem
from conftest import VECTORS

OPERATION_VECTORS = VECTORS.parent / "operation-v1.json"
V = json.loads(OPERATION_VECTORS.read_text())
SIGNER = payidem.Signer("key_test_1", b"0123456789abcdef0123")


def _budget(b: Optional[Dict[str, Any]]) -> Optional[payidem.RetryBudget]:
    if b is None:
        return None
    return payidem.RetryBudget(
        capacity=b["capacity"],
        retry_cost=b["retry_cost"],
        timeout_cost=b["timeout_cost"],
        success_refund=b["success_refund"],
    )


def _reply(v: Dict[str, Any]) -> payidem.Reply:
    if v.get("not_sent") is not None:
        return payidem.Reply.not_sent(v["not_sent"])
    if v.get("no_response") is not None:
        return payidem.Reply.sent_no_response(v["no_response"])
    return payidem.Reply.response(v["status"], v["headers"], v["body"].encode())


def request_of(op: Dict[str, Any]) -> Tuple[str, str, str, bytes]:
    """A vector operation's order id, method, path and body, as
    ``payidem.Operation`` and ``payidem.Call.begin`` take them."""
    return op["order_id"], op["method"], op["path"], op["body"].encode()


def limits_of(setup: Dict[str, Any]) -> Dict[str, Any]:
    """A vector setup's limits as the keywords ``payidem.Operation`` and
    ``payidem.Client`` share (durations in seconds)."""
    return {
        "max_attempts": setup["max_attempts"],
        "backoff_base": setup["backoff_base_ms"] / 1000,
        "backoff_cap": setup["backoff_cap_ms"] / 1000,
        "deadline": setup["deadline_ms"] / 1000,
        "key_retention": setup["key_retention_secs"],
        "max_clock_offset": setup["max_clock_offset_secs"],
    }


class Clock:
    """A vector's clocks: wall clock = start + elapsed rounded down to
    seconds; elapsed grows only by waits."""

    def __init__(self, case: Dict[str, Any]) -> None:
        self.start: int = case["now"]
        self.elapsed_ms = 0

    @property
    def now(self) -> int:
        return self.start + self.elapsed_ms // 1000

    @property
    def elapsed(self) -> float:
        return self.elapsed_ms / 1000


class Runner(Clock):
    def __init__(self, case: Dict[str, Any]) -> None:
        super().__init__(case)
        self.name: str = case["name"]
        self.op = case["operation"]
        self.setup = case["setup"]
        self.created_at: int = case["now"] - case["progress"]["age_secs"]
        self.last: Optional[payidem.End] = None
        progress = case["progress"]
        self.machine = self.begin(
            progress["state"], progress["attempts"], progress.get("first_recorded", False)
        )

    def begin(
        self, state: payidem.OperationState, attempts: int, first_recorded: bool = False
    ) -> payidem.Operation:
        s, op = self.setup, self.op
        return payidem.Operation(
            *request_of(op),
            idempotency_key=op["idempotency_key"],
            status_path=op["status_path"],
            state=state,
            attempts=attempts,
            created_at=self.created_at,
            now=self.now,
            first_recorded=first_recorded,
            **limits_of(s),
            clock_offset=s["clock_offset"],
            clock_trusted=s["clock_trusted"],
            retry_budget=_budget(s["retry_budget"]),
        )

    def run_step(self, step: Dict[str, Any], at: str) -> None:
        if "restart" in step:
            # Wall time goes on; the new call's elapsed clock starts at 0.
            self.start += self.elapsed_ms // 1000
            self.elapsed_ms = 0
            self.machine = self.begin(step["restart"]["state"], step["restart"]["attempts"])
            return
        if "abandon" in step:
            self.last = self.machine.abandon(step["abandon"])
            return
        if "reply" in step:
            reaction = self.machine.handle(_reply(step["reply"]), now=self.now, elapsed=self.elapsed)
            assert reaction.next == step["next"], at
            assert reaction.landed == step["landed"], at
            return
        expect = step["expect"]
        got = self.machine.poll(SIGNER, now=self.now, elapsed=self.elapsed)
        if expect == "persist" and isinstance(got, payidem.PersistStep):
            assert got.attempt == step["attempt"], at
            assert got.first == step["first"], at
            self.machine.persisted()
        elif expect == "send" and isinstance(got, payidem.SendStep):
            check_send(got.attempt, self.op, step, at)
        elif expect == "wait" and isinstance(got, payidem.WaitStep):
            self.elapsed_ms += check_wait(got.seconds, step, at)
        elif expect == "end" and isinstance(got, payidem.EndStep):
            check_end(got.end, step, at)
            self.last = got.end
        elif expect == "end" and self.last is not None:
            check_end(self.last, step, at)
        else:
            pytest.fail(f"{at}: expected {expect}, got {got!r}")


def check_send(a: payidem.Attempt, op: Dict[str, Any], step: Dict[str, Any], at: str) -> None:
    """Checks an attempt against a ``send`` step: kind, number, the
    operation's own request and key (or the status query), timestamp."""
    assert a.kind == step["kind"], at
    assert a.number == step["number"], at
    if a.kind == "operation":
        assert a.method == op["method"], at
        assert a.path == op["path"], at
        assert a.body == op["body"].encode(), at
        key = op["idempotency_key"] or f"create-{op['order_id']}"
        assert a.header("Idempotency-Key") == key, at
    else:
        assert a.method == "GET", at
        assert a.path == op["status_path"], at
        assert a.body == b"", at
    if step.get("timestamp") is not None:
        assert a.header("X-Timestamp") == str(step["timestamp"]), at


def check_wait(seconds: float, step: Dict[str, Any], at: str) -> int:
    """Checks a wait against a ``wait`` step; returns the milliseconds
    waited."""
    # Whole nanoseconds (exact for any wait shorter than months), rounded up
    # to whole milliseconds.
    ns = round(seconds * 1e9)
    ms = -(-ns // 1_000_000)
    if step.get("ms") is not None:
        assert ms == step["ms"], at
    else:
        assert 0 < ms <= step["max_ms"], f"{at}: waited {ms} ms, max {step['max_ms']}"
    return ms


def check_end(end: payidem.End, step: Dict[str, Any], at: str) -> None:
    assert end.name == step["end"], at
    assert end.final == step["final"], at
    assert end.landed == step["landed"], at
    assert end.state == step["state"], at
    status = end.response.status if end.response is not None else None
    assert status == step.get("status"), at
    if step.get("replayed") is not None:
        assert end.name == "succeeded" and end.response is not None, at
        assert end.response.replayed == step["replayed"], at
    want = step.get("error")
    if want is None:
        outcome = end.result()
        assert end.error is None and outcome.status == status, at
    else:
        with pytest.raises(payidem.Error) as info:
            end.result()
        assert info.value.code == want, at
        assert info.value.final == end.final, at
        assert end.error is info.value, at


def test_the_file_has_the_vectors() -> None:
    assert V["version"] == 1
    assert len(V["vectors"]) >= 30


@pytest.mark.parametrize("case", V["vectors"], ids=[c["name"] for c in V["vectors"]])
def test_operation_vector(case: Dict[str, Any]) -> None:
    r = Runner(case)
    for i, step in enumerate(case["script"]):
        r.run_step(step, f"{r.name} step {i}")
    assert r.last is not None, f"{r.name}: the script never checked the end"
