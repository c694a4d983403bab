"""The journal rows' integrity MAC and its key (docs/journal-integrity.md):
a client with another ``journal_key`` refuses the rows and sends nothing,
the same key reads them, a bad key is ``InvalidArgument`` naming
``journal_key``, and the key is never shown."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Callable, Dict

import pytest

import payidem
from conftest import Mock, new_order, payment

MakeClient = Callable[..., payidem.Client]

KEY = b"\x5a" * 32


def test_rows_are_read_only_with_their_journal_key(mock: Mock, make_client: MakeClient, tmp_path: Path) -> None:
    journal = tmp_path / "journal.sqlite3"
    order = new_order("jk")
    first = make_client(journal=journal, journal_key=KEY)
    done = first.execute(order, "POST", "/v1/payments", payment(order))
    first.close()

    # Another key is refused when the client is created: the journal's
    # seal does not open with it, and nothing is written.
    with pytest.raises(payidem.JournalError) as info:
        make_client(journal=journal, journal_key=b"\x11" * 32)
    assert "another journal key" in str(info.value)
    assert "5a5a" not in str(info.value)

    same = make_client(journal=journal, journal_key=KEY)
    again = same.execute(order, "POST", "/v1/payments", payment(order))
    assert again.body == done.body
    assert mock.payments_created(order) == 1


def test_a_tampered_row_is_refused_and_nothing_is_sent(mock: Mock, make_client: MakeClient, tmp_path: Path) -> None:
    journal = tmp_path / "journal.sqlite3"
    order = new_order("jk-tamper")
    mock.faults(timeout_504_after_commit=1.0)
    client = make_client(journal=journal, max_attempts=1)
    with pytest.raises(payidem.OutcomeUnknown):
        client.execute(order, "POST", "/v1/payments", payment(order))
    client.close()
    mock.faults()
    with sqlite3.connect(journal) as db:
        db.execute("UPDATE operations SET idempotency_key = ? WHERE order_id = ?", (f"other-{order}", order))
    def sent() -> Dict[str, int]:
        routes: Dict[str, int] = mock.stats()["requests"]["by_route"]
        return {route: n for route, n in routes.items() if "payment" in route}

    before = sent()
    assert before, "the first attempt was counted"
    again = make_client(journal=journal)
    with pytest.raises(payidem.JournalError) as info:
        again.resume(order)
    assert order in str(info.value)
    assert sent() == before, "nothing was sent"
    assert mock.stats()["orders"][order]["idempotency_keys"] == [f"create-{order}"]


@pytest.mark.parametrize("bad", [b"short", b"x" * 1025])
def test_a_bad_journal_key_is_named(make_client: MakeClient, bad: bytes) -> None:
    with pytest.raises(payidem.InvalidArgument) as info:
        make_client(journal_key=bad)
    assert info.value.field == "journal_key"


def test_a_journal_key_must_be_bytes(make_client: MakeClient) -> None:
    with pytest.raises(TypeError):
        make_client(journal_key="not bytes")


def test_a_rotated_secret_reads_its_journal_with_the_old_derived_key(
    mock: Mock, make_client: MakeClient, tmp_path: Path
) -> None:
    """A client with another secret (mistyped, or rotated) is refused at
    creation; the old secret's derived key, given as ``journal_key``, opens
    the journal again and answers from it."""
    from conftest import MOCK_SECRET

    journal = tmp_path / "journal.sqlite3"
    order = new_order("jk-rotate")
    first = make_client(journal=journal)
    done = first.execute(order, "POST", "/v1/payments", payment(order))
    first.close()
    rotated = b"a-rotated-secret-0123456789"
    with pytest.raises(payidem.JournalError) as info:
        make_client(journal=journal, secret=rotated)
    assert "payidem journal key" in str(info.value)
    old_key = payidem.derive_journal_key(MOCK_SECRET)
    assert len(old_key) == 32
    with pytest.raises(payidem.InvalidArgument) as bad:
        payidem.derive_journal_key(b"short")
    assert bad.value.field == "secret"
    again = make_client(journal=journal, secret=rotated, journal_key=old_key)
    replay = again.execute(order, "POST", "/v1/payments", payment(order))
    assert replay.body == done.body
    assert mock.payments_created(order) == 1
