//! Group commit: concurrent callers that each need their write on disk share
//! one fsync of the WAL file.
//!
//! Every write of the journal commits with `synchronous=NORMAL`: SQLite
//! appends the transaction's frames to the WAL with `write(2)` and returns
//! without an fsync. Each commit then takes the next number of a commit
//! sequence, under the connection's lock, so the sequence is the order in
//! which the frames reached the WAL. A caller that needs its write durable
//! calls [`GroupCommit::wait`] with its number:
//!
//! - if a barrier already covered it, it returns at once, without an fsync;
//! - if no barrier is running, it becomes the leader: if other calls of
//!   this journal are recording an attempt at that moment (between entering
//!   `record_attempt` and its commit), it waits for them to commit, at most
//!   [`GATHER`]; then it reads the last commit number, fsyncs the WAL file,
//!   publishes that number as durable and wakes everyone waiting. A call
//!   alone never waits;
//! - otherwise it waits for the running barrier and looks again (the
//!   barrier may have started before its commit: then one of the waiters it
//!   did not cover leads the next one).
//!
//! A caller whose write another caller committed (the batch's combiner, in
//! `batch.rs`) is still asleep when its commit is numbered: the combiner
//! makes it a waiter of the running barrier at once ([`GroupCommit::enlist`]),
//! so that it is woken once, covered or to lead the next barrier, instead of
//! once for its result and again for the fsync. With no barrier running,
//! one of them is woken to lead one.
//!
//! The fsync goes to a descriptor of its own on the WAL file. It is an
//! `fdatasync(2)`, which writes every dirty page of the file, whoever wrote
//! it, with the metadata needed to read them back (size, blocks; the WAL is
//! preallocated, so usually none) but not its times, so every frame
//! written before the leader read the commit number (each commit's
//! `write(2)` returned before its number was taken) is on disk when the
//! fsync returns. Frames never leave the WAL without being on disk
//! elsewhere first: a checkpoint fsyncs the WAL before copying frames into
//! the database file and fsyncs the database file before it records them
//! as copied, and the WAL is only rewritten from its start (a restart,
//! which also fsyncs the new header) or truncated once every frame is
//! copied. So a commit the barrier covers is durable whether it is still in
//! the WAL or already in the database file. The WAL file itself is never
//! replaced while a connection is open (SQLite deletes it only when the
//! last connection closes, and the journal keeps its own connection open
//! for as long as it lives), so the descriptor always names the live WAL.
//!
//! A failed fsync fails every caller it was to cover, and every later one:
//! after a failed fsync, Linux may have dropped the dirty pages and a later
//! fsync can succeed without writing them, so this handle never again
//! reports a write durable (the journal must be opened again).

use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

/// The longest a leader waits for calls that are recording an attempt to
/// commit, so that its fsync covers them too. Only when such calls exist.
pub(super) const GATHER: Duration = Duration::from_micros(200);

/// Where the journal's durable write path stands, for the test-only hook
/// of [`SqliteJournal::with_sync_hook`](super::SqliteJournal::with_sync_hook).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncPoint {
    /// A write that must be durable committed (in the WAL, not yet
    /// fsync'd); `seq` is its commit number. Reported by the thread that
    /// committed it, which may be another caller's (writes share
    /// transactions), once per such write.
    Written {
        /// The write's commit number.
        seq: u64,
    },
    /// A leader is about to fsync the WAL. An error returned by the hook
    /// here is taken as the fsync's error (the fsync is not made).
    Fsync,
    /// The leader's fsync returned: every commit numbered up to `covers` is
    /// on disk. Nobody has been told yet.
    Fsynced {
        /// The last commit number the fsync covers.
        covers: u64,
    },
    /// `record_attempt` is about to return: the write numbered `seq` is on
    /// disk, and the caller sends the attempt next.
    Durable {
        /// The write's commit number.
        seq: u64,
    },
}

