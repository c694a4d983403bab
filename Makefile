# payidem: one entry point for set-up, tests, lint, benchmarks and the demo.
# Every target installs what it needs on a fresh Debian machine that has
# Rust, Go, Python 3 with pip, gcc and apt.
#
#   make test        every test: Rust, C, Python and Go, then the artifacts of
#                    `make dist` installed and used outside the repository
#   make demo        the main job: payments through faults and crashes
#   make lint        rustfmt check and clippy with warnings as errors
#   make bench       Rust benchmarks (see BENCHMARKS.md)
#   make dist        every release artifact into dist/ (glibc 2.17 floor):
#                    C tarball (with the payidem command) and .debs
#                    (libpayidem0, libpayidem-dev, payidem-cli), the mock, the
#                    Python wheel, for Linux x86_64 and aarch64, and the Go
#                    module's prebuilt libraries (refreshed when stale)
#
# C ABI (ffi/):
#   make lib                      libpayidem.so and libpayidem.a into target/dist-stage/x86_64,
#                                 the payidem command into target/dist-stage/cli-x86_64
#   make header                   regenerate include/payidem.h with cbindgen
#   make test-c                   every C ABI test (see ffi/README.md)
#   make install PREFIX=/usr/local [LIBDIR=…] [DOCDIR=…] [DESTDIR=…]   (never compiles)
#   make uninstall                (same variables)
#   make bench-c                  signing through the C ABI vs. Rust

CARGO ?= cargo

.PHONY: test test-rust test-fleet test-c test-python test-go test-java java-deps bench-java dist-java test-dist lint bench demo lib header install \
	uninstall bench-c c-deps redis-deps pg-deps c-artifacts dist dist-c dist-mock dist-wheel dist-go \
	dist-arm64 test-arm64 dist-x86_64 cross-deps dist-windows test-windows
.PHONY: test-sim sim-planted simulate sim-feature-check
.PHONY: test-docs docs-figures

## test: every test of every language, then the release artifacts outside the repository, in
## two lanes at once (scripts/test-lanes.sh): the suites of lane 2 build and emulate other
## platforms while lane 1 keeps the cores busy with the native ones. The Debian packages and
## Rust targets of every suite are installed first, one apt-get at a time.
TEST_DEPS := pg-deps redis-deps c-deps java-deps cross-deps
TEST_LANE1 := test-rust test-sim test-c test-python test-docs test-go test-java test-windows
TEST_LANE2 := test-dist test-arm64
test:
	scripts/test-lanes.sh --deps "$(TEST_DEPS)" --lane1 "$(TEST_LANE1)" --lane2 "$(TEST_LANE2)"

## cross-deps: what the other platforms' builds and emulated suites need (Debian packages,
## installed when missing: cmake, sqlite headers, man, the arm64 binutils, glibc and qemu,
## debootstrap and fakeroot, MinGW-w64 and Wine, lintian; the Rust targets), so that no suite runs apt-get or rustup beside another
CROSS_PACKAGES := cmake curl pkg-config libsqlite3-dev man-db groff-base binutils-aarch64-linux-gnu \
	libc6-arm64-cross qemu-user debootstrap util-linux gcc-mingw-w64-x86-64 binutils-mingw-w64-x86-64 \
	wine wine64 lintian fakeroot
CROSS_TARGETS := aarch64-unknown-linux-gnu x86_64-pc-windows-gnu
cross-deps:
	@scripts/apt-ensure.sh $(CROSS_PACKAGES)
	@installed="$$(rustup target list --installed)"; for t in $(CROSS_TARGETS); do \
		echo "$$installed" | grep -qx $$t || rustup target add $$t; done

## test-rust: every Rust test of the workspace (core, mock, e2e with the chaos test and the
## fleet chaos test, C ABI crate); the replay-store tests start their own redis-server (see
## redis-deps), the PostgreSQL journal tests their own PostgreSQL (see pg-deps). Every error
## message the suites produce is recorded and checked (core/src/error/text.rs).
test-rust: redis-deps pg-deps
	@echo '## phase: test-rust'
	@texts=$$(mktemp); rm -f "$$texts"; \
	PAYIDEM_ERROR_TEXT_LOG="$$texts" $(CARGO) test --workspace && scripts/check-error-texts.sh "$$texts" 1000; \
	rc=$$?; rm -f "$$texts"; exit $$rc

