"""``Client.take_over_loop``: the core's take-over loop, run from a Python
thread with the GIL released, stopped by a ``threading.Event``."""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path
from typing import List

import pytest

import payidem
from conftest import MakeClient, Mock, new_order, payment, status_path

# A lease holds ttl + request timeout past its last renewal (2 s here, in the
# journal's whole seconds), renewed every heartbeat.
LEASE_TTL = 1.0
REQUEST_TIMEOUT = 1.0
HEARTBEAT = 0.25
LEASE_SPAN = LEASE_TTL + REQUEST_TIMEOUT
LOAD_MARGIN = 6.0  # a loaded CI host: a claim, a POST, a fsync


def test_an_abandoned_operation_is_taken_over_by_a_background_loop(
    mock: Mock, make_client: MakeClient, tmp_path: Path
) -> None:
    journal = str(tmp_path / "journal.sqlite3")
    lease = dict(journal=journal, lease_ttl=LEASE_TTL, request_timeout=REQUEST_TIMEOUT, lease_heartbeat=HEARTBEAT)
    holder, taker = make_client(**lease), make_client(**lease)
    order = new_order("loop")
    # The holder records its first attempt and never sends it (it hung or
    # died): nothing renews its lease, written after this instant.
    begun = time.monotonic()
    call = payidem.Call.begin(holder, order, "POST", "/v1/payments", payment(order), status_path=status_path(order))
    assert isinstance(call.step(), payidem.SendStep)

    stop = threading.Event()
    driven: List[int] = []
    # The GIL is released while the loop runs: this thread goes on polling.
    loop = threading.Thread(target=lambda: driven.append(taker.take_over_loop(batch=4, idle=3600.0, stop=stop)))
    loop.start()
    try:
        settled = None
        while settled is None:
            status = taker.status(order)
            if status is not None and status.state == "succeeded":
                settled = time.monotonic() - begun
            elif time.monotonic() - begun > LEASE_SPAN + LOAD_MARGIN + 10:
                pytest.fail(f"not taken over: {status}")
            time.sleep(0.02)
        # Never before the lease lapsed (written after `begun`, on the
        # journal's clock in whole seconds), within a few heartbeats of that.
        assert LEASE_SPAN - 1 <= settled <= LEASE_SPAN + 3 * HEARTBEAT + LOAD_MARGIN, settled
    finally:
        stop.set()
        loop.join(timeout=10)
    assert not loop.is_alive(), "the loop did not end when stop was set"
    assert driven == [1]

    # The stale holder's cancel writes nothing over the settled operation
    # (whatever it answers: its lease is gone).
    try:
        call.cancel()
    except payidem.Error:
        pass
    status = holder.status(order)
    assert status is not None and status.state == "succeeded"
    assert mock.payments_created(order) == 1


def test_a_set_event_stops_an_idle_loop_and_arguments_are_checked(make_client: MakeClient) -> None:
    client = make_client(lease_ttl=LEASE_TTL, lease_heartbeat=HEARTBEAT)
    stop = threading.Event()
    stop.set()
    assert client.take_over_loop(stop=stop) == 0
    with pytest.raises(payidem.InvalidArgument) as bad:
        client.take_over_loop(batch=-1, stop=stop)
    assert bad.value.field == "batch"
    # An idle of 0 is the core's: a whole heartbeat between empty looks.
    assert client.take_over_loop(idle=0, stop=stop) == 0
    for idle in (-1.0, math.nan, math.inf):
        with pytest.raises(payidem.InvalidArgument) as bad:
            client.take_over_loop(idle=idle, stop=stop)
        assert bad.value.field == "idle"
    with pytest.raises(payidem.InvalidArgument) as bad:
        client.take_over_loop(stop=True)  # type: ignore[arg-type]
    assert bad.value.field == "stop"