/// A test-only hook called at every [`SyncPoint`] (e.g. to `SIGKILL` the
/// process there, or to make a barrier fail). Its result matters only at
/// [`SyncPoint::Fsync`].
#[doc(hidden)]
pub type SyncHook = Arc<dyn Fn(SyncPoint) -> io::Result<()> + Send + Sync>;

/// What the journal's group commit has done since it was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DurabilityStats {
    /// fsyncs of the WAL file made by the group commit (failed ones
    /// included; on Linux each is an `fdatasync`). SQLite's own syncs
    /// (checkpoints, WAL restarts) are not counted.
    pub fsyncs: u64,
    /// Writes reported durable to their caller (first attempts of
    /// operations and of resumed calls). With one caller at a time this
    /// equals `fsyncs`; concurrent callers share fsyncs.
    pub durable_writes: u64,
}

pub(super) struct GroupCommit {
    /// A descriptor of the WAL file, used only to fsync it.
    wal: File,
    /// The number of the last commit whose frames are in the WAL.
    committed: AtomicU64,
    /// Calls between entering `record_attempt` and its commit.
    arriving: AtomicUsize,
    /// A leader is waiting for `arriving` to reach 0.
    gathering: AtomicBool,
    state: Mutex<State>,
    wake: Condvar,
    fsyncs: AtomicU64,
    durable_writes: AtomicU64,
}

struct State {
    /// Every commit numbered up to this one is on disk.
    durable: u64,
    /// A barrier is running.
    leading: bool,
    /// Why a barrier failed; once set, nothing more is reported durable.
    failed: Option<String>,
    /// Callers waiting for a running barrier: the commit each waits for,
    /// and its thread, woken directly when covered.
    waiters: Vec<(u64, Thread)>,
}

impl GroupCommit {
    pub(super) fn new(wal: File) -> GroupCommit {
        GroupCommit {
            wal,
            committed: AtomicU64::new(0),
            arriving: AtomicUsize::new(0),
            gathering: AtomicBool::new(false),
            state: Mutex::new(State {
                durable: 0,
                leading: false,
                failed: None,
                waiters: Vec::new(),
            }),
            wake: Condvar::new(),
            fsyncs: AtomicU64::new(0),
            durable_writes: AtomicU64::new(0),
        }
    }

