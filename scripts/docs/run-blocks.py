#!/usr/bin/env python3
"""Runs every fenced example block of the project's Markdown documents as
written, each in a scratch directory of its own outside the repository,
against the built artifacts and a payidem-mock started for it on 127.0.0.1.

Every fenced block says in its info string whether it runs:

    ```python run              runs; must exit 0
    ```sh run exit=1           runs; must exit 1 (an error path)
    ```sh run needs=dist       runs only with --dist DIR (make test-dist), with
                               PAYIDEM_DIST naming the release files of DIR
    ```rust run needs=postgres runs with a throwaway PostgreSQL server of its
                               own, PAYIDEM_PG_URL its URL (as every sql block)
    ```python run prelude=NAME runs after the document's prelude NAME (below)
    ```text check quote=FILE[,FILE]
                               checked, not run: every line of the block is a
                               line of one of the files (repository paths)
    ```text check prelude=NAME checked, not run: the output of the prelude NAME
                               (a program), followed, when the block's first
                               line is `$ COMMAND`, by COMMAND's, must match the
                               block (the `$` line left out); `exit=N` as for run;
                               a sh prelude with a `{block}` line runs with
                               COMMAND in that line's place (a command that
                               keeps running, stopped by the prelude)
    ```text check prelude=NAME values=any
                               the same, the sample's values standing for any
                               number: the last field of every line not
                               starting with `#` (Prometheus text), every number
                               of a `json` sample
    ```text no-run: REASON     does not run, for the reason given (required)

A prelude is the declared, visible setup of a fragment: an HTML comment of
the document (shown in its source, not rendered), anywhere in it (indented
as a block in a list item may be),

    <!-- prelude NAME LANG
    CODE
    -->

A block with `prelude=NAME` runs as CODE followed by the block, or, when
CODE has a line that is `{block}` (indented or not), as CODE with the block
in that line's place, indented as it is (a Go fragment inside a function, a
Python one inside a loop); it must be in the block's language. A prelude in
another runnable language, with no `{block}` line, runs first, on its own,
in the block's directory (setup a shell block's commands then use: a
journal a Rust program wrote). A checked sample runs the prelude alone (LANG any runnable one)
then its `$` command (sh). Matching: each line of the sample must equal the
output's line at its place, where `…` in a line stands for any text in it
and a line that is only `…` for any number of lines; trailing blanks are
ignored. A `json` sample must be the same JSON value as the output, where
`…` (bare or as a string) stands for any value, or, as an element of a list,
for any number of elements, and `…` in a string for any text in it. A
prelude no block uses is an error.

Languages that run: python (the interpreter with payidem installed), sh
(bash -e -o pipefail), c (C99, -Wall -Wextra -Werror -pedantic, linked with
libpayidem), go (a program of package main, in a new module that requires
the Go module of bindings/go through a replace directive), rust (src/main.rs
of a new crate depending on the workspace's payidem and payidem-mock by path,
on tokio (for async callers) and on the postgres crate payidem uses (for an
application's own database), with the workspace's Cargo.lock, built in the
workspace's target dir), java (the public class of the program, compiled
by javac and run with the classpath --java-classpath gives: only then, in
make test-java, which builds the jar) and sql (psql, stopping at the first error,
against a throwaway PostgreSQL server of its own, started by
ffi/tests-c/pg_server.sh, whose URL PAYIDEM_PG_URL also gives the block's
prelude). A block without
`run` or `no-run: REASON` is an error, so that no block is forgotten.

Each block runs with PAYIDEM_BASE_URL, PAYIDEM_KEY_ID and PAYIDEM_SECRET
naming its mock (the mock's public test key), HOME, XDG_STATE_HOME and
TMPDIR inside its scratch directory, and PATH starting with the directory of
the `payidem` command and `payidem-mock`, PAYIDEM_CHECKOUT naming the
checkout the documents are in (for commands a document runs from a
checkout), and an empty Go module cache (GOMODCACHE) of its own. After it: its exit status is the
expected one, it left nothing in TMPDIR, and the mock's oracle saw no order
paid twice.

    scripts/docs/run-blocks.py [--list] [--only FILE[:LINE]] [--dist DIR] [--java-classpath CP] [FILE.md ...]

With --dist DIR, only the blocks marked needs=dist run (and every block's
marker is still checked); without it those blocks are counted as left to
`make test-dist`. Likewise Java blocks (or blocks with a Java prelude) run
only with --java-classpath CP (the jar and its dependencies), and only they.

Without files: every document of DOCUMENTS below. Needs, from the
environment or the defaults under target/: PAYIDEM_DOCS_PYTHON (default
bindings/python/.venv/bin/python), PAYIDEM_DOCS_BIN (a directory with
`payidem` and `payidem-mock`; default target/release), PAYIDEM_DOCS_LIB (a
directory with libpayidem.so; default target/c/lib). The last line is
`N passed, N failed, N not run (no-run), N left to …` (checked samples count
as passed or failed); the exit status is 1 when a block failed or is unmarked.
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
from typing import Callable, Iterator

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

RUNNABLE = {"python", "sh", "c", "go", "rust", "sql", "java"}
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
    check: bool = False
    prelude: "Prelude | None" = None

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass
class Prelude:
    """A document's declared setup: <!-- prelude NAME LANG ... -->."""

    name: str
    lang: str
    line: int
    text: str
    used: bool = False


