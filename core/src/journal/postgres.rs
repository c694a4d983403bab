//! A journal in PostgreSQL, shared by every instance of a fleet.
//!
//! Every trait call's write runs in a short transaction on a pooled
//! connection; no transaction and no row lock is held while an attempt
//! travels. The write that must be durable before anything is sent (the
//! first attempt of each lease) commits with `SET LOCAL
//! synchronous_commit = on`, and concurrent callers of one handle share
//! those transactions (group commit, see [`group`]): one COMMIT and one
//! WAL flush answer them all; a group of new operations only is one
//! INSERT, its own transaction, that sets `synchronous_commit` on for
//! itself. Every other write runs alone with the
//! session's `synchronous_commit` off, never waiting for a flush; a
//! holder's guarded update (`Tx::update_if`) is then one statement, its
//! own transaction. Each statement is prepared once per connection. Leases are columns with an epoch: taking a
//! lease increments `lease_epoch`, and every later write of the lease
//! holder is `UPDATE … WHERE order_id = $1 AND lease_owner = $2 AND
//! lease_epoch = $3`, so a stale owner changes nothing. Times come from the
//! database clock. TLS is asked for with libpq's `sslmode` and
//! `sslrootcert` URL parameters, and always verifies the server (see
//! [`tls`]). See docs/postgres-journal.md.

mod group;
mod outbox;
mod pool;
mod rows;
mod schema;
mod tls;
mod tx;

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use postgres::Config;

pub use outbox::{OutboxInsert, OutboxValue, ParamStyle};
use pool::Fail;
use rows::{read_row, COLUMNS, RECONCILIATIONS, UNSETTLED};
use tx::{see, Seen};

pub use schema::POSTGRES_SCHEMA_VERSION;

use super::engine::{Guard, Inspection, Intent, Read, Row as Stored, Storage, Unreadable, Work};
use super::{JournalKey, JournalScope, Reconciliation, RowAuth, StoredClockOffset};
use crate::error::{Error, ErrorCode, Result};
use crate::operation::OperationState;

/// How a [`PostgresJournal`] connects and waits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostgresJournalOptions {
    /// Longest wait for a new connection (TCP or unix socket, and the
    /// start-up exchange). Default 5 seconds.
    pub connect_timeout: Duration,
    /// `statement_timeout` of every connection: a statement (a row lock
    /// held by another session, a slow disk) running longer fails with
    /// `journal_error`. Default 10 seconds.
    pub statement_timeout: Duration,
    /// Idle connections kept for reuse. Concurrent calls beyond it open
    /// connections of their own, closed after use. Default 16.
    pub max_idle: usize,
    /// The key of the rows' integrity MACs: every row written carries its
    /// MAC, and every read that can lead to a send or a settled answer
    /// (open, claim, claim_next, get, list, reconcile) refuses a row whose
    /// MAC is wrong, or missing once the journal is sealed
    /// (by the first handle with a key), with `journal_error` naming its order
    /// id. Without it (the default) rows are not verified. A
    /// [`Client`](crate::Client) always connects with a key and seals the
    /// journal; see docs/journal-integrity.md.
    pub journal_key: Option<JournalKey>,
    /// Create the journal's tables in a database that has none (the
    /// default). With `false`, such a database is refused with
    /// `journal_error` and left untouched: what a tool that only reads or
    /// repairs an existing journal (the `payidem` command) wants.
    pub create: bool,
    /// The platform and key id of the operations this handle creates; an
    /// order id journaled for another scope is refused, and listings and
    /// take-overs see only this scope's operations. `None` (the default):
    /// every scope.
    pub scope: Option<JournalScope>,
}

impl Default for PostgresJournalOptions {
    fn default() -> PostgresJournalOptions {
        PostgresJournalOptions {
            connect_timeout: Duration::from_secs(5),
            statement_timeout: Duration::from_secs(10),
            max_idle: 16,
            journal_key: None,
            create: true,
            scope: None,
        }
    }
}

