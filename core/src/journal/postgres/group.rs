//! Group commit: the writes of concurrent callers of one
//! [`PostgresJournal`] share one transaction and one COMMIT. The journal
//! queues only its durable writes here (those need a WAL flush to share);
//! the others run alone (`PostgresJournal::run_alone`).
//!
//! A caller queues its write as a [`Job`]; whoever finds fewer than
//! [`MAX_RUNNING`] groups running becomes a combiner: it takes every queued
//! job, runs their bodies one after the other in one transaction on one
//! connection, commits once and completes each job. A group holds either
//! only writes that must be durable (committed with `synchronous_commit`
//! on) or only writes that need not be, so that these never wait for a
//! WAL flush; a caller whose job is still queued
//! leads the next group. Callers are answered only after that COMMIT returned, so a write
//! reported durable is on the server's disk.
//!
//! A body checks everything before it writes anything (the engine's rule),
//! so a body refused by the journal (busy, lost lease…) leaves nothing in
//! the shared transaction and is answered at once. A database error in a
//! body aborts the whole transaction: it is rolled back, that body's
//! caller gets `journal_error` (or, for a lost connection, a deadlock or
//! a serialization failure, it runs again), and every other body runs
//! again in a new transaction. A COMMIT that fails fails every caller in
//! the group with `journal_error`; a connection lost during the COMMIT is
//! read back for each caller before anything is decided.

use std::any::Any;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use super::pool::Fail;
use super::{Conn, PostgresJournal};
use crate::error::Result;
use crate::journal::engine::NewRow;

/// The most writes one transaction carries.
const MAX_GROUP: usize = 64;

/// The most groups of one journal running at once (each on its own
/// connection): while one waits for its COMMIT's WAL flush, the next runs
/// its statements, and the server flushes their commits together.
const MAX_RUNNING: usize = 4;

/// The most groups of durable writes running at once: the writes that
/// arrive while they run wait and share the next one.
const MAX_DURABLE: usize = 2;

/// The durable writes that must be waiting before a durable group starts
/// beside one already running: fewer wait for it and share the next one
/// (fewer, larger groups: fewer WAL flushes; on a busy server the second
/// group still overlaps the first one's flush). A group's new rows are one
/// INSERT whatever their number, so a larger group costs its callers no
/// more round trips: 8 (4 before) keeps 16 callers under 0.2 WAL flushes
/// per operation at the same throughput (BENCHMARKS.md, #26 session 5).
const SECOND_DURABLE_GROUP: usize = 8;

/// The most writes that need no WAL flush (a call's end, a later attempt
/// of a lease already durable) running at once, each alone on its
/// connection: more wait for one of them to end. More server processes
/// writing at once than the server has CPUs for only contend for them
/// and for the same index pages: at 16 callers on two CPUs this limit
/// gave 14–19 % more operations per second than none (BENCHMARKS.md,
/// #26 session 11).
pub(super) const MAX_ALONE: usize = 4;

/// The writes running alone now, at most [`MAX_ALONE`].
#[derive(Default)]
pub(super) struct AloneSlots {
    taken: Mutex<usize>,
    freed: Condvar,
}

/// One of [`AloneSlots`], given back when dropped (even by a write that
/// unwinds).
pub(super) struct AloneSlot<'a>(&'a AloneSlots);

impl AloneSlots {
    /// Waits for a free slot and takes it.
    pub(super) fn take(&self) -> AloneSlot<'_> {
        let mut taken = relock(&self.taken);
        while *taken >= MAX_ALONE {
            taken = self
                .freed
                .wait(taken)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *taken += 1;
        AloneSlot(self)
    }
}

impl Drop for AloneSlot<'_> {
    fn drop(&mut self) {
        *relock(&self.0.taken) -= 1;
        self.0.freed.notify_one();
    }
}

/// A body's value, whatever its type.
pub(super) type Value = Box<dyn Any + Send>;

