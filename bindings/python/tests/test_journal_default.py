"""Durable by default: with no ``journal``, operations go to this user's
journal file (owner-only), and only ``":memory:"`` keeps them in memory."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import payidem
from conftest import MOCK_KEY_ID, MOCK_SECRET, SESSION_STATE_HOME, Mock, new_order, payment


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_session_never_touches_the_real_home() -> None:
    assert os.environ["XDG_STATE_HOME"] == str(SESSION_STATE_HOME)
    assert payidem.default_journal_path() == str(SESSION_STATE_HOME / "payidem" / "journal.sqlite3")


def test_memory_name_comes_from_the_core() -> None:
    from payidem import _native

    assert payidem.MEMORY == _native.MEMORY_JOURNAL == ":memory:"


def test_default_journal_is_private_and_a_second_client_resumes_from_it(
    mock: Mock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"  # does not exist yet: the client creates it
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    journal = state / "payidem" / "journal.sqlite3"
    assert payidem.default_journal_path() == str(journal)
    assert not state.exists()

    mock.faults(timeout_504_after_commit=1.0)
    order = new_order("default-journal")
    first = payidem.Client(mock.url, MOCK_KEY_ID, MOCK_SECRET, max_attempts=2, backoff_base=0.005, deadline=20.0)
    with pytest.raises(payidem.OutcomeUnknown) as info:
        first.execute(order, "POST", "/v1/payments", payment(order))
    assert info.value.idempotency_key == f"create-{order}"
    first.close()

    assert journal.is_file()
    assert mode(journal) == 0o600, oct(mode(journal))
    assert mode(journal.parent) == 0o700, oct(mode(journal.parent))
    for sibling in journal.parent.iterdir():  # -wal, -shm: the same mode
        assert mode(sibling) & 0o077 == 0, (sibling.name, oct(mode(sibling)))

    # A second client (as after a restart) finds the operation in the default
    # journal and finishes it with the same key; the platform replays it.
    mock.faults()
    with payidem.Client(mock.url, MOCK_KEY_ID, MOCK_SECRET) as second:
        status = second.status(order)
        assert status is not None and status.unresolved
        assert status.idempotency_key == f"create-{order}"
        outcome = second.resume(order)
        assert outcome.status == 201 and outcome.replayed
        assert outcome.idempotency_key == f"create-{order}"
    assert mock.payments_created(order) == 1


def test_default_journal_survives_a_process_and_is_found_by_another(
    mock: Mock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    order = new_order("default-process")
    child = textwrap.dedent(
        """
        import sys, payidem
        url, order = sys.argv[1:3]
        with payidem.Client(url, "key_test_1", b"sk_test_payidem_mock_secret_0001") as c:
            body = {"order_id": order, "amount": 1250, "currency": "EUR"}
            print(c.execute(order, "POST", "/v1/payments", body).status)
        """
    )
    done = subprocess.run([sys.executable, "-c", child, mock.url, order], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "201"
    with payidem.Client(mock.url, MOCK_KEY_ID, MOCK_SECRET) as client:
        status = client.status(order)
        assert status is not None and status.state == "succeeded", status
        # Settled: answered from the journal, no second payment.
        again = client.execute(order, "POST", "/v1/payments", payment(order))
        assert again.status == 201
    assert mock.payments_created(order) == 1


def test_home_is_the_fallback_when_xdg_state_home_is_not_absolute(
    mock: Mock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", "relative/state")
    monkeypatch.chdir(tmp_path)
    journal = home / ".local" / "state" / "payidem" / "journal.sqlite3"
    assert payidem.default_journal_path() == str(journal)
    with payidem.Client(mock.url, MOCK_KEY_ID, MOCK_SECRET) as client:
        order = new_order("home")
        assert client.execute(order, "POST", "/v1/payments", payment(order)).status == 201
    assert journal.is_file() and mode(journal) == 0o600
    assert mode(journal.parent) == 0o700
    assert not (tmp_path / "relative").exists()


def test_no_absolute_home_is_a_journal_error_not_the_working_directory(
    mock: Mock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", "not/absolute")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(payidem.JournalError, match="XDG_STATE_HOME"):
        payidem.default_journal_path()
    with pytest.raises(payidem.JournalError, match="XDG_STATE_HOME"):
        payidem.Client(mock.url, MOCK_KEY_ID, MOCK_SECRET)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("journal", [":memory:", payidem.MEMORY])
def test_memory_journal_creates_no_file(
    mock: Mock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, journal: str
) -> None:
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    order = new_order("memory")
    with payidem.Client(mock.url, MOCK_KEY_ID, MOCK_SECRET, journal=journal) as client:
        outcome = client.execute(order, "POST", "/v1/payments", payment(order))
        assert outcome.status == 201 and not outcome.replayed
        assert client.status(order) is not None
    assert not state.exists()
    assert list(work.iterdir()) == []  # in particular no file named ":memory:"
    # Memory only: a new client knows nothing of the operation.
    with payidem.Client(mock.url, MOCK_KEY_ID, MOCK_SECRET, journal=journal) as fresh:
        assert fresh.status(order) is None


def test_a_named_journal_file_is_private_too(mock: Mock, tmp_path: Path) -> None:
    journal = tmp_path / "shop.sqlite3"
    with payidem.Client(mock.url, MOCK_KEY_ID, MOCK_SECRET, journal=journal) as client:
        order = new_order("named")
        assert client.execute(order, "POST", "/v1/payments", payment(order)).status == 201
    assert mode(journal) == 0o600


def test_an_empty_journal_setting_is_the_default_as_in_every_language(
    mock: Mock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    with payidem.Client(mock.url, MOCK_KEY_ID, MOCK_SECRET, journal="") as client:
        order = new_order("empty")
        assert client.execute(order, "POST", "/v1/payments", payment(order)).status == 201
    assert (tmp_path / "state" / "payidem" / "journal.sqlite3").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state"]