PRELUDE = re.compile(r"^(?P<indent>[ \t]*)<!-- prelude (?P<name>[A-Za-z0-9_-]+) (?P<lang>[a-z]+)[ \t]*$")
RUN_OPTIONS = {"exit", "needs", "prelude"}
CHECK_OPTIONS = {"exit", "prelude", "quote", "values"}


def parse_info(info: str) -> tuple[str, bool, str, dict[str, str], str]:
    """(lang, run, reason, options, error) of an info string; a checked
    sample has run False and options["check"] set."""
    info = info.strip()
    marker = re.search(r"(?:^|\s)(no-run:|(?:run|check)(?:\s|$))", info)
    if marker is None:
        return info, False, "", {}, "unmarked: say `run`, `check …` or `no-run: REASON` after the language"
    lang = info[: marker.start()].strip()
    rest = info[marker.start():].strip()
    if rest.startswith("no-run:"):
        reason = rest[len("no-run:"):].strip()
        if len(reason.split()) < 3:
            return lang, False, reason, {}, "no-run needs a reason of a few words"
        return lang, False, reason, {}, ""
    check = rest.startswith("check")
    known = CHECK_OPTIONS if check else RUN_OPTIONS
    options: dict[str, str] = {"check": "yes"} if check else {}
    for word in rest.split()[1:]:
        key, eq, value = word.partition("=")
        if (not eq or key not in known or (key == "needs" and value not in ("dist", "postgres"))
                or (key == "values" and value != "any") or not value):
            return lang, not check, "", {}, f"unknown {rest.split()[0]} option {word!r} (known: {', '.join(sorted(known))})"
        options[key] = value
    if check:
        if ("quote" in options) == ("prelude" in options):
            return lang, False, "", options, "`check` needs quote=FILE[,FILE] or prelude=NAME (one of them)"
        if "values" in options and "prelude" not in options:
            return lang, False, "", options, "`values=any` is for output samples (prelude=NAME)"
        return lang, False, "", options, ""
    if lang not in RUNNABLE:
        return lang, True, "", options, f"`run` on a {lang or 'plain'} block: only {sorted(RUNNABLE)} run"
    return lang, True, "", options, ""


def regions(lines: list[str], opening: re.Pattern[str],
            closing: Callable[[re.Match[str]], re.Pattern[str]]) -> Iterator[tuple[int, re.Match[str], list[str] | None]]:
    """Each region of lines that a line matching `opening` opens and the
    first later line matching closing(its match) closes: (the opening line's
    index, its match, the lines between dedented by the opening's `indent`,
    or None when nothing closes it, which ends the scan)."""
    i = 0
    while i < len(lines):
        m = opening.match(lines[i])
        if not m:
            i += 1
            continue
        end, j = closing(m), i + 1
        while j < len(lines) and not end.match(lines[j]):
            j += 1
        if j == len(lines):
            yield i, m, None
            return
        indent = m.group("indent")
        yield i, m, [ln[len(indent):] if ln.startswith(indent) else ln.lstrip() for ln in lines[i + 1: j]]
        i = j + 1


PRELUDE_END = re.compile(r"^[ \t]*-->[ \t]*$")