/// A write's body: runs inside the shared transaction.
pub(super) type Run =
    Box<dyn FnMut(&PostgresJournal, &mut Conn) -> std::result::Result<Value, Fail> + Send>;

/// How to tell after a lost COMMIT whether the write was committed
/// (`Some`: its value) or not (`None`: run it again).
pub(super) type Verify =
    Box<dyn FnMut(&PostgresJournal, &mut Conn) -> std::result::Result<Option<Value>, Fail> + Send>;

/// What a job ended with.
enum Outcome {
    Done(Result<Value>),
    Panicked(Box<dyn Any + Send>),
}

/// One caller's write.
pub(super) struct Job {
    /// What the write does, for error messages.
    pub(super) action: String,
    /// Whether it must be on disk before its caller is answered.
    pub(super) durable: bool,
    /// The row its body inserts first, if any: a group inserts its jobs'
    /// rows in one statement before it runs their bodies.
    pub(super) insert: Option<NewRow>,
    run: Mutex<Run>,
    verify: Mutex<Verify>,
    out: Mutex<Option<Outcome>>,
    /// Wakes its caller (waiting with the queue's lock): its answer is
    /// in, or it may lead the next group.
    wake: Condvar,
}

fn relock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Fields are only replaced whole: consistent even after a panic.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Job {
    pub(super) fn new(
        action: &str,
        durable: bool,
        insert: Option<NewRow>,
        run: Run,
        verify: Verify,
    ) -> Arc<Job> {
        Arc::new(Job {
            action: action.to_owned(),
            durable,
            insert,
            run: Mutex::new(run),
            verify: Mutex::new(verify),
            out: Mutex::new(None),
            wake: Condvar::new(),
        })
    }

    /// Runs the body; a panic is kept for the caller's own thread.
    pub(super) fn run(
        &self,
        j: &PostgresJournal,
        conn: &mut Conn,
    ) -> std::result::Result<std::result::Result<Value, Fail>, Box<dyn Any + Send>> {
        let mut run = relock(&self.run);
        catch_unwind(AssertUnwindSafe(|| (*run)(j, conn)))
    }

    /// Reads back whether the write was committed.
    pub(super) fn verify(
        &self,
        j: &PostgresJournal,
        conn: &mut Conn,
    ) -> std::result::Result<Option<Value>, Fail> {
        let mut verify = relock(&self.verify);
        match catch_unwind(AssertUnwindSafe(|| (*verify)(j, conn))) {
            Ok(found) => found,
            Err(panic) => {
                self.complete_panic(panic);
                Err(Fail::Journal(crate::error::Error::new(
                    crate::error::ErrorCode::Journal,
                    "journal: a read-back panicked",
                )))
            }
        }
    }

    /// Answers the caller (the first answer stays).
    pub(super) fn complete(&self, result: Result<Value>) {
        relock(&self.out).get_or_insert(Outcome::Done(result));
    }

    pub(super) fn complete_panic(&self, panic: Box<dyn Any + Send>) {
        relock(&self.out).get_or_insert(Outcome::Panicked(panic));
    }

    pub(super) fn is_done(&self) -> bool {
        relock(&self.out).is_some()
    }
}

/// Writes waiting for a transaction, and whether a group is running.
/// Each caller waits on its own job's condition variable: the end of a
/// group wakes only the callers it answered and those who may lead next.
#[derive(Default)]
pub(super) struct Groups {
    queue: Mutex<Queue>,
}

#[derive(Default)]
struct Queue {
    jobs: Vec<Arc<Job>>,
    /// Groups running now: of writes that need not be durable, and of
    /// those that must.
    running: [usize; 2],
}

impl Queue {
    /// The kind (durable or not) of the next group that may start now:
    /// the oldest queued job's whose kind has room, if any.
    fn next_kind(&self) -> Option<bool> {
        self.jobs
            .iter()
            .map(|job| job.durable)
            .find(|&durable| self.has_room(durable))
    }

