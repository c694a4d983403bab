"""Issue 22 in Python: a password in a journal URL, a proxy URL or a replay
store URL appears in no ``repr()``, ``str()`` or exception message; and
``payidem.requests.PayidemAdapter`` sends through the environment's proxy
only when the client was made with ``proxy_from_env=True``."""

from __future__ import annotations

import socket
import threading
import time
import traceback
from typing import Callable, Iterator, List

import pytest

import payidem
from conftest import MakeClient, MOCK_KEY_ID, MOCK_SECRET, Mock, fast_options, new_order, payment

requests = pytest.importorskip("requests")

from payidem.requests import PayidemAdapter  # noqa: E402

PASSWORD = "PASSWORD-x7Qz"
PG_URL = f"postgres://u:{PASSWORD}@127.0.0.1:1/db"
PROXY_URL = f"http://u:{PASSWORD}@127.0.0.1:1"
REDIS_URL = f"redis://:{PASSWORD}@127.0.0.1:1"


def printed(value: object) -> List[str]:
    """Every way ``value`` is printed: repr, str, and for an exception its
    message and formatted traceback."""
    out = [repr(value), str(value)]
    if isinstance(value, BaseException):
        out.append("".join(traceback.format_exception(type(value), value, value.__traceback__)))
        out.append(str(getattr(value, "message", "")))
    return out


def assert_hidden(what: str, value: object) -> None:
    for text in printed(value):
        assert PASSWORD not in text, f"{what} shows the password: {text}"


def test_a_postgres_journal_that_cannot_connect_names_no_password() -> None:
    # The client starts (its journal connects lazily); each call answers
    # JournalError until the server is reachable.
    for journal in (PG_URL, f"postgres://127.0.0.1:1/db?password={PASSWORD}"):
        client = payidem.Client("http://127.0.0.1:1", MOCK_KEY_ID, MOCK_SECRET,
                                **fast_options(journal=journal))
        try:
            assert_hidden("Client", client)
            with pytest.raises(payidem.JournalError) as info:
                client.execute(new_order("pg"), "POST", "/v1/payments", {"amount": 1})
            assert_hidden("the PostgreSQL journal's error", info.value)
        finally:
            client.close()


def test_a_mistyped_journal_url_is_named_redacted() -> None:
    # Taken for a file name, relative to the tests' directory (no such
    # directory there: nothing is created).
    for journal, shown in [
        (f"postgress://u:{PASSWORD}@127.0.0.1:1/db", "postgress://***@127.0.0.1:1/db"),
        (f"host=127.0.0.1 password={PASSWORD}/db", "host=127.0.0.1 password=***"),
    ]:
        with pytest.raises(payidem.JournalError) as info:
            payidem.Client("http://127.0.0.1:1", MOCK_KEY_ID, MOCK_SECRET,
                           **fast_options(journal=journal))
        assert_hidden("a file journal's error", info.value)
        assert shown in info.value.message, info.value.message


def test_a_client_with_a_proxy_password_never_prints_it() -> None:
    client = payidem.Client("http://platform.invalid:8080", MOCK_KEY_ID, MOCK_SECRET,
                            **fast_options(proxy=PROXY_URL, allow_insecure_http=True,
                                           max_attempts=1))
    try:
        assert_hidden("Client", client)
        assert_hidden("PayidemAdapter", PayidemAdapter(client))
        with pytest.raises(payidem.Error) as info:
            client.execute(new_order("sec"), "POST", "/v1/payments", {"amount": 1})
        assert_hidden("a call through an unreachable proxy", info.value)
    finally:
        client.close()
    with pytest.raises(payidem.InvalidArgument) as refused:
        payidem.Client("http://127.0.0.1:1", MOCK_KEY_ID, MOCK_SECRET,
                       **fast_options(proxy=f"socks5://u:{PASSWORD}@127.0.0.1:1"))
    assert_hidden("a refused proxy URL", refused.value)


