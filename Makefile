# Root tasks. Other targets (test, lint, bench) come from another branch.

.PHONY: demo

# The main demo: payments and refunds through payidem against the mock
# platform with every fault kind on, a worker killed with SIGKILL and resumed.
demo:
	cargo run --release -p payidem-e2e --bin payidem-demo
