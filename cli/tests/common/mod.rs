//! What every test of the `payidem` command shares: running it with a clean
//! environment, reading its output, and a payment frozen as a client
//! freezes it.

#![allow(dead_code)] // each test file uses its own part

use std::process::{Command, Output};

use payidem::operation::FrozenOperation;
use payidem_e2e::payment_body;

/// The current Unix time.
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Runs `payidem` with `args`, none of the PAYIDEM_* variables but `env`,
/// as the user `carol` (the operator `reconcile` records).
pub fn payidem_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_payidem"));
    for var in [
        "PAYIDEM_JOURNAL",
        "PAYIDEM_SECRET",
        "PAYIDEM_BASE_URL",
        "PAYIDEM_KEY_ID",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("USER", "carol")
        .args(args)
        .envs(env.iter().copied());
    cmd.output().expect("payidem runs")
}

/// [`payidem_env`] with no variable set.
pub fn payidem(args: &[&str]) -> Output {
    payidem_env(args, &[])
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A payment the mock accepts, frozen as a client freezes it, with a
/// status path when `status_path`.
pub fn payment(order_id: &str, status_path: bool) -> FrozenOperation {
    let body = payment_body(order_id, 1250);
    FrozenOperation {
        order_id: order_id.into(),
        idempotency_key: format!("create-{order_id}"),
        method: "POST".into(),
        path: "/v1/payments".into(),
        body_sha256: payidem::protocol::body_sha256_hex(&body),
        body,
        status_path: status_path.then(|| format!("/v1/payments?order_id={order_id}")),
    }
}
