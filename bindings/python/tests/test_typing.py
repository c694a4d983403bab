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


def test_stubtest_agrees_with_the_stubs() -> None:
    done = run("mypy.stubtest", "payidem", "--allowlist", str(ALLOWLIST))
    assert done.returncode == 0, done.stdout + done.stderr