def preludes_of(lines: list[str]) -> tuple[dict[str, Prelude], list[tuple[int, str]]]:
    """The preludes of a document's lines, and the errors in them (line, message)."""
    found: dict[str, Prelude] = {}
    errors: list[tuple[int, str]] = []
    for i, m, code in regions(lines, PRELUDE, lambda _: PRELUDE_END):
        name, lang = m.group("name"), m.group("lang")
        if code is None:
            errors.append((i + 1, "prelude never closed (a line `-->`)"))
        elif name in found:
            errors.append((i + 1, f"prelude {name} defined twice"))
        elif lang not in RUNNABLE:
            errors.append((i + 1, f"prelude {name} in {lang}: only {sorted(RUNNABLE)} run"))
        else:
            found[name] = Prelude(name, lang, i + 1, "\n".join(code) + "\n")
    return found, errors


def fence_end(m: re.Match[str]) -> re.Pattern[str]:
    """The line that closes the fence m opened."""
    fence = m.group("fence")
    return re.compile(r"^[ \t]*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t]*$")


def blocks_of(path: str) -> list[Block]:
    """Every fenced block of the document at path (relative to the root),
    each with its prelude; a document error (a prelude that is broken or
    that no block uses) comes as a Block with `error` set."""
    lines = (ROOT / path).read_text(encoding="utf-8").split("\n")
    preludes, prelude_errors = preludes_of(lines)
    found: list[Block] = []
    for i, m, body in regions(lines, FENCE, fence_end):
        if body is None:
            found.append(Block(path, i + 1, "", False, "", error="fence never closed"))
            break
        lang, run, reason, options, error = parse_info(m.group("info"))
        block = Block(path, i + 1, lang, run, reason, options, "\n".join(body) + "\n", error,
                      check=options.pop("check", "") == "yes")
        name = options.get("prelude")
        if name and not error:
            block.prelude = preludes.get(name)
            if block.prelude is None:
                block.error = f"no prelude {name} in {path} (<!-- prelude {name} LANG ... -->)"
            else:
                block.prelude.used = True
                if run and block.prelude.lang != lang and block_line(block.prelude) is not None:
                    block.error = (f"prelude {name} is {block.prelude.lang} with a {{block}} line, "
                                   f"the block {lang}")
                elif block.check and block_line(block.prelude) is not None and (
                        block.prelude.lang != "sh" or not block.text.startswith("$ ")):
                    block.error = (f"prelude {name} has a {{block}} line: a sample that uses it "
                                   "needs a sh prelude and a first line `$ COMMAND`")
        found.append(block)
    for line, message in prelude_errors:
        found.append(Block(path, line, "", False, "", error=message))
    for prelude in preludes.values():
        if not prelude.used:
            found.append(Block(path, prelude.line, "", False, "",
                               error=f"prelude {prelude.name} is used by no block"))
    return found


class Postgres:
    """A throwaway PostgreSQL server (ffi/tests-c/pg_server.sh) in a
    directory of its own under /tmp, which the server's user can reach."""

    SCRIPT = ROOT / "ffi" / "tests-c" / "pg_server.sh"

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="payidem-docs-pg-"))
        self.dir.chmod(0o755)
        started = subprocess.run([str(self.SCRIPT), "start", str(self.dir)], stdin=subprocess.DEVNULL,
                                 capture_output=True, text=True)
        if started.returncode != 0:
            self.stop()
            raise RuntimeError(f"the PostgreSQL server did not start: {started.stderr.strip()}")
        self.url = started.stdout.strip()

    def stop(self) -> None:
        subprocess.run([str(self.SCRIPT), "stop", str(self.dir)], stdin=subprocess.DEVNULL, capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)


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
    java_classpath: str | None = None

    def missing(self, block: Block) -> list[str]:
        """What block needs that is not there."""
        need = [self.bin / "payidem-mock"]
        langs = {block.lang} | ({block.prelude.lang} if block.prelude else set())
        if block.check and block.prelude:
            langs = {block.prelude.lang} | ({"sh"} if block.text.startswith("$ ") else set())
        for lang in langs:
            need += {"python": [self.python], "c": [self.lib / "libpayidem.so"],
                     "sql": [Path(shutil.which("psql") or "psql (make pg-deps)")]}.get(lang, [])
            if lang == "sh" and not self.dist:
                need.append(self.bin / "payidem")
        return [str(p) for p in need if not p.exists()]


def block_line(prelude: Prelude) -> int | None:
    """The index of the prelude's `{block}` line, if it has one."""
    return next((i for i, line in enumerate(prelude.text.split("\n")) if line.strip() == "{block}"), None)


def with_prelude(prelude: Prelude | None, text: str) -> str:
    """The program of a block: its prelude's code, then the block (or the
    block in the prelude's `{block}` line)."""
    if prelude is None:
        return text
    lines = prelude.text.split("\n")
    at = block_line(prelude)
    if at is None:
        return prelude.text + text
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    block = "".join(indent + line + "\n" if line.strip() else "\n" for line in text.split("\n")[:-1])
    return "\n".join(lines[:at]) + "\n" + block + "\n".join(lines[at + 1:])