## test-fleet: the fleet chaos test alone (also part of test-rust): worker processes without
## local state sharing one PostgreSQL journal through kills, a database crash and a lost COMMIT
test-fleet: pg-deps
	$(CARGO) test -p payidem-e2e --test fleet -- --nocapture

## test-sim: the deterministic simulator (sim/, see README "Deterministic simulation"): its
## tests (a seed replays exactly, in this process and another; the seeds of
## sim/regression-seeds.txt), then at once on the two cores a smoke run of SIM_SMOKE_SECONDS
## of fresh seeds and the hunt for every planted bug (sim-planted); first, that no released
## package is built with the core's `sim` feature (sim-feature-check)
SIM_SMOKE_SECONDS ?= 30
test-sim: sim-feature-check
	@echo '## phase: test-sim'
	$(CARGO) test -p payidem-sim
	$(CARGO) build -p payidem-sim
	@hunt_log=$$(mktemp); \
	$(CARGO) run -q -p payidem-sim -- --hunt all --seconds 60 >"$$hunt_log" 2>&1 & hunt=$$!; \
	$(CARGO) run -q -p payidem-sim -- --seconds $(SIM_SMOKE_SECONDS); smoke=$$?; \
	wait $$hunt; hunted=$$?; cat "$$hunt_log"; rm -f "$$hunt_log"; \
	test $$smoke -eq 0 && test $$hunted -eq 0

## sim-planted: runs the simulator against each planted bug (payidem::sim::Bug) until it
## finds it; fails if one is not found within 60 s of real time
sim-planted:
	$(CARGO) run -p payidem-sim -- --hunt all --seconds 60

## simulate: a longer simulator run, SECONDS of real time (default 600) over fresh seeds
SECONDS ?= 600
simulate:
	$(CARGO) run --release -p payidem-sim -- --seconds $(SECONDS) --regressions sim/regression-seeds.txt

## sim-feature-check: no package that is released (C library, CLI, mock, Python module)
## enables the core's `sim` feature (its hooks, fault points and planted bugs)
sim-feature-check:
	@for p in payidem-ffi payidem-capi payidem-cli payidem-mock payidem-python; do \
	  out=$$($(CARGO) tree --locked -p $$p -e features --prefix none) || exit 1; \
	  if printf '%s\n' "$$out" | grep -q 'payidem feature "sim"'; then \
	    echo "$$p enables payidem's sim feature"; exit 1; fi; \
	  printf '%s\n' "$$out" | grep -q 'payidem feature "default"' || { echo "$$p: no payidem in its tree?"; exit 1; }; \
	done; echo "sim-feature-check: no released package enables payidem/sim"

## pg-deps: installs the PostgreSQL server (Debian package) when no
## /usr/lib/postgresql/*/bin/initdb exists. The tests start a throwaway server themselves
## (initdb in a temp dir as the postgres user, unix socket only) and fail, never skip, when
## it cannot start.
pg-deps:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || scripts/apt-ensure.sh postgresql
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
		echo "the PostgreSQL server is missing and could not be installed (apt-get install -y postgresql): the journal tests need it"; exit 1; }

## redis-deps: installs redis-server (Debian package) when missing. Tests of the
## Redis replay store start a throwaway server themselves (temp dir, unix socket,
## no persistence) and fail, never skip, when it cannot start.
redis-deps:
	@scripts/apt-ensure.sh redis-server=redis-server || { \
		echo "redis-server is missing and could not be installed (apt-get install -y redis-server): the replay-store tests need it"; exit 1; }

## test-python: builds and installs the Python package in a venv, runs pytest, mypy and stubtest
test-python: redis-deps pg-deps
	@echo '## phase: test-python'
	bindings/python/run-tests.sh

