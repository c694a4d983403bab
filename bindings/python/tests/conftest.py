"""Shared fixtures: the mock payment platform and clients wired to it.

For the whole session, ``XDG_STATE_HOME`` and ``HOME`` point into a fresh
temporary directory (removed at the end), so that a client opened with the
durable default journal never writes into the real home of whoever runs the
tests. Child processes inherit them.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import urllib.request
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pytest

import payidem

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
VECTORS = REPO / "core" / "tests" / "vectors" / "protocol-v1.json"

_REAL_ENV = {name: os.environ.get(name) for name in ("XDG_STATE_HOME", "HOME")}
SESSION_DIR = Path(tempfile.mkdtemp(prefix="payidem-tests-"))
SESSION_STATE_HOME = SESSION_DIR / "state"
SESSION_HOME = SESSION_DIR / "home"
SESSION_HOME.mkdir()
os.environ["XDG_STATE_HOME"] = str(SESSION_STATE_HOME)
os.environ["HOME"] = str(SESSION_HOME)


def _real_env() -> Dict[str, str]:
    """The environment as it was before this session redirected the home,
    for tools that need the real one (cargo and rustup live there)."""
    env = dict(os.environ)
    for name, value in _REAL_ENV.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def pytest_unconfigure(config: pytest.Config) -> None:
    for name, value in _REAL_ENV.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    shutil.rmtree(SESSION_DIR, ignore_errors=True)


MOCK_KEY_ID = "key_test_1"
MOCK_SECRET = b"sk_test_payidem_mock_secret_0001"


def mock_binary() -> Path:
    """The payidem-mock binary: $PAYIDEM_MOCK_BIN, else the workspace's debug
    build, built with cargo when missing."""
    explicit = os.environ.get("PAYIDEM_MOCK_BIN")
    if explicit:
        return Path(explicit)
    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    if not target.is_absolute():
        target = REPO / target
    binary = target / "debug" / "payidem-mock"
    if not binary.exists():
        subprocess.run(["cargo", "build", "-p", "payidem-mock"], cwd=REPO, check=True, env=_real_env())
    return binary


class Mock:
    """A running payidem-mock on 127.0.0.1, with its control routes."""

    def __init__(self, *extra_args: str) -> None:
        self.process = subprocess.Popen(
            [str(mock_binary()), "--port", "0", "--control", "--seed", "7", *extra_args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        if not line.startswith("listening on "):
            self.process.kill()
            raise RuntimeError(f"payidem-mock did not start: {line!r}")
        self.url = "http://" + line[len("listening on ") :]
        threading.Thread(target=self.process.stdout.read, daemon=True).start()

    def control(self, method: str, path: str, body: Optional[Dict[str, Any]] = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        # Control POSTs must say they are JSON (the mock refuses other types).
        headers = {} if data is None else {"Content-Type": "application/json"}
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def faults(self, **kinds: Any) -> None:
        """Sets faults; kinds not named go back to 0, and the 429 and 503
        faults' Retry-After to 1 s unless retry_after_seconds is named."""
        self.control("POST", "/_mock/faults", {"retry_after_seconds": 1, **kinds})

    def stats(self) -> Any:
        return self.control("GET", "/_mock/stats")

    def payments_created(self, order_id: str) -> int:
        order = self.stats()["orders"].get(order_id)
        return 0 if order is None else int(order["payments_created"])

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)



#: The ``make_client`` fixture's type: a client of the mock, keywords as
#: :class:`payidem.Client`'s.
MakeClient = Callable[..., payidem.Client]

@pytest.fixture(scope="session")
def mock_server() -> Iterator[Mock]:
    server = Mock()
    yield server
    server.stop()


@pytest.fixture
def mock(mock_server: Mock) -> Iterator[Mock]:
    """The shared mock with no faults, before and after the test."""
    mock_server.faults()
    yield mock_server
    mock_server.faults()


def fast_options(**overrides: Any) -> Dict[str, Any]:
    """Short timeouts and backoffs, and a memory journal of the client's own
    unless the test names one."""
    options: Dict[str, Any] = dict(
        journal=payidem.MEMORY,
        connect_timeout=0.5,
        request_timeout=2.0,
        max_attempts=8,
        backoff_base=0.005,
        backoff_cap=1.0,
        deadline=20.0,
        retry_budget=1_000_000,
    )
    options.update(overrides)
    return options


@pytest.fixture
def make_client(mock: Mock) -> Iterator[MakeClient]:
    made = []

    def make(**overrides: Any) -> payidem.Client:
        url = overrides.pop("base_url", mock.url)
        secret = overrides.pop("secret", MOCK_SECRET)
        client = payidem.Client(url, MOCK_KEY_ID, secret, **fast_options(**overrides))
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


def payment(order_id: str, amount: int = 1250) -> Dict[str, Any]:
    return {"order_id": order_id, "amount": amount, "currency": "EUR"}


def status_path(order_id: str) -> str:
    return f"/v1/payments?order_id={order_id}"


_counter = iter(range(1, 10**9))
_counter_lock = threading.Lock()


def new_order(prefix: str = "ord") -> str:
    """An order id unique within this test run (and across runs of the shared
    session mock)."""
    with _counter_lock:
        n = next(_counter)
    return f"{prefix}-{os.getpid()}-{n}"


PYTHON = sys.executable


def clear_faults_after_first_try(mock: Mock) -> Callable[[payidem.AttemptEvent], None]:
    """An ``on_attempt`` hook that clears the mock's faults once the first
    try has been seen, so that the next try succeeds."""

    def hook(event: payidem.AttemptEvent) -> None:
        if event.attempt == 1:
            mock.faults()

    return hook


def wsgi_call(app: Any, method: str, target: str, headers: Dict[str, str], body: bytes) -> Tuple[str, Dict[str, str], bytes]:
    """Calls the WSGI ``app`` with one request (``target`` split into path
    and query, each header as its ``HTTP_`` variable); returns the status
    line, the response headers and the body."""
    path, _, query = target.partition("?")
    environ: Dict[str, Any] = {
        "REQUEST_METHOD": method,
        "SCRIPT_NAME": "",
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
    }
    for name, value in headers.items():
        environ["HTTP_" + name.upper().replace("-", "_")] = value
    seen: Dict[str, Any] = {}

    def start_response(status: str, response_headers: List[Tuple[str, str]]) -> None:
        seen["status"] = status
        seen["headers"] = dict(response_headers)

    out = b"".join(app(environ, start_response))
    return seen["status"], seen["headers"], out


def payment_request(prefix: str) -> Tuple[str, bytes, Dict[str, str]]:
    """A new order's payment as a raw request: its order id, the JSON body
    and the headers (its ``create-`` idempotency key, the content type)."""
    order = new_order(prefix)
    body = json.dumps(payment(order)).encode()
    headers = {"Idempotency-Key": f"create-{order}", "Content-Type": "application/json"}
    return order, body, headers


@contextlib.contextmanager
def holding_mock(
    delay_ms: int, make_client: Callable[..., payidem.Client], **options: Any
) -> Iterator[Tuple[Mock, payidem.Client]]:
    """A mock of the test's own that makes each payment, then holds its
    answer for ``delay_ms`` milliseconds (stopped on exit), and a client of
    it made by ``make_client`` with ``options``."""
    server = Mock("--delay-ms", str(delay_ms))
    try:
        server.faults(delay_after_commit=1.0)
        yield server, make_client(base_url=server.url, **options)
    finally:
        server.stop()


def closed_port_url() -> str:
    """An ``http://127.0.0.1:port`` URL on which nothing listens (a port
    just bound and released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"