def command_for(lang: str, text: str, tools: Tools, work: Path) -> list[str]:
    """Writes the program text (in lang) into work and returns how to run it."""
    if lang == "python":
        (work / "block.py").write_text(text, encoding="utf-8")
        return [str(tools.python), "-I", "block.py"]
    if lang == "sh":
        (work / "block.sh").write_text(text, encoding="utf-8")
        return ["bash", "-e", "-o", "pipefail", "block.sh"]
    if lang == "c":
        (work / "block.c").write_text(text, encoding="utf-8")
        cc = os.environ.get("CC", "cc")
        build = [cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", f"-I{ROOT / 'include'}",
                 "block.c", "-o", "block", f"-L{tools.lib}", "-lpayidem", f"-Wl,-rpath,{tools.lib}"]
        return ["sh", "-c", " ".join(f"'{a}'" for a in build) + " && ./block"]
    if lang == "java":
        main = re.search(r"^public\s+(?:final\s+)?class\s+([A-Za-z_][A-Za-z0-9_]*)", text, re.M)
        if main is None:
            return ["sh", "-c", "echo 'a Java program needs a public class (its prelude declares it)' >&2; exit 1"]
        (work / f"{main.group(1)}.java").write_text(text, encoding="utf-8")
        cp = tools.java_classpath or ""
        return ["sh", "-c", 'javac -Xlint:all -Werror -cp "$0" -d classes "$1.java" && exec java -cp "$0:classes" "$1"',
                cp, main.group(1)]
    if lang == "sql":
        (work / "block.sql").write_text(text, encoding="utf-8")
        return ["sh", "-c", 'exec psql -X -q -v ON_ERROR_STOP=1 -f block.sql "$PAYIDEM_PG_URL"']
    if lang == "go":
        (work / "main.go").write_text(text, encoding="utf-8")
        (work / "go.mod").write_text(
            f"module example.com/docs-block\n\ngo 1.22\n\nrequire {GO_MODULE} v0.0.0\n\n"
            f"replace {GO_MODULE} => {ROOT / 'bindings' / 'go'}\n", encoding="utf-8")
        return ["go", "run", "."]
    if lang == "rust":
        (work / "src").mkdir(exist_ok=True)
        (work / "src" / "main.rs").write_text(text, encoding="utf-8")
        workspace = (ROOT / "Cargo.toml").read_text()
        edition = re.search(r'^edition = "([0-9]+)"', workspace, re.M)
        postgres = re.search(r'^postgres = ("[^"]+")', workspace, re.M)
        assert edition and postgres, "no edition or postgres version in Cargo.toml"
        (work / "Cargo.toml").write_text(
            f'[package]\nname = "docs-block"\nversion = "0.0.0"\nedition = "{edition.group(1)}"\npublish = false\n\n'
            f'[dependencies]\npayidem = {{ path = "{ROOT / "core"}" }}\n'
            f'payidem-mock = {{ path = "{ROOT / "mock"}" }}\ntokio = {{ version = "1", features = ["rt"] }}\n'
            f'postgres = {postgres.group(1)}\n\n'
            '[workspace]\n', encoding="utf-8")
        shutil.copyfile(ROOT / "Cargo.lock", work / "Cargo.lock")
        return ["cargo", "run", "--quiet"]
    raise AssertionError(lang)


NUMBER = r"[-+]?(?:[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|Inf|NaN)"


def sample_pattern(sample: str, values_any: bool = False) -> re.Pattern[str]:
    """The output a checked sample stands for: its lines as written, `…` in
    a line any text of that line, a line of `…` alone any lines; with
    values_any, a number ending a line that does not start with `#` any
    number (a Prometheus sample's value)."""
    parts = []
    for line in sample.rstrip("\n").split("\n"):
        line = line.rstrip()
        if line.strip() == "…":
            parts.append("(?:[^\n]*\n)*?")
            continue
        value = ""
        if values_any and not line.startswith("#"):
            m = re.search(r"(?<=\s)" + NUMBER + "$", line)
            if m:
                line, value = line[: m.start()], NUMBER
        parts.append("[^\n]*?".join(re.escape(p) for p in line.split("…")) + value + "\n")
    return re.compile("".join(parts))