/// What [`PostgresJournal::commit_stats`] counts since the journal was
/// opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PostgresCommitStats {
    /// Transactions committed (every kind).
    pub commits: u64,
    /// Of those, committed with `synchronous_commit = on` (the server
    /// flushed the WAL before answering).
    pub durable_commits: u64,
    /// Connections lost during a COMMIT: the outcome was read back on a
    /// new connection before anything was decided.
    pub unknown_commits: u64,
    /// Writes refused because the caller's lease was lost (a stale owner
    /// or epoch).
    pub fenced: u64,
}

/// **Test only**: the points of a write where [`PostgresJournal::with_hook`]'s
/// hook is called. Not part of the stable API.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PgPoint {
    /// About to send COMMIT on the connection of server process
    /// `backend_pid`; `durable` when it commits with
    /// `synchronous_commit = on`.
    BeforeCommit {
        /// Whether the transaction commits synchronously.
        durable: bool,
        /// `pg_backend_pid()` of the connection.
        backend_pid: i32,
    },
}

/// **Test only**: a hook called at every [`PgPoint`].
#[doc(hidden)]
pub type PgHook = Arc<dyn Fn(PgPoint) + Send + Sync>;

/// A [`Journal`](crate::journal::Journal) in a PostgreSQL database, for fleets of client instances
/// without local state.
///
/// Any number of `PostgresJournal`s, in any number of processes and hosts,
/// may share one database; every change is one transaction, and row locks
/// decide which call wins each lease.
///
/// Durability: [`Journal::record_attempt`](crate::journal::Journal::record_attempt) commits with
/// `synchronous_commit = on` (forced for that transaction, whatever the
/// server, database or role default is) the first time it is called under
/// each lease, which covers an operation's first attempt and the first
/// attempt of a call resuming one; it returns only after the server
/// answered the COMMIT. Every other write commits with `off`: losing it in
/// a server crash is safe (module [`journal`](super)).
///
/// Clock: lease expiries, `created_at`, `updated_at` and reconciliation
/// times come from the database's `now()`, never from the instance. The
/// `now` argument of the trait's methods is not compared with anything:
/// a lease's length is taken as `lease.expires_at - now` (both the
/// caller's, so the caller's clock error cancels out) and starts at the
/// database's `now()`; an `expires_at` of `i64::MAX` or more (or
/// more than 100 years away) never expires.
///
/// Fencing: taking a lease (open, claim, claim_next) increments the row's
/// `lease_epoch`; this handle remembers the epoch it took for each order id
/// and owner, and `record_attempt`, `finish` and `release` change the row
/// only where owner and epoch still match. A handle that did not take the
/// lease itself matches on the owner alone.
///
/// A connection lost during COMMIT is an unknown outcome: the journal
/// reconnects and reads the row back before deciding (and before any
/// attempt can be sent); a write found not committed is run once more.
///
/// The `postgres` crate runs a tokio runtime inside each connection:
/// calling this journal (or a [`Client`](crate::Client) using it) from a
/// thread that runs a tokio runtime panics; callers in async code use
/// `tokio::task::spawn_blocking`.
///
/// [`Journal::release`](crate::journal::Journal::release) by a call that does not hold the lease is a no-op.
pub struct PostgresJournal {
    config: Config,
    /// The TLS connector, when the URL asked for TLS.
    tls: Option<tls::MakeRustls>,
    target: String,
    options: PostgresJournalOptions,
    pool: Mutex<Vec<Conn>>,
    /// (order id, owner) → the lease this handle took.
    leases: Mutex<HashMap<(String, String), Taken>>,
    stats: Counters,
    hook: Option<PgHook>,
    /// Set once the schema is prepared and the rows' authentication
    /// decided (at connect, or at the first call of a handle made by
    /// [`PostgresJournal::connect_lazily`]): the version it migrated from.
    prepared: OnceLock<Option<u32>>,
    /// Held while the schema is being prepared by a call.
    preparing: Mutex<()>,
    /// How rows are authenticated and scoped.
    guard: Guard,
    /// Writes waiting for the next shared transaction.
    groups: group::Groups,
    /// Writes that need no flush, running alone now.
    alone: group::AloneSlots,
}

