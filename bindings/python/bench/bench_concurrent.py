"""Settled payments per second through one payidem Client with a SQLite
journal on disk, from 1, 4, 16 and 64 threads, against the anchor measured in
the same run with the same number of threads: the same signed POSTs
(``payidem.Signer``) sent with ``http.client``, one keep-alive connection per
thread, no journal, no retries.

    cargo build --release -p payidem-mock
    python bench/bench_concurrent.py [--ops N] [--rounds R] [--threads 1,4,16,64]

``Client.execute`` releases the GIL for the whole call (journal, network,
waits), so its threads run in parallel and share the journal's fsyncs (group
commit); the anchor's threads hold the GIL while they build and parse each
request. Each round runs both sides back to back; the figures are medians of
the rounds. Starts its own payidem-mock ($PAYIDEM_MOCK_BIN, else the
workspace's release or debug build).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Callable, List, Optional, Tuple

import payidem

KEY_ID = "key_test_1"
SECRET = b"sk_test_payidem_mock_secret_0001"
REPO = Path(__file__).resolve().parents[3]


def mock_binary() -> Path:
    env = os.environ.get("PAYIDEM_MOCK_BIN")
    if env:
        return Path(env)
    for profile in ("release", "debug"):
        candidate = REPO / "target" / profile / "payidem-mock"
        if candidate.exists():
            return candidate
    sys.exit("payidem-mock not found: cargo build --release -p payidem-mock (or set PAYIDEM_MOCK_BIN)")


def start_mock() -> Tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [str(mock_binary()), "--port", "0", "--control", "--seed", "7"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("listening on "):
        proc.kill()
        sys.exit(f"payidem-mock did not start: {line!r}")
    return proc, line[len("listening on ") :]


def payment_body(order_id: str, amount: int) -> bytes:
    return json.dumps({"order_id": order_id, "amount": amount, "currency": "EUR"}).encode()


def run_threads(threads: int, ops: int, make_worker: Callable[[], Callable[[int], None]]) -> float:
    """Runs op(0..ops) on `threads` threads (each with its own worker state);
    returns operations per second."""
    lock = threading.Lock()
    counter = [0]
    errors: List[BaseException] = []

    def loop() -> None:
        try:
            op = make_worker()
            while True:
                with lock:
                    i = counter[0]
                    counter[0] += 1
                if i >= ops:
                    return
                op(i)
        except BaseException as e:  # reported after the run
            errors.append(e)

    workers = [threading.Thread(target=loop) for _ in range(threads)]
    started = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - started
    if errors:
        raise errors[0]
    return ops / elapsed


def raw_rate(host_port: str, signer: payidem.Signer, threads: int, ops: int, tag: str) -> float:
    host, port = host_port.rsplit(":", 1)

    def make_worker() -> Callable[[int], None]:
        conn = http.client.HTTPConnection(host, int(port), timeout=5)

        def op(i: int) -> None:
            order = f"{tag}-raw-{i}"
            body = payment_body(order, 1000 + i % 400)
            headers = signer.sign_attempt("POST", "/v1/payments", body, f"create-{order}")
            headers["Content-Type"] = "application/json"
            conn.request("POST", "/v1/payments", body=body, headers=headers)
            response = conn.getresponse()
            response.read()
            if response.status != 201:
                raise RuntimeError(f"raw POST: status {response.status}")

        return op

    return run_threads(threads, ops, make_worker)


def payidem_rate(url: str, journal: str, threads: int, ops: int, tag: str) -> float:
    client = payidem.Client(
        url,
        KEY_ID,
        SECRET,
        journal=journal,
        connect_timeout=2.0,
        request_timeout=2.0,
        backoff_base=0.005,
        backoff_cap=0.05,
        deadline=20.0,
        retry_budget=100000,
    )

    def make_worker() -> Callable[[int], None]:
        def op(i: int) -> None:
            order = f"{tag}-pi-{i}"
            outcome = client.execute(
                order,
                "POST",
                "/v1/payments",
                payment_body(order, 1000 + i % 400),
                status_path=f"/v1/payments?order_id={order}",
            )
            if outcome.status != 201:
                raise RuntimeError(f"execute: status {outcome.status}")

        return op

    try:
        return run_threads(threads, ops, make_worker)
    finally:
        client.close()


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=1200, help="operations per run (default 1200)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, median reported (default 3)")
    parser.add_argument("--threads", default="1,4,16,64", help="thread counts (default 1,4,16,64)")
    args = parser.parse_args(argv)
    levels = [int(t) for t in args.threads.split(",")]

    proc, host_port = start_mock()
    url = "http://" + host_port
    signer = payidem.Signer(KEY_ID, SECRET)
    run = uuid.uuid4().hex[:8]
    print(f"payidem {payidem.__version__}, CPython {platform.python_version()}, {os.cpu_count()} CPUs")
    print(f"payidem Client (SQLite journal) vs. raw signed http.client POSTs, {args.ops} operations per run, median of {args.rounds}")
    print(f"{'run':<46} {'ops/s':>10}")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for threads in levels:
                ours: List[float] = []
                raw: List[float] = []
                for r in range(args.rounds):
                    tag = f"py{run}-t{threads}r{r}"
                    raw.append(raw_rate(host_port, signer, threads, args.ops, tag))
                    journal = str(Path(tmp) / f"journal-{threads}-{r}.sqlite3")
                    ours.append(payidem_rate(url, journal, threads, args.ops, tag))
                o, w = statistics.median(ours), statistics.median(raw)
                print(f"{f'http.client, signed, no journal, {threads} thread(s)':<46} {w:>10.0f}")
                print(f"{f'payidem client, SQLite journal, {threads} thread(s)':<46} {o:>10.0f}")
                print(f"{'  ratio payidem / raw':<46} {o / w:>10.2f}")
    finally:
        proc.kill()
        proc.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