def json_sample(text: str) -> object:
    """A `json` sample's value, each bare `…` read as the string "…"."""
    return json.loads(re.sub(r'"(?:[^"\\]|\\.)*"|…', lambda m: '"…"' if m.group(0) == "…" else m.group(0), text))


def json_matches(want: object, got: object, values_any: bool) -> bool:
    """Whether the output's JSON value got is one the sample's value want
    stands for (see the module's documentation)."""
    if want == "…":
        return True
    if isinstance(want, str):
        return isinstance(got, str) and ("…" in want and sample_pattern(want).fullmatch(got + "\n") is not None
                                         or want == got)
    if want is None or isinstance(want, bool) or isinstance(got, bool):
        return want is got
    if isinstance(want, (int, float)):
        return isinstance(got, (int, float)) and (values_any or want == got)
    if isinstance(want, dict):
        return (isinstance(got, dict) and want.keys() == got.keys()
                and all(json_matches(want[k], got[k], values_any) for k in want))
    assert isinstance(want, list)
    if not isinstance(got, list):
        return False
    if not want:
        return not got
    if want[0] == "…":
        return any(json_matches(want[1:], got[i:], values_any) for i in range(len(got) + 1))
    return bool(got) and json_matches(want[0], got[0], values_any) and json_matches(want[1:], got[1:], values_any)


def normalized(output: str) -> str:
    """Output as samples are compared with it: trailing blanks and blank
    lines at the end dropped, one newline at the end."""
    return "\n".join(line.rstrip() for line in output.rstrip().split("\n")) + "\n"


def check_quote(block: Block) -> tuple[bool, str]:
    """A quoted block: each of its lines is a line of one of the files."""
    files = block.options["quote"].split(",")
    have: set[str] = set()
    for name in files:
        path = ROOT / name
        if not path.is_file():
            return False, f"quote={name}: no such file in the repository"
        have.update(line.strip() for line in path.read_text(encoding="utf-8").splitlines())
    missing = [line for line in block.text.splitlines() if line.strip() and line.strip() not in have]
    if missing:
        return False, f"lines not found in {', '.join(files)}: {missing[:3]}"
    return True, f"{len(block.text.splitlines())} lines, each as in {', '.join(files)}"


