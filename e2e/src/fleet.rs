//! A fleet of `payidem-fleet-worker` processes sharing one PostgreSQL
//! journal, for the fleet chaos test and the takeover benchmark: starting
//! them (isolated, see [`Isolation`]), signalling them, and recording
//! orders through the outbox.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::Duration;

use payidem::journal::{PostgresJournal, PostgresJournalOptions};
use payidem::ClientConfig;
use payidem_mock::{DEFAULT_KEY_ID, DEFAULT_SECRET};

use crate::pg::PgServer;
use crate::takeover::{Isolation, TakeoverBound};
use crate::worker::worker_config;
use crate::OwnedSpec;

/// The lease ttl of every fleet worker: short, so that a killed worker's
/// operations are taken over within seconds.
pub const WORKER_LEASE_TTL: Duration = Duration::from_secs(3);
/// The fleet workers' lease heartbeat, which is also the longest their
/// idle take-over loops sleep.
pub const WORKER_LEASE_HEARTBEAT: Duration = Duration::from_secs(1);

/// The client settings of a fleet worker on the platform at `url`: the
/// chaos worker's short timeouts and retries, with the leases above (the
/// worker sets its journal).
pub fn fleet_worker_config(url: &str) -> ClientConfig {
    let mut config = worker_config(url, std::path::Path::new("unused"));
    config.lease_ttl = Some(WORKER_LEASE_TTL);
    config.lease_heartbeat = Some(WORKER_LEASE_HEARTBEAT);
    config
}

/// What the fleet workers' settings promise about taking over a killed
/// worker's operations.
pub fn worker_takeover_bound() -> TakeoverBound {
    let config = fleet_worker_config("http://127.0.0.1:9");
    TakeoverBound {
        lease_ttl: WORKER_LEASE_TTL,
        request_timeout: config.request_timeout,
        heartbeat: WORKER_LEASE_HEARTBEAT,
        deadline: config.retry.deadline,
    }
}

/// Audit tables and triggers of a fleet's journal database (run once its
/// tables exist), and the application's `orders` table.
/// `fleet_stale_writes` gets every UPDATE of an operation that a lease
/// holder could not have made: a change of state or attempts while no
/// lease is held (a released or finished lease writing again), a change of
/// a settled operation, an epoch going back. `fleet_early_takeovers` gets
/// every lease taken from another holder before it lapsed (by the
/// server's clock, as the journal's claim compares it), with the old
/// holder: allowed only from a holder whose process this machine sees is
/// gone.
pub const AUDIT_SQL: &str = "
    CREATE TABLE fleet_stale_writes (order_id text, old_state text, new_state text,
        old_owner text, new_owner text, at timestamptz DEFAULT now());
    CREATE TABLE fleet_early_takeovers (order_id text, old_owner text, new_owner text,
        early_by interval);
    CREATE FUNCTION fleet_audit() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF (OLD.lease_owner IS NULL AND NEW.lease_owner IS NULL
                AND (NEW.state <> OLD.state OR NEW.attempts <> OLD.attempts))
            OR (OLD.state IN ('succeeded', 'rejected', 'conflict') AND NEW.state <> OLD.state)
            OR NEW.lease_epoch < OLD.lease_epoch THEN
            INSERT INTO fleet_stale_writes (order_id, old_state, new_state, old_owner, new_owner)
                VALUES (OLD.order_id, OLD.state, NEW.state, OLD.lease_owner, NEW.lease_owner);
        END IF;
        IF OLD.lease_owner IS NOT NULL AND NEW.lease_owner IS NOT NULL
                AND NEW.lease_owner <> OLD.lease_owner AND OLD.lease_expires > now() THEN
            INSERT INTO fleet_early_takeovers (order_id, old_owner, new_owner, early_by)
                VALUES (OLD.order_id, OLD.lease_owner, NEW.lease_owner, OLD.lease_expires - now());
        END IF;
        RETURN NEW;
    END $$;
    CREATE TRIGGER fleet_audit BEFORE UPDATE ON payidem_operations
        FOR EACH ROW EXECUTE FUNCTION fleet_audit();
    CREATE TABLE orders (id text PRIMARY KEY, amount bigint NOT NULL);";

/// A fleet's shared journal: a throwaway PostgreSQL server with a database
/// `fleet` holding the journal's tables, the audit of [`AUDIT_SQL`] and
/// the application's `orders`.
pub struct FleetJournal {
    /// The server (stopped when dropped).
    pub server: PgServer,
    /// The journal's URL.
    pub url: String,
    /// A journal handle for reading every operation at the end.
    pub admin: PostgresJournal,
}

impl FleetJournal {
    /// Starts the server and creates the tables, then the audit on them.
    pub fn start() -> FleetJournal {
        let server = PgServer::start();
        server.create_db("fleet");
        let url = server.url_for("fleet");
        let admin = PostgresJournal::connect(&url, PostgresJournalOptions::default()).unwrap();
        server.connect("fleet").batch_execute(AUDIT_SQL).unwrap();
        FleetJournal { server, url, admin }
    }

    /// The application's own client for the platform at `mock_url`: it
    /// only builds outbox statements for this journal (their MACs are
    /// bound to it).
    pub fn app_client(&self, mock_url: &str) -> payidem::Client {
        let mut config = ClientConfig::new(mock_url, DEFAULT_KEY_ID);
        config.journal = payidem::JournalChoice::Postgres(self.url.clone());
        payidem::Client::new(config, DEFAULT_SECRET.as_bytes()).unwrap()
    }
}

/// What the audit tables of [`AUDIT_SQL`] hold at the end of a run.
#[derive(Clone, Debug, Default)]
pub struct Audit {
    /// Writes no lease holder could have made.
    pub stale_writes: i64,
    /// The old holders of leases taken before they lapsed.
    pub early_takeovers: Vec<String>,
}

impl Audit {
    /// Reads the audit tables.
    pub fn read(db: &mut postgres::Client) -> Audit {
        let stale_writes = db
            .query_one("SELECT count(*) FROM fleet_stale_writes", &[])
            .unwrap()
            .get(0);
        let early_takeovers = db
            .query("SELECT old_owner FROM fleet_early_takeovers", &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        Audit {
            stale_writes,
            early_takeovers,
        }
    }

    /// The early takeovers whose old holder was not `gone` (owner id
    /// prefixes of killed workers this machine can see are dead): each one
    /// a lease taken from a holder that may have been alive.
    pub fn early_from_live(&self, gone: &[String]) -> Vec<&String> {
        self.early_takeovers
            .iter()
            .filter(|owner| !gone.iter().any(|g| owner.starts_with(g.as_str())))
            .collect()
    }
}

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
