"""Transport options (#14): a CA bundle and a client certificate against a
test mutual-TLS server, proxies from the environment ignored unless
``proxy_from_env``, plain http refused for a non-loopback host, and
``PayidemAuth`` never following a redirect with ``requests``. Every server
runs here on 127.0.0.1 port 0; test certificates are made at test time with
the ``openssl`` command."""

from __future__ import annotations

import shutil
import ssl
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator, List, Optional, Tuple

import pytest

import payidem
from payidem.requests_auth import PayidemAuth

SECRET = b"sk_test_0123456789abcdef0123456789abcdef"
BODY = b'{"amount":1250,"currency":"EUR"}'


class Recorder:
    def __init__(self) -> None:
        self.requests: List[Tuple[str, str, dict, bytes]] = []
        self.client_certs: List[Optional[bytes]] = []


def serve(
    status: int = 201,
    headers: Optional[List[Tuple[str, str]]] = None,
    tls: Optional[ssl.SSLContext] = None,
) -> Tuple[ThreadingHTTPServer, Recorder]:
    rec = Recorder()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            rec.requests.append((self.command, self.path, dict(self.headers), body))
            if isinstance(self.connection, ssl.SSLSocket):
                rec.client_certs.append(self.connection.getpeercert(binary_form=True))
            payload = b'{"id":"pay_1","status":"succeeded"}'
            self.send_response(status)
            for name, value in headers or []:
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(payload)

        do_GET = _answer
        do_POST = _answer
        do_CONNECT = _answer

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, rec


def url(server: ThreadingHTTPServer, scheme: str = "http") -> str:
    return f"{scheme}://127.0.0.1:{server.server_address[1]}"


@pytest.fixture
def servers() -> Iterator[List[ThreadingHTTPServer]]:
    started: List[ThreadingHTTPServer] = []
    yield started
    for s in started:
        s.shutdown()
        s.server_close()


class Pki:
    def __init__(self, dir: Path) -> None:
        self.dir = dir
        self.ca = dir / "ca.pem"
        self.server_cert = dir / "server.pem"
        self.server_key = dir / "server.key"
        self.client_cert = dir / "client.pem"
        self.client_key = dir / "client.key"


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command makes the test certificates")
    d = tmp_path_factory.mktemp("pki")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=payidem python test CA", cwd=d)
    for name, ext in [
        ("server", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE"),
        ("client", "extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE"),
    ]:
        (d / f"{name}.ext").write_text(ext + "\n")
        openssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr",
                "-subj", f"/CN=payidem python test {name}", cwd=d)
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", f"{name}.pem", "-days", "2",
                "-extfile", f"{name}.ext", cwd=d)
    return Pki(d)


def tls_server(pki: Pki, require_client_cert: bool) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(pki.server_cert), str(pki.server_key))
    if require_client_cert:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(str(pki.ca))
    return ctx


def client(base_url: str, **kwargs: Any) -> payidem.Client:
    kwargs.setdefault("max_attempts", 1)
    return payidem.Client(base_url, "key_live_1", SECRET, journal=payidem.MEMORY,
                          connect_timeout=2, request_timeout=3, **kwargs)


def test_ca_bundle_and_client_certificate_against_mutual_tls(
    pki: Pki, servers: List[ThreadingHTTPServer]
) -> None:
    server, rec = serve(tls=tls_server(pki, require_client_cert=True))
    servers.append(server)
    with client(url(server, "https"), ca_bundle=pki.ca, client_cert=pki.client_cert,
                client_key=str(pki.client_key)) as c:
        outcome = c.execute("py-mtls-1", "POST", "/v1/payments", BODY)
    assert outcome.status == 201
    assert len(rec.requests) == 1
    expected = ssl.PEM_cert_to_DER_cert(pki.client_cert.read_text())
    assert rec.client_certs == [expected]


def test_an_unknown_issuer_is_not_sent_and_stays_resumable(
    pki: Pki, servers: List[ThreadingHTTPServer]
) -> None:
    server, rec = serve(tls=tls_server(pki, require_client_cert=False))
    servers.append(server)
    with client(url(server, "https")) as c:
        with pytest.raises(payidem.TransportError) as e:
            c.execute("py-tls-1", "POST", "/v1/payments", BODY)
        assert "TLS" in str(e.value)
        status = c.status("py-tls-1")
        assert status is not None and status.state == "pending"
    assert rec.requests == []