def run_block(block: Block, tools: Tools) -> tuple[bool, str]:
    """Runs one block, or checks one sample; (passed, what to say)."""
    if block.check and "quote" in block.options:
        return check_quote(block)
    missing = tools.missing(block)
    if missing:
        return False, f"missing {missing}: `make test-docs` builds them"
    scratch = Path(tempfile.mkdtemp(prefix="payidem-docs-"))
    mock = postgres = None
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
            PAYIDEM_CHECKOUT=str(ROOT),
            GOFLAGS="-mod=mod", GOPROXY="off", GOWORK="off", GOTOOLCHAIN="local",
            GOMODCACHE=str(scratch / "gomodcache"),
        )
        if tools.dist is not None:
            env["PAYIDEM_DIST"] = str(tools.dist)
        langs = {block.lang, block.prelude.lang if block.prelude else None}
        if block.options.get("needs") == "postgres" or "sql" in langs:
            try:
                postgres = Postgres()
            except RuntimeError as e:
                return False, str(e)
            env["PAYIDEM_PG_URL"] = postgres.url
        for keep in ("GOCACHE", "GOPATH"):
            if keep in os.environ:
                env[keep] = os.environ[keep]
        # Rust blocks: the caller's toolchain and registry, and the workspace's
        # target dir (the dependencies its builds share are not built again).
        real_home = Path(os.environ.get("HOME", str(Path.home())))
        env.setdefault("CARGO_HOME", str(real_home / ".cargo"))
        env.setdefault("RUSTUP_HOME", str(real_home / ".rustup"))
        env["CARGO_TARGET_DIR"] = str(ROOT / "target")
        if "GOCACHE" not in env:
            env["GOCACHE"] = subprocess.run(["go", "env", "GOCACHE"], capture_output=True, text=True).stdout.strip()
        # A run block: its program. A checked sample: its prelude, then its
        # `$` command (or the prelude with the command in its `{block}`
        # line); their output (stdout and stderr as they came) is compared
        # with the sample.
        steps: list[list[str]] = []
        sample = block.text
        if not block.check and block.prelude and block.prelude.lang != block.lang:
            steps.append(command_for(block.prelude.lang, block.prelude.text, tools, work))
            steps.append(command_for(block.lang, block.text, tools, work))
        elif not block.check:
            steps.append(command_for(block.lang, with_prelude(block.prelude, block.text), tools, work))
        else:
            assert block.prelude is not None
            first, _, rest = block.text.partition("\n")
            if block_line(block.prelude) is not None:
                steps.append(command_for("sh", with_prelude(block.prelude, first[2:] + "\n"), tools, work))
                sample = rest
            else:
                steps.append(command_for(block.prelude.lang, block.prelude.text, tools, work))
                if first.startswith("$ "):
                    (work / "command.sh").write_text(first[2:] + "\n", encoding="utf-8")
                    steps.append(["bash", "-e", "-o", "pipefail", "command.sh"])
                    sample = rest
        want = int(block.options.get("exit", "0"))
        output = collected = ""
        for n, cmd in enumerate(steps):
            try:
                done = subprocess.run(cmd, cwd=work, env=env, stdin=subprocess.DEVNULL, text=True,
                                      stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT if block.check else subprocess.PIPE,
                                      timeout=TIMEOUT_S)
            except subprocess.TimeoutExpired:
                return False, f"did not end within {TIMEOUT_S} s"
            output = (done.stdout + (done.stderr or "")).strip()
            collected += done.stdout
            tail = "\n".join("    " + ln for ln in output.splitlines()[-25:])
            expected = want if n == len(steps) - 1 else 0
            if done.returncode != expected:
                what = "the prelude's " if n < len(steps) - 1 else ""
                return False, f"{what}exit status {done.returncode}, want {expected}:\n{tail}"
        values_any = block.options.get("values") == "any"
        if block.check and block.lang == "json":
            try:
                same = json_matches(json_sample(sample), json.loads(collected), values_any)
            except ValueError as e:
                return False, f"the sample or the output is not JSON ({e}); the output was:\n{collected[:2000]}"
            if not same:
                return False, f"the output's JSON differs from the sample's; it was:\n    {collected.strip()[:2000]}"
        elif block.check:
            got = normalized(collected)
            if not sample_pattern(sample, values_any).fullmatch(got):
                shown = "\n".join("    " + ln for ln in got.splitlines()[:25])
                return False, f"the output does not match the sample; it was:\n{shown}"
        left = sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*"))
        if left:
            return False, f"left temporary files behind in TMPDIR: {left[:5]}"
        twice = mock.paid_twice()
        if twice:
            return False, f"the mock saw orders paid twice or re-keyed: {twice}"
        if block.check and block.lang == "json":
            return True, "the same JSON value as the output"
        if block.check:
            return True, f"{len(sample.splitlines())} lines match the output"
        return True, ((done.stdout.strip() or output).splitlines() or [""])[-1][:100]
    finally:
        if mock is not None:
            mock.stop()
        if postgres is not None:
            postgres.stop()
        # The Go module cache is read-only.
        subprocess.run(["chmod", "-R", "u+w", str(scratch)], check=False)
        shutil.rmtree(scratch, ignore_errors=True)


def tools_from_env(dist: Path | None, java_classpath: str | None) -> Tools:
    """The interpreter, binaries and library the blocks use."""
    return Tools(
        java_classpath=java_classpath,
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
    java_classpath = None
    if "--java-classpath" in argv:
        i = argv.index("--java-classpath")
        java_classpath = argv[i + 1]
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
            kind = "run" if b.run else "check" if b.check else "no-run: " + b.reason
            print(f"{b.where} {b.lang or '-'} {kind}{' ' + str(b.options) if b.options else ''}")
        return 1 if unmarked else 0
    tools = tools_from_env(dist, java_classpath)
    passed = failed = deferred = 0
    for b in blocks:
        if b.error or not (b.run or b.check):
            continue
        java = "java" in (b.lang, b.prelude.lang if b.prelude else None)
        if java != (java_classpath is not None) or (
                not java and (b.options.get("needs") == "dist") != (dist is not None)):
            deferred += 1
            continue
        start = time.monotonic()
        ok, said = run_block(b, tools)
        took = time.monotonic() - start
        print(f"{'PASS' if ok else 'FAIL'} {b.where} [{b.lang}] {took:.1f} s: {said}", flush=True)
        passed += ok
        failed += not ok
    not_run = sum(1 for b in blocks if not b.run and not b.check and not b.error)
    failed += len(unmarked)
    later = "the other blocks" if dist is not None or java_classpath is not None else "make test-dist and make test-java"
    print(f"{passed} passed, {failed} failed, {not_run} not run (no-run), {deferred} left to {later}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