def test_a_verifier_with_a_replay_store_password_never_prints_it() -> None:
    secret = b"sk_test_aaaaaaaaaaaaaaaaaaaaaaaa"
    verifier = payidem.Verifier({"key_live_1": [secret]}, replay_store=REDIS_URL)
    assert_hidden("Verifier", verifier)
    body = b'{"amount":1}'
    headers = dict(payidem.Signer("key_live_1", secret).sign_attempt(
        "POST", "/v1/payments", body, idempotency_key="create-1", timestamp=int(time.time())))
    with pytest.raises(payidem.ReplayStoreUnavailable) as info:
        verifier.verify("POST", "/v1/payments", headers, body)
    assert_hidden("verify's error", info.value)
    for bad in (f"rediss://:{PASSWORD}@127.0.0.1:1", f"redis://:{PASSWORD}@127.0.0.1:notaport"):
        with pytest.raises(payidem.InvalidArgument) as refused:
            payidem.Verifier({"key_live_1": [secret]}, replay_store=bad)
        assert_hidden("a refused replay store URL", refused.value)


class ForgingProxy:
    """An HTTP proxy on 127.0.0.1 port 0 that records every request and
    answers each with a forged 201, as a hostile proxy would."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.seen: List[bytes] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                data = b""
                try:
                    while b"\r\n\r\n" not in data:
                        chunk = conn.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                except OSError:
                    pass
                self.seen.append(data)
                body = b'{"id":"pay_forged","status":"succeeded"}'
                conn.sendall(b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
                             b"Content-Length: " + str(len(body)).encode() + b"\r\n"
                             b"Connection: close\r\n\r\n" + body)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def env_proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[ForgingProxy]:
    """A forging proxy named by every proxy variable of the environment."""
    proxy = ForgingProxy()
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(name, proxy.url)
    for name in ("NO_PROXY", "no_proxy", "REQUEST_METHOD"):
        monkeypatch.delenv(name, raising=False)
    yield proxy
    proxy.close()


def test_the_adapter_ignores_environment_proxies_unless_the_client_opted_in(
    mock: Mock, make_client: MakeClient, env_proxy: ForgingProxy
) -> None:
    # requests itself would send through the proxy (trust_env).
    assert requests.Session().merge_environment_settings(
        mock.url, {}, None, None, None)["proxies"].get("http") == env_proxy.url

    client = make_client()
    assert not client.proxy_from_env
    session = requests.Session()
    session.mount(mock.url + "/", PayidemAdapter(client))
    order = new_order("env-proxy")
    r = session.post(mock.url + "/v1/payments", json=payment(order),
                     headers=payidem.operation_headers(order))
    assert r.status_code == 201, r.text
    assert "pay_forged" not in r.text
    assert env_proxy.seen == [], "the proxy saw the signed request"
    assert mock.payments_created(order) == 1

    # Opted in: the environment's proxy is used (and this proxy forges).
    opted = make_client(proxy_from_env=True)
    assert opted.proxy_from_env
    session = requests.Session()
    session.mount(mock.url + "/", PayidemAdapter(opted))
    order = new_order("env-proxy-opted")
    r = session.post(mock.url + "/v1/payments", json=payment(order),
                     headers=payidem.operation_headers(order))
    assert len(env_proxy.seen) == 1 and order.encode() in env_proxy.seen[0]
    assert mock.payments_created(order) == 0


def test_the_adapter_uses_the_clients_own_proxy(
    mock: Mock, make_client: MakeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    proxy = ForgingProxy()
    try:
        client = make_client(proxy=proxy.url)
        session = requests.Session()
        session.mount(mock.url + "/", PayidemAdapter(client))
        order = new_order("own-proxy")
        session.post(mock.url + "/v1/payments", json=payment(order),
                     headers=payidem.operation_headers(order))
        assert len(proxy.seen) == 1 and order.encode() in proxy.seen[0]
    finally:
        proxy.close()


