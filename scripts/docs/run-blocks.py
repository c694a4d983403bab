#!/usr/bin/env python3
"""Runs every fenced example block of the project's Markdown documents as
written, each in a scratch directory of its own outside the repository,
against the built artifacts and a payidem-mock started for it on 127.0.0.1.

Every fenced block says in its info string whether it runs:

    ```python run              runs; must exit 0
    ```sh run exit=1           runs; must exit 1 (an error path)
    ```sh run needs=dist       runs only with --dist DIR (make test-dist), with
                               PAYIDEM_DIST naming the release files of DIR
    ```text no-run: REASON     does not run, for the reason given (required)

Languages that run: python (the interpreter with payidem installed), sh
(bash -e -o pipefail), c (C99, -Wall -Wextra -Werror -pedantic, linked with
libpayidem) and go (a program of package main, in a new module that requires
the Go module of bindings/go through a replace directive). A block without
`run` or `no-run: REASON` is an error, so that no block is forgotten.

Each block runs with PAYIDEM_BASE_URL, PAYIDEM_KEY_ID and PAYIDEM_SECRET
naming its mock (the mock's public test key), HOME, XDG_STATE_HOME and
TMPDIR inside its scratch directory, and PATH starting with the directory of
the `payidem` command and `payidem-mock`, and an empty Go module cache
(GOMODCACHE) of its own. After it: its exit status is the
expected one, it left nothing in TMPDIR, and the mock's oracle saw no order
paid twice.

    scripts/docs/run-blocks.py [--list] [--only FILE[:LINE]] [--dist DIR] [FILE.md ...]

With --dist DIR, only the blocks marked needs=dist run (and every block's
marker is still checked); without it those blocks are counted as left to
`make test-dist`.

Without files: every document of DOCUMENTS below. Needs, from the
environment or the defaults under target/: PAYIDEM_DOCS_PYTHON (default
bindings/python/.venv/bin/python), PAYIDEM_DOCS_BIN (a directory with
`payidem` and `payidem-mock`; default target/release), PAYIDEM_DOCS_LIB (a
directory with libpayidem.so; default target/c/lib). The last line is
`N passed, N failed, N not run (no-run), N left to …`; the exit status is 1 when a block
failed or is unmarked.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# The documents whose blocks are examples for users (BENCHMARKS.md holds the
# commands that produce its figures, run by `make bench`, not here).
DOCUMENTS = [
    "README.md",
    "bindings/python/README.md",
    "bindings/go/README.md",
    "bindings/java/README.md",
    "ffi/README.md",
    "mock/README.md",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")),
]

RUNNABLE = {"python", "sh", "c", "go"}
MOCK_KEY_ID = "key_test_1"
MOCK_SECRET = "sk_test_payidem_mock_secret_0001"
GO_MODULE = "github.com/payidem/payidem/bindings/go"
TIMEOUT_S = 300

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


@dataclass
class Block:
    """One fenced block: where it is, its language, its marker and text."""

    path: str
    line: int
    lang: str
    run: bool
    reason: str
    options: dict[str, str] = field(default_factory=dict)
    text: str = ""
    error: str = ""

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def parse_info(info: str) -> tuple[str, bool, str, dict[str, str], str]:
    """(lang, run, reason, options, error) of an info string."""
    info = info.strip()
    marker = re.search(r"(?:^|\s)(no-run:|run(?:\s|$))", info)
    if marker is None:
        return info, False, "", {}, "unmarked: say `run` or `no-run: REASON` after the language"
    lang = info[: marker.start()].strip()
    rest = info[marker.start():].strip()
    if rest.startswith("no-run:"):
        reason = rest[len("no-run:"):].strip()
        if len(reason.split()) < 3:
            return lang, False, reason, {}, "no-run needs a reason of a few words"
        return lang, False, reason, {}, ""
    options: dict[str, str] = {}
    for word in rest.split()[1:]:
        key, eq, value = word.partition("=")
        if not eq or key not in {"exit", "needs"} or (key == "needs" and value != "dist"):
            return lang, True, "", {}, f"unknown run option {word!r} (known: exit=N, needs=dist)"
        options[key] = value
    if lang not in RUNNABLE:
        return lang, True, "", options, f"`run` on a {lang or 'plain'} block: only {sorted(RUNNABLE)} run"
    return lang, True, "", options, ""


def blocks_of(path: str) -> list[Block]:
    """Every fenced block of the document at path (relative to the root)."""
    lines = (ROOT / path).read_text(encoding="utf-8").split("\n")
    found: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence = m.group("indent"), m.group("fence")
        closing = re.compile(r"^[ \t]*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t]*$")
        j = i + 1
        while j < len(lines) and not closing.match(lines[j]):
            j += 1
        if j == len(lines):
            found.append(Block(path, i + 1, "", False, "", error="fence never closed"))
            break
        body = [ln[len(indent):] if ln.startswith(indent) else ln.lstrip() for ln in lines[i + 1: j]]
        lang, run, reason, options, error = parse_info(m.group("info"))
        found.append(Block(path, i + 1, lang, run, reason, options, "\n".join(body) + "\n", error))
        i = j + 1
    return found


class Mock:
    """A payidem-mock on 127.0.0.1, port 0, with its control routes."""

    def __init__(self, binary: Path, log: Path):
        self.log = log.open("wb")
        self.proc = subprocess.Popen(
            [str(binary), "--port", "0", "--control", "--seed", "5"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.log,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().decode().strip()
        if not line.startswith("listening on "):
            self.stop()
            raise RuntimeError(f"payidem-mock printed {line!r}; its log: {log.read_text(errors='replace')}")
        self.url = "http://" + line[len("listening on "):]
        # Whatever else it prints is drained, so that it never blocks on a full pipe.
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()

    def paid_twice(self) -> list[str]:
        """Orders the mock's oracle saw paid more than once or re-keyed."""
        with urllib.request.urlopen(self.url + "/_mock/stats", timeout=10) as answer:
            stats = json.load(answer)
        bad = [o for o, s in stats["orders"].items() if s["payments_created"] > 1 or s["duplicate_keys"]]
        if stats.get("duplicate_order", 0):
            bad.append(f"duplicate_order={stats['duplicate_order']}")
        return bad

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.log.close()


