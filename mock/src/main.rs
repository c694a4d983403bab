//! `payidem-mock`: run the local payment platform simulator.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use payidem_mock::{ClockSetting, KeySpec, MockConfig, MockServer};

/// Local payment platform simulator speaking payidem protocol v1, with
/// injectable faults.
///
/// The first line on stdout is `listening on HOST:PORT`. With no --key and
/// no keys in --config, the public test key `key_test_1` /
/// `sk_test_payidem_mock_secret_0001` is active.
#[derive(Debug, Parser)]
#[command(name = "payidem-mock", version)]
struct Cli {
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,

    /// Port to bind; 0 picks a free port.
    #[arg(long, default_value_t = 0)]
    port: u16,

    /// An active key as KEY_ID:SECRET (secret as plain text or base64:...);
    /// repeatable, and a key id given twice has both secrets active
    /// (rotation). The key id ends at the first colon.
    #[arg(long = "key", value_name = "KEY_ID:SECRET")]
    keys: Vec<String>,

    /// JSON file with any of: host, port, keys [{key_id, secret}], faults
    /// {kind: p}, delay_ms, retry_after_seconds, seed, clock_skew_seconds,
    /// idempotency_retention_seconds, nonce_capacity, nonce_store, control.
    /// Flags given
    /// on the command line win.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,

    /// A fault as KIND=PROBABILITY (0..1), repeatable. Kinds:
    /// error_500_before_commit, error_500_after_commit, error_502, error_503,
    /// error_429, timeout_504_before_commit, timeout_504_after_commit,
    /// drop_after_commit, delay_after_commit, status_error_503. POST kinds
    /// must sum to at most 1.
    #[arg(long = "fault", value_name = "KIND=P")]
    faults: Vec<String>,

    /// How long delay_after_commit holds the answer, in milliseconds.
    #[arg(long, value_name = "MS")]
    delay_ms: Option<u64>,

    /// The Retry-After, in seconds, of the error_429, error_503 and
    /// status_error_503 answers (default 1).
    #[arg(long, value_name = "SECONDS")]
    retry_after_seconds: Option<u64>,

    /// Seed of the fault draws and generated ids, for reproducible runs.
    #[arg(long)]
    seed: Option<u64>,

    /// Seconds added to the server clock (may be negative).
    #[arg(long, allow_negative_numbers = true, value_name = "SECONDS")]
    clock_skew_seconds: Option<i64>,

    /// How long finished idempotency keys are kept (default 172800, 48 h).
    #[arg(long, value_name = "SECONDS")]
    idempotency_retention_seconds: Option<u64>,

    /// Live nonces kept per key id before answering 503 replay_cache_full
    /// (in-memory nonce store only).
    #[arg(long, value_name = "N")]
    nonce_capacity: Option<usize>,

    /// Where accepted nonces are recorded: `memory` (default, this process
    /// only) or a Redis server shared by several mock instances, which then
    /// refuse each other's replays: redis://HOST[:PORT][/DB],
    /// unix:///PATH/redis.sock. The server must run with maxmemory-policy
    /// noeviction; when it cannot answer, requests are refused with 503
    /// replay_store_unavailable.
    #[arg(long, value_name = "URL")]
    nonce_store: Option<String>,

    /// How long every create and refund stays in progress before it runs,
    /// in milliseconds.
    #[arg(long, value_name = "MS")]
    processing_delay_ms: Option<u64>,

    /// Enable the /_mock control routes (stats, reset, faults), answered for
    /// loopback peers only.
    #[arg(long)]
    control: bool,

    /// Threads answering requests.
    #[arg(long, default_value_t = 8)]
    workers: usize,
}

fn build(cli: &Cli) -> payidem::Result<MockConfig> {
    let mut config = MockConfig {
        control: false,
        ..MockConfig::default()
    };
    if let Some(path) = &cli.config {
        config.apply_file(path)?;
    }
    if cli.host != "127.0.0.1" || cli.config.is_none() {
        config.host = cli.host.clone();
    }
    if cli.port != 0 || cli.config.is_none() {
        config.port = cli.port;
    }
    for key in &cli.keys {
        config.keys.push(KeySpec::parse_flag(key)?);
    }
    if !cli.faults.is_empty() {
        let mut faults = config.faults.without_faults();
        for f in &cli.faults {
            faults.parse_flag(f)?;
        }
        config.faults = faults;
    }
    if let Some(d) = cli.delay_ms {
        config.faults.delay_ms = d;
    }
    if let Some(s) = cli.retry_after_seconds {
        config.faults.retry_after_seconds = s;
    }
    if cli.seed.is_some() {
        config.seed = cli.seed;
    }
    if let Some(skew_seconds) = cli.clock_skew_seconds {
        config.clock = ClockSetting::System { skew_seconds };
    }
    if let Some(r) = cli.idempotency_retention_seconds {
        config.idempotency_retention_seconds = r;
    }
    if let Some(n) = cli.nonce_capacity {
        config.nonce_capacity = n;
    }
    if let Some(url) = &cli.nonce_store {
        config.nonce_store = payidem::verifier::replay_store::ReplayStore::from_url(url)?;
    }
    if let Some(ms) = cli.processing_delay_ms {
        config.processing_delay_ms = ms;
    }
    config.control |= cli.control;
    config.workers = cli.workers;
    Ok(config)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let server = match build(&cli).and_then(MockServer::start) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("payidem-mock: {e}");
            return ExitCode::from(2);
        }
    };
    let mut out = std::io::stdout().lock();
    if writeln!(out, "listening on {}", server.addr())
        .and_then(|()| out.flush())
        .is_err()
    {
        return ExitCode::from(1);
    }
    drop(out);
    loop {
        std::thread::park();
    }
}
