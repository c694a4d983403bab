//! The queue of writes waiting for the next shared transaction, and who
//! runs it: the first caller to find no one running a batch becomes the
//! combiner (yielding its CPU once first when it is alone in the queue, so
//! that callers about to write can join) and runs every queued write; the
//! others sleep until their own result is ready, woken one by one directly
//! (no lock is handed from waiter to waiter). A write that must be on disk
//! before its caller returns is handed by the combiner to the group commit
//! instead: its caller stays asleep until an fsync covers it (or until it
//! is to lead one), so it is woken once, not once for its result and again
//! for the fsync. A combiner runs at most [`MAX_PASSES`] batches, then hands
//! the role to the oldest waiting caller, so no caller works for the others
//! without bound.

use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, Thread};

use std::panic::{catch_unwind, AssertUnwindSafe};

use rusqlite::Connection;

use crate::error::{Error, ErrorCode, Result};

use super::group::GroupCommit;
use super::{SqliteJournal, SyncPoint};

/// Batches one combiner runs before it hands the role on.
const MAX_PASSES: usize = 2;

/// A write's work: runs inside the shared transaction, given what the
/// write does (its job's action, for error messages). Returns its value
/// and whether the write must be on disk before its caller returns.
pub(super) type Work = Box<
    dyn FnOnce(&SqliteJournal, &Connection, &str) -> Result<(Box<dyn Any + Send>, bool)> + Send,
>;

/// Runs one of the statements that open, split and end the shared
/// transaction. Each is prepared once per connection and kept in its
/// statement cache: parsing them again for every transaction cost a few
/// microseconds per operation.
fn control(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}

/// An open `BEGIN IMMEDIATE` transaction: rolled back when dropped
/// uncommitted (a failed commit, an unwinding combiner).
struct Open<'c>(&'c Connection);

impl<'c> Open<'c> {
    fn begin(conn: &'c Connection) -> rusqlite::Result<Open<'c>> {
        control(conn, "BEGIN IMMEDIATE")?;
        Ok(Open(conn))
    }

    fn commit(self) -> rusqlite::Result<()> {
        control(self.0, "COMMIT")
    }
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        if !self.0.is_autocommit() {
            // Failing leaves the transaction open, and the next BEGIN
            // reports it (the connection's lock also rolls it back).
            let _ = control(self.0, "ROLLBACK");
        }
    }
}

/// A write that committed.
pub(super) struct Committed {
    value: Box<dyn Any + Send>,
    /// Its caller returns only once an fsync covers it.
    durable: bool,
    /// The commit's number in the group commit's sequence.
    seq: u64,
}

/// A write's result.
pub(super) type Out = Result<Committed>;

/// What [`SqliteJournal::write`] gives back.
pub(super) struct Wrote<T> {
    /// The work's value.
    pub(super) value: T,
    /// The commit's number in the group commit's sequence.
    pub(super) seq: u64,
    /// For a write the work said must be durable: whether an fsync covered
    /// it (`Err`: why not).
    pub(super) synced: Option<std::result::Result<(), String>>,
}

/// One caller's write, queued for the next transaction.
pub(super) struct Job {
    work: Mutex<Option<Work>>,
    /// What the write does, for error messages.
    pub(super) action: String,
    out: Mutex<Option<Out>>,
    done: AtomicBool,
    /// Set when the caller is handed the combiner's role.
    lead: AtomicBool,
    /// Set when the combiner made the caller a waiter of the group commit.
    enlisted: AtomicBool,
    /// The caller counts among the group commit's arriving writes until
    /// its write committed or failed (cleared by whoever says so first).
    arriving: AtomicBool,
    waiter: Thread,
}

impl Job {
    pub(super) fn new(action: &str, arriving: bool, work: Work) -> Arc<Job> {
        Arc::new(Job {
            work: Mutex::new(Some(work)),
            action: action.to_owned(),
            out: Mutex::new(None),
            done: AtomicBool::new(false),
            lead: AtomicBool::new(false),
            enlisted: AtomicBool::new(false),
            arriving: AtomicBool::new(arriving),
            waiter: thread::current(),
        })
    }

    /// The work, once: `None` if it was already taken.
    pub(super) fn take_work(&self) -> Option<Work> {
        relock(&self.work).take()
    }

