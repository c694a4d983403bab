"""The operation vectors (core/tests/vectors/operation-v1.json) through a
client's journal-bound call (``payidem.Call`` at the vectors' clocks) over a
memory and a SQLite journal: the steps and reactions the call hands out,
each record in the journal before the step that follows, its end, and the
journal's state and attempts after it. Every vector that starts with a new
operation (opened by the call), with no clock offset learnt before and no
restart, runs; see the vector file's ``about``. The checks of each step are
those of test_operation_vectors.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

import payidem
from test_operation_vectors import V, Clock, _reply, check_end, check_send, check_wait, limits_of, request_of

# The vectors' clocks are in the past: a settled row's time must stay after
# the journal's purge horizon (the longest retention the settings allow).
SETTLED_RETENTION = 1e9


def _runs_through_call(case: Dict[str, Any]) -> bool:
    p = case["progress"]
    fresh = p["age_secs"] == 0 and (
        p.get("first_recorded", False) or (p["state"] == "pending" and p["attempts"] == 0)
    )
    restarts = any("restart" in step for step in case["script"])
    return fresh and not restarts and case["setup"]["clock_offset"] == 0


CASES = [c for c in V["vectors"] if _runs_through_call(c)]


def _client(setup: Dict[str, Any], journal: str, events: List[payidem.AttemptEvent]) -> payidem.Client:
    trusted = setup["clock_trusted"]
    budget: Dict[str, Any] = {}
    if setup["retry_budget"] is not None:
        b = setup["retry_budget"]
        # The client takes a capacity; the vector's costs must be the client's.
        assert (b["retry_cost"], b["timeout_cost"], b["success_refund"]) == (5, 10, 1), b
        budget["retry_budget"] = b["capacity"]
    return payidem.Client(
        "https://pay.example" if trusted else "http://pay.example",
        "key_test_1",
        b"0123456789abcdef0123",
        journal=journal,
        allow_insecure_http=not trusted,
        **limits_of(setup),
        settled_retention=SETTLED_RETENTION,
        on_attempt=events.append,
        **budget,
    )


class CallRunner(Clock):
    def __init__(self, case: Dict[str, Any], journal: str) -> None:
        super().__init__(case)
        self.op = case["operation"]
        self.events: List[payidem.AttemptEvent] = []
        self.client = _client(case["setup"], journal, self.events)
        self.recorded: Optional[int] = None
        self.cancelled: Optional[payidem.DoneStep] = None
        op = self.op
        self.call = payidem.Call.begin(
            self.client,
            *request_of(op),
            status_path=op["status_path"],
            idempotency_key=op["idempotency_key"],
        )

    def check_journal(self, state: Optional[str], attempts: int, at: str) -> None:
        status = self.client.status(self.op["order_id"])
        assert status is not None, at
        if state is not None:
            assert status.state == state, at
        assert status.attempts == attempts, f"{at}: journal {status}"

    def run_step(self, step: Dict[str, Any], at: str) -> None:
        if "abandon" in step:
            try:
                self.call.cancel()
            except payidem.Error as e:
                self.cancelled = payidem.DoneStep(None, e)
            else:
                pytest.fail(f"{at}: a cancel before the end gave an outcome")
            return
        if "reply" in step:
            self.events.clear()
            self.call.report(_reply(step["reply"]), now=self.now, elapsed=self.elapsed)
            assert [e.next for e in self.events] == [step["next"]], at
            return
        expect = step["expect"]
        if expect == "persist":
            # The call makes the record itself, before its next step.
            self.recorded = step["attempt"]
            return
        got = self.cancelled or self.call.step(now=self.now, elapsed=self.elapsed)
        if self.recorded is not None:
            self.check_journal(None, self.recorded, at)
            self.recorded = None
        if expect == "send" and isinstance(got, payidem.SendStep):
            if got.attempt.kind == "operation":
                # Never sent before its record.
                self.check_journal("in_flight", got.attempt.number, at)
            assert got.timeout is not None and got.timeout > 0, at
            check_send(got.attempt, self.op, step, at)
        elif expect == "wait" and isinstance(got, payidem.WaitStep):
            self.elapsed_ms += check_wait(got.seconds, step, at)
        elif expect == "end" and isinstance(got, payidem.DoneStep):
            end = self.call.end
            assert end is not None, at
            check_end(end, step, at)
            want = "cancelled" if self.cancelled is not None else step["error"]
            assert (got.error.code if got.error is not None else None) == want, at
            self.check_journal(step["state"], step["journal_attempts"], at)
        else:
            pytest.fail(f"{at}: expected {expect}, got {got!r}")


def test_most_vectors_run_through_a_call() -> None:
    assert len(CASES) >= 28, f"{len(CASES)} of {len(V['vectors'])} vectors"


@pytest.mark.parametrize("journal", ["memory", "sqlite"])
@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_operation_vector_through_call(case: Dict[str, Any], journal: str, tmp_path: Path) -> None:
    r = CallRunner(case, ":memory:" if journal == "memory" else str(tmp_path / "journal.db"))
    for i, step in enumerate(case["script"]):
        r.run_step(step, f"{case['name']} (call, {journal}) step {i}")
    assert r.call.done, case["name"]
