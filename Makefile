# payidem: one entry point for tests, lint and benchmarks.
# Needs only a Rust toolchain (cargo, rustfmt, clippy) for now.

CARGO ?= cargo

.PHONY: test lint bench demo

## test: run every test of the workspace
test:
	$(CARGO) test --workspace

## lint: formatting and clippy, warnings are errors
lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

## bench: criterion benchmarks and the nonce memory measurement (see BENCHMARKS.md)
bench:
	$(CARGO) bench -p payidem

## demo: the main job (see README)
demo:
	$(CARGO) build --release -p payidem-mock -p payidem-e2e
	$(CARGO) run --release -p payidem-e2e --bin payidem-demo
