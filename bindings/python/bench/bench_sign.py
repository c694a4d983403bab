"""Signing and verifying one attempt: payidem vs. the same protocol written
with the standard library, in the same process.

    python bench/bench_sign.py [--iterations N]

Prints per-call times and the ratios (stdlib time / payidem time). The
stdlib versions do the same work the protocol asks for (fresh UUID v4 nonce,
timestamp, body SHA-256, HMAC-SHA256 of the canonical string; on the verify
side header lookup, window check, nonce format, constant-time compare and a
dict nonce cache) but check fewer input rules than payidem does.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import platform
import re
import sys
import time
import uuid
from typing import Callable, Dict, List, Mapping, Tuple

import payidem

KEY_ID = "key_live_1"
SECRET = b"sk_test_0123456789abcdef0123456789abcdef"
METHOD = "POST"
PATH = "/v1/payments"
KEY = "create-ord-1001"
BODY = json.dumps({"order_id": "ord-1001", "amount": 125000, "currency": "EUR", "description": "x" * 40}).encode()
WINDOW = 300


def stdlib_sign(method: str, path: str, body: bytes, key: str) -> Dict[str, str]:
    timestamp = str(int(time.time()))
    nonce = str(uuid.uuid4())
    digest = hashlib.sha256(body).hexdigest()
    canonical = f"{method}\n{path}\n{timestamp}\n{nonce}\n{key}\n{digest}".encode()
    signature = hmac.new(SECRET, canonical, hashlib.sha256).hexdigest()
    return {
        "X-Api-Key": KEY_ID,
        "X-Timestamp": timestamp,
        "X-Nonce": nonce,
        "X-Signature": signature,
        "Idempotency-Key": key,
    }


_KEYED = hmac.new(SECRET, digestmod=hashlib.sha256)


def stdlib_sign_prekeyed(method: str, path: str, body: bytes, key: str) -> Dict[str, str]:
    timestamp = str(int(time.time()))
    nonce = str(uuid.uuid4())
    digest = hashlib.sha256(body).hexdigest()
    mac = _KEYED.copy()
    mac.update(f"{method}\n{path}\n{timestamp}\n{nonce}\n{key}\n{digest}".encode())
    return {
        "X-Api-Key": KEY_ID,
        "X-Timestamp": timestamp,
        "X-Nonce": nonce,
        "X-Signature": mac.hexdigest(),
        "Idempotency-Key": key,
    }


_NONCE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


class StdlibVerifier:
    """Protocol section 3 with hmac/hashlib and a dict nonce cache."""

    def __init__(self, keys: Mapping[str, List[bytes]]) -> None:
        self.keys = dict(keys)
        self.nonces: Dict[Tuple[str, str], int] = {}

    def verify(self, method: str, path: str, headers: Mapping[str, str], body: bytes, now: int) -> str:
        h = {k.lower(): v for k, v in headers.items()}
        key_id = h.get("x-api-key")
        ts = h.get("x-timestamp")
        nonce = h.get("x-nonce")
        sig = h.get("x-signature")
        if not key_id or not ts or not nonce or not sig:
            raise ValueError("missing_signature")
        if not ts.isdigit() or (len(ts) > 1 and ts[0] == "0") or not _NONCE.match(nonce) or not _HEX64.match(sig):
            raise ValueError("missing_signature")
        secrets = self.keys.get(key_id)
        if secrets is None:
            raise ValueError("unknown_api_key")
        timestamp = int(ts)
        if abs(now - timestamp) > WINDOW:
            raise ValueError("timestamp_out_of_window")
        key = h.get("idempotency-key", "")
        digest = hashlib.sha256(body).hexdigest()
        canonical = f"{method}\n{path}\n{ts}\n{nonce}\n{key}\n{digest}".encode()
        if not any(
            hmac.compare_digest(hmac.new(s, canonical, hashlib.sha256).hexdigest(), sig) for s in secrets
        ):
            raise ValueError("invalid_signature")
        slot = (key_id, nonce)
        expires = self.nonces.get(slot)
        if expires is not None and expires >= now:
            raise ValueError("nonce_reused")
        self.nonces[slot] = timestamp + WINDOW
        if method == "POST" and not key:
            raise ValueError("idempotency_key_required")
        return key_id


def per_call(fn: Callable[[], object], iterations: int, repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(iterations):
            fn()
        best = min(best, (time.perf_counter() - start) / iterations)
    return best


def bench_verify(iterations: int, repeats: int = 5) -> Tuple[float, float]:
    signer = payidem.Signer(KEY_ID, SECRET)
    best_native = best_stdlib = float("inf")
    for _ in range(repeats):
        requests = [signer.sign_attempt(METHOD, PATH, BODY, KEY) for _ in range(iterations)]
        now = int(time.time())
        native = payidem.Verifier({KEY_ID: [SECRET]})
        stdlib = StdlibVerifier({KEY_ID: [SECRET]})
        start = time.perf_counter()
        for headers in requests:
            native.verify(METHOD, PATH, headers, BODY, now)
        best_native = min(best_native, (time.perf_counter() - start) / iterations)
        start = time.perf_counter()
        for headers in requests:
            stdlib.verify(METHOD, PATH, headers, BODY, now)
        best_stdlib = min(best_stdlib, (time.perf_counter() - start) / iterations)
    return best_native, best_stdlib


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=50_000)
    args = parser.parse_args()
    n = args.iterations

    signer = payidem.Signer(KEY_ID, SECRET)
    # Both sides produce the same signature for the same inputs.
    fixed = signer.sign_attempt(METHOD, PATH, BODY, KEY, timestamp=1_767_225_600, nonce="6f1c2a4e-9b3d-4c5e-8f70-1a2b3c4d5e6f")
    StdlibVerifier({KEY_ID: [SECRET]}).verify(METHOD, PATH, fixed, BODY, 1_767_225_600)
    payidem.Verifier({KEY_ID: [SECRET]}).verify(METHOD, PATH, stdlib_sign(METHOD, PATH, BODY, KEY), BODY)

    sign_native = per_call(lambda: signer.sign_attempt(METHOD, PATH, BODY, KEY), n)
    sign_stdlib = per_call(lambda: stdlib_sign(METHOD, PATH, BODY, KEY), n)
    sign_prekeyed = per_call(lambda: stdlib_sign_prekeyed(METHOD, PATH, BODY, KEY), n)
    verify_native, verify_stdlib = bench_verify(n)

    print(f"python {platform.python_version()} on {platform.machine()}, payidem {payidem.__version__}, "
          f"body {len(BODY)} bytes, {n} calls per run, best of 5")
    print(f"sign   payidem                 {sign_native * 1e6:7.2f} us")
    print(f"sign   stdlib (hmac.new)       {sign_stdlib * 1e6:7.2f} us   ratio {sign_stdlib / sign_native:5.2f}x")
    print(f"sign   stdlib (pre-keyed copy) {sign_prekeyed * 1e6:7.2f} us   ratio {sign_prekeyed / sign_native:5.2f}x")
    print(f"verify payidem                 {verify_native * 1e6:7.2f} us")
    print(f"verify stdlib (dict nonces)    {verify_stdlib * 1e6:7.2f} us   ratio {verify_stdlib / verify_native:5.2f}x")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
