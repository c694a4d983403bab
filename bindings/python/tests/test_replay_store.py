"""Issue #11: verifiers (and the WSGI middleware) sharing a real Redis replay
store, started here in a temporary directory (unix socket only, nothing
persisted). A request accepted by one verifier is a replay for another;
Redis stopped fails closed (503 ``replay_store_unavailable`` with
``Retry-After``); Redis restarted empty refuses requests signed before.

The server is started through ``ffi/tests-c/redis_server.sh``, which execs
redis-server after starting a watcher: a test process killed before its
clean-up (SIGKILL, a CI timeout) leaves neither a running server nor its
directory behind."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest

import payidem
from payidem.wsgi import VerifyingMiddleware
from conftest import REPO, wsgi_call

SECRET = b"sk_test_0123456789abcdef0123456789abcdef"
BODY = b'{"amount":1}'
PATH = "/v1/payments"
EPOCH_KEY = "payidem:replay:epoch"
REDIS_SERVER = REPO / "ffi" / "tests-c" / "redis_server.sh"


class Redis:
    """A throwaway redis-server; fails the test (never skips) when it cannot
    start."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.socket = directory / "redis.sock"
        self.process: Optional[subprocess.Popen[bytes]] = None
        self.start()

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    def start(self) -> None:
        binary = os.environ.get("PAYIDEM_REDIS_SERVER", "redis-server")
        args = [str(REDIS_SERVER), "--dir", str(self.dir),
                binary, "--port", "0", "--unixsocket", str(self.socket), "--unixsocketperm", "700",
                "--save", "", "--appendonly", "no", "--dir", str(self.dir), "--logfile", "redis.log"]
        try:
            self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL)
        except OSError as e:
            pytest.fail(f"cannot start {binary} ({e}): the replay-store tests need a real redis-server; "
                        "`make redis-deps` installs it", pytrace=False)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if self.command("PING") == "PONG":
                    return
            except OSError:
                pass
            if self.process.poll() is not None:
                pytest.fail(f"{binary} exited at start (status {self.process.returncode}; see stderr); "
                            "the replay-store tests need a real redis-server: `make redis-deps` installs it",
                            pytrace=False)
            time.sleep(0.01)
        log = (self.dir / "redis.log").read_text(errors="replace") if (self.dir / "redis.log").exists() else ""
        pytest.fail(f"redis-server did not answer within 10 s; its log:\n{log}", pytrace=False)

    def stop(self) -> None:
        """Kills the server at once, like a crash."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None
        if self.socket.exists():
            self.socket.unlink()

    def command(self, *args: str) -> str:
        """One command; a simple, integer or bulk reply as text."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(5)
            s.connect(str(self.socket))
            request = f"*{len(args)}\r\n" + "".join(f"${len(a)}\r\n{a}\r\n" for a in args)
            s.sendall(request.encode())
            reply = s.makefile("rb")
            head = reply.readline().rstrip(b"\r\n")
            if head[:1] in (b"+", b":"):
                return head[1:].decode()
            if head[:1] == b"-":
                raise RuntimeError(head[1:].decode())
            if head == b"$-1":
                return ""
            return reply.read(int(head[1:]) + 2)[:-2].decode()


@pytest.fixture
def redis() -> Iterator[Redis]:
    with tempfile.TemporaryDirectory(prefix="payidem-py-redis-") as d:
        server = Redis(Path(d))
        try:
            yield server
        finally:
            server.stop()


def sign(key: str, at: Optional[int] = None) -> Dict[str, str]:
    signer = payidem.Signer("key_live_1", SECRET)
    return dict(signer.sign_attempt("POST", PATH, BODY, idempotency_key=key,
                                    timestamp=int(time.time()) if at is None else at))


def serve(mw: VerifyingMiddleware, headers: Dict[str, str]) -> Tuple[int, Dict[str, str], Any]:
    status_line, response_headers, body = wsgi_call(mw, "POST", PATH, headers, BODY)
    status = int(status_line.split()[0])
    return status, response_headers, json.loads(body) if status != 201 else None


def test_the_store_url_is_checked() -> None:
    with pytest.raises(payidem.InvalidArgument) as info:
        payidem.Verifier({"key_live_1": [SECRET]}, replay_store="memcached://u:hunter2@h")
    assert info.value.field == "replay_store" and "hunter2" not in info.value.message
    with pytest.raises(TypeError):
        payidem.Verifier({"key_live_1": [SECRET]}, replay_store=b"redis://h")  # type: ignore[arg-type]
    # "memory" is the default, in-process store: two verifiers each accept.
    h = sign("create-m")
    for store in (None, "memory"):
        payidem.Verifier({"key_live_1": [SECRET]}, replay_store=store).verify("POST", PATH, h, BODY)


def test_verifiers_sharing_redis(redis: Redis) -> None:
    # A store that has been up for a while: its epoch long past.
    redis.command("SET", EPOCH_KEY, str(int(time.time()) - 100))
    a = payidem.Verifier({"key_live_1": [SECRET]}, replay_store=redis.url)
    b = payidem.Verifier({"key_live_1": [SECRET]}, replay_store=redis.url)
    reached: List[str] = []

    def app(environ: Dict[str, Any], start_response: Any) -> List[bytes]:
        reached.append(environ["payidem.verified"].nonce if "payidem.verified" in environ else "?")
        start_response("201 Created", [])
        return [b""]

    mw_a, mw_b = VerifyingMiddleware(app, a), VerifyingMiddleware(app, b)

    first = sign("create-1")
    assert serve(mw_a, first)[0] == 201
    for mw in (mw_b, mw_a):
        status, _, body = serve(mw, first)
        assert (status, body["error"]["code"]) == (409, "nonce_reused")
    with pytest.raises(payidem.NonceReused):
        b.verify("POST", PATH, first, BODY)
    assert len(reached) == 1

    # Stopped: both fail closed, nothing reaches the app.
    redis.stop()
    down = sign("create-2")
    for verifier, mw in ((a, mw_a), (b, mw_b)):
        status, headers, body = serve(mw, down)
        assert (status, body["error"]["code"]) == (503, "replay_store_unavailable")
        assert headers["Retry-After"] == "1"
        with pytest.raises(payidem.ReplayStoreUnavailable) as info:
            verifier.verify("POST", PATH, sign("create-3"), BODY)
        assert info.value.http_status == 503 and info.value.number == 19
        assert str(redis.socket) not in info.value.message
    assert len(reached) == 1

    # Restarted empty: what was signed before the restart is refused on both.
    redis.start()
    for mw in (mw_a, mw_b):
        for h in (first, down):
            status, headers, body = serve(mw, h)
            assert (status, headers["Retry-After"]) == (503, "1"), body
    assert len(reached) == 1
    # Signed after the new epoch plus its skew: accepted once.
    epoch = int(redis.command("GET", EPOCH_KEY))
    fresh = sign("create-4", at=epoch + 3)
    assert serve(mw_b, fresh)[0] == 201
    assert serve(mw_a, fresh)[0] == 409
