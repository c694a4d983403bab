"""atheris fuzz target: the WSGI verifying middleware (payidem.wsgi) and the
native verifier, decision and error-body helpers on arbitrary input.

Run by ``make fuzz`` (fuzz/run.sh) with the test venv's Python:

    bindings/python/.venv/bin/python bindings/python/fuzz/fuzz_wsgi.py CORPUS_DIR -max_total_time=60

Every request must be answered (the app, or the protocol's refusal with a
JSON error body); only payidem's own errors may be raised by the helpers,
and never ``InternalError`` (a panic caught in the library).
"""

import io
import json
import sys

import atheris

with atheris.instrument_imports():
    import payidem
    from payidem import errors
    from payidem.wsgi import VerifyingMiddleware

SECRET = b"0123456789abcdef-fuzz-secret"
NOW = 1_700_000_000
ENV_KEYS = ["REQUEST_METHOD", "RAW_URI", "REQUEST_URI", "SCRIPT_NAME", "PATH_INFO",
            "QUERY_STRING", "CONTENT_LENGTH", "CONTENT_TYPE", "HTTP_X_API_KEY",
            "HTTP_X_TIMESTAMP", "HTTP_X_NONCE", "HTTP_X_SIGNATURE", "HTTP_IDEMPOTENCY_KEY"]


def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok"]


def latin1(fdp, n):
    return fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, n)).decode("latin-1")


def check_payidem_error(e):
    if not isinstance(e, errors.Error):
        raise e
    if isinstance(e, errors.InternalError):
        raise AssertionError(f"internal error: {e!r}")


def one(data):
    fdp = atheris.FuzzedDataProvider(data)
    verifier = payidem.Verifier({"key_fuzz": [SECRET]}, window_seconds=300, nonce_capacity_per_key=64)
    environ = {}
    if fdp.ConsumeBool():
        # A correctly signed request, then fuzzed edits.
        signer = payidem.Signer("key_fuzz", SECRET)
        method = fdp.PickValueInList(["GET", "POST", "PUT", "post", ""])
        path = latin1(fdp, 64) or "/v1/payments"
        key = latin1(fdp, 32)
        body = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 64))
        try:
            signed = signer.sign_attempt(method, path, body, key or None, timestamp=NOW)
        except Exception as e:  # noqa: BLE001
            check_payidem_error(e)
            return
        for name, value in signed.items():
            environ["HTTP_" + name.upper().replace("-", "_")] = value
        environ.update({"REQUEST_METHOD": method, "RAW_URI": path, "CONTENT_LENGTH": str(len(body))})
    else:
        body = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 64))
    for _ in range(fdp.ConsumeIntInRange(0, 6)):
        environ[fdp.PickValueInList(ENV_KEYS)] = latin1(fdp, 48)
    environ["wsgi.input"] = io.BytesIO(body + fdp.ConsumeBytes(8))
    answers = []

    def start_response(status, headers, exc_info=None):
        answers.append((status, headers))

    mw = VerifyingMiddleware(app, verifier, max_body=1024, clock=lambda: NOW)
    out = b"".join(mw(environ, start_response))
    assert len(answers) == 1, answers
    status = int(answers[0][0].split()[0])
    if status != 200:
        assert status in (400, 401, 409, 413, 503), answers
        assert "code" in json.loads(out)["error"]

    rest = fdp.ConsumeBytes(64)
    try:
        payidem.decide("response", status, rest.decode("latin-1") or None,
                       [("Retry-After", rest.decode("latin-1"))], has_status_path=fdp.ConsumeBool(), now=NOW)
    except Exception as e:  # noqa: BLE001
        check_payidem_error(e)


def main():
    atheris.Setup(sys.argv, one)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
