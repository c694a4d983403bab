//! The queue of writes waiting for the next shared transaction, and who
//! runs it: the first caller to find no one running a batch becomes the
//! combiner and runs every queued write; the others sleep until their own
//! result is ready, woken one by one directly (no lock is handed from
//! waiter to waiter). A combiner runs at most [`MAX_PASSES`] batches, then
//! hands the role to the oldest waiting caller, so no caller works for the
//! others without bound.

use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, Thread};

use rusqlite::Transaction;

use crate::error::Result;

use super::SqliteJournal;

/// Batches one combiner runs before it hands the role on.
const MAX_PASSES: usize = 2;

/// A write's work: runs inside the shared transaction.
pub(super) type Work =
    Box<dyn FnOnce(&SqliteJournal, &Transaction<'_>) -> Result<Box<dyn Any + Send>> + Send>;

/// A write's result and the commit's number in the group commit's sequence.
pub(super) type Out = Result<(Box<dyn Any + Send>, u64)>;

/// One caller's write, queued for the next transaction.
pub(super) struct Job {
    work: Mutex<Option<Work>>,
    /// What the write does, for error messages.
    pub(super) action: String,
    out: Mutex<Option<Out>>,
    done: AtomicBool,
    /// Set when the caller is handed the combiner's role.
    lead: AtomicBool,
    waiter: Thread,
}

impl Job {
    pub(super) fn new(action: &str, work: Work) -> Arc<Job> {
        Arc::new(Job {
            work: Mutex::new(Some(work)),
            action: action.to_owned(),
            out: Mutex::new(None),
            done: AtomicBool::new(false),
            lead: AtomicBool::new(false),
            waiter: thread::current(),
        })
    }

    /// The work, once: `None` if it was already taken.
    pub(super) fn take_work(&self) -> Option<Work> {
        relock(&self.work).take()
    }

    /// Leaves the result and wakes the caller.
    pub(super) fn complete(&self, out: Out) {
        *relock(&self.out) = Some(out);
        self.done.store(true, Ordering::Release);
        self.waiter.unpark();
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

/// Runs `job` in a shared transaction, as combiner or by waiting for one.
/// A combiner takes the connection with `lock`, then every write queued by
/// then, and `run`s them as one batch (completing each). Returns when `job`
/// is complete.
pub(super) fn submit<G>(
    pending: &Mutex<Pending>,
    job: &Arc<Job>,
    lock: &dyn Fn() -> G,
    run: &dyn Fn(G, Vec<Arc<Job>>),
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
fn combine<G>(
    pending: &Mutex<Pending>,
    own: &Job,
    lock: &dyn Fn() -> G,
    run: &dyn Fn(G, Vec<Arc<Job>>),
) {
    let mut role = Role {
        pending,
        released: false,
    };
    let mut passes = 0;
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
        run(conn, jobs);
        passes += 1;
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
