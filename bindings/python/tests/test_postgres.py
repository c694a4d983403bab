"""The PostgreSQL journal's fleet features from Python, against a real
PostgreSQL server (started here: ``ffi/tests-c/pg_server.sh`` runs initdb in
a temporary directory, unix socket only, as the ``postgres`` user under root)
and the mock: a client with ``journal="postgres://..."`` pays; the outbox
statement, run with psql in the application's own transaction, records the
operation; ``take_over`` sends it once. A server that cannot start fails
these tests (``make pg-deps`` installs it); they are never skipped."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from typing import Dict, Iterator, List, Union

import pytest

import payidem
from conftest import REPO, Mock, new_order, payment, status_path

PG_SERVER = REPO / "ffi" / "tests-c" / "pg_server.sh"


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    directory = tempfile.mkdtemp(prefix="payidem-py-pg-", dir="/tmp")
    os.chmod(directory, 0o755)
    started = subprocess.run([str(PG_SERVER), "start", directory], capture_output=True, text=True)
    if started.returncode != 0:
        subprocess.run(["rm", "-rf", directory], check=False)
        pytest.fail(f"cannot start PostgreSQL (make pg-deps installs it): {started.stderr}")
    try:
        yield started.stdout.strip()
    finally:
        subprocess.run([str(PG_SERVER), "stop", directory], check=False)
        subprocess.run(["rm", "-rf", directory], check=False)


def psql(url: str, script: str, variables: Dict[str, str]) -> None:
    args = ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1"]
    for name, value in variables.items():
        args += ["-v", f"{name}={value}"]
    done = subprocess.run([*args, "-d", url, "-f", "-"], input=script, capture_output=True, text=True)
    assert done.returncode == 0, f"psql: {done.stderr}\nscript:\n{script}"


def run_outbox(url: str, order: str, sql: str, params: List[Union[str, bytes, None]], commit: bool) -> None:
    """Runs the outbox statement as it is (``$n`` placeholders) in one
    transaction with the application's own row: PREPARE with the types of
    the params (str text, bytes bytea, None a text NULL), EXECUTE with the
    values as psql variables."""
    variables = {"app_order": order}
    types: List[str] = []
    values: List[str] = []
    for i, value in enumerate(params, start=1):
        name = f"p{i}"
        if value is None:
            types.append("text")
            values.append("NULL")
        elif isinstance(value, bytes):
            types.append("bytea")
            values.append(f"decode(:'{name}', 'hex')")
            variables[name] = value.hex()
        else:
            types.append("text")
            values.append(f":'{name}'")
            variables[name] = value
    psql(
        url,
        "CREATE TABLE IF NOT EXISTS app_orders (id text PRIMARY KEY);\n"
        "BEGIN;\n"
        "INSERT INTO app_orders VALUES (:'app_order');\n"
        f"PREPARE payidem_outbox ({', '.join(types)}) AS {sql};\n"
        f"EXECUTE payidem_outbox ({', '.join(values)});\n"
        f"{'COMMIT' if commit else 'ROLLBACK'};\n",
        variables,
    )


def pg_client(mock: Mock, url: str) -> payidem.Client:
    return payidem.Client(
        mock.url,
        "key_test_1",
        b"sk_test_payidem_mock_secret_0001",
        journal=url,
        backoff_base=0.005,
        backoff_cap=0.05,
    )


def test_a_postgres_journal_pays(mock: Mock, pg_url: str) -> None:
    order = new_order("py-pg-paid")
    with pg_client(mock, pg_url) as client:
        outcome = client.execute(order, "POST", "/v1/payments", payment(order), status_path=status_path(order))
        assert outcome.status in (200, 201)
        status = client.status(order)
        assert status is not None and status.state == "succeeded" and status.attempts == 1
    assert mock.payments_created(order) == 1


def test_outbox_insert_checks_its_arguments(mock: Mock, pg_url: str) -> None:
    with pg_client(mock, pg_url) as client:
        with pytest.raises(payidem.InvalidArgument) as bad:
            client.outbox_insert("py-x", "POST", "/v1/payments", b"{}", paramstyle="qmark")
        assert bad.value.field == "paramstyle"
        with pytest.raises(payidem.InvalidArgument) as bad:
            client.outbox_insert("py-x", "POST", "v1/payments", b"{}")
        assert bad.value.field == "path"
        with pytest.raises(payidem.InvalidArgument) as bad:
            client.outbox_insert("py x", "POST", "/v1/payments", b"{}")
        assert bad.value.field == "order_id"
        with pytest.raises(payidem.InvalidArgument) as bad:
            client.outbox_insert("py-x", "POST", "/v1/payments", b"{}", status_path="no-slash")
        assert bad.value.field == "status_path"
        with pytest.raises(payidem.InvalidArgument) as bad:
            client.take_over(-1)
        assert bad.value.field == "limit"

        body = {"amount": 1}
        sql, params = client.outbox_insert("py-x", "POST", "/v1/payments", body, idempotency_key="key-x")
        assert "%s" in sql and "$1" not in sql
        assert params[:4] == ["py-x", "key-x", "POST", "/v1/payments"]
        assert params[4] == payidem.freeze_body(body) == json.dumps(body, separators=(",", ":")).encode()
        assert params[6] is None and len(params) == 7
        dollar_sql, dollar_params = client.outbox_insert(
            "py-x", "POST", "/v1/payments", body, idempotency_key="key-x", paramstyle="dollar"
        )
        assert "$7" in dollar_sql and "%s" not in dollar_sql and dollar_params == params
        for n in range(1, 8):
            dollar_sql = dollar_sql.replace(f"${n}", "%s", 1)
        assert dollar_sql == sql


def test_outbox_then_take_over_sends_once(mock: Mock, pg_url: str) -> None:
    order = new_order("py-pg-outbox")
    rolled_back = new_order("py-pg-rollback")
    with pg_client(mock, pg_url) as client:
        sql, params = client.outbox_insert(
            order, "POST", "/v1/payments", payment(order, 4200), status_path=status_path(order), paramstyle="dollar"
        )
        rb_sql, rb_params = client.outbox_insert(
            rolled_back, "POST", "/v1/payments", payment(rolled_back), paramstyle="dollar"
        )
        run_outbox(pg_url, rolled_back, rb_sql, rb_params, commit=False)
        run_outbox(pg_url, order, sql, params, commit=True)

        pending = client.status(order)
        assert pending is not None and pending.state != "succeeded" and pending.attempts == 0
        assert pending.idempotency_key == f"create-{order}"
        assert client.status(rolled_back) is None
        assert mock.payments_created(order) == 0

        taken = client.take_over(10)
        assert [order_id for order_id, _ in taken] == [order]
        outcome = taken[0][1]
        assert isinstance(outcome, payidem.Outcome), outcome
        assert outcome.idempotency_key == f"create-{order}" and outcome.attempts == 1
        done = client.status(order)
        assert done is not None and done.state == "succeeded"

        assert client.take_over(10) == []
    assert mock.payments_created(order) == 1
    assert mock.stats()["orders"][order]["idempotency_keys"] == [f"create-{order}"]