    fn has_room(&self, durable: bool) -> bool {
        let limits = [MAX_RUNNING, MAX_DURABLE];
        let running = self.running[usize::from(durable)];
        let beside = durable && running > 0;
        running < limits[usize::from(durable)]
            && (!beside || self.jobs.iter().filter(|j| j.durable).count() >= SECOND_DURABLE_GROUP)
    }

    /// Wakes the oldest queued caller of each kind that has room, to lead.
    fn wake_leaders(&self) {
        for durable in [false, true] {
            if !self.has_room(durable) {
                continue;
            }
            if let Some(job) = self.jobs.iter().find(|job| job.durable == durable) {
                job.wake.notify_one();
            }
        }
    }
}

impl Groups {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        relock(&self.queue)
    }

    /// Runs `job` in a shared transaction, leading groups (`run_group`)
    /// while it waits and no other caller leads one; returns its result
    /// (a panic of its body is resumed here, in its caller's thread).
    pub(super) fn submit(
        &self,
        job: &Arc<Job>,
        run_group: &dyn Fn(Vec<Arc<Job>>),
    ) -> Result<Value> {
        let mut queue = self.lock();
        queue.jobs.push(Arc::clone(job));
        loop {
            if let Some(out) = relock(&job.out).take() {
                return match out {
                    Outcome::Done(result) => result,
                    Outcome::Panicked(panic) => resume_unwind(panic),
                };
            }
            let durable = match queue.next_kind() {
                Some(durable) => durable,
                None => {
                    queue = job.wake.wait(queue).unwrap_or_else(PoisonError::into_inner);
                    continue;
                }
            };
            queue.running[usize::from(durable)] += 1;
            // Writes that need no flush never wait for one: a group holds
            // one kind only.
            let mut jobs = Vec::new();
            queue.jobs.retain(|job| {
                let take = job.durable == durable && jobs.len() < MAX_GROUP;
                if take {
                    jobs.push(Arc::clone(job));
                }
                !take
            });
            // Jobs left over (past MAX_GROUP, or of the other kind) get a
            // leader of their own where there is room.
            queue.wake_leaders();
            drop(queue);
            let leading = Leading {
                groups: self,
                durable,
                jobs: jobs.clone(),
            };
            run_group(jobs);
            drop(leading);
            queue = self.lock();
        }
    }
}