## test-docs: every fenced block of the READMEs and docs/*.md (scripts/docs/run-blocks.py):
## those marked `run` run as written (a fragment after its declared prelude), each in a scratch
## directory against the release library, the payidem command, a payidem-mock of its own, the
## Python package of test-python's venv (installed there when missing) and, for Rust, the
## workspace's crates; samples marked `check` are compared with the files they quote or the
## output they show; every other block must say `no-run: REASON`. The blocks marked
## needs=dist run in test-dist, against dist/. First, the runner's own test. pg-deps: the
## PostgreSQL server some blocks run against, and openssl (a dependency of its package).
DOCS_PYTHON := bindings/python/.venv/bin/python
test-docs: c-deps pg-deps
	@echo '## phase: test-docs'
	@$(MAKE) --no-print-directory c-artifacts
	$(CARGO) build --release -p payidem-cli
	@$(DOCS_PYTHON) -c 'import payidem, requests, httpx, prometheus_client' 2>/dev/null || \
		bindings/python/run-tests.sh --collect-only -q >/dev/null
	scripts/docs/test-run-blocks.sh
	PAYIDEM_DOCS_PYTHON=$(CURDIR)/$(DOCS_PYTHON) scripts/docs/run-blocks.py

## test-go: builds the static library and the mock, then go vet, go test -race,
## the GOGC=1 cgocheck run, the dynamic-link run and a short benchmark
test-go: redis-deps pg-deps
	@echo '## phase: test-go'
	bindings/go/run-tests.sh

## java-deps: installs a JDK (17 or later) and Maven (Debian packages) when missing. Maven
## resolves the pinned plugins and dependencies of bindings/java/pom.xml from Central on
## its first run, into ~/.m2.
java-deps:
	@scripts/apt-ensure.sh openjdk-17-jdk-headless=javac maven=mvn || { \
		echo "a JDK or Maven is missing and could not be installed (apt-get install -y openjdk-17-jdk-headless maven): the Java tests need them"; exit 1; }

## test-java: the Java binding (bindings/java): the release library and mock, the library
## staged into the jar with its SHA-256, then Maven's build and JUnit suites (see bindings/java/README.md)
test-java: java-deps redis-deps pg-deps
	@echo '## phase: test-java'
	bindings/java/run-tests.sh
	@# The Java blocks of the docs (scripts/docs/run-blocks.py), against the jar just built.
	cd bindings/java && mvn -B -ntp -q dependency:build-classpath -Dmdep.includeScope=runtime \
		-Dmdep.outputFile=target/docs-classpath.txt
	scripts/docs/run-blocks.py --java-classpath \
		"$$(ls $(CURDIR)/bindings/java/target/payidem-[0-9]*.jar | grep -v -e -sources -e -javadoc):$$(cat bindings/java/target/docs-classpath.txt)"

## lint: formatting and clippy, warnings are errors
lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	@test -z "$$(gofmt -l bindings/go)" || { gofmt -l bindings/go; echo "gofmt: files above need formatting"; exit 1; }
	@$(MAKE) --no-print-directory deny

## bench: criterion benchmarks and the nonce memory measurement (see BENCHMARKS.md)
bench:
	$(CARGO) bench -p payidem

## demo: the main job (see README)
demo:
	$(CARGO) build --release -p payidem-mock --bin payidem-mock
	$(CARGO) run --release -p payidem-e2e --bin payidem-demo
CC ?= cc
CXX ?= g++
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
DOCDIR ?= $(PREFIX)/share/doc/payidem
DESTDIR ?=
STAGE := target/dist-stage/x86_64
CLI_STAGE := target/dist-stage/cli-x86_64

ABI_VERSION := 0
RELEASE := target/release
C_OUT := target/c
C_LIB := $(C_OUT)/lib
C_TESTS := ffi/tests-c
C_FLAGS := -std=c99 -Wall -Wextra -Werror -pedantic -O1 -g -Iinclude -I$(C_TESTS)
C_LINK := -L$(C_LIB) -lpayidem -Wl,-rpath,$(CURDIR)/$(C_LIB)
CJSON := -I/usr/include/cjson -lcjson
PG_INCLUDE := $(shell pg_config --includedir 2>/dev/null || echo /usr/include/postgresql)
VALGRIND := valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect --show-possibly-lost=no
TEST_ENV := PAYIDEM_MOCK=$(CURDIR)/$(RELEASE)/payidem-mock PAYIDEM_VECTORS=$(CURDIR)/core/tests/vectors/protocol-v1.json


lib:
	scripts/dist/build-c.sh --arch x86_64
	scripts/dist/build-cli.sh

header:
	PAYIDEM_WRITE_HEADER=1 $(CARGO) test -q -p payidem-capi --test header committed_header_matches_a_fresh_generation