def test_transport_options_are_checked_without_leaking_the_key(pki: Pki) -> None:
    key_line = pki.client_key.read_text().splitlines()[1]
    with pytest.raises(payidem.InvalidArgument) as e:
        client("http://api.example.com")
    assert e.value.field == "base_url"
    client("http://api.example.com", allow_insecure_http=True, proxy="http://127.0.0.1:3128",
           proxy_from_env=True, max_clock_offset=900).close()
    with pytest.raises(payidem.InvalidArgument) as e:
        client("https://api.example.com", client_cert=pki.client_cert)
    assert e.value.field == "client_key"
    with pytest.raises(payidem.InvalidArgument) as e:
        client("https://api.example.com", client_cert=pki.client_key, client_key=pki.client_cert)
    assert e.value.field == "client_cert"
    assert key_line not in str(e.value)
    with pytest.raises(payidem.InvalidArgument) as e:
        client("https://api.example.com", ca_bundle=pki.dir / "absent.pem")
    assert e.value.field == "ca_bundle"
    with pytest.raises(TypeError):
        client("https://api.example.com", allow_insecure_http=1)  # type: ignore[arg-type]


def test_proxy_environment_is_ignored_unless_opted_in(
    monkeypatch: pytest.MonkeyPatch, servers: List[ThreadingHTTPServer]
) -> None:
    platform, rec = serve()
    proxy, proxy_rec = serve(status=201)
    servers.extend([platform, proxy])
    for name in ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"]:
        monkeypatch.setenv(name, url(proxy))
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with client(url(platform)) as c:
        assert c.execute("py-env-1", "POST", "/v1/payments", BODY).status == 201
    assert len(rec.requests) == 1 and proxy_rec.requests == []
    # Opted in: the environment's proxy is asked (it refuses the tunnel with
    # a 201, so nothing was sent).
    with client(url(platform), proxy_from_env=True) as c:
        with pytest.raises(payidem.TransportError):
            c.execute("py-env-2", "POST", "/v1/payments", BODY)
    assert [r[0] for r in proxy_rec.requests] == ["CONNECT"]
    assert len(rec.requests) == 1


def test_requests_auth_never_follows_a_redirect(servers: List[ThreadingHTTPServer]) -> None:
    requests = pytest.importorskip("requests")
    elsewhere, elsewhere_rec = serve()
    servers.append(elsewhere)
    for status in (301, 302, 303, 307, 308):
        redirector, rec = serve(status=status, headers=[("Location", url(elsewhere) + "/v1/payments")])
        servers.append(redirector)
        auth = PayidemAuth("key_live_1", SECRET)
        for allow in (True, False):
            r = requests.post(
                url(redirector) + "/v1/payments",
                data=BODY,
                auth=auth,
                headers={"Idempotency-Key": "create-py-redirect", "Content-Type": "application/json"},
                allow_redirects=allow,
            )
            assert r.status_code == status
            assert r.headers["Location"] == url(elsewhere) + "/v1/payments"
            assert r.history == []
        with requests.Session() as session:
            r = session.post(url(redirector) + "/v1/payments", data=BODY, auth=auth,
                             headers={"Idempotency-Key": "create-py-redirect"})
            assert r.status_code == status
        assert len(rec.requests) == 3
        assert rec.requests[0][2]["X-Signature"]
    # Nothing, signed headers or body, reached the other host.
    assert elsewhere_rec.requests == []


def test_client_never_follows_a_redirect(servers: List[ThreadingHTTPServer]) -> None:
    elsewhere, elsewhere_rec = serve()
    redirector, rec = serve(status=307, headers=[("Location", url(elsewhere) + "/v1/payments")])
    servers.extend([elsewhere, redirector])
    with client(url(redirector)) as c:
        with pytest.raises(payidem.OutcomeUnknown):
            c.execute("py-redirect-1", "POST", "/v1/payments", BODY)
    assert len(rec.requests) == 1
    assert elsewhere_rec.requests == []