/// Ends a group, even one that unwound: the next caller may lead, and no
/// job of it is left without an answer.
struct Leading<'a> {
    groups: &'a Groups,
    durable: bool,
    jobs: Vec<Arc<Job>>,
}

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        for job in &self.jobs {
            if !job.is_done() {
                job.complete(Err(crate::error::Error::new(
                    crate::error::ErrorCode::Journal,
                    format!(
                        "journal: cannot {}: the group commit running it failed",
                        job.action
                    ),
                )));
            }
        }
        let mut queue = self.groups.lock();
        queue.running[usize::from(self.durable)] -= 1;
        // Under the queue's lock: a caller checks its answer and starts
        // waiting with it held, so no wake-up is lost.
        for job in &self.jobs {
            job.wake.notify_one();
        }
        queue.wake_leaders();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    fn job(durable: bool) -> Arc<Job> {
        let run: Run = Box::new(|_, _| unreachable!("the test's groups run no body"));
        let verify: Verify = Box::new(|_, _| unreachable!("the test's groups read nothing back"));
        Job::new("test", durable, None, run, verify)
    }

    /// A durable group starts beside a running one only when enough
    /// durable writes wait; never more than the limit.
    #[test]
    fn a_second_durable_group_waits_for_enough_writes() {
        let mut queue = Queue::default();
        queue.jobs.push(job(true));
        assert!(queue.has_room(true), "none running: a lone write leads");
        queue.running[1] = 1;
        assert!(!queue.has_room(true), "one running: a lone write waits");
        queue.jobs.push(job(false));
        assert!(
            !queue.has_room(true),
            "writes of the other kind do not count"
        );
        assert!(queue.has_room(false));
        for _ in 1..SECOND_DURABLE_GROUP {
            queue.jobs.push(job(true));
        }
        assert!(queue.has_room(true));
        queue.running[1] = MAX_DURABLE;
        assert!(!queue.has_room(true));
    }

    /// Runs `body(i)` for `i` in `0..threads`, each on a thread of its
    /// own, all at once; fails when one has not ended within a minute (it
    /// waits for a wake-up that never comes) or unwound.
    fn on_threads(threads: usize, body: impl Fn(usize) + Send + Sync + 'static) {
        let body = Arc::new(body);
        let (done, finished) = mpsc::channel();
        for i in 0..threads {
            let (body, done) = (Arc::clone(&body), done.clone());
            std::thread::spawn(move || {
                let checked = catch_unwind(AssertUnwindSafe(|| body(i)));
                done.send(checked.is_ok()).unwrap();
            });
        }
        for _ in 0..threads {
            let checked = finished
                .recv_timeout(Duration::from_secs(60))
                .expect("every thread ends (none waits for a lost wake-up)");
            assert!(checked, "a thread's checks failed (its panic is above)");
        }
    }

    /// Many callers, both kinds: every caller gets its own answer (none
    /// waits forever for a wake-up), and no more groups of a kind run at
    /// once than its limit.
    #[test]
    fn every_caller_is_answered_and_the_limits_hold() {
        let groups = Arc::new(Groups::default());
        let running = [AtomicUsize::new(0), AtomicUsize::new(0)];
        let most = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
        let m = Arc::clone(&most);
        on_threads(24, move |caller| {
            for write in 0..150 {
                let durable = (caller + write) % 3 == 0;
                let job = job(durable);
                let run_group = |jobs: Vec<Arc<Job>>| {
                    let kind = usize::from(jobs[0].durable);
                    assert!(jobs.iter().all(|j| j.durable == jobs[0].durable));
                    assert!(jobs.len() <= MAX_GROUP);
                    let now = running[kind].fetch_add(1, Ordering::SeqCst) + 1;
                    m[kind].fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_micros(50));
                    running[kind].fetch_sub(1, Ordering::SeqCst);
                    for (i, job) in jobs.iter().enumerate() {
                        job.complete(Ok(Box::new(i)));
                    }
                };
                let answer = groups.submit(&job, &run_group).expect("answered");
                assert!(answer.downcast::<usize>().is_ok());
            }
        });
        assert!(most[0].load(Ordering::SeqCst) <= MAX_RUNNING);
        assert!(most[1].load(Ordering::SeqCst) <= MAX_DURABLE);
    }

    /// Writes running alone: never more than the limit at once, the limit
    /// reached under load, and every writer gets a slot (one that unwinds
    /// gives its slot back).
    #[test]
    fn at_most_max_alone_writes_run_at_once() {
        let slots = Arc::new(AloneSlots::default());
        let most = Arc::new(AtomicUsize::new(0));
        let (s, m, running) = (Arc::clone(&slots), Arc::clone(&most), AtomicUsize::new(0));
        on_threads(12, move |writer| {
            for write in 0..50 {
                let unwound = catch_unwind(AssertUnwindSafe(|| {
                    let _slot = s.take();
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    m.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_micros(200));
                    running.fetch_sub(1, Ordering::SeqCst);
                    assert!(write % 10 != 9 || writer % 2 == 0, "a write that unwinds");
                }));
                assert_eq!(unwound.is_err(), write % 10 == 9 && writer % 2 == 1);
            }
        });
        assert_eq!(most.load(Ordering::SeqCst), MAX_ALONE);
        assert_eq!(*relock(&slots.taken), 0);
    }
}