impl fmt::Debug for PostgresJournal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresJournal")
            .field("target", &self.target)
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Counters {
    commits: AtomicU64,
    durable_commits: AtomicU64,
    unknown_commits: AtomicU64,
    fenced: AtomicU64,
}

/// A lease this handle took: its epoch, and whether a durable commit was
/// made under it.
#[derive(Clone, Copy, Debug)]
struct Taken {
    epoch: i64,
    durable: bool,
}

/// A pooled connection, its server process id, and the statements the
/// journal prepared on it (by their text): a statement is parsed and
/// planned once per connection, and each later run is one round trip.
struct Conn {
    client: postgres::Client,
    pid: i32,
    statements: HashMap<String, postgres::Statement>,
    /// Where the write running on it stands.
    tx: TxMode,
    /// Whether its session's `synchronous_commit` is off (set once, for
    /// writes that run alone).
    asynchronous: bool,
    /// The rows a durable group inserted together, by order id: whether
    /// each was inserted, for its body's own insert (taken once).
    inserted: HashMap<String, (bool, tx::Inserted)>,
}

/// Where the write running on a connection stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TxMode {
    /// No write: every statement runs alone (reads, read-backs).
    Idle,
    /// A transaction is open (BEGIN sent): every statement runs in it.
    Open,
    /// A write that may run alone: a guarded update as its first
    /// statement runs alone (its own transaction, committed as it
    /// returns); any other statement opens a transaction first.
    Lazy,
    /// A guarded update running alone was sent: if the connection is lost
    /// now, whether it committed is unknown.
    AloneSent,
    /// The guarded update ran alone and was committed.
    AloneCommitted,
    /// A durable group's new rows were inserted, and committed, by one
    /// statement: a body may only take its insert's answer; any other
    /// statement is refused (it would run outside a transaction).
    Inserted,
}

/// What a connection URL names, without its password.
fn describe(config: &Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            postgres::config::Host::Tcp(name) => name.clone(),
            #[cfg(unix)]
            postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    let port = config
        .get_ports()
        .first()
        .map_or(String::new(), |p| format!(":{p}"));
    format!(
        "postgres {}@{}{port}/{}",
        config.get_user().unwrap_or("?"),
        if hosts.is_empty() {
            "localhost".to_owned()
        } else {
            hosts.join(",")
        },
        config.get_dbname().or(config.get_user()).unwrap_or("?")
    )
}

impl PostgresJournal {
    /// Connects to the database at `url` (`postgres://…` or
    /// `postgresql://…`, or libpq's `key=value` form), creating or migrating
    /// the journal's tables (see [`POSTGRES_SCHEMA_VERSION`]).
    ///
    /// `journal_error` when the URL cannot be parsed, the server cannot be
    /// reached or refuses the login, the tables come from a newer schema
    /// (left untouched), or a table of the journal's names exists without
    /// its schema version. Messages name the user, host and database,
    /// never the password.
    pub fn connect(url: &str, options: PostgresJournalOptions) -> Result<PostgresJournal> {
        PostgresJournal::open(url, options, false)
    }

    /// [`PostgresJournal::connect`], except that a server that cannot be
    /// reached (no connection: down, restarting, a network cut; not a
    /// refused login, a newer schema or a wrong key) is no error: the
    /// journal is returned unconnected, and every call answers
    /// `journal_error` (nothing is written, so a client sends nothing)
    /// until a call finds the server again, prepares the schema and
    /// decides the rows' authentication exactly as `connect` would have.
    /// What a [`Client`](crate::Client) uses, so that a worker can start
    /// while its journal is down.
    pub fn connect_lazily(url: &str, options: PostgresJournalOptions) -> Result<PostgresJournal> {
        PostgresJournal::open(url, options, true)
    }

