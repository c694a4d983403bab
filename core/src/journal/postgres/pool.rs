//! The connection pool and the transactions of a [`PostgresJournal`]:
//! one short transaction per write on a pooled connection, retried on a
//! new connection when the old one is lost, and read back when the
//! connection was lost during COMMIT.

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::sync::MutexGuard;
use std::sync::PoisonError;

use postgres::error::SqlState;
use postgres::NoTls;

use super::group::Job;
use super::tx::Inserted;
use super::{Conn, PgPoint, PostgresJournal, TxMode};
use crate::error::{Error, ErrorCode, Result};
use crate::journal::engine::NewRow;

/// Why a transaction body stopped.
pub(super) enum Fail {
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

pub(super) type Body<'a, T> =
    &'a mut dyn FnMut(&mut postgres::Client) -> std::result::Result<T, Fail>;
pub(super) type Verify<'a, T> =
    &'a mut dyn FnMut(&mut postgres::Client) -> std::result::Result<Option<T>, Fail>;

/// `e` and its causes (`error performing TLS handshake: invalid peer
/// certificate: UnknownIssuer`); the driver's own text names none.
pub(super) fn with_causes(e: &postgres::Error) -> String {
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// Whether `e` aborted a transaction that may simply run again: a
/// deadlock or a serialization failure.
fn retryable(e: &postgres::Error) -> bool {
    e.code().is_some_and(|code| {
        *code == SqlState::T_R_DEADLOCK_DETECTED || *code == SqlState::T_R_SERIALIZATION_FAILURE
    })
}

/// Whether `e` means the connection (or the server) is gone: the outcome
/// of a COMMIT it interrupted is unknown.
pub(super) fn connection_lost(e: &postgres::Error) -> bool {
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

/// What [`PostgresJournal::insert_alone`] came to.
enum Alone {
    /// The INSERT was committed: the jobs whose rows it inserted are
    /// answered.
    Ran,
    /// The connection was lost during the INSERT: committed or not,
    /// unknown.
    Lost(postgres::Error),
    /// The server refused it: nothing was committed.
    Failed(postgres::Error),
}

/// Inserts the new rows of `jobs`' bodies in one statement (`committed`:
/// its own transaction, committed with `synchronous_commit` on), and keeps on
/// `conn` whether each was inserted, for its body's own insert. A row
/// whose order id or idempotency key another job's row shares is left to
/// its body's own insert: each answer then belongs to exactly one body.
fn insert_together(
    conn: &mut Conn,
    jobs: &[Arc<Job>],
    committed: bool,
) -> std::result::Result<(), postgres::Error> {
    conn.inserted.clear();
    let rows: Vec<&NewRow> = jobs.iter().filter_map(|job| job.insert.as_ref()).collect();
    fn op(r: &NewRow) -> &crate::operation::FrozenOperation {
        &r.row.record.operation
    }
    let alone = |r: &&NewRow| {
        let shares = |o: &&&NewRow| {
            op(o).order_id == op(r).order_id || op(o).idempotency_key == op(r).idempotency_key
        };
        rows.iter().filter(shares).count() == 1
    };
    let rows: Vec<&NewRow> = rows.iter().copied().filter(alone).collect();
    if rows.is_empty() {
        return Ok(());
    }
    let together: Vec<_> = rows.iter().map(|r| (&r.row, &r.lease, r.now)).collect();
    let inserted = conn.insert_rows(&together, committed)?;
    for row in rows {
        let order_id = &op(row).order_id;
        let answer = (inserted.contains(order_id), Inserted::of(row));
        conn.inserted.insert(order_id.clone(), answer);
    }
    Ok(())
}

impl PostgresJournal {
    /// `journal_error` for a failed database call while doing `action`.
    pub(super) fn db(&self, action: &str, e: &postgres::Error) -> Error {
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
    pub(super) fn no_conn(&self, action: &str, e: &postgres::Error) -> Error {
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

    pub(super) fn refused(&self, why: impl fmt::Display) -> Error {
        Error::new(
            ErrorCode::Journal,
            format!("journal {}: {why}", self.target),
        )
    }

    pub(super) fn new_conn(&self) -> std::result::Result<Conn, postgres::Error> {
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
        Ok(Conn {
            client,
            pid,
            statements: std::collections::HashMap::new(),
            tx: TxMode::Idle,
            asynchronous: false,
            inserted: std::collections::HashMap::new(),
        })
    }

    pub(super) fn pooled(&self) -> MutexGuard<'_, Vec<Conn>> {
        self.pool.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// An idle connection, or a new one.
    pub(super) fn take_conn(&self, action: &str) -> Result<Conn> {
        self.idle_or_new().map_err(|e| self.no_conn(action, &e))
    }

    fn idle_or_new(&self) -> std::result::Result<Conn, postgres::Error> {
        while let Some(conn) = self.pooled().pop() {
            if !conn.client.is_closed() {
                return Ok(conn);
            }
        }
        self.new_conn()
    }

    pub(super) fn put_back(&self, mut conn: Conn) {
        if conn.client.is_closed() {
            return;
        }
        conn.tx = TxMode::Idle;
        conn.inserted.clear();
        let mut pool = self.pooled();
        if pool.len() < self.options.max_idle {
            pool.push(conn);
        }
    }
    /// Runs `body` in one transaction committed with `synchronous_commit`
    /// on (`durable`) or off. A lost connection before the COMMIT was sent
    /// runs it again on a new connection; a lost connection during the
    /// COMMIT calls `verify` on a new connection: `Some` is the committed
    /// result, `None` (not committed) runs `body` once more. Nothing is
    /// reported as written without that read-back.
    pub(super) fn write<T>(
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
            match self.commit(conn, durable) {
                Ok(()) => return Ok(value),
                Err(e) if connection_lost(&e) => {
                    // Committed or not: only the database can tell.
                    self.stats.unknown_commits.fetch_add(1, Ordering::Relaxed);
                    match self.read_back(action, &mut |conn| verify(&mut conn.client)) {
                        Ok(Some(value)) => {
                            self.count_commit(durable);
                            return Ok(value);
                        }
                        Ok(None) => {
                            last = Some(e);
                            continue;
                        }
                        Err(why) => return Err(self.unreadable(action, &why)),
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

    /// Runs `jobs` (a group of [`group`](super::group)) in one transaction
    /// committed once, with `synchronous_commit` on when any of them must
    /// be durable, and completes each. A durable group of new operations
    /// first runs as their one INSERT alone ([`Self::insert_alone`]); what
    /// it leaves runs in a transaction. A job refused by the journal is
    /// answered at once (its body wrote nothing). A database error in a
    /// body rolls the transaction back: that job fails (or runs again when
    /// the connection was lost, or for a deadlock or serialization
    /// failure) and the others run again. A connection lost during the
    /// COMMIT (or the INSERT alone) is read back job by job before
    /// anything is decided; any other failed COMMIT fails every job that
    /// was in it.
    pub(super) fn run_group(&self, jobs: Vec<Arc<Job>>) {
        const TRIES: usize = 3;
        let mut todo = jobs;
        let mut tries = 0;
        let mut last: Option<postgres::Error> = None;
        let mut together = true;
        let mut alone = true;
        while !todo.is_empty() {
            if tries >= TRIES {
                for job in &todo {
                    job.complete(Err(match &last {
                        Some(e) => self.db(&job.action, e),
                        None => self.refused(format!("cannot {}", job.action)),
                    }));
                }
                return;
            }
            let durable = todo.iter().any(|job| job.durable);
            let opens = durable && todo.iter().all(|job| job.insert.is_some());
            let mut conn = match self.idle_or_new() {
                Ok(conn) => conn,
                Err(e) => {
                    for job in &todo {
                        job.complete(Err(self.no_conn(&job.action, &e)));
                    }
                    return;
                }
            };
            if opens && alone && together {
                match self.insert_alone(conn, &todo) {
                    // What it left (rows it did not insert) needs a
                    // transaction.
                    Alone::Ran => alone = false,
                    Alone::Lost(error) => {
                        self.stats.unknown_commits.fetch_add(1, Ordering::Relaxed);
                        self.read_group_back(&todo, true);
                        tries += 1;
                        last = Some(error);
                    }
                    Alone::Failed(error) if retryable(&error) => {
                        tries += 1;
                        last = Some(error);
                    }
                    Alone::Failed(_) => alone = false,
                }
                todo.retain(|job| !job.is_done());
                continue;
            }
            let begin = if durable {
                "BEGIN; SET LOCAL synchronous_commit TO on"
            } else {
                "BEGIN; SET LOCAL synchronous_commit TO off"
            };
            let begun = conn.client.batch_execute(begin);
            conn.tx = TxMode::Open;
            if let Err(e) = begun {
                if connection_lost(&e) {
                    tries += 1;
                    last = Some(e);
                    continue;
                }
                for job in &todo {
                    job.complete(Err(self.db(&job.action, &e)));
                }
                return;
            }
            let mut aborted = false;
            if together {
                if let Err(e) = insert_together(&mut conn, &todo, false) {
                    if connection_lost(&e) || retryable(&e) {
                        tries += 1;
                        last = Some(e);
                    } else {
                        // Each body's own insert tells its own caller.
                        together = false;
                    }
                    aborted = true;
                }
            }
            let mut ran = Vec::new();
            for job in todo.iter().filter(|_| !aborted) {
                match job.run(self, &mut conn) {
                    Ok(Ok(value)) => ran.push((Arc::clone(job), value)),
                    Ok(Err(Fail::Journal(e))) => {
                        if e.code() == ErrorCode::OperationBusy {
                            self.stats.fenced.fetch_add(1, Ordering::Relaxed);
                        }
                        job.complete(Err(e));
                    }
                    Ok(Err(Fail::Pg(e))) => {
                        if connection_lost(&e) || retryable(&e) {
                            tries += 1;
                            last = Some(e);
                        } else {
                            job.complete(Err(self.db(&job.action, &e)));
                        }
                        aborted = true;
                        break;
                    }
                    Err(panic) => {
                        job.complete_panic(panic);
                        aborted = true;
                        break;
                    }
                }
            }
            // A row inserted for a body that did not take it (refused, or
            // made another row): the transaction is undone and the other
            // bodies run again, each inserting its own row.
            if conn.inserted.values().any(|(inserted, _)| *inserted) {
                together = false;
                aborted = true;
            }
            if aborted || ran.is_empty() {
                let rolled_back =
                    !conn.client.is_closed() && conn.client.batch_execute("ROLLBACK").is_ok();
                if rolled_back {
                    self.put_back(conn);
                }
                todo.retain(|job| !job.is_done());
                continue;
            }
            match self.commit(conn, durable) {
                Ok(()) => {
                    for (job, value) in ran {
                        job.complete(Ok(value));
                    }
                }
                Err(e) if connection_lost(&e) => {
                    // Committed or not: only the database can tell, and
                    // the group committed all or nothing.
                    self.stats.unknown_commits.fetch_add(1, Ordering::Relaxed);
                    let ran: Vec<Arc<Job>> = ran.into_iter().map(|(job, _)| job).collect();
                    self.read_group_back(&ran, durable);
                    tries += 1;
                    last = Some(e);
                }
                Err(e) => {
                    for (job, _) in ran {
                        job.complete(Err(self.db(&job.action, &e)));
                    }
                }
            }
            todo.retain(|job| !job.is_done());
        }
    }

    /// Reads back, job by job, a group whose commit's outcome is unknown
    /// (all or nothing): completes each job found committed, and one that
    /// cannot be read back; the others are left to run again.
    fn read_group_back(&self, jobs: &[Arc<Job>], durable: bool) {
        let mut committed = false;
        for job in jobs {
            match self.read_job_back(job) {
                Ok(Some(value)) => {
                    committed = true;
                    job.complete(Ok(value));
                }
                Ok(None) => {}
                Err(why) => job.complete(Err(self.unreadable(&job.action, &why))),
            }
        }
        if committed {
            self.count_commit(durable);
        }
    }

    /// Runs a durable group of new operations (`jobs`, each inserting its
    /// row first) without a transaction: their rows are one INSERT,
    /// committed as it returns, with `synchronous_commit` on (set by the
    /// statement for its own transaction, whatever the session's), the
    /// test hook's [`PgPoint::BeforeCommit`] called before it. Each job
    /// whose row it inserted is then answered by its body, which takes
    /// that answer and runs no statement (the engine's rule for a body
    /// with a first insert; any statement would be refused). Should such a
    /// body fail all the same, its caller gets that error and its row stays
    /// committed, held by the caller's own lease: its next open resumes it.
    /// Jobs whose rows it did not insert (already stored, or sharing an
    /// order id or a key within the group) are left as they were.
    fn insert_alone(&self, mut conn: Conn, jobs: &[Arc<Job>]) -> Alone {
        conn.tx = TxMode::Inserted;
        self.before_commit(true, &conn);
        if let Err(error) = insert_together(&mut conn, jobs, true) {
            if connection_lost(&error) {
                return Alone::Lost(error);
            }
            self.put_back(conn);
            return Alone::Failed(error);
        }
        self.count_commit(true);
        for job in jobs {
            let Some(new) = &job.insert else { continue };
            let order_id = &new.row.record.operation.order_id;
            if !conn
                .inserted
                .get(order_id)
                .is_some_and(|(inserted, _)| *inserted)
            {
                continue;
            }
            match job.run(self, &mut conn) {
                Ok(Ok(value)) => job.complete(Ok(value)),
                Ok(Err(Fail::Journal(e))) => job.complete(Err(e)),
                Ok(Err(Fail::Pg(e))) => job.complete(Err(self.db(&job.action, &e))),
                Err(panic) => job.complete_panic(panic),
            }
        }
        self.put_back(conn);
        Alone::Ran
    }

    /// Runs `job` (a write that need not be durable) on a connection of
    /// its own with `synchronous_commit` off: a guarded update as its
    /// first statement runs alone, committed as it returns; anything else
    /// runs in a transaction opened by its first statement. A lost
    /// connection runs it again; one lost during a write that may have
    /// committed (the update alone, or the COMMIT) is read back first.
    /// At most [`MAX_ALONE`](super::group::MAX_ALONE) run at once.
    pub(super) fn run_alone(&self, job: &Job) -> Result<super::group::Value> {
        const TRIES: usize = 3;
        let _slot = self.alone.take();
        let mut last = None;
        for _ in 0..TRIES {
            let mut conn = self.take_conn(&job.action)?;
            if !conn.asynchronous {
                let set = conn.client.batch_execute("SET synchronous_commit TO off");
                match set {
                    Ok(()) => conn.asynchronous = true,
                    Err(e) if connection_lost(&e) => {
                        last = Some(e);
                        continue;
                    }
                    Err(e) => return Err(self.db(&job.action, &e)),
                }
            }
            conn.tx = TxMode::Lazy;
            let ran = match job.run(self, &mut conn) {
                Ok(ran) => ran,
                Err(panic) => {
                    drop(conn);
                    std::panic::resume_unwind(panic)
                }
            };
            let failed = match ran {
                Ok(value) => match conn.tx {
                    TxMode::Open => match self.commit(conn, false) {
                        Ok(()) => return Ok(value),
                        Err(e) if connection_lost(&e) => (e, true),
                        Err(e) => return Err(self.db(&job.action, &e)),
                    },
                    TxMode::AloneCommitted => {
                        self.count_commit(false);
                        self.put_back(conn);
                        return Ok(value);
                    }
                    _ => {
                        self.put_back(conn);
                        return Ok(value);
                    }
                },
                Err(Fail::Journal(e)) => {
                    if e.code() == ErrorCode::OperationBusy {
                        self.stats.fenced.fetch_add(1, Ordering::Relaxed);
                    }
                    self.end(conn);
                    return Err(e);
                }
                Err(Fail::Pg(e)) if connection_lost(&e) => {
                    let unknown = conn.tx == TxMode::AloneSent;
                    (e, unknown)
                }
                Err(Fail::Pg(e)) if retryable(&e) => {
                    self.end(conn);
                    last = Some(e);
                    continue;
                }
                Err(Fail::Pg(e)) => {
                    self.end(conn);
                    return Err(self.db(&job.action, &e));
                }
            };
            let (e, unknown) = failed;
            if unknown {
                // Committed or not: only the database can tell.
                self.stats.unknown_commits.fetch_add(1, Ordering::Relaxed);
                match self.read_job_back(job) {
                    Ok(Some(value)) => {
                        self.count_commit(false);
                        return Ok(value);
                    }
                    Ok(None) => {}
                    Err(why) => return Err(self.unreadable(&job.action, &why)),
                }
            }
            last = Some(e);
        }
        Err(match last {
            Some(e) => self.db(&job.action, &e),
            None => self.refused(format!("cannot {}", job.action)),
        })
    }

    /// Commits the transaction open on `conn` (`durable`: with
    /// `synchronous_commit` on), the test hook called first; once
    /// committed, counts it and puts `conn` back. On an error `conn` is
    /// closed: a lost connection leaves the outcome unknown.
    fn commit(&self, mut conn: Conn, durable: bool) -> std::result::Result<(), postgres::Error> {
        self.before_commit(durable, &conn);
        conn.client.batch_execute("COMMIT")?;
        self.count_commit(durable);
        self.put_back(conn);
        Ok(())
    }

    /// Puts `conn` back after a write that failed, its transaction (if
    /// any) rolled back.
    fn end(&self, mut conn: Conn) {
        let open = conn.tx == TxMode::Open;
        if !conn.client.is_closed() && (!open || conn.client.batch_execute("ROLLBACK").is_ok()) {
            self.put_back(conn);
        }
    }

    /// Whether `job` was committed, read on a new connection.
    fn read_job_back(&self, job: &Job) -> Result<Option<super::group::Value>> {
        self.read_back(&job.action, &mut |conn| job.verify(self, conn))
    }

    /// The test hook's [`PgPoint::BeforeCommit`].
    pub(super) fn before_commit(&self, durable: bool, conn: &Conn) {
        if let Some(hook) = &self.hook {
            hook(PgPoint::BeforeCommit {
                durable,
                backend_pid: conn.pid,
            });
        }
    }

    /// A COMMIT whose connection was lost and whose outcome could not be
    /// read back.
    fn unreadable(&self, action: &str, why: &Error) -> Error {
        self.refused(format!(
            "cannot {action}: the connection was lost during COMMIT and the outcome cannot be \
             read back ({why}); nothing may be sent until it is"
        ))
    }

    fn count_commit(&self, durable: bool) {
        self.stats.commits.fetch_add(1, Ordering::Relaxed);
        if durable {
            self.stats.durable_commits.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// `verify` on a new connection, in its own (read) transaction.
    pub(super) fn read_back<T>(
        &self,
        action: &str,
        verify: &mut dyn FnMut(&mut Conn) -> std::result::Result<Option<T>, Fail>,
    ) -> Result<Option<T>> {
        let mut conn = self.take_conn(action)?;
        match verify(&mut conn) {
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
    pub(super) fn read<T>(
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
}