@dataclass
class Tools:
    """What the blocks run with."""

    python: Path
    bin: Path
    lib: Path
    dist: Path | None = None

    def missing(self, block: Block) -> list[str]:
        """What block needs that is not there."""
        need = [self.bin / "payidem-mock"]
        need += {"python": [self.python], "c": [self.lib / "libpayidem.so"]}.get(block.lang, [])
        if block.lang == "sh" and not self.dist:
            need.append(self.bin / "payidem")
        return [str(p) for p in need if not p.exists()]


def command_for(block: Block, tools: Tools, work: Path) -> list[str]:
    """Writes the block into work and returns how to run it."""
    if block.lang == "python":
        (work / "block.py").write_text(block.text, encoding="utf-8")
        return [str(tools.python), "-I", "block.py"]
    if block.lang == "sh":
        (work / "block.sh").write_text(block.text, encoding="utf-8")
        return ["bash", "-e", "-o", "pipefail", "block.sh"]
    if block.lang == "c":
        (work / "block.c").write_text(block.text, encoding="utf-8")
        cc = os.environ.get("CC", "cc")
        build = [cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", f"-I{ROOT / 'include'}",
                 "block.c", "-o", "block", f"-L{tools.lib}", "-lpayidem", f"-Wl,-rpath,{tools.lib}"]
        return ["sh", "-c", " ".join(f"'{a}'" for a in build) + " && ./block"]
    if block.lang == "go":
        (work / "main.go").write_text(block.text, encoding="utf-8")
        (work / "go.mod").write_text(
            f"module example.com/docs-block\n\ngo 1.22\n\nrequire {GO_MODULE} v0.0.0\n\n"
            f"replace {GO_MODULE} => {ROOT / 'bindings' / 'go'}\n", encoding="utf-8")
        return ["go", "run", "."]
    raise AssertionError(block.lang)