# Installs what the C tests need on a Debian machine, only when missing.
c-deps:
	@scripts/apt-ensure.sh libcjson-dev libcurl4-openssl-dev libpq-dev curl=curl valgrind=valgrind \
		pkg-config=pkg-config g++=$(CXX)

# The release library and mock, plus a directory where libpayidem.so.0
# resolves (the SONAME) for the test programs.
c-artifacts:
	$(CARGO) build --release -p payidem-ffi -p payidem-mock
	@mkdir -p $(C_LIB)
	@ln -sf $(CURDIR)/$(RELEASE)/libpayidem.so $(C_LIB)/libpayidem.so.$(ABI_VERSION)
	@ln -sf libpayidem.so.$(ABI_VERSION) $(C_LIB)/libpayidem.so

test-c: c-deps redis-deps pg-deps
	@echo '## phase: test-c'
	@echo "== Rust side: header drift, version macros, code mapping, panic boundary; the C layer's error texts"
	@texts=$$(mktemp); rm -f "$$texts"; \
	PAYIDEM_ERROR_TEXT_LOG="$$texts" $(CARGO) test -p payidem-capi && scripts/check-error-texts.sh "$$texts" 400; \
	rc=$$?; rm -f "$$texts"; exit $$rc
	@$(MAKE) --no-print-directory c-artifacts
	@echo "== exported symbols and SONAME"
	$(C_TESTS)/check-symbols.sh $(RELEASE)/libpayidem.so include/payidem.h
	@echo "== header as C++11"
	$(CXX) -x c++ -std=c++11 -Wall -Wextra -Werror -pedantic -fsyntax-only -Iinclude $(C_TESTS)/header_cxx.cpp
	@echo "== C tests"
	$(CC) $(C_FLAGS) $(C_TESTS)/test_ffi.c -o $(C_OUT)/test_ffi $(C_LINK) $(CJSON)
	$(TEST_ENV) $(C_OUT)/test_ffi
	@echo "== C tests under AddressSanitizer + UndefinedBehaviorSanitizer"
	$(CC) $(C_FLAGS) -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
		$(C_TESTS)/test_ffi.c -o $(C_OUT)/test_ffi_asan $(C_LINK) $(CJSON)
	$(TEST_ENV) ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 $(C_OUT)/test_ffi_asan
	@echo "== C tests under valgrind"
	$(TEST_ENV) $(VALGRIND) $(C_OUT)/test_ffi
	@echo "== metrics and events through the C ABI, against the mock with faults (plain, ASan+UBSan, valgrind)"
	$(CC) $(C_FLAGS) $(C_TESTS)/test_metrics.c -o $(C_OUT)/test_metrics $(C_LINK) $(CJSON)
	$(TEST_ENV) $(C_OUT)/test_metrics
	$(CC) $(C_FLAGS) -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
		$(C_TESTS)/test_metrics.c -o $(C_OUT)/test_metrics_asan $(C_LINK) $(CJSON)
	$(TEST_ENV) ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 $(C_OUT)/test_metrics_asan
	$(TEST_ENV) $(VALGRIND) $(C_OUT)/test_metrics
	@echo "== operation vectors through the C ABI (plain, ASan+UBSan, valgrind)"
	$(CC) $(C_FLAGS) $(C_TESTS)/test_operation.c -o $(C_OUT)/test_operation $(C_LINK) $(CJSON)
	PAYIDEM_OPERATION_VECTORS=$(CURDIR)/core/tests/vectors/operation-v1.json $(C_OUT)/test_operation
	$(CC) $(C_FLAGS) -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
		$(C_TESTS)/test_operation.c -o $(C_OUT)/test_operation_asan $(C_LINK) $(CJSON)
	PAYIDEM_OPERATION_VECTORS=$(CURDIR)/core/tests/vectors/operation-v1.json ASAN_OPTIONS=detect_leaks=1 \
		UBSAN_OPTIONS=print_stacktrace=1 $(C_OUT)/test_operation_asan
	PAYIDEM_OPERATION_VECTORS=$(CURDIR)/core/tests/vectors/operation-v1.json $(VALGRIND) $(C_OUT)/test_operation
	@echo "== libcurl drives a client's call (examples/c/pay_curl.c): through 504s; kill -9, resume, paid once"
	$(CC) $(C_FLAGS) examples/c/pay_curl.c -o $(C_OUT)/pay_curl $(C_LINK) -lcurl
	$(TEST_ENV) PAY_CURL=$(C_OUT)/pay_curl $(C_TESTS)/test_curl_crash.sh
	@echo "== PostgreSQL journal: a client pays, the outbox statement runs in the application's transaction (libpq), take_over sends it once (plain, ASan+UBSan)"
	$(CC) $(C_FLAGS) -I$(PG_INCLUDE) $(C_TESTS)/test_postgres.c -o $(C_OUT)/test_postgres $(C_LINK) $(CJSON) -lpq
	$(TEST_ENV) $(C_TESTS)/pg_server.sh run $(C_OUT)/test_postgres
	$(CC) $(C_FLAGS) -I$(PG_INCLUDE) -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
		$(C_TESTS)/test_postgres.c -o $(C_OUT)/test_postgres_asan $(C_LINK) $(CJSON) -lpq
	$(TEST_ENV) ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 $(C_TESTS)/pg_server.sh run $(C_OUT)/test_postgres_asan
	@echo "== the take-over loop: an abandoned operation taken over once its lease lapsed, stopped by its callback (plain, ASan+UBSan, valgrind)"
	$(CC) $(C_FLAGS) $(C_TESTS)/test_takeover.c -o $(C_OUT)/test_takeover $(C_LINK)
	$(TEST_ENV) $(C_OUT)/test_takeover
	$(CC) $(C_FLAGS) -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
		$(C_TESTS)/test_takeover.c -o $(C_OUT)/test_takeover_asan $(C_LINK)
	$(TEST_ENV) ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 $(C_OUT)/test_takeover_asan
	$(TEST_ENV) $(VALGRIND) $(C_OUT)/test_takeover
	@echo "== 8 threads sharing a signer, a verifier and a client, under ThreadSanitizer"
	$(CC) $(C_FLAGS) -fsanitize=thread $(C_TESTS)/test_threads.c -o $(C_OUT)/test_threads_tsan -pthread $(C_LINK)
	$(TEST_ENV) TSAN_OPTIONS="halt_on_error=1 suppressions=$(CURDIR)/$(C_TESTS)/tsan.supp" $(C_OUT)/test_threads_tsan

