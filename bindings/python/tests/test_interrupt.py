"""Ctrl-C during a call stops it promptly and leaves it resumable."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import payidem
from conftest import MOCK_KEY_ID, MOCK_SECRET, Mock, new_order, payment

# The child first restores Python's own SIGINT handling: a process started
# with SIGINT ignored (a shell's background job, nohup, some CI runners) passes
# SIG_IGN on to its children, and Python then installs no KeyboardInterrupt
# handler, so the Ctrl-C this test sends would be silently dropped.
CHILD = textwrap.dedent(
    """
    import signal
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import sys, payidem
    url, journal, order = sys.argv[1:4]
    body = {"order_id": order, "amount": 1250, "currency": "EUR"}
    def announce(event):
        print("attempt", event.attempt, event.status, flush=True)
    client = payidem.Client(url, "key_test_1", b"sk_test_payidem_mock_secret_0001", journal=journal,
                            backoff_base=3.0, backoff_cap=60.0, max_attempts=8, deadline=120.0,
                            retry_budget=1000000, on_attempt=announce)
    client.execute(order, "POST", "/v1/payments", body)
    print("settled", flush=True)
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_interrupts_promptly_and_the_operation_resumes(mock: Mock, tmp_path: Path) -> None:
    # Every answer is a 503 with Retry-After: 30: the client waits 30 s
    # before its second attempt, unless Ctrl-C stops it.
    mock.faults(error_503=1.0, retry_after_seconds=30)
    journal = tmp_path / "journal.sqlite3"
    order = new_order("sigint")
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, mock.url, str(journal), order],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert child.stdout is not None
        first = child.stdout.readline()
        assert first.startswith("attempt 1 503"), first
        time.sleep(0.2)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=20)
        elapsed = time.monotonic() - sent
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGINT, err
    assert "KeyboardInterrupt" in err
    assert "Cancelled" in err and "resume it" in err
    assert "settled" not in out
    assert elapsed < 6, f"took {elapsed:.2f}s to stop during a 30 s wait"

    mock.faults()
    with payidem.Client(mock.url, MOCK_KEY_ID, MOCK_SECRET, journal=journal) as client:
        status = client.status(order)
        assert status is not None and status.unresolved
        outcome = client.resume(order)
        assert outcome.status == 201
    assert mock.payments_created(order) == 1


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_ctrl_c_inside_the_on_attempt_hook_stops_the_call(mock: Mock, tmp_path: Path) -> None:
    # A Ctrl-C that lands while the hook runs raises KeyboardInterrupt in
    # the hook: it is the caller's, so the call stops at once (as Cancelled,
    # resumable) instead of the hook's error being logged and the 30 s wait
    # going on.
    mock.faults(error_503=1.0, retry_after_seconds=30)
    journal = tmp_path / "journal.sqlite3"
    order = new_order("hook-sigint")
    hooked = []

    def interrupted(event: payidem.AttemptEvent) -> None:
        hooked.append(event.attempt)
        raise KeyboardInterrupt

    client = payidem.Client(mock.url, MOCK_KEY_ID, MOCK_SECRET, journal=journal, backoff_base=3.0,
                            backoff_cap=60.0, max_attempts=8, deadline=120.0, retry_budget=1000000,
                            on_attempt=interrupted)
    # As in an interactive program (this process may have been started
    # with SIGINT ignored).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt) as raised:
            client.execute(order, "POST", "/v1/payments", payment(order, 1250))
        elapsed = time.monotonic() - started
        assert hooked == [1]
        assert isinstance(raised.value.__context__, payidem.Cancelled), repr(raised.value.__context__)
        assert elapsed < 6, f"took {elapsed:.2f}s to stop during a 30 s wait"
        status = client.status(order)
        assert status is not None and status.unresolved
    finally:
        signal.signal(signal.SIGINT, previous)
        client.close()
    mock.faults()
    with payidem.Client(mock.url, MOCK_KEY_ID, MOCK_SECRET, journal=journal) as client:
        assert client.resume(order).status == 201
    assert mock.payments_created(order) == 1
