"""A success is never lost to a journal failure.

Once the platform's 201 is in, every write to a regular file fails: the
process's file-size limit drops to 0, so write(2) gets EFBIG as on a failing
disk. The caller gets the 201 with the journal's error attached; with the
disk back, the next execute of the order resumes it and the platform replays
the same answer.
"""

from __future__ import annotations

import resource
import signal
from pathlib import Path
from typing import Any, Callable, Iterator, List

import pytest

import payidem
from conftest import MakeClient, Mock, new_order, payment


@pytest.fixture
def file_size_limit() -> Iterator[Callable[[bool], None]]:
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    def set_zero(zero: bool) -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (0 if zero else soft, hard))

    yield set_zero
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    signal.signal(signal.SIGXFSZ, previous)


def test_a_2xx_whose_journal_write_fails_reaches_the_caller(
    mock: Mock,
    make_client: MakeClient,
    tmp_path: Path,
    file_size_limit: Callable[[bool], None],
) -> None:
    tripped: List[int] = []

    def fail_disk_after_answer(event: Any) -> None:
        if event.status == 201 and not tripped:
            tripped.append(event.status)
            file_size_limit(True)

    journal = tmp_path / "journal.sqlite3"
    client = make_client(journal=journal, on_attempt=fail_disk_after_answer)
    order = new_order()
    # No status path: the resumed call re-sends the POST with its key, and
    # the platform replays its stored answer.
    try:
        first = client.execute(order, "POST", "/v1/payments", payment(order, 4200))
    finally:
        file_size_limit(False)
    assert tripped == [201], "the disk never failed"
    assert first.status == 201 and first.replayed is False
    assert isinstance(first.journal_error, payidem.errors.JournalError)
    assert first.journal_error.code == "journal_error"
    assert first.journal_error.order_id == order
    assert first.journal_error.final is False
    status = client.status(order)
    assert status is not None and status.state == "in_flight"

    again = client.execute(order, "POST", "/v1/payments", payment(order, 4200))
    assert again.replayed is True
    assert again.journal_error is None
    assert again.body == first.body
    assert again.idempotency_key == first.idempotency_key
    status = client.status(order)
    assert status is not None and status.state == "succeeded"
    assert mock.payments_created(order) == 1