## install: copies what `make lib` (or `make dist`) built (the C library, and
## the payidem command with its manual page and completions) and the documentation
## (DOCDIR: the C README, the docs/ pages it and the manual point to, examples/c); never compiles
install:
	@cli=; if [ -f $(CLI_STAGE)/bin/payidem ]; then cli="--cli $(CLI_STAGE)"; \
	else echo "make install: the payidem command is not staged ('make lib' builds it); installing the library only" >&2; fi; \
	scripts/dist/install-c.sh $$cli --docdir "$(DOCDIR)" $(STAGE) "$(DESTDIR)" "$(PREFIX)" "$(LIBDIR)"

uninstall:
	scripts/dist/install-c.sh --cli $(CLI_STAGE) --docdir "$(DOCDIR)" --uninstall $(STAGE) "$(DESTDIR)" "$(PREFIX)" "$(LIBDIR)"

## dist: every release artifact into dist/ (see ffi/README.md, bindings/*/README.md)
dist: dist-x86_64 dist-go dist-arm64 dist-windows

## dist-x86_64: the Linux x86_64 artifacts (tarball, .debs, mock, wheel)
dist-x86_64: dist-c dist-mock dist-wheel

dist-c: lib
	scripts/dist/package-c.sh --arch x86_64

dist-mock:
	scripts/dist/build-mock.sh

dist-wheel:
	scripts/dist/build-wheel.sh

## dist-windows: the Windows x64 zip (payidem.dll and its import libraries, payidem.exe,
## payidem-mock.exe, header, CMake package): dist/libpayidem-VERSION-windows-x86_64.zip
dist-windows:
	scripts/dist/build-windows.sh

## test-windows: that zip under Wine, from a fresh prefix, against the Linux mock
## (see scripts/dist/test-windows.sh); runs beside other suites (own temp dir and prefix); the jar
## with its payidem.dll on a Windows JVM there
test-windows: dist-windows dist-mock lib java-deps
	@echo '## phase: test-windows'
	scripts/dist/test-windows.sh "$$(ls dist/libpayidem-*-windows-x86_64.zip | head -n 1)" dist/payidem-mock