    fn open(url: &str, options: PostgresJournalOptions, lazily: bool) -> Result<PostgresJournal> {
        let invalid = |why: &dyn fmt::Display| {
            Error::new(
                ErrorCode::Journal,
                format!("journal: invalid PostgreSQL connection URL: {why}"),
            )
        };
        let (url, tls) = tls::split_url(url).map_err(|why| invalid(&why))?;
        // The parser's message names the bad parameter, never its value.
        let mut config: Config = url.parse().map_err(|e: postgres::Error| invalid(&e))?;
        let tls = tls::connector(&tls.with_driver_mode(&config)).map_err(|why| {
            Error::new(
                ErrorCode::Journal,
                format!("journal {}: TLS: {why}", describe(&config)),
            )
        })?;
        if config.get_user().is_none() {
            let user = std::env::var("USER").unwrap_or_else(|_| "postgres".to_owned());
            config.user(&user);
        }
        if config.get_application_name().is_none() {
            config.application_name("payidem");
        }
        config.connect_timeout(options.connect_timeout);
        let mut journal = PostgresJournal {
            target: describe(&config),
            config,
            tls,
            options,
            pool: Mutex::new(Vec::new()),
            leases: Mutex::new(HashMap::new()),
            stats: Counters::default(),
            hook: None,
            prepared: OnceLock::new(),
            preparing: Mutex::new(()),
            guard: Guard::new(RowAuth::Keyless { sealed: false }, None, String::new()),
            groups: group::Groups::default(),
            alone: group::AloneSlots::default(),
        };
        let scope = journal.options.scope.clone();
        journal.guard = Guard::new(
            RowAuth::Keyless { sealed: false },
            scope,
            journal.target.clone(),
        );
        match journal.prepare("connect") {
            Err(Unprepared::Unreachable(e)) if lazily => {
                drop(e);
                Ok(journal)
            }
            Err(Unprepared::Unreachable(e) | Unprepared::Refused(e)) => Err(e),
            Ok(()) => Ok(journal),
        }
    }

    /// Prepares the schema and decides how rows are authenticated, once.
    fn prepare(&self, action: &str) -> std::result::Result<(), Unprepared> {
        if self.prepared.get().is_some() {
            return Ok(());
        }
        let _preparing = self
            .preparing
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if self.prepared.get().is_some() {
            return Ok(());
        }
        let mut conn = match self.new_conn() {
            Ok(conn) => conn,
            Err(e) if e.as_db_error().is_none() => {
                return Err(Unprepared::Unreachable(self.no_conn(action, &e)))
            }
            Err(e) => return Err(Unprepared::Refused(self.no_conn(action, &e))),
        };
        let (migrated_from, auth) =
            schema::prepare(&mut conn.client, self).map_err(Unprepared::Refused)?;
        *self
            .guard
            .auth
            .write()
            .unwrap_or_else(PoisonError::into_inner) = auth;
        let _ = self.prepared.set(migrated_from);
        self.put_back(conn);
        Ok(())
    }

    /// `journal_error` until the schema is prepared (a handle of
    /// [`PostgresJournal::connect_lazily`] whose server was unreachable).
    fn ready(&self, action: &str) -> Result<()> {
        self.prepare(action).map_err(|e| match e {
            Unprepared::Unreachable(e) | Unprepared::Refused(e) => e,
        })
    }

    /// **Test only**: the journal with `hook` called at every [`PgPoint`].
    /// Not part of the stable API.
    #[doc(hidden)]
    pub fn with_hook(mut self, hook: PgHook) -> PostgresJournal {
        self.hook = Some(hook);
        self
    }

    /// Whether the journal has reached its server once (always after
    /// [`PostgresJournal::connect`]; after
    /// [`PostgresJournal::connect_lazily`], once a call found the server):
    /// its schema is prepared and its rows' authentication decided.
    pub fn is_connected(&self) -> bool {
        self.prepared.get().is_some()
    }

    /// The user, host and database this journal uses (no password).
    pub fn target(&self) -> &str {
        &self.target
    }

    /// Commits made by this handle since it was opened.
    pub fn commit_stats(&self) -> PostgresCommitStats {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        PostgresCommitStats {
            commits: load(&self.stats.commits),
            durable_commits: load(&self.stats.durable_commits),
            unknown_commits: load(&self.stats.unknown_commits),
            fenced: load(&self.stats.fenced),
        }
    }