    /// Leaves the result without waking the caller: the group commit will.
    fn leave(&self, out: Out) {
        *relock(&self.out) = Some(out);
        self.done.store(true, Ordering::Release);
    }

    /// Ends the write's count among the group commit's arriving writes,
    /// once whoever calls it.
    fn arrived(&self, group: &GroupCommit) {
        if self.arriving.swap(false, Ordering::AcqRel) {
            group.arrived();
        }
    }

    /// The result, once it is there.
    pub(super) fn take_out(&self) -> Option<Out> {
        relock(&self.out).take()
    }

    fn is_done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }
}

/// Writes waiting for a transaction, and whether a combiner is running.
#[derive(Default)]
pub(super) struct Pending {
    jobs: Vec<Arc<Job>>,
    combining: bool,
}

fn relock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Fields are only replaced whole: consistent even after a panic.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How many writes wait for a transaction.
#[cfg(test)]
pub(super) fn queued(pending: &Mutex<Pending>) -> usize {
    relock(pending).jobs.len()
}

/// Runs a batch: the connection, its jobs, and the combiner's own job.
type RunBatch<'a, G> = dyn Fn(G, Vec<Arc<Job>>, &Job) + 'a;

/// Runs `job` in a shared transaction, as combiner or by waiting for one.
/// A combiner takes the connection with `lock`, then every write queued by
/// then, and `run`s them as one batch (completing each; given its own job).
/// Returns when `job` is complete.
pub(super) fn submit<G>(
    pending: &Mutex<Pending>,
    job: &Arc<Job>,
    lock: &dyn Fn() -> G,
    run: &RunBatch<'_, G>,
) {
    let lead = {
        let mut p = relock(pending);
        p.jobs.push(Arc::clone(job));
        !std::mem::replace(&mut p.combining, true)
    };
    if lead {
        combine(pending, job, lock, run);
    }
    while !job.is_done() {
        if job.lead.swap(false, Ordering::AcqRel) {
            combine(pending, job, lock, run);
            continue;
        }
        thread::park();
    }
}

/// The combiner's loop: batches until the queue is empty, or hands the role
/// to the oldest waiter once `own` is complete and [`MAX_PASSES`] ran.
fn combine<G>(pending: &Mutex<Pending>, own: &Job, lock: &dyn Fn() -> G, run: &RunBatch<'_, G>) {
    let mut role = Role {
        pending,
        released: false,
    };
    let mut passes = 0;
    // A caller alone in the queue first lets the threads waiting for its
    // CPU run (`yield_now` returns at once when none is): those about to
    // write join this transaction instead of each opening the next one.
    // A lone caller loses one system call; with many callers a
    // transaction carries several writes, which share its locks, WAL
    // frames and commit.
    if relock(pending).jobs.len() == 1 {
        thread::yield_now();
    }
    loop {
        // Writes queued while the connection was busy join this batch.
        let conn = lock();
        let jobs = {
            let mut p = relock(pending);
            if p.jobs.is_empty() {
                p.combining = false;
                role.released();
                return;
            }
            if own.is_done() && passes >= MAX_PASSES {
                let next = Arc::clone(&p.jobs[0]);
                drop(p);
                role.released();
                next.lead.store(true, Ordering::Release);
                next.waiter.unpark();
                return;
            }
            std::mem::take(&mut p.jobs)
        };
        run(conn, jobs, own);
        passes += 1;
    }
}

/// Ends a write's count among the group commit's arriving writes when its
/// caller stops waiting for it, if its combiner did not (even unwinding).
struct Arrival<'a>(&'a GroupCommit, &'a Job);

impl Drop for Arrival<'_> {
    fn drop(&mut self) {
        self.1.arrived(self.0);
    }
}

/// Gives the combiner's role up if the combiner unwinds, so that queued
/// writes are not left without one.
struct Role<'a> {
    pending: &'a Mutex<Pending>,
    released: bool,
}

impl Role<'_> {
    fn released(&mut self) {
        self.released = true;
    }
}

impl Drop for Role<'_> {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        let mut p = relock(self.pending);
        match p.jobs.first() {
            Some(next) => {
                next.lead.store(true, Ordering::Release);
                next.waiter.unpark();
            }
            None => p.combining = false,
        }
    }
}

