//! A fleet of `payidem-fleet-worker` processes sharing one PostgreSQL
//! journal, for the fleet chaos test and the takeover benchmark: starting
//! them (isolated, see [`Isolation`]), signalling them, and recording
//! orders through the outbox.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::pg::PgServer;
use crate::takeover::Isolation;
use crate::OwnedSpec;

/// A small deterministic random source (xorshift).
pub struct Dice(pub u64);

impl Dice {
    /// The next random number.
    pub fn roll(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A random duration from `lo` to `hi` milliseconds.
    pub fn millis(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(lo + self.roll() % (hi - lo))
    }
}

/// How worker processes (`payidem-fleet-worker`) of a fleet are started.
pub struct Fleet {
    /// The worker program (`env!("CARGO_BIN_EXE_payidem-fleet-worker")`).
    pub program: &'static str,
    /// The platform's URL.
    pub url: String,
    /// The shared PostgreSQL journal's URL.
    pub journal: String,
    /// Threads per worker.
    pub threads: usize,
    /// The file whose existence tells workers to end once nothing is left.
    pub done: PathBuf,
    /// The marker file of `--kill-commit`.
    pub marker: PathBuf,
    /// Workers started so far.
    pub spawned: usize,
    /// How workers are isolated from each other.
    pub isolation: Isolation,
    /// Each worker's owner file (`--owner-file`), by slot.
    pub owners: Vec<PathBuf>,
}

impl Fleet {
    /// A fleet of `program` workers with `threads` threads each, on the
    /// platform at `url` and the journal at `journal`, keeping its files
    /// in `dir`, isolated as this machine allows ([`Isolation::probe`]).
    pub fn new(
        program: &'static str,
        url: String,
        journal: String,
        threads: usize,
        dir: &std::path::Path,
    ) -> Fleet {
        Fleet {
            program,
            url,
            journal,
            threads,
            done: dir.join("done"),
            marker: dir.join("commit-killed"),
            spawned: 0,
            isolation: Isolation::probe(),
            owners: Vec::new(),
        }
    }

    /// A worker for `slot`, in a process group of its own (signals reach
    /// `unshare` and the worker at once).
    pub fn spawn(&mut self, slot: usize, kill_commit: Option<u64>) -> Child {
        self.spawned += 1;
        let owner = self.done.with_file_name(format!("owner-w{}", self.spawned));
        if self.owners.len() <= slot {
            self.owners.resize(slot + 1, PathBuf::new());
        }
        self.owners[slot] = owner.clone();
        let mut c = self.isolation.command(self.program);
        c.process_group(0)
            .arg("--owner-file")
            .arg(&owner)
            .args(["--url", &self.url, "--journal", &self.journal])
            .args(["--threads", &self.threads.to_string()])
            .args(["--name", &format!("w{}", self.spawned)])
            .arg("--done")
            .arg(&self.done)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        if let Some(n) = kill_commit {
            c.args(["--kill-commit", &n.to_string()])
                .arg("--marker")
                .arg(&self.marker);
        }
        c.spawn().expect("the fleet worker starts")
    }
}

/// The running workers; any left are killed when the test ends (also by a
/// failed assertion).
pub struct Workers(pub Vec<Child>);

impl Drop for Workers {
    fn drop(&mut self) {
        for w in &mut self.0 {
            if w.try_wait().ok().flatten().is_none() {
                let _ = w.kill();
                let _ = w.wait();
            }
        }
    }
}

/// Sends `signal` to `child`'s process group (the worker and, when
/// isolated, its `unshare`).
pub fn signal_group(child: &Child, signal: libc::c_int) {
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: kill(2) on the process group of our own child, not reaped yet.
    let rc = unsafe { libc::kill(-pid, signal) };
    assert_eq!(rc, 0, "kill -{signal} -{pid}");
}

/// Kills `child`'s process group with SIGKILL and reaps it.
pub fn sigkill(child: &mut Child) {
    signal_group(child, libc::SIGKILL);
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGKILL));
}

/// The lease owner prefix a worker wrote to its owner file, if it has yet.
pub fn owner_of(path: &std::path::Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .filter(|o| o.ends_with('/'))
}

/// Records orders `from..to` through the outbox, each next to its `orders`
/// row, in one transaction. A batch whose COMMIT was lost is checked
/// before it is sent again.
pub fn record_batch(
    server: &PgServer,
    app: &mut Option<postgres::Client>,
    client: &payidem::Client,
    from: usize,
    to: usize,
) -> bool {
    let conn = match app {
        Some(c) if !c.is_closed() => c,
        _ => match std::panic::catch_unwind(|| server.connect("fleet")) {
            Ok(c) => app.insert(c),
            Err(_) => return false,
        },
    };
    let first = format!("fleet-{from:04}");
    if let Ok(Some(_)) = conn.query_opt("SELECT 1 FROM orders WHERE id = $1", &[&first]) {
        return true;
    }
    let run = |conn: &mut postgres::Client| -> Result<(), postgres::Error> {
        let mut tx = conn.transaction()?;
        for i in from..to {
            let order_id = format!("fleet-{i:04}");
            let amount = 1_000 + i as i64;
            let spec = OwnedSpec::payment(&order_id, amount as u64, true);
            let insert = client
                .outbox_insert(&spec.spec(), payidem::journal::ParamStyle::Dollar)
                .unwrap();
            tx.execute(
                "INSERT INTO orders (id, amount) VALUES ($1, $2)",
                &[&order_id, &amount],
            )?;
            tx.execute(&insert.sql, &insert.sql_params())?;
        }
        tx.commit()
    };
    run(conn).is_ok()
}
