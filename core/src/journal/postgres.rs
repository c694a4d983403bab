//! A journal in PostgreSQL, shared by every instance of a fleet.
//!
//! Every trait call is one short transaction on a pooled connection; no
//! transaction and no row lock is held while an attempt travels. The write
//! that must be durable before anything is sent (the first
//! `record_attempt` of each lease) commits with `SET LOCAL
//! synchronous_commit = on`; every other write with `off` (the server
//! makes concurrent synchronous commits share WAL flushes, so there is no
//! group commit of our own). Leases are columns with an epoch: taking a
//! lease increments `lease_epoch`, and every later write of the lease
//! holder is `UPDATE … WHERE order_id = $1 AND lease_owner = $2 AND
//! lease_epoch = $3`, so a stale owner changes nothing. Times come from the
//! database clock. TLS is asked for with libpq's `sslmode` and
//! `sslrootcert` URL parameters, and always verifies the server (see
//! [`tls`]). See docs/postgres-journal.md.

mod schema;
mod tls;

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard};
use std::time::Duration;

use postgres::error::SqlState;
use postgres::types::{IsNull, ToSql, Type};
use postgres::{Config, NoTls, Row};

pub use schema::POSTGRES_SCHEMA_VERSION;

use super::rules;
use super::{
    Journal, JournalCheck, JournalKey, JournalScope, Lease, Opened, OperationRecord,
    Reconciliation, RowAuth, RowState, StoredClockOffset, StoredMacs,
};
use crate::error::{Error, ErrorCode, Result};
use crate::operation::{FrozenOperation, OperationState, Response};

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
    /// ([`PostgresJournal::seal`]), with `journal_error` naming its order
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

/// The SQL placeholder style of [`OutboxInsert::sql`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamStyle {
    /// `$1, $2, …`: the server's own style (Rust `postgres`/`sqlx`, Go
    /// `pgx`/`lib/pq`, libpq's `PQexecParams`, Python `asyncpg`).
    Dollar,
    /// `%s`: Python DB-API drivers (`psycopg`, `psycopg2`).
    Format,
}

/// One value of an [`OutboxInsert`].
#[derive(Clone, PartialEq, Eq)]
pub enum OutboxValue {
    /// A `text` value.
    Text(String),
    /// A `bytea` value (the body).
    Bytes(Vec<u8>),
    /// SQL NULL (a missing status path).
    Null,
}

impl fmt::Debug for OutboxValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutboxValue::Text(s) => f.debug_tuple("Text").field(s).finish(),
            OutboxValue::Bytes(b) => write!(f, "Bytes({} bytes)", b.len()),
            OutboxValue::Null => f.write_str("Null"),
        }
    }
}

impl ToSql for OutboxValue {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut postgres::types::private::BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            OutboxValue::Text(s) => s.to_sql(ty, out),
            OutboxValue::Bytes(b) => b.to_sql(ty, out),
            OutboxValue::Null => Ok(IsNull::Yes),
        }
    }

    fn accepts(ty: &Type) -> bool {
        <String as ToSql>::accepts(ty) || <Vec<u8> as ToSql>::accepts(ty)
    }

    postgres::types::to_sql_checked!();
}

/// The statement that records an operation as pending, without a lease, in
/// the caller's own transaction (the outbox): see
/// [`PostgresJournal::outbox_insert`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutboxInsert {
    /// The `INSERT` statement, with placeholders in the requested style.
    pub sql: String,
    /// Its seven parameters, in order: order id, idempotency key, method,
    /// path, body (bytea), body SHA-256 (hex), status path (or NULL).
    pub params: Vec<OutboxValue>,
}

impl OutboxInsert {
    /// The parameters as the `postgres` crate takes them:
    /// `tx.execute(&insert.sql, &insert.sql_params())`.
    pub fn sql_params(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.params
            .iter()
            .map(|p| p as &(dyn ToSql + Sync))
            .collect()
    }
}

/// A [`Journal`] in a PostgreSQL database, for fleets of client instances
/// without local state.
///
/// Any number of `PostgresJournal`s, in any number of processes and hosts,
/// may share one database; every change is one transaction, and row locks
/// decide which call wins each lease.
///
/// Durability: [`Journal::record_attempt`] commits with
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
/// database's `now()`; an `expires_at` of [`rules::MAX_TIME`] or more (or
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
/// [`Journal::release`] by a call that does not hold the lease is a no-op.
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
    migrated_from: Option<u32>,
    /// How rows are authenticated (decided when the journal was opened).
    auth: RwLock<RowAuth>,
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

/// A pooled connection and its server process id.
struct Conn {
    client: postgres::Client,
    pid: i32,
}

/// Why a transaction body stopped.
enum Fail {
    /// A database error (maybe a lost connection).
    Pg(postgres::Error),
    /// A decision of the journal (busy, conflict, unknown order id…):
    /// rolled back and returned as it is.
    Journal(Error),
}

impl From<postgres::Error> for Fail {
    fn from(e: postgres::Error) -> Fail {
        Fail::Pg(e)
    }
}

impl From<Error> for Fail {
    fn from(e: Error) -> Fail {
        Fail::Journal(e)
    }
}

/// A row's lease owner, lease epoch, state and attempts.
type RowLease = (Option<String>, i64, String, i32);

type Body<'a, T> = &'a mut dyn FnMut(&mut postgres::Client) -> std::result::Result<T, Fail>;
type Verify<'a, T> = &'a dyn Fn(&mut postgres::Client) -> std::result::Result<Option<T>, Fail>;