impl SqliteJournal {
    /// Runs `f` in a `BEGIN IMMEDIATE` transaction committed with
    /// `synchronous=NORMAL` (in the WAL, not fsync'd); nothing of `f` is
    /// written if it fails. `f` gives its value and whether the write must
    /// be on disk before this returns; then this returns once an fsync
    /// covered it, or failed to (`synced`). `f` is given `action` back (held
    /// once, by the queued write). `may_sync`: `f` may ask for an fsync (the
    /// group commit's leader then waits for this write to commit before it
    /// fsyncs, so as to cover it).
    ///
    /// Writes of concurrent callers share transactions: a caller queues its
    /// work, then takes the connection; whoever takes it runs every queued
    /// work in one transaction (each in its own savepoint, so one caller's
    /// failure rolls back only its own changes) and commits once, and the
    /// callers whose work it ran find their results when they get the
    /// connection in turn. A caller alone runs its work in its own
    /// transaction, exactly as without batching.
    pub(super) fn write<T: Send + 'static>(
        &self,
        action: &str,
        may_sync: bool,
        f: impl FnOnce(&SqliteJournal, &Connection, &str) -> Result<(T, bool)> + Send + 'static,
    ) -> Result<Wrote<T>> {
        if may_sync {
            self.group.arrive();
        }
        let job = Job::new(
            action,
            may_sync,
            Box::new(move |j: &SqliteJournal, tx: &Connection, action: &str| {
                f(j, tx, action).map(|(v, durable)| (Box::new(v) as Box<dyn Any + Send>, durable))
            }),
        );
        let arrival = Arrival(&self.group, &job);
        submit(&self.pending, &job, &|| self.lock(), &|conn, jobs, own| {
            self.run_batch(conn, jobs, own)
        });
        drop(arrival);
        let Committed {
            value,
            durable,
            seq,
        } = job.take_out().ok_or_else(|| {
            Error::new(
                ErrorCode::Internal,
                format!(
                    "journal {}: cannot {action}: the write was lost by its batch",
                    self.ctx.path
                ),
            )
        })??;
        // Before anything else: the combiner may have made this caller the
        // one to lead the next fsync.
        let synced = durable.then(|| {
            let enlisted = job.enlisted.load(Ordering::Acquire);
            self.group.wait(seq, self.hook.as_ref(), enlisted)
        });
        match value.downcast::<T>() {
            Ok(value) => Ok(Wrote {
                value: *value,
                seq,
                synced,
            }),
            Err(_) => Err(Error::new(
                ErrorCode::Internal,
                format!(
                    "journal {}: cannot {action}: a result of another type came back",
                    self.ctx.path
                ),
            )),
        }
    }

    /// Runs `jobs` in one transaction under the connection's lock, then
    /// releases the lock and leaves each job's result in it: waking the
    /// callers (a system call each) is no part of the time the connection
    /// is held. A caller whose write must be durable, other than `own`'s
    /// (the combiner's, awake), is woken only by the group commit when an
    /// fsync covers it, unless no fsync is running: then the first such
    /// caller is woken now, to lead one.
    fn run_batch(&self, conn: MutexGuard<'_, Connection>, jobs: Vec<Arc<Job>>, own: &Job) {
        let outs = self.run_locked(&conn, &jobs);
        drop(conn);
        let mut seq = 0;
        let mut sleepers = Vec::new();
        for (job, out) in jobs.iter().zip(outs) {
            if let Ok(c) = &out {
                if c.durable {
                    seq = c.seq;
                    self.at(SyncPoint::Written { seq });
                    if !std::ptr::eq(&**job, own) {
                        sleepers.push((&job.waiter, &job.enlisted));
                    }
                }
            }
            // Every result is in place before any caller can be woken.
            job.leave(out);
        }
        self.group.enlist(seq, &sleepers);
        for job in &jobs {
            job.arrived(&self.group);
            if !job.enlisted.load(Ordering::Acquire) {
                job.waiter.unpark();
            }
        }
    }

    /// Runs `jobs` in one transaction on `conn`; each job's result, in
    /// order.
    fn run_locked(&self, conn: &Connection, jobs: &[Arc<Job>]) -> Vec<Out> {
        let fail_all = |e: &rusqlite::Error| -> Vec<Out> {
            jobs.iter()
                .map(|job| Err(self.ctx.db_ref(&job.action, e)))
                .collect()
        };
        let tx = match Open::begin(conn) {
            Ok(tx) => tx,
            Err(e) => return fail_all(&e),
        };
        let alone = jobs.len() == 1;
        let mut results: Vec<Result<(Box<dyn Any + Send>, bool)>> = Vec::with_capacity(jobs.len());
        for job in jobs {
            let action = &job.action;
            let Some(work) = job.take_work() else {
                results.push(Err(Error::new(
                    ErrorCode::Internal,
                    format!(
                        "journal {}: cannot {action}: its work was already taken",
                        self.ctx.path
                    ),
                )));
                continue;
            };
            if !alone {
                if let Err(e) = control(conn, "SAVEPOINT payidem_write") {
                    results.push(Err(self.ctx.db(action, e)));
                    continue;
                }
            }
            let result = catch_unwind(AssertUnwindSafe(|| work(self, conn, action)))
                .unwrap_or_else(|_| {
                    Err(Error::new(
                        ErrorCode::Internal,
                        format!(
                            "journal {}: cannot {action}: the write panicked",
                            self.ctx.path
                        ),
                    ))
                });
            if !alone {
                let end = if result.is_ok() {
                    control(conn, "RELEASE payidem_write")
                } else {
                    control(conn, "ROLLBACK TO payidem_write")
                        .and_then(|()| control(conn, "RELEASE payidem_write"))
                };
                if let Err(e) = end {
                    // The transaction's state is unknown: write nothing.
                    drop(tx);
                    return fail_all(&e);
                }
            }
            results.push(result);
        }
        let seq = if results.iter().any(Result::is_ok) {
            if let Err(e) = tx.commit() {
                return fail_all(&e);
            }
            self.group.committed()
        } else {
            // Nothing to keep (a failed work may have written before it
            // failed): roll back.
            drop(tx);
            0
        };
        results
            .into_iter()
            .map(|result| {
                result.map(|(value, durable)| Committed {
                    value,
                    durable,
                    seq,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::Lease;
    use crate::journal::{Journal, Opened};
    use crate::operation::FrozenOperation;
    use std::time::Duration;
    use std::time::Instant;

    fn op(order_id: &str) -> FrozenOperation {
        FrozenOperation {
            order_id: order_id.into(),
            idempotency_key: format!("key-{order_id}"),
            method: "POST".into(),
            path: "/payments".into(),
            body: b"{}".to_vec(),
            body_sha256: crate::protocol::body_sha256_hex(b"{}"),
            status_path: None,
        }
    }

    fn lease(owner: &str) -> Lease {
        Lease {
            owner: owner.into(),
            expires_at: 1_000,
        }
    }

    /// Queued writes of several callers run in one transaction; one that
    /// fails leaves the others' changes in place and its own out.
    #[test]
    fn one_failing_write_in_a_batch_changes_only_itself() {
        let (_dir, journal) = crate::journal::sqlite::tests::temp_journal();
        journal.open(&op("taken"), &lease("a"), 10).unwrap();
        let held = journal.lock();
        std::thread::scope(|s| {
            let mut callers = Vec::new();
            for i in 0..4 {
                let journal = &journal;
                callers.push(s.spawn(move || {
                    journal.open(&op(&format!("new-{i}")), &lease(&format!("o{i}")), 10)
                }));
            }
            // Another owner's lease is live: this open fails with
            // operation_busy, after its read, inside the batch.
            let journal_ref = &journal;
            let busy = s.spawn(move || journal_ref.open(&op("taken"), &lease("b"), 11));
            let started = Instant::now();
            while queued(&journal.pending) < 5 {
                assert!(
                    started.elapsed() < Duration::from_secs(10),
                    "callers never queued"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
            let before = journal.group.committed();
            drop(held);
            for caller in callers {
                assert!(matches!(caller.join().unwrap(), Ok(Opened::Created(_))));
            }
            let e = busy.join().unwrap().unwrap_err();
            assert_eq!(e.code(), ErrorCode::OperationBusy);
            // One transaction for all five: one commit between the two
            // readings (each reading numbers a commit of its own).
            assert_eq!(journal.group.committed(), before + 2);
        });
        for i in 0..4 {
            assert!(journal.get(&format!("new-{i}")).unwrap().is_some());
        }
    }
}