    fn taken(&self) -> MutexGuard<'_, HashMap<(String, String), Taken>> {
        // Plain inserts and removals: consistent even after a panic.
        self.leases.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn recall(&self, order_id: &str, owner: &str) -> Option<Taken> {
        self.taken()
            .get(&(order_id.to_owned(), owner.to_owned()))
            .copied()
    }

    fn forget(&self, order_id: &str, owner: &str) {
        self.taken()
            .remove(&(order_id.to_owned(), owner.to_owned()));
    }
}

/// Why the schema could not be prepared.
enum Unprepared {
    /// No connection to the server.
    Unreachable(Error),
    /// The server answered and refused (login, schema, key, seal).
    Refused(Error),
}

impl Storage for PostgresJournal {
    const LATEST: u64 = 253_402_300_799;
    const CLAIMS_NEXT: bool = true;

    /// One transaction, committed with `synchronous_commit = on` for the
    /// first attempt of each lease (`open_to_send`, the first
    /// `record_attempt` under a lease: the operation was pending, or its
    /// previous driver may have died before its record was committed
    /// durably) and a reconciliation, `off` otherwise.
    fn transact<T: Send + 'static>(
        &self,
        intent: Intent<'_>,
        action: &str,
        Work {
            mut body,
            mut read_back,
            first_insert,
        }: Work<T>,
    ) -> Result<T> {
        self.ready(action)?;
        // The engine checked writability before the schema was prepared
        // if this call prepared it: again, with the rows' real
        // authentication.
        if !matches!(
            intent,
            Intent::Claim { .. } | Intent::ClaimNext { .. } | Intent::Release { .. }
        ) {
            self.guard
                .auth()
                .check_writable()
                .map_err(|why| self.refused(why))?;
        }
        let durable = match intent {
            Intent::Open { first_attempt, .. } => first_attempt,
            Intent::RecordAttempt { order_id, lease } => !self
                .recall(order_id, &lease.owner)
                .is_some_and(|t| t.durable),
            Intent::Reconcile { .. } => true,
            _ => false,
        };
        let seen = Arc::new(Mutex::new(Seen::default()));
        let (ran, read) = (Arc::clone(&seen), Arc::clone(&seen));
        let (doing, checking) = (action.to_owned(), action.to_owned());
        let run: group::Run = Box::new(move |j, conn| {
            *see(&ran) = Seen::default();
            j.in_tx(conn, &doing, &ran, &mut |tx| body(&j.guard, tx))
                .map(|value| Box::new(value) as group::Value)
        });
        let verify: group::Verify = Box::new(move |j, conn| {
            j.in_tx(conn, &checking, &read, &mut |tx| read_back(&j.guard, tx))
                .map(|found| found.map(|value| Box::new(value) as group::Value))
        });
        // A durable group inserts its new rows in one statement.
        let insert = first_insert
            .filter(|_| durable)
            .and_then(|make| make(&self.guard).ok());
        let job = group::Job::new(action, durable, insert, run, verify);
        // A write that need not be durable shares no flush: it runs alone
        // on its own connection, one statement when it is a guarded
        // update (see `TxMode::Lazy`).
        let written = if durable {
            self.groups.submit(&job, &|jobs| self.run_group(jobs))
        } else {
            self.run_alone(&job)
        };
        let written = written.and_then(|value| {
            value
                .downcast::<T>()
                .map(|value| *value)
                .map_err(|_| self.refused(format!("cannot {action}: a mismatched result")))
        });
        let seen = std::mem::take(&mut *see(&seen));
        match intent {
            Intent::Open { lease, .. }
            | Intent::Claim { lease, .. }
            | Intent::ClaimNext { lease } => {
                if let (Ok(_), Some((order_id, epoch))) = (&written, seen.took) {
                    let durable = durable && seen.inserted;
                    let taken = Taken { epoch, durable };
                    self.taken().insert((order_id, lease.owner.clone()), taken);
                }
            }
            Intent::RecordAttempt { order_id, lease } if written.is_ok() => {
                let epoch = seen.read_epoch.unwrap_or_default();
                let taken = Taken {
                    epoch,
                    durable: true,
                };
                self.taken()
                    .insert((order_id.to_owned(), lease.owner.clone()), taken);
            }
            Intent::Finish { order_id, lease } if written.is_ok() => {
                self.forget(order_id, &lease.owner)
            }
            Intent::Release { order_id, lease } => self.forget(order_id, &lease.owner),
            _ => {}
        }
        written
    }

    fn guard(&self) -> &Guard {
        &self.guard
    }

    fn ready(&self, action: &str) -> Result<()> {
        PostgresJournal::ready(self, action)
    }

    fn row(&self, order_id: &str) -> Result<Option<Stored>> {
        let action = format!("read order id {order_id:?}");
        self.ready(&action)?;
        let sql = format!("SELECT {COLUMNS} FROM payidem_operations WHERE order_id = $1");
        self.read(&action, |client| {
            match client.query_opt(&sql, &[&order_id])? {
                Some(row) => Ok(Some(read_row(&self.target, &row, true)?)),
                None => Ok(None),
            }
        })
    }

    fn rows(&self, states: Option<&[OperationState]>) -> Result<Vec<Read>> {
        self.ready("list operations")?;
        let all: Vec<&str> = OperationState::ALL.iter().map(|s| s.as_str()).collect();
        let names: Vec<&str> = states.map_or(all, |s| s.iter().map(|s| s.as_str()).collect());
        let sql = format!(
            "SELECT {COLUMNS} FROM payidem_operations WHERE state = ANY($1) \
             ORDER BY created_at, seq"
        );
        self.read("list operations", |client| {
            Ok(client
                .query(&sql, &[&names])?
                .iter()
                .map(|row| {
                    read_row(&self.target, row, true).map_err(|error| Unreadable {
                        order_id: row.get(0),
                        error,
                    })
                })
                .collect())
        })
    }

    fn purge(&self, before: u64, horizon: Option<&(u64, String)>) -> Result<usize> {
        self.ready("purge settled operations")?;
        // A horizon the engine could not make before this call prepared
        // the schema (and learnt the key's seal) is made here.
        let own;
        let horizon = match horizon {
            Some(horizon) => Some(horizon),
            None => {
                own = self.guard.auth().purge_horizon(before.min(Self::LATEST));
                own.as_ref()
            }
        };
        // Past year 9999 every row is older.
        let bound = i64::try_from(before.min(Self::LATEST)).unwrap_or(i64::MAX) as f64;
        let sql = format!(
            "DELETE FROM payidem_operations WHERE state NOT IN {UNSETTLED} \
             AND updated_at < to_timestamp($1)"
        );
        let n = self.write(
            "purge settled operations",
            false,
            &mut |client| {
                if let Some((horizon, mac)) = horizon {
                    client.execute(
                        "UPDATE payidem_seal SET purged_before = $1, purge_mac = $2 WHERE id = 1",
                        &[&i64::try_from(*horizon).unwrap_or(i64::MAX), mac],
                    )?;
                }
                Ok(client.execute(&sql, &[&bound])?)
            },
            &mut |_| Ok(None),
        )?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    fn reconciliations(&self, order_id: Option<&str>) -> Result<Vec<Reconciliation>> {
        self.ready("read reconciliations")?;
        self.read("read reconciliations", |client| {
            let sql =
                format!("{RECONCILIATIONS} WHERE $1::text IS NULL OR order_id = $1 ORDER BY id");
            client
                .query(&sql, &[&order_id])?
                .iter()
                .map(|row| self.reconciliation(row).map_err(Fail::from))
                .collect()
        })
    }

    fn inspect(&self) -> Result<Inspection> {
        self.ready("check the journal")?;
        let rows = self.rows(None)?;
        self.read("check the journal", |client| {
            let schema_version = schema::version(client)?;
            let sealed = schema::seal_record(client)?.is_some();
            let recs = client.query(&format!("{RECONCILIATIONS} ORDER BY id"), &[])?;
            Ok(Inspection {
                backend: "postgres",
                schema_version: Some(schema_version),
                library_schema_version: Some(POSTGRES_SCHEMA_VERSION),
                migrated_from: self.prepared.get().copied().flatten(),
                sealed: Some(sealed),
                rows: Vec::new(),
                reconciliations: recs.iter().map(|r| self.reconciliation(r)).collect(),
                ..Inspection::default()
            })
        })
        .map(|found| Inspection { rows, ..found })
    }

    fn save_clock_offset(&self, offset: &StoredClockOffset) -> Result<()> {
        self.ready("store the clock offset")?;
        let measured_at = i64::try_from(offset.measured_at).unwrap_or(i64::MAX);
        self.write(
            "store the clock offset",
            false,
            &mut |client| {
                client.execute(
                    "INSERT INTO payidem_clock_offsets (platform, offset_secs, measured_at) \
                     VALUES ($1, $2, $3) ON CONFLICT (platform) DO UPDATE \
                     SET offset_secs = excluded.offset_secs, measured_at = excluded.measured_at",
                    &[&offset.platform, &offset.offset_secs, &measured_at],
                )?;
                Ok(())
            },
            // Storing it again is harmless.
            &mut |_| Ok(None),
        )
    }

    fn clock_offsets(&self, platform: Option<&str>) -> Result<Vec<StoredClockOffset>> {
        self.ready("read the clock offsets")?;
        self.read("read the clock offsets", |client| {
            Ok(client
                .query(
                    "SELECT platform, offset_secs, measured_at FROM payidem_clock_offsets \
                     WHERE $1::text IS NULL OR platform = $1 ORDER BY platform",
                    &[&platform],
                )?
                .iter()
                .map(|row| StoredClockOffset {
                    platform: row.get(0),
                    offset_secs: row.get(1),
                    measured_at: u64::try_from(row.get::<_, i64>(2)).unwrap_or(0),
                })
                .collect())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::outbox::quote_literal;
    use super::rows::lease_seconds;
    use super::*;
    use crate::journal::{rules, Lease};
    use crate::operation::FrozenOperation;

    #[test]
    fn lease_lengths_follow_the_callers_difference() {
        let l = |expires_at| Lease {
            owner: "o".into(),
            expires_at,
        };
        assert_eq!(lease_seconds(&l(130), 100), Some(30.0));
        assert_eq!(lease_seconds(&l(90), 100), Some(0.0));
        assert_eq!(lease_seconds(&l(u64::MAX), 100), None);
        assert_eq!(lease_seconds(&l(rules::MAX_TIME), 100), None);
        assert_eq!(lease_seconds(&l(100 + 200 * 366 * 24 * 3600), 100), None);
    }

    #[test]
    fn the_description_never_holds_the_password() {
        let config: Config = "postgresql://alice:s3cret-pw@db.example:6543/shop"
            .parse()
            .unwrap();
        let d = describe(&config);
        assert_eq!(d, "postgres alice@db.example:6543/shop");
        assert!(!d.contains("s3cret"));
    }

    #[test]
    fn an_outbox_insert_carries_the_frozen_operation() {
        let op = FrozenOperation {
            order_id: "o-1".into(),
            idempotency_key: "create-o-1".into(),
            method: "POST".into(),
            path: "/v1/payments".into(),
            body: b"{}".to_vec(),
            body_sha256: crate::protocol::body_sha256_hex(b"{}"),
            status_path: None,
        };
        let dollar = PostgresJournal::outbox_insert(&op);
        assert!(dollar
            .sql
            .ends_with("VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending')"));
        assert_eq!(dollar.params.len(), 7);
        assert_eq!(dollar.params[4], OutboxValue::Bytes(b"{}".to_vec()));
        assert_eq!(dollar.params[6], OutboxValue::Null);
        let format = PostgresJournal::outbox_insert_with(&op, ParamStyle::Format);
        assert!(format
            .sql
            .ends_with("VALUES (%s, %s, %s, %s, %s, %s, %s, 'pending')"));
        assert_eq!(format.params, dollar.params);
        // A keyed insert (tested against a server in the journal tests)
        // carries its MACs as literals.
        assert_eq!(quote_literal("it's"), "'it''s'");
    }
}