/// `e` and its causes (`error performing TLS handshake: invalid peer
/// certificate: UnknownIssuer`); the driver's own text names none.
fn with_causes(e: &postgres::Error) -> String {
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// Whether `e` means the connection (or the server) is gone: the outcome
/// of a COMMIT it interrupted is unknown.
fn connection_lost(e: &postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    match e.code() {
        None => e.as_db_error().is_none(),
        Some(code) => {
            let c = code.code();
            c.starts_with("08") || c.starts_with("57P") || *code == SqlState::ADMIN_SHUTDOWN
        }
    }
}

/// Columns of a stored operation, in [`read_row`]'s order.
const COLUMNS: &str = "order_id, idempotency_key, method, path, body, body_sha256, status_path, \
     state, attempts, floor(extract(epoch FROM created_at))::bigint, \
     floor(extract(epoch FROM updated_at))::bigint, response_status, response_headers, \
     response_body, response_replayed, lease_owner, lease_epoch, \
     (lease_expires IS NOT NULL AND lease_expires <= now()), row_mac, platform, key_id, state_mac";

/// The columns of schema 2, in [`read_row`]'s order.
pub(super) const COLUMNS_V2: &str = "order_id, idempotency_key, method, path, body, body_sha256, \
     status_path, state, attempts, floor(extract(epoch FROM created_at))::bigint, \
     floor(extract(epoch FROM updated_at))::bigint, response_status, response_headers, \
     response_body, response_replayed, lease_owner, lease_epoch, \
     (lease_expires IS NOT NULL AND lease_expires <= now()), row_mac";

/// The unsettled states, as SQL.
const UNSETTLED: &str = "('pending', 'in_flight', 'unknown')";

/// A lease expiry from a length in seconds (`$n`, NULL for never).
fn expiry_sql(n: usize) -> String {
    format!(
        "CASE WHEN ${n}::float8 IS NULL THEN 'infinity'::timestamptz \
         ELSE now() + ${n}::float8 * interval '1 second' END"
    )
}

/// The lease's length as the caller meant it, in seconds; `None` for a
/// lease that never expires.
/// A Unix time as `to_timestamp`'s argument (past year 9999: that year).
fn pg_time(t: u64) -> f64 {
    t.min(253_402_300_799) as f64
}

fn lease_seconds(lease: &Lease, now: u64) -> Option<f64> {
    const HUNDRED_YEARS: u64 = 100 * 366 * 24 * 3600;
    let ttl = rules::stored_expiry(lease).saturating_sub(now);
    (lease.expires_at < rules::MAX_TIME && ttl <= HUNDRED_YEARS).then_some(ttl as f64)
}

/// A checked row: the record, its scope, its lease and its MACs.
pub(super) struct Stored {
    pub(super) record: OperationRecord,
    scope: Option<JournalScope>,
    lease_owner: Option<String>,
    lease_epoch: i64,
    lease_expired: bool,
    row_mac: Option<String>,
    state_mac: Option<String>,
}

impl Stored {
    fn macs(&self) -> StoredMacs<'_> {
        StoredMacs {
            row_mac: self.row_mac.as_deref(),
            state_mac: self.state_mac.as_deref(),
        }
    }
}

/// A row of [`COLUMNS`] (or of [`COLUMNS_V2`] when `!current`), checked to
/// read back valid.
pub(super) fn read_row(target: &str, row: &Row, current: bool) -> Result<Stored> {
    let order_id: String = row.get(0);
    let corrupt = |what: &str| {
        Error::new(
            ErrorCode::Journal,
            format!("journal {target}: corrupt row for order id {order_id:?}: {what}"),
        )
    };
    let state: String = row.get(7);
    let state = OperationState::from_name(&state).ok_or_else(|| corrupt("unknown state"))?;
    let attempts =
        u32::try_from(row.get::<_, i32>(8)).map_err(|_| corrupt("attempts out of range"))?;
    let created_at =
        u64::try_from(row.get::<_, i64>(9)).map_err(|_| corrupt("created_at before 1970"))?;
    let updated_at =
        u64::try_from(row.get::<_, i64>(10)).map_err(|_| corrupt("updated_at before 1970"))?;
    let response = match row.get::<_, Option<i32>>(11) {
        None => None,
        Some(status) => {
            let status =
                u16::try_from(status).map_err(|_| corrupt("response status out of range"))?;
            let headers = match row.get::<_, Option<String>>(12) {
                Some(json) => serde_json::from_str::<Vec<(String, String)>>(&json)
                    .map_err(|_| corrupt("response headers are not a JSON array of pairs"))?,
                None => Vec::new(),
            };
            Some(Response {
                status,
                headers,
                body: row.get::<_, Option<Vec<u8>>>(13).unwrap_or_default(),
                replayed: row.get::<_, Option<bool>>(14).unwrap_or(false),
            })
        }
    };
    Ok(Stored {
        record: OperationRecord {
            operation: FrozenOperation {
                idempotency_key: row.get(1),
                method: row.get(2),
                path: row.get(3),
                body: row.get(4),
                body_sha256: row.get(5),
                status_path: row.get(6),
                order_id: order_id.clone(),
            },
            state,
            attempts,
            created_at,
            updated_at,
            response,
        },
        scope: if current {
            JournalScope::of_columns(row.get(19), row.get(20))
        } else {
            None
        },
        lease_owner: row.get(15),
        lease_epoch: row.get(16),
        lease_expired: row.get(17),
        row_mac: row.get(18),
        state_mac: if current { row.get(21) } else { None },
    })
}