    /// Numbers a commit that has just returned. Called under the
    /// connection's lock, so numbers follow the order of the WAL.
    pub(super) fn committed(&self) -> u64 {
        self.committed.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// A write that may have to be durable is queued (before its
    /// transaction); [`GroupCommit::arrived`] must follow, once.
    pub(super) fn arrive(&self) {
        self.arriving.fetch_add(1, Ordering::SeqCst);
    }

    /// A write counted by [`GroupCommit::arrive`] committed (or failed): a
    /// gathering leader need not wait for it any more.
    pub(super) fn arrived(&self) {
        if self.arriving.fetch_sub(1, Ordering::SeqCst) == 1
            && self.gathering.load(Ordering::SeqCst)
        {
            let _state = self.lock();
            self.wake.notify_all();
        }
    }

    pub(super) fn stats(&self) -> DurabilityStats {
        DurabilityStats {
            fsyncs: self.fsyncs.load(Ordering::Relaxed),
            durable_writes: self.durable_writes.load(Ordering::Relaxed),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every critical section leaves the state consistent (plain stores).
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Makes the callers of the commit numbered `seq` (each its thread and
    /// a flag), asleep with their write's result already in place, waiters
    /// of the running barrier, so that they are woken once: when a barrier
    /// covers them, or to lead the next one. With no barrier running, the
    /// first of them stays out, to be woken now and lead one; once the
    /// commit is covered, or a barrier failed, none is taken. Sets the flag
    /// of each caller taken; each must then [`GroupCommit::wait`] for `seq`
    /// saying so.
    pub(super) fn enlist(&self, seq: u64, callers: &[(&Thread, &AtomicBool)]) {
        let mut state = self.lock();
        if callers.is_empty() || state.durable >= seq || state.failed.is_some() {
            return;
        }
        let skip = usize::from(!state.leading);
        for (thread, enlisted) in &callers[skip..] {
            state.waiters.push((seq, (*thread).clone()));
            enlisted.store(true, Ordering::Release);
        }
    }

    /// Returns once the commit numbered `seq` is on disk, leading a barrier
    /// if none is running; `Err` (why) if the barrier that was to cover it,
    /// or any earlier one, failed. Never waits for anything but a running
    /// fsync. `enlisted`: [`GroupCommit::enlist`] took the caller.
    pub(super) fn wait(
        &self,
        seq: u64,
        hook: Option<&SyncHook>,
        enlisted: bool,
    ) -> Result<(), String> {
        let mut state = self.lock();
        let mut registered = enlisted;
        loop {
            if state.durable >= seq {
                self.durable_writes.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
            if let Some(why) = &state.failed {
                return Err(why.clone());
            }
            if state.leading {
                if !registered {
                    state.waiters.push((seq, thread::current()));
                    registered = true;
                }
                drop(state);
                thread::park();
                state = self.lock();
                continue;
            }
            state.leading = true;
            if self.arriving.load(Ordering::SeqCst) > 0 {
                state = self.gather(state);
            }
            drop(state);
            let mut leading = Leading {
                group: self,
                finished: false,
            };
            let result = self.barrier(hook);
            leading.finished = true;
            state = self.lock();
            state.leading = false;
            match result {
                Ok(covers) => state.durable = state.durable.max(covers),
                Err(why) => {
                    state.failed.get_or_insert(why);
                }
            }
            wake_covered(&mut state);
        }
    }

    /// Waits, at most [`GATHER`], until no call is between entering
    /// `record_attempt` and its commit.
    fn gather<'a>(&'a self, mut state: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        let until = Instant::now() + GATHER;
        self.gathering.store(true, Ordering::SeqCst);
        while self.arriving.load(Ordering::SeqCst) > 0 {
            let now = Instant::now();
            if now >= until {
                break;
            }
            state = self
                .wake
                .wait_timeout(state, until - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        self.gathering.store(false, Ordering::SeqCst);
        state
    }

    /// One fsync of the WAL; the last commit number it covers.
    fn barrier(&self, hook: Option<&SyncHook>) -> Result<u64, String> {
        let fail = |e: io::Error| {
            format!(
                "the fsync of the WAL failed ({e}); this handle reports nothing durable any more: \
                 open the journal again"
            )
        };
        if let Some(hook) = hook {
            hook(SyncPoint::Fsync).map_err(fail)?;
        }
        // Read before the fsync: every commit numbered up to here has
        // written its frames already.
        let covers = self.committed.load(Ordering::SeqCst);
        self.fsyncs.fetch_add(1, Ordering::Relaxed);
        // fdatasync: the frames and whatever metadata reading them back
        // needs (the file's size, its blocks); not its times. The WAL is
        // preallocated (`file::preallocate_wal`), so usually data only.
        self.wal.sync_data().map_err(fail)?;
        if let Some(hook) = hook {
            let _ = hook(SyncPoint::Fsynced { covers });
        }
        Ok(covers)
    }
}

/// Wakes, after a barrier, every waiter it covered (all of them if it
/// failed), and the oldest waiter it did not cover, to lead the next one.
fn wake_covered(state: &mut State) {
    let (durable, failed) = (state.durable, state.failed.is_some());
    let mut next_leader = true;
    state.waiters.retain(|(seq, thread)| {
        if failed || *seq <= durable {
            thread.unpark();
            false
        } else {
            if std::mem::take(&mut next_leader) {
                thread.unpark();
            }
            true
        }
    });
}

/// Ends a barrier that unwound (a panicking hook): its waiters must not
/// wait for ever, and nothing it was to cover may be reported durable.
struct Leading<'a> {
    group: &'a GroupCommit,
    finished: bool,
}

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        if !self.finished {
            let mut state = self.group.lock();
            state.leading = false;
            state
                .failed
                .get_or_insert_with(|| "a barrier of the journal panicked".to_owned());
            wake_covered(&mut state);
        }
    }
}
