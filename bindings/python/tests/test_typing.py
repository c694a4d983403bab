"""The stubs agree with the native module, and a typed program using the
public API passes ``mypy --strict``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ALLOWLIST = HERE / "stubtest-allowlist.txt"

mypy = pytest.importorskip("mypy")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_mypy_strict_on_typed_usage() -> None:
    done = run("mypy", "--strict", "--no-incremental", "typed_usage.py")
    assert done.returncode == 0, done.stdout + done.stderr


MISTYPED = """
import payidem

payidem.AttemptEvent(order_id="o", idempotency_key="k", attempt=1, kind="prefetch", next="settle")
state: payidem.OperationState = "done"
def f(e: payidem.AttemptEvent) -> int:
    return 1 if e.next == "retry" else 0
"""


def test_mypy_refuses_names_the_core_does_not_have(tmp_path: Path) -> None:
    # The Literal types are enforced: a misspelt kind, state or action is a
    # type error, not a silent string.
    (tmp_path / "mistyped.py").write_text(MISTYPED)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--strict-equality", "mistyped.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert 'mistyped.py:4: error: Argument "kind" to "AttemptEvent" has incompatible type' in out, out
    assert "mistyped.py:5: error: Incompatible types in assignment" in out, out
    assert "mistyped.py:7: error: Non-overlapping equality check" in out, out


def test_stubtest_agrees_with_the_stubs() -> None:
    done = run("mypy.stubtest", "payidem", "--allowlist", str(ALLOWLIST))
    assert done.returncode == 0, done.stdout + done.stderr