/// `text` as an SQL string literal (standard_conforming_strings: quotes
/// doubled; an `E` literal would treat backslashes otherwise).
fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// What a connection URL names, without its password.
fn describe(config: &Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            postgres::config::Host::Tcp(name) => name.clone(),
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
            migrated_from: None,
            auth: RwLock::new(RowAuth::Keyless { sealed: false }),
        };
        let mut conn = journal
            .new_conn()
            .map_err(|e| journal.no_conn("connect", &e))?;
        let (migrated_from, auth) = schema::prepare(&mut conn.client, &journal)?;
        journal.migrated_from = migrated_from;
        journal.auth = RwLock::new(auth);
        journal.put_back(conn);
        Ok(journal)
    }

    fn auth(&self) -> RwLockReadGuard<'_, RowAuth> {
        self.auth.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// `journal_error` unless this handle may write MAC-covered fields.
    fn check_writable(&self) -> Result<()> {
        self.auth()
            .check_writable()
            .map_err(|why| self.refused(why))
    }

    /// Stores `state` as the state of the verified, locked row `stored`
    /// (with its new state MAC); `lease_sql` (e.g. `lease_owner = NULL`)
    /// changes its lease in the same statement.
    fn write_state(
        &self,
        client: &mut postgres::Client,
        stored: &Stored,
        state: &RowState<'_>,
        lease_sql: &str,
        lease_seconds: Option<f64>,
    ) -> std::result::Result<(), Fail> {
        let state_mac = self.auth().state_mac(stored.row_mac.as_deref(), state)?;
        let headers = rules::encoded_headers(state.response)?;
        let response = state.response;
        let sql = format!(
            "UPDATE payidem_operations SET state = $2, attempts = $3, \
             updated_at = to_timestamp($4), response_status = $5, response_headers = $6, \
             response_body = $7, response_replayed = $8, state_mac = $9{lease_sql} \
             WHERE order_id = $1"
        );
        let attempts = i32::try_from(state.attempts).unwrap_or(i32::MAX);
        let status = response.map(|r| i32::from(r.status));
        let body = response.map(|r| r.body.as_slice());
        let replayed = response.map(|r| r.replayed);
        let at = pg_time(state.updated_at);
        let state_name = state.state.as_str();
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![
            &stored.record.operation.order_id,
            &state_name,
            &attempts,
            &at,
            &status,
            &headers,
            &body,
            &replayed,
            &state_mac,
        ];
        if lease_sql.contains("$10") {
            params.push(&lease_seconds);
        }
        client.execute(&sql, &params)?;
        Ok(())
    }

    /// The verified, locked row `order_id` if `lease` (at `epoch`, when
    /// known) still holds it; otherwise `invalid_argument` (unknown) or
    /// `operation_busy` (the lease is lost).
    fn held_row(
        &self,
        client: &mut postgres::Client,
        order_id: &str,
        lease: &Lease,
        epoch: Option<i64>,
    ) -> std::result::Result<Stored, Fail> {
        let stored = self
            .load(client, order_id, true)?
            .ok_or_else(|| rules::unknown_order(order_id))?;
        let held = stored.lease_owner.as_deref() == Some(lease.owner.as_str())
            && epoch.is_none_or(|e| e == stored.lease_epoch);
        if !held {
            return Err(
                rules::lease_lost(order_id, &stored.record.operation.idempotency_key).into(),
            );
        }
        Ok(stored)
    }

    /// **Test only**: the journal with `hook` called at every [`PgPoint`].
    /// Not part of the stable API.
    #[doc(hidden)]
    pub fn with_hook(mut self, hook: PgHook) -> PostgresJournal {
        self.hook = Some(hook);
        self
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

    /// The statement and parameters that record `operation` as pending,
    /// without a lease, in the caller's own transaction, together with the
    /// caller's business rows (the outbox pattern), with `$n` placeholders.
    /// Any instance's [`Journal::claim_next`] (e.g.
    /// [`Client::take_over`](crate::Client::take_over)) later takes and
    /// sends it, with its key and body unchanged.
    ///
    /// The journal's tables must exist (a [`PostgresJournal`] was opened on
    /// the database once). The insert fails with a unique violation when
    /// the order id or the key is already journaled; nothing else checks
    /// it. Build `operation` with [`Client::freeze`](crate::Client::freeze)
    /// so that the path carries the client's base-URL prefix.
    pub fn outbox_insert(operation: &FrozenOperation) -> OutboxInsert {
        PostgresJournal::outbox_insert_with(operation, ParamStyle::Dollar)
    }

    /// [`PostgresJournal::outbox_insert`] with placeholders in `style`.
    ///
    /// The row carries no integrity MAC: a journal with a key (every
    /// [`Client`](crate::Client)'s) refuses it once its rows are sealed.
    /// Use [`Client::outbox_insert`](crate::Client::outbox_insert) or
    /// [`PostgresJournal::outbox_insert_keyed`].
    pub fn outbox_insert_with(operation: &FrozenOperation, style: ParamStyle) -> OutboxInsert {
        PostgresJournal::outbox_row(operation, style, None)
    }

    /// [`PostgresJournal::outbox_insert_with`] whose row carries its
    /// integrity MACs for this journal (its id), under this handle's key and
    /// scope, created at `now` (literals in the statement, so the
    /// parameters stay the seven of [`OutboxInsert::params`]).
    /// `invalid_argument` (`journal_key`) for a handle without the key.
    pub fn outbox_insert_keyed(
        &self,
        operation: &FrozenOperation,
        style: ParamStyle,
        now: u64,
    ) -> Result<OutboxInsert> {
        rules::check_now(now)?;
        let record = OperationRecord {
            operation: operation.clone(),
            state: OperationState::Pending,
            attempts: 0,
            created_at: now,
            updated_at: now,
            response: None,
        };
        let scope = self.options.scope.as_ref();
        let (Some(row_mac), Some(state_mac)) = self.auth().macs(scope, &record)? else {
            return Err(Error::invalid(
                "journal_key",
                "an outbox row's MACs need the journal key",
            ));
        };
        let quote = |v: Option<&String>| v.map_or("NULL".to_owned(), |v| quote_literal(v));
        let extra = format!(
            ", platform, key_id, created_at, updated_at, row_mac, state_mac) VALUES ({{marks}}, \
             'pending', {}, {}, to_timestamp({now}), to_timestamp({now}), '{row_mac}', '{state_mac}')",
            quote(scope.map(|s| &s.platform)),
            quote(scope.map(|s| &s.key_id)),
        );
        Ok(PostgresJournal::outbox_row(operation, style, Some(&extra)))
    }

    /// The outbox statement; `extra` replaces the columns' end and the
    /// values (`{marks}` stands for the placeholders).
    fn outbox_row(
        operation: &FrozenOperation,
        style: ParamStyle,
        extra: Option<&str>,
    ) -> OutboxInsert {
        let marks: Vec<String> = (1..=7)
            .map(|n| match style {
                ParamStyle::Dollar => format!("${n}"),
                ParamStyle::Format => "%s".to_owned(),
            })
            .collect();
        let marks = marks.join(", ");
        let sql = format!(
            "INSERT INTO payidem_operations (order_id, idempotency_key, method, path, body, \
             body_sha256, status_path, state{}",
            match extra {
                Some(extra) => extra.replace("{marks}", &marks),
                None => format!(") VALUES ({marks}, 'pending')"),
            }
        );
        let op = operation;
        OutboxInsert {
            sql,
            params: vec![
                OutboxValue::Text(op.order_id.clone()),
                OutboxValue::Text(op.idempotency_key.clone()),
                OutboxValue::Text(op.method.clone()),
                OutboxValue::Text(op.path.clone()),
                OutboxValue::Bytes(op.body.clone()),
                OutboxValue::Text(op.body_sha256.clone()),
                op.status_path
                    .clone()
                    .map_or(OutboxValue::Null, OutboxValue::Text),
            ],
        }
    }

    /// `journal_error` for a failed database call while doing `action`.
    fn db(&self, action: &str, e: &postgres::Error) -> Error {
        let detail = match e.as_db_error() {
            Some(db) => format!("{} {}: {}", db.severity(), db.code().code(), db.message()),
            None if connection_lost(e) => format!("the connection was lost ({})", with_causes(e)),
            None => with_causes(e),
        };
        Error::new(
            ErrorCode::Journal,
            format!("journal {}: cannot {action}: {detail}", self.target),
        )
    }

    /// A new connection could not be opened (unreachable server, TLS
    /// handshake, login refused).
    fn no_conn(&self, action: &str, e: &postgres::Error) -> Error {
        if e.as_db_error().is_some() {
            return self.db(action, e);
        }
        Error::new(
            ErrorCode::Journal,
            format!(
                "journal {}: cannot {action}: no connection to the server: {}",
                self.target,
                with_causes(e)
            ),
        )
    }

    fn refused(&self, why: impl fmt::Display) -> Error {
        Error::new(
            ErrorCode::Journal,
            format!("journal {}: {why}", self.target),
        )
    }

    fn new_conn(&self) -> std::result::Result<Conn, postgres::Error> {
        let mut client = match &self.tls {
            Some(tls) => self.config.connect(tls.clone())?,
            None => self.config.connect(NoTls)?,
        };
        let ms = self.options.statement_timeout.as_millis().max(1);
        client.batch_execute(&format!(
            "SET statement_timeout = {ms}; SET idle_in_transaction_session_timeout = {}",
            ms.saturating_mul(3)
        ))?;
        let pid: i32 = client.query_one("SELECT pg_backend_pid()", &[])?.get(0);
        Ok(Conn { client, pid })
    }

    fn pooled(&self) -> MutexGuard<'_, Vec<Conn>> {
        self.pool.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// An idle connection, or a new one.
    fn take_conn(&self, action: &str) -> Result<Conn> {
        while let Some(conn) = self.pooled().pop() {
            if !conn.client.is_closed() {
                return Ok(conn);
            }
        }
        self.new_conn().map_err(|e| self.no_conn(action, &e))
    }

    fn put_back(&self, conn: Conn) {
        if conn.client.is_closed() {
            return;
        }
        let mut pool = self.pooled();
        if pool.len() < self.options.max_idle {
            pool.push(conn);
        }
    }

    fn taken(&self) -> MutexGuard<'_, HashMap<(String, String), Taken>> {
        // Plain inserts and removals: consistent even after a panic.
        self.leases.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn remember(&self, order_id: &str, owner: &str, epoch: i64) {
        self.taken().insert(
            (order_id.to_owned(), owner.to_owned()),
            Taken {
                epoch,
                durable: false,
            },
        );
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

    /// Runs `body` in one transaction committed with `synchronous_commit`
    /// on (`durable`) or off. A lost connection before the COMMIT was sent
    /// runs it again on a new connection; a lost connection during the
    /// COMMIT calls `verify` on a new connection: `Some` is the committed
    /// result, `None` (not committed) runs `body` once more. Nothing is
    /// reported as written without that read-back.
    fn write<T>(
        &self,
        action: &str,
        durable: bool,
        body: Body<'_, T>,
        verify: Verify<'_, T>,
    ) -> Result<T> {
        const TRIES: usize = 3;
        let mut last = None;
        for _ in 0..TRIES {
            let mut conn = self.take_conn(action)?;
            let begin = if durable {
                "BEGIN; SET LOCAL synchronous_commit TO on"
            } else {
                "BEGIN; SET LOCAL synchronous_commit TO off"
            };
            let ran = conn
                .client
                .batch_execute(begin)
                .map_err(Fail::Pg)
                .and_then(|()| body(&mut conn.client));
            let value = match ran {
                Ok(value) => value,
                Err(fail) => {
                    let rolled_back =
                        !conn.client.is_closed() && conn.client.batch_execute("ROLLBACK").is_ok();
                    if rolled_back {
                        self.put_back(conn);
                    }
                    match fail {
                        Fail::Journal(e) => {
                            if e.code() == ErrorCode::OperationBusy {
                                self.stats.fenced.fetch_add(1, Ordering::Relaxed);
                            }
                            return Err(e);
                        }
                        Fail::Pg(e) if connection_lost(&e) => {
                            last = Some(e);
                            continue;
                        }
                        Fail::Pg(e) => return Err(self.db(action, &e)),
                    }
                }
            };
            if let Some(hook) = &self.hook {
                hook(PgPoint::BeforeCommit {
                    durable,
                    backend_pid: conn.pid,
                });
            }
            match conn.client.batch_execute("COMMIT") {
                Ok(()) => {
                    self.stats.commits.fetch_add(1, Ordering::Relaxed);
                    if durable {
                        self.stats.durable_commits.fetch_add(1, Ordering::Relaxed);
                    }
                    self.put_back(conn);
                    return Ok(value);
                }
                Err(e) if connection_lost(&e) => {
                    // Committed or not: only the database can tell.
                    self.stats.unknown_commits.fetch_add(1, Ordering::Relaxed);
                    drop(conn);
                    match self.read_back(action, verify) {
                        Ok(Some(value)) => {
                            self.stats.commits.fetch_add(1, Ordering::Relaxed);
                            if durable {
                                self.stats.durable_commits.fetch_add(1, Ordering::Relaxed);
                            }
                            return Ok(value);
                        }
                        Ok(None) => {
                            last = Some(e);
                            continue;
                        }
                        Err(why) => {
                            return Err(self.refused(format!(
                                "cannot {action}: the connection was lost during COMMIT and the \
                                 outcome cannot be read back ({why}); nothing may be sent until \
                                 it is"
                            )))
                        }
                    }
                }
                Err(e) => return Err(self.db(action, &e)),
            }
        }
        Err(match last {
            Some(e) => self.db(action, &e),
            None => self.refused(format!("cannot {action}")),
        })
    }

    /// `verify` on a new connection, in its own (read) transaction.
    fn read_back<T>(&self, action: &str, verify: Verify<'_, T>) -> Result<Option<T>> {
        let mut conn = self.take_conn(action)?;
        match verify(&mut conn.client) {
            Ok(found) => {
                self.put_back(conn);
                Ok(found)
            }
            Err(Fail::Journal(e)) => {
                self.put_back(conn);
                Err(e)
            }
            Err(Fail::Pg(e)) => Err(self.db(action, &e)),
        }
    }

    /// A read on a pooled connection (autocommit).
    fn read<T>(
        &self,
        action: &str,
        f: impl Fn(&mut postgres::Client) -> std::result::Result<T, Fail>,
    ) -> Result<T> {
        for tries_left in (0..2).rev() {
            let mut conn = self.take_conn(action)?;
            match f(&mut conn.client) {
                Ok(v) => {
                    self.put_back(conn);
                    return Ok(v);
                }
                Err(Fail::Journal(e)) => {
                    self.put_back(conn);
                    return Err(e);
                }
                Err(Fail::Pg(e)) if connection_lost(&e) && tries_left > 0 => continue,
                Err(Fail::Pg(e)) => return Err(self.db(action, &e)),
            }
        }
        Err(self.refused(format!("cannot {action}")))
    }

    fn load(
        &self,
        client: &mut postgres::Client,
        order_id: &str,
        lock: bool,
    ) -> std::result::Result<Option<Stored>, Fail> {
        let sql = format!(
            "SELECT {COLUMNS} FROM payidem_operations WHERE order_id = $1{}",
            if lock { " FOR UPDATE" } else { "" }
        );
        let Some(row) = client.query_opt(&sql, &[&order_id])? else {
            return Ok(None);
        };
        let stored = self.verified(&row)?;
        rules::same_scope(
            stored.scope.as_ref(),
            self.options.scope.as_ref(),
            &stored.record.operation,
        )?;
        Ok(Some(stored))
    }

    /// A row checked to read back valid and, with a journal key, to carry
    /// the right MACs.
    fn verified(&self, row: &Row) -> Result<Stored> {
        let stored = read_row(&self.target, row, true)?;
        self.auth().verify(
            &self.target,
            stored.scope.as_ref(),
            &stored.record,
            stored.macs(),
        )?;
        Ok(stored)
    }

    /// Takes the lease of `stored` for `lease` (the row is locked), or
    /// `operation_busy`. Returns the new epoch.
    fn take_lease(
        &self,
        client: &mut postgres::Client,
        stored: &Stored,
        lease: &Lease,
        now: u64,
    ) -> std::result::Result<i64, Fail> {
        let op = &stored.record.operation;
        if !rules::lease_free_at(stored.lease_owner.as_deref(), stored.lease_expired, lease) {
            return Err(rules::busy(&op.order_id, &op.idempotency_key).into());
        }
        let sql = format!(
            "UPDATE payidem_operations SET lease_owner = $2, lease_epoch = lease_epoch + 1, \
             lease_expires = {} WHERE order_id = $1 RETURNING lease_epoch",
            expiry_sql(3)
        );
        let row = client.query_one(
            &sql,
            &[&op.order_id, &lease.owner, &lease_seconds(lease, now)],
        )?;
        Ok(row.get(0))
    }

    /// The row's lease owner, epoch, state and attempts (to read a write
    /// back after a lost COMMIT).
    fn row_lease(
        client: &mut postgres::Client,
        order_id: &str,
    ) -> std::result::Result<Option<RowLease>, Fail> {
        let row = client.query_opt(
            "SELECT lease_owner, lease_epoch, state, attempts FROM payidem_operations \
             WHERE order_id = $1",
            &[&order_id],
        )?;
        Ok(row.map(|r| (r.get(0), r.get(1), r.get(2), r.get(3))))
    }

    /// Takes the lease of an operation: `open` and `claim` share it.
    fn lease_for(
        &self,
        action: &str,
        lease: &Lease,
        durable: bool,
        body: Body<'_, (Opened, Option<i64>)>,
    ) -> Result<Opened> {
        // Retried as a whole after a lost COMMIT: the owner takes its own
        // lease again (same owner: always free), with a new epoch.
        let (opened, epoch) = self.write(action, durable, body, &|_| Ok(None))?;
        if let (Some(epoch), Opened::Created(r) | Opened::Resumable(r)) = (epoch, &opened) {
            self.remember(&r.operation.order_id, &lease.owner, epoch);
            if durable && matches!(opened, Opened::Created(_)) {
                // Its first attempt is on disk with this lease.
                self.taken().insert(
                    (r.operation.order_id.clone(), lease.owner.clone()),
                    Taken {
                        epoch,
                        durable: true,
                    },
                );
            }
        }
        Ok(opened)
    }

    /// `open`, recording a new operation as pending, or (`first_attempt`,
    /// for `open_to_send`) in flight with its first attempt, committed with
    /// `synchronous_commit = on`.
    fn open_as(
        &self,
        operation: &FrozenOperation,
        lease: &Lease,
        now: u64,
        first_attempt: bool,
    ) -> Result<Opened> {
        rules::check_now(now)?;
        rules::check_lease(lease)?;
        self.check_writable()?;
        let action = format!("open order id {:?}", operation.order_id);
        let insert = format!(
            "INSERT INTO payidem_operations (order_id, idempotency_key, method, path, body, \
             body_sha256, status_path, state, lease_owner, lease_epoch, lease_expires, row_mac, \
             attempts, created_at, updated_at, platform, key_id, state_mac) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $11, $8, 1, {}, $10, $12, to_timestamp($13), \
             to_timestamp($13), $14, $15, $16) \
             ON CONFLICT DO NOTHING RETURNING 1",
            expiry_sql(9)
        );
        let seconds = lease_seconds(lease, now);
        let (state, attempts) = if first_attempt {
            (OperationState::InFlight, 1u32)
        } else {
            (OperationState::Pending, 0)
        };
        let record = OperationRecord {
            operation: operation.clone(),
            state,
            attempts,
            created_at: now,
            updated_at: now,
            response: None,
        };
        let scope = self.options.scope.as_ref();
        let (mac, state_mac) = self.auth().macs(scope, &record)?;
        let (platform, key_id) = (scope.map(|s| &s.platform), scope.map(|s| &s.key_id));
        let at = pg_time(now);
        let (state_sql, attempts_sql) = (state.as_str(), i32::try_from(attempts).unwrap_or(0));
        self.lease_for(&action, lease, first_attempt, &mut |client| {
            if let Some(stored) = self.load(client, &operation.order_id, true)? {
                rules::same_request(&stored.record.operation, operation)?;
                if stored.record.state.is_settled() {
                    return Ok((Opened::Settled(stored.record), None));
                }
                let epoch = self.take_lease(client, &stored, lease, now)?;
                return Ok((Opened::Resumable(stored.record), Some(epoch)));
            }
            let op = operation;
            let created = client.query_opt(
                &insert,
                &[
                    &op.order_id,
                    &op.idempotency_key,
                    &op.method,
                    &op.path,
                    &op.body,
                    &op.body_sha256,
                    &op.status_path,
                    &lease.owner,
                    &seconds,
                    &mac,
                    &state_sql,
                    &attempts_sql,
                    &at,
                    &platform,
                    &key_id,
                    &state_mac,
                ],
            )?;
            if created.is_some() {
                return Ok((Opened::Created(record.clone()), Some(1)));
            }
            // The order id appeared since the SELECT (another instance
            // inserted it; its row lock now waits for us) or the key is
            // another order id's.
            let other = client.query_opt(
                "SELECT order_id FROM payidem_operations WHERE idempotency_key = $1",
                &[&op.idempotency_key],
            )?;
            match other {
                Some(row) if row.get::<_, String>(0) != op.order_id => {
                    Err(rules::key_taken(op, &row.get::<_, String>(0)).into())
                }
                _ => Err(Error::new(
                    ErrorCode::OperationBusy,
                    format!(
                        "order id {:?} is being created by another call",
                        op.order_id
                    ),
                )
                .with_operation(&op.order_id, &op.idempotency_key)
                .into()),
            }
        })
    }
}

impl Journal for PostgresJournal {
    fn open(&self, operation: &FrozenOperation, lease: &Lease, now: u64) -> Result<Opened> {
        self.open_as(operation, lease, now, false)
    }

    fn open_to_send(&self, operation: &FrozenOperation, lease: &Lease, now: u64) -> Result<Opened> {
        self.open_as(operation, lease, now, true)
    }

    fn claim(&self, order_id: &str, lease: &Lease, now: u64) -> Result<Opened> {
        rules::check_now(now)?;
        rules::check_lease(lease)?;
        let action = format!("claim order id {order_id:?}");
        self.lease_for(&action, lease, false, &mut |client| {
            let stored = self
                .load(client, order_id, true)?
                .ok_or_else(|| rules::unknown_order(order_id))?;
            if stored.record.state.is_settled() {
                return Ok((Opened::Settled(stored.record), None));
            }
            let epoch = self.take_lease(client, &stored, lease, now)?;
            Ok((Opened::Resumable(stored.record), Some(epoch)))
        })
    }

    /// One statement: the oldest unsettled operation whose lease is free
    /// (never taken, released, or expired by the database clock), locked
    /// with `FOR UPDATE SKIP LOCKED` so that concurrent instances each take
    /// a different one. Leases of dead processes are taken once they
    /// expire (this does not ask whether their process still exists).
    fn claim_next(&self, lease: &Lease, now: u64) -> Result<Option<Opened>> {
        rules::check_now(now)?;
        rules::check_lease(lease)?;
        let sql = format!(
            "WITH next AS (SELECT order_id FROM payidem_operations \
               WHERE state IN {UNSETTLED} AND (lease_owner IS NULL OR lease_expires <= now()) \
               AND ($3::text IS NULL OR platform IS NULL OR (platform = $3 AND key_id = $4)) \
               ORDER BY created_at, seq LIMIT 1 FOR UPDATE SKIP LOCKED) \
             UPDATE payidem_operations o SET lease_owner = $1, lease_epoch = o.lease_epoch + 1, \
               lease_expires = {} FROM next WHERE o.order_id = next.order_id \
             RETURNING {}",
            expiry_sql(2),
            COLUMNS.replacen("order_id, ", "o.order_id, ", 1)
        );
        let seconds = lease_seconds(lease, now);
        let scope = self.options.scope.as_ref();
        let (platform, key_id) = (scope.map(|s| &s.platform), scope.map(|s| &s.key_id));
        let taken = self.write(
            "claim the next operation to take over",
            false,
            // A row failing its MAC rolls the claim back: its lease stays
            // as it was and nothing is sent.
            &mut |client| match client
                .query_opt(&sql, &[&lease.owner, &seconds, &platform, &key_id])?
            {
                Some(row) => Ok(Some(self.verified(&row)?)),
                None => Ok(None),
            },
            &|_| Ok(None),
        )?;
        Ok(taken.map(|stored| {
            let record = stored.record;
            self.remember(&record.operation.order_id, &lease.owner, stored.lease_epoch);
            Opened::Resumable(record)
        }))
    }

    fn record_attempt(&self, order_id: &str, lease: &Lease, attempts: u32, now: u64) -> Result<()> {
        rules::check_now(now)?;
        self.check_writable()?;
        let action = format!("record an attempt of order id {order_id:?}");
        let taken = self.recall(order_id, &lease.owner);
        let epoch = taken.map(|t| t.epoch);
        // Durable on the first attempt of each lease: the operation was
        // pending, or its previous driver may have died before its record
        // was committed durably.
        let durable = !taken.is_some_and(|t| t.durable);
        let attempts_sql = i32::try_from(attempts).unwrap_or(i32::MAX);
        let lease_sql = format!(", lease_expires = {}", expiry_sql(10));
        let seconds = lease_seconds(lease, now);
        let new_epoch = self.write(
            &action,
            durable,
            &mut |client| {
                let stored = self.held_row(client, order_id, lease, epoch)?;
                let state = RowState {
                    state: OperationState::InFlight,
                    attempts,
                    updated_at: now,
                    response: stored.record.response.as_ref(),
                };
                self.write_state(client, &stored, &state, &lease_sql, seconds)?;
                Ok(stored.lease_epoch)
            },
            &|client| match Self::row_lease(client, order_id)? {
                None => Err(rules::unknown_order(order_id).into()),
                Some((owner, row_epoch, state, n))
                    if owner.as_deref() == Some(lease.owner.as_str())
                        && epoch.is_none_or(|e| e == row_epoch) =>
                {
                    Ok(
                        (state == OperationState::InFlight.as_str() && n == attempts_sql)
                            .then_some(row_epoch),
                    )
                }
                Some(_) => Err(rules::lease_lost(order_id, "").into()),
            },
        )?;
        self.taken().insert(
            (order_id.to_owned(), lease.owner.clone()),
            Taken {
                epoch: new_epoch,
                durable: true,
            },
        );
        Ok(())
    }

    fn finish(
        &self,
        order_id: &str,
        lease: &Lease,
        state: OperationState,
        response: Option<&Response>,
        now: u64,
    ) -> Result<()> {
        rules::check_now(now)?;
        rules::check_finish_state(state)?;
        self.check_writable()?;
        let action = format!("finish order id {order_id:?}");
        let epoch = self.recall(order_id, &lease.owner).map(|t| t.epoch);
        let written = self.write(
            &action,
            false,
            &mut |client| {
                let stored = self.held_row(client, order_id, lease, epoch)?;
                let row = RowState {
                    state,
                    attempts: stored.record.attempts,
                    updated_at: now,
                    response,
                };
                self.write_state(
                    client,
                    &stored,
                    &row,
                    ", lease_owner = NULL, lease_expires = NULL",
                    None,
                )
            },
            &|client| match Self::row_lease(client, order_id)? {
                None => Err(rules::unknown_order(order_id).into()),
                Some((owner, row_epoch, row_state, _)) => {
                    let ours = epoch.is_none_or(|e| e == row_epoch);
                    if owner.as_deref() == Some(lease.owner.as_str()) && ours {
                        Ok(None)
                    } else if owner.is_none() && ours && row_state == state.as_str() {
                        Ok(Some(()))
                    } else {
                        Err(rules::lease_lost(order_id, "").into())
                    }
                }
            },
        );
        if written.is_ok() {
            self.forget(order_id, &lease.owner);
        }
        written
    }

    fn release(&self, order_id: &str, lease: &Lease) -> Result<()> {
        let action = format!("release order id {order_id:?}");
        let epoch = self.recall(order_id, &lease.owner).map(|t| t.epoch);
        let released = self.write(
            &action,
            false,
            &mut |client| {
                let row = client.query_opt(
                    "WITH target AS (SELECT order_id FROM payidem_operations WHERE order_id = $1), \
                     released AS (UPDATE payidem_operations SET lease_owner = NULL, \
                       lease_expires = NULL WHERE order_id = $1 AND lease_owner = $2 \
                       AND ($3::bigint IS NULL OR lease_epoch = $3) RETURNING 1) \
                     SELECT (SELECT count(*) FROM target), (SELECT count(*) FROM released)",
                    &[&order_id, &lease.owner, &epoch],
                )?;
                if row.map_or(0, |r| r.get::<_, i64>(0)) == 0 {
                    return Err(rules::unknown_order(order_id).into());
                }
                Ok(())
            },
            // Releasing again is harmless: run it once more.
            &|_| Ok(None),
        );
        self.forget(order_id, &lease.owner);
        released
    }

    fn get(&self, order_id: &str) -> Result<Option<OperationRecord>> {
        let action = format!("read order id {order_id:?}");
        self.read(&action, |client| {
            Ok(self.load(client, order_id, false)?.map(|s| s.record))
        })
    }

    fn list(&self, states: &[OperationState]) -> Result<Vec<OperationRecord>> {
        if states.is_empty() {
            return Ok(Vec::new());
        }
        let names: Vec<&str> = states.iter().map(|s| s.as_str()).collect();
        let sql = format!(
            "SELECT {COLUMNS} FROM payidem_operations WHERE state = ANY($1) \
             ORDER BY created_at, seq"
        );
        self.read("list operations", |client| {
            client
                .query(&sql, &[&names])?
                .iter()
                .map(|row| self.verified(row).map_err(Fail::from))
                .filter(|stored| {
                    stored.as_ref().map_or(true, |s| {
                        rules::scope_matches(s.scope.as_ref(), self.options.scope.as_ref())
                    })
                })
                .map(|stored| stored.map(|s| s.record))
                .collect()
        })
    }

    fn purge_settled(&self, before: u64) -> Result<usize> {
        // Past year 9999 every row is older.
        let bound = i64::try_from(before.min(253_402_300_799)).unwrap_or(i64::MAX) as f64;
        let sql = format!(
            "DELETE FROM payidem_operations WHERE state NOT IN {UNSETTLED} \
             AND updated_at < to_timestamp($1)"
        );
        self.check_writable()?;
        let horizon = self.auth().purge_horizon(before.min(253_402_300_799));
        let n = self.write(
            "purge settled operations",
            false,
            &mut |client| {
                if let Some((horizon, mac)) = &horizon {
                    client.execute(
                        "UPDATE payidem_seal SET purged_before = $1, purge_mac = $2 WHERE id = 1",
                        &[&i64::try_from(*horizon).unwrap_or(i64::MAX), mac],
                    )?;
                }
                Ok(client.execute(&sql, &[&bound])?)
            },
            &|_| Ok(None),
        )?;
        if let Some((horizon, _)) = horizon {
            self.auth
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .set_purged_before(horizon);
        }
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    fn reconcile(
        &self,
        order_id: &str,
        state: OperationState,
        by: &str,
        reference: &str,
        now: u64,
    ) -> Result<Reconciliation> {
        rules::check_now(now)?;
        rules::check_reconciliation(state, by, reference)?;
        self.check_writable()?;
        let action = format!("reconcile order id {order_id:?}");
        let find = "SELECT previous_state, floor(extract(epoch FROM reconciled_at))::bigint, \
                    idempotency_key FROM payidem_reconciliations WHERE order_id = $1 \
                    AND state = $2 AND reconciled_by = $3 AND reference = $4 \
                    ORDER BY id DESC LIMIT 1";
        let build =
            |key: String, previous: &str, at: i64| -> std::result::Result<Reconciliation, Fail> {
                Ok(Reconciliation {
                    order_id: order_id.to_owned(),
                    idempotency_key: key,
                    previous_state: OperationState::from_name(previous)
                        .ok_or_else(|| self.refused("corrupt reconciliation: unknown state"))?,
                    state,
                    by: by.to_owned(),
                    at: u64::try_from(at).unwrap_or(0),
                    reference: reference.to_owned(),
                })
            };
        // The only record that the operation was settled by hand: durable.
        self.write(
            &action,
            true,
            &mut |client| {
                let stored = self
                    .load(client, order_id, true)?
                    .ok_or_else(|| rules::unknown_order(order_id))?;
                let previous = stored.record.state;
                let key = stored.record.operation.idempotency_key.clone();
                if previous.is_settled() {
                    return Err(rules::already_settled(order_id, previous).into());
                }
                if rules::lease_blocks_at(stored.lease_owner.as_deref(), stored.lease_expired) {
                    return Err(rules::busy(order_id, &key).into());
                }
                let row = RowState {
                    state,
                    attempts: stored.record.attempts,
                    updated_at: now,
                    response: stored.record.response.as_ref(),
                };
                self.write_state(
                    client,
                    &stored,
                    &row,
                    ", lease_owner = NULL, lease_expires = NULL, lease_epoch = lease_epoch + 1",
                    None,
                )?;
                let row = client.query_one(
                    "INSERT INTO payidem_reconciliations (order_id, idempotency_key, \
                     previous_state, state, reconciled_by, reference) \
                     VALUES ($1, $2, $3, $4, $5, $6) \
                     RETURNING floor(extract(epoch FROM reconciled_at))::bigint",
                    &[
                        &order_id,
                        &key,
                        &previous.as_str(),
                        &state.as_str(),
                        &by,
                        &reference,
                    ],
                )?;
                build(key, previous.as_str(), row.get(0))
            },
            &|client| {
                let settled = client.query_opt(
                    "SELECT state FROM payidem_operations WHERE order_id = $1",
                    &[&order_id],
                )?;
                if settled.map(|r| r.get::<_, String>(0)).as_deref() != Some(state.as_str()) {
                    return Ok(None);
                }
                match client.query_opt(find, &[&order_id, &state.as_str(), &by, &reference])? {
                    Some(row) => build(row.get(2), &row.get::<_, String>(0), row.get(1)).map(Some),
                    None => Ok(None),
                }
            },
        )
    }

    fn reconciliations(&self, order_id: Option<&str>) -> Result<Vec<Reconciliation>> {
        self.read("read reconciliations", |client| {
            client
                .query(
                    "SELECT order_id, idempotency_key, previous_state, state, reconciled_by, \
                     floor(extract(epoch FROM reconciled_at))::bigint, reference \
                     FROM payidem_reconciliations WHERE $1::text IS NULL OR order_id = $1 \
                     ORDER BY id",
                    &[&order_id],
                )?
                .iter()
                .map(|row| self.reconciliation(row).map_err(Fail::from))
                .collect()
        })
    }

    fn check(&self) -> Result<JournalCheck> {
        self.read("check the journal", |client| {
            let mut problems = Vec::new();
            let schema_version = schema::version(client)?;
            let rows = client.query(
                &format!("SELECT {COLUMNS} FROM payidem_operations ORDER BY created_at, seq"),
                &[],
            )?;
            let sealed = schema::seal_record(client)?.is_some();
            problems.extend(rules::seal_problem(sealed, !rows.is_empty()));
            let auth = self.auth().clone();
            for row in &rows {
                match read_row(&self.target, row, true) {
                    Ok(stored) => problems.extend(rules::row_problems(
                        &auth,
                        stored.scope.as_ref(),
                        &stored.record,
                        stored.macs(),
                    )),
                    Err(e) => problems.push(e.message().to_owned()),
                }
            }
            let recs = client.query(
                "SELECT order_id, idempotency_key, previous_state, state, reconciled_by, \
                 floor(extract(epoch FROM reconciled_at))::bigint, reference \
                 FROM payidem_reconciliations ORDER BY id",
                &[],
            )?;
            problems.extend(
                recs.iter()
                    .filter_map(|r| self.reconciliation(r).err())
                    .map(|e| e.message().to_owned()),
            );
            Ok(JournalCheck {
                backend: "postgres",
                schema_version: Some(schema_version),
                library_schema_version: Some(POSTGRES_SCHEMA_VERSION),
                migrated_from: self.migrated_from,
                operations: rows.len(),
                reconciliations: recs.len(),
                problems,
                macs_verified: auth.is_keyed(),
            })
        })
    }

    fn save_clock_offset(&self, offset: &StoredClockOffset) -> Result<()> {
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
            &|_| Ok(None),
        )
    }

    fn clock_offset(&self, platform: &str) -> Result<Option<StoredClockOffset>> {
        Ok(self.clock_offsets_where(Some(platform))?.into_iter().next())
    }

    fn clock_offsets(&self) -> Result<Vec<StoredClockOffset>> {
        self.clock_offsets_where(None)
    }
}

impl PostgresJournal {
    /// The stored clock offsets of `platform` (every one when `None`).
    fn clock_offsets_where(&self, platform: Option<&str>) -> Result<Vec<StoredClockOffset>> {
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

impl PostgresJournal {
    fn reconciliation(&self, row: &Row) -> Result<Reconciliation> {
        let order_id: String = row.get(0);
        let corrupt = |what: &str| {
            self.refused(format!(
                "corrupt reconciliation of order id {order_id:?}: {what}"
            ))
        };
        let previous_state = OperationState::from_name(&row.get::<_, String>(2))
            .ok_or_else(|| corrupt("unknown previous state"))?;
        let state = OperationState::from_name(&row.get::<_, String>(3))
            .filter(|s| s.is_settled())
            .ok_or_else(|| corrupt("unknown or unsettled state"))?;
        let at = u64::try_from(row.get::<_, i64>(5)).map_err(|_| corrupt("time before 1970"))?;
        Ok(Reconciliation {
            idempotency_key: row.get(1),
            previous_state,
            state,
            by: row.get(4),
            at,
            reference: row.get(6),
            order_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