## dist-go: rebuilds the Go module's committed static libraries when stale, then writes the
## module as a module proxy serves it into dist/goproxy (the route before publication)
dist-go:
	scripts/dist/go-lib.sh
	scripts/dist/go-module-zip.sh

## dist-arm64: the Linux aarch64 artifacts (glibc 2.17): libpayidem-VERSION-linux-aarch64.tar.gz,
## the _arm64 .debs, payidem-mock-aarch64 and the manylinux aarch64 wheel
dist-arm64:
	scripts/dist/build-c.sh --arch aarch64
	scripts/dist/build-cli.sh --arch aarch64
	scripts/dist/package-c.sh --arch aarch64
	scripts/dist/build-mock.sh --arch aarch64
	scripts/dist/build-wheel.sh --arch aarch64

## test-arm64: the aarch64 artifacts of dist/ in an arm64 Debian root under qemu (root or not,
## Linux >= 6.7; see scripts/dist/test-arm64.sh), after building them; the jar with their
## library (as dist-java builds it) on an arm64 JRE there
test-arm64: dist-arm64 dist-mock lib java-deps
	@echo '## phase: test-arm64'
	scripts/dist/test-arm64.sh dist/payidem-mock
	scripts/dist/sizes.sh --check aarch64

## test-dist: the Linux x86_64 artifacts of `make dist` and the Go module, installed and used
## outside the repository (the aarch64 ones: test-arm64)
test-dist:
	@echo '## phase: test-dist'
	@$(MAKE) --no-print-directory dist-x86_64 dist-go
	scripts/dist/test-c.sh dist/payidem-mock
	scripts/dist/test-wheel.sh "$$(ls dist/payidem-*manylinux*_x86_64.whl | head -n 1)" dist/payidem-mock
	scripts/dist/test-go-module.sh dist/payidem-mock
	PAYIDEM_DOCS_BIN=$(CURDIR)/dist scripts/docs/run-blocks.py --dist dist
	scripts/dist/sizes.sh --check x86_64

## docs-figures: rewrites the generated figures of BENCHMARKS.md and the READMEs (artifact
## sizes) from dist/ (both Linux platforms: make dist-x86_64 dist-arm64 first)
docs-figures:
	scripts/dist/sizes.sh --write

bench-c:
	$(CARGO) bench -p payidem-capi --bench sign_ffi

## bench-java: signing from Java (the jar's JNA, a JNI prototype, javax.crypto in the same
## JVM) and settled operations per second at 1 and 16 threads (BENCHMARKS.md, Java)
bench-java: java-deps
	$(CARGO) build --release -p payidem-ffi -p payidem-mock
	bindings/java/stage-natives.sh
	cd bindings/java && mvn -B -ntp -q package -DskipTests
	bindings/java/bench.sh

## dist-java: the jar with the release libraries (glibc 2.17 floor; linux-aarch64 too when
## scripts/dist/build-c.sh --arch aarch64 staged it) and its pom, into dist/
dist-java: lib java-deps
	bindings/java/stage-natives.sh --dist
	cd bindings/java && mvn -B -ntp -q package -DskipTests
	@mkdir -p dist
	cp bindings/java/target/payidem-$$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1).jar dist/
	cp bindings/java/pom.xml dist/payidem-$$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1).pom

## deny: licenses, bans (duplicates) and sources of every dependency (deny.toml);
## advisories are not checked here: their database is on GitHub (see deny.toml)
## cargo metadata (under cargo-deny) needs every crate of the lock file, for every platform,
## while a Linux build downloads only the Linux ones: fetch them all first, so that the check
## never depends on what an earlier run left in the cargo cache. A cargo-deny of another version
## (one an earlier run installed before the pin moved) is replaced.
CARGO_DENY_VERSION := 0.20.2
deny:
	@$(CARGO) deny --version 2>/dev/null | grep -qx 'cargo-deny $(CARGO_DENY_VERSION)' || \
		$(CARGO) install cargo-deny --locked --force --version $(CARGO_DENY_VERSION)
	$(CARGO) fetch --locked
	$(CARGO) deny --offline check bans licenses sources

## fuzz: every fuzz target (Rust, Go, Python) for FUZZ_SECONDS each, one at a time
FUZZ_SECONDS ?= 60
fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) fuzz/run.sh

.PHONY: deny fuzz