def run_block(block: Block, tools: Tools) -> tuple[bool, str]:
    """Runs one block; (passed, what to say)."""
    missing = tools.missing(block)
    if missing:
        return False, f"missing {missing}: `make test-docs` builds them"
    scratch = Path(tempfile.mkdtemp(prefix="payidem-docs-"))
    mock = None
    try:
        work, tmp = scratch / "work", scratch / "tmp"
        for d in (work, tmp, scratch / "home", scratch / "state"):
            d.mkdir()
        try:
            mock = Mock(tools.bin / "payidem-mock", scratch / "mock.log")
        except RuntimeError as e:
            return False, str(e)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PAYIDEM_", "PYTHON", "GO", "CGO_"))}
        env.update(
            PATH=f"{tools.bin}{os.pathsep}{env.get('PATH', '')}",
            HOME=str(scratch / "home"), XDG_STATE_HOME=str(scratch / "state"), TMPDIR=str(tmp),
            PAYIDEM_BASE_URL=mock.url, PAYIDEM_KEY_ID=MOCK_KEY_ID, PAYIDEM_SECRET=MOCK_SECRET,
            GOFLAGS="-mod=mod", GOPROXY="off", GOWORK="off", GOTOOLCHAIN="local",
            GOMODCACHE=str(scratch / "gomodcache"),
        )
        if tools.dist is not None:
            env["PAYIDEM_DIST"] = str(tools.dist)
        for keep in ("GOCACHE", "GOPATH"):
            if keep in os.environ:
                env[keep] = os.environ[keep]
        if "GOCACHE" not in env:
            env["GOCACHE"] = subprocess.run(["go", "env", "GOCACHE"], capture_output=True, text=True).stdout.strip()
        cmd = command_for(block, tools, work)
        try:
            done = subprocess.run(cmd, cwd=work, env=env, stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return False, f"did not end within {TIMEOUT_S} s"
        output = (done.stdout + done.stderr).strip()
        tail = "\n".join("    " + ln for ln in output.splitlines()[-25:])
        want = int(block.options.get("exit", "0"))
        if done.returncode != want:
            return False, f"exit status {done.returncode}, want {want}:\n{tail}"
        left = sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*"))
        if left:
            return False, f"left temporary files behind in TMPDIR: {left[:5]}"
        twice = mock.paid_twice()
        if twice:
            return False, f"the mock saw orders paid twice or re-keyed: {twice}"
        return True, ((done.stdout.strip() or output).splitlines() or [""])[-1][:100]
    finally:
        if mock is not None:
            mock.stop()
        # The Go module cache is read-only.
        subprocess.run(["chmod", "-R", "u+w", str(scratch)], check=False)
        shutil.rmtree(scratch, ignore_errors=True)


def tools_from_env(dist: Path | None) -> Tools:
    """The interpreter, binaries and library the blocks use."""
    return Tools(
        python=Path(os.environ.get("PAYIDEM_DOCS_PYTHON", ROOT / "bindings/python/.venv/bin/python")),
        bin=Path(os.environ.get("PAYIDEM_DOCS_BIN", ROOT / "target/release")).absolute(),
        lib=Path(os.environ.get("PAYIDEM_DOCS_LIB", ROOT / "target/c/lib")).absolute(),
        dist=dist,
    )


def main(argv: list[str]) -> int:
    listing = "--list" in argv
    argv = [a for a in argv if a != "--list"]
    only = dist = None
    if "--only" in argv:
        i = argv.index("--only")
        only = argv[i + 1]
        del argv[i: i + 2]
    if "--dist" in argv:
        i = argv.index("--dist")
        dist = Path(argv[i + 1]).absolute()
        del argv[i: i + 2]
    documents = argv or DOCUMENTS
    blocks = [b for path in documents for b in blocks_of(path)]
    if only:
        blocks = [b for b in blocks if b.where == only or b.path == only]
        if not blocks:
            sys.exit(f"run-blocks.py: no block at {only}")
    unmarked = [b for b in blocks if b.error]
    for b in unmarked:
        print(f"FAIL {b.where} [{b.lang}]: {b.error}")
    if listing:
        for b in blocks:
            print(f"{b.where} {b.lang or '-'} {'run ' + str(b.options) if b.run else 'no-run: ' + b.reason}")
        return 1 if unmarked else 0
    tools = tools_from_env(dist)
    passed = failed = deferred = 0
    for b in blocks:
        if b.error or not b.run:
            continue
        if (b.options.get("needs") == "dist") != (dist is not None):
            deferred += 1
            continue
        start = time.monotonic()
        ok, said = run_block(b, tools)
        took = time.monotonic() - start
        print(f"{'PASS' if ok else 'FAIL'} {b.where} [{b.lang}] {took:.1f} s: {said}", flush=True)
        passed += ok
        failed += not ok
    not_run = sum(1 for b in blocks if not b.run and not b.error)
    failed += len(unmarked)
    later = "the other blocks" if dist is not None else "make test-dist"
    print(f"{passed} passed, {failed} failed, {not_run} not run (no-run), {deferred} left to {later}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
