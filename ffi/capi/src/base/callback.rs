//! One registered C callback of a client, called with no lock held.
//!
//! A [`CallbackCell`] holds the current registration (function pointer and
//! userdata, both `Copy`). A delivery copies the registration out under the
//! cell's mutex, counts itself as running, releases the mutex and only then
//! calls out; so a callback may re-enter the client (even register again)
//! and other threads of the client never wait for a callback to return.
//!
//! Replacing the registration ([`CallbackCell::set`]) or closing the cell
//! ([`CallbackCell::close`], when the client is freed) waits for the
//! deliveries of older registrations that are still running, so that the
//! caller may free the old userdata once it returns. It never waits when
//! the calling thread is itself inside a payidem callback: that thread
//! would wait for itself (or for another thread waiting for it).

use std::cell::Cell;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

thread_local! {
    /// How many payidem callbacks this thread is running (nested).
    static INSIDE: Cell<usize> = const { Cell::new(0) };
}

/// Whether the calling thread is running a payidem callback.
pub(crate) fn inside_callback() -> bool {
    INSIDE.with(Cell::get) > 0
}

/// A C callback as the caller registered it: its function (`F`, an
/// `unsafe extern "C" fn` taking the userdata first) and its userdata.
#[derive(Clone, Copy)]
pub(crate) struct Registration<F: Copy> {
    pub(crate) function: F,
    pub(crate) userdata: *mut c_void,
}

// SAFETY: the caller promises (in the header) that a registered callback
// and its userdata may be used from any thread calling the client.
unsafe impl<F: Copy> Send for Registration<F> {}
unsafe impl<F: Copy> Sync for Registration<F> {}

impl<F: Copy> CallbackCell<Registration<F>> {
    /// Registers `function` with `userdata` (NULL removes the registration),
    /// as [`CallbackCell::set`] does.
    pub(crate) fn register(&self, function: Option<F>, userdata: *mut c_void) {
        self.set(function.map(|function| Registration { function, userdata }));
    }
}

struct State<T> {
    current: Option<T>,
    /// The registration's number: every `set` and `close` starts a new one.
    generation: u64,
    /// Running deliveries, by the generation they started in.
    running: BTreeMap<u64, usize>,
    closed: bool,
}

/// The current registration of one callback, delivered without a lock.
pub(crate) struct CallbackCell<T: Copy> {
    state: Mutex<State<T>>,
    /// Signalled whenever a delivery ends.
    ended: Condvar,
}

/// One delivery in progress; dropping it ends the delivery.
pub(crate) struct Delivery<'a, T: Copy> {
    cell: &'a CallbackCell<T>,
    generation: u64,
    callback: T,
}

impl<T: Copy> Delivery<'_, T> {
    /// The registration this delivery calls.
    pub(crate) fn callback(&self) -> T {
        self.callback
    }
}

impl<T: Copy> Drop for Delivery<'_, T> {
    fn drop(&mut self) {
        INSIDE.with(|n| n.set(n.get().saturating_sub(1)));
        let mut state = self.cell.lock();
        if let Some(count) = state.running.get_mut(&self.generation) {
            *count -= 1;
            if *count == 0 {
                state.running.remove(&self.generation);
            }
        }
        drop(state);
        self.cell.ended.notify_all();
    }
}

impl<T: Copy> CallbackCell<T> {
    /// An open cell with no registration.
    pub(crate) fn new() -> CallbackCell<T> {
        CallbackCell {
            state: Mutex::new(State {
                current: None,
                generation: 0,
                running: BTreeMap::new(),
                closed: false,
            }),
            ended: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts a delivery of the current registration: `None` when there is
    /// none or the cell is closed. The mutex is released before this
    /// returns; call the callback through [`Delivery::callback`] and drop
    /// the delivery afterwards.
    pub(crate) fn enter(&self) -> Option<Delivery<'_, T>> {
        let mut state = self.lock();
        if state.closed {
            return None;
        }
        let callback = state.current?;
        let generation = state.generation;
        *state.running.entry(generation).or_insert(0) += 1;
        drop(state);
        INSIDE.with(|n| n.set(n.get() + 1));
        Some(Delivery {
            cell: self,
            generation,
            callback,
        })
    }

    /// Runs `call` with the current registration, as one delivery (see
    /// [`CallbackCell::enter`]); does nothing when there is none or the cell
    /// is closed.
    pub(crate) fn deliver(&self, call: impl FnOnce(T)) {
        if let Some(delivery) = self.enter() {
            call(delivery.callback());
            drop(delivery);
        }
    }

    /// Replaces the registration (`None` removes it). Once this returns, no
    /// delivery of an older registration is running or will start, unless
    /// the calling thread is inside a payidem callback (then it does not
    /// wait). A closed cell stays closed and empty.
    pub(crate) fn set(&self, callback: Option<T>) {
        let mut state = self.lock();
        if state.closed {
            return;
        }
        state.current = callback;
        self.bump_and_wait(state);
    }

    /// Removes the registration for good: nothing is delivered any more.
    /// Waits for running deliveries as [`CallbackCell::set`] does.
    pub(crate) fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        state.current = None;
        self.bump_and_wait(state);
    }

    fn bump_and_wait(&self, mut state: MutexGuard<'_, State<T>>) {
        state.generation += 1;
        if inside_callback() {
            return;
        }
        let generation = state.generation;
        let _idle = self
            .ended
            .wait_while(state, |s| s.running.range(..generation).next().is_some())
            .unwrap_or_else(PoisonError::into_inner);
    }
}

/// Test helper: releases a blocked delivery through `release`, then checks
/// that the thread replacing its registration reports through `replaced`
/// (within 30 s) and joins `threads` (the blocked one and the replacing
/// one).
#[cfg(test)]
pub(crate) fn release_and_join(
    release: &std::sync::mpsc::Sender<()>,
    replaced: &std::sync::mpsc::Receiver<()>,
    threads: [std::thread::JoinHandle<()>; 2],
) {
    release.send(()).unwrap();
    replaced
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("the replacement returns once the old delivery ended");
    for thread in threads {
        thread.join().unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::sync::Arc;
    use std::thread;
    use std::time::Duration;

    #[test]
    fn nothing_is_delivered_after_close_and_set_replaces() {
        let cell = CallbackCell::new();
        assert!(cell.enter().is_none());
        cell.set(Some(1u32));
        assert_eq!(cell.enter().map(|d| d.callback()), Some(1));
        cell.set(Some(2));
        assert_eq!(cell.enter().map(|d| d.callback()), Some(2));
        cell.close();
        assert!(cell.enter().is_none());
        cell.set(Some(3));
        assert!(cell.enter().is_none(), "a closed cell stays closed");
    }

    #[test]
    fn no_lock_is_held_during_a_delivery() {
        let cell = CallbackCell::new();
        cell.set(Some(1u32));
        let outer = cell.enter().expect("registered");
        assert!(inside_callback());
        // Re-entering and re-registering from inside a delivery returns.
        assert_eq!(cell.enter().map(|d| d.callback()), Some(1));
        cell.set(Some(2));
        assert_eq!(cell.enter().map(|d| d.callback()), Some(2));
        drop(outer);
        assert!(!inside_callback());
    }

    #[test]
    fn set_waits_for_running_deliveries_of_the_old_registration_only() {
        let cell = Arc::new(CallbackCell::new());
        cell.set(Some(1u32));
        let (entered_tx, entered_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let runner = {
            let cell = Arc::clone(&cell);
            thread::spawn(move || {
                let d = cell.enter().expect("registered");
                entered_tx.send(()).unwrap();
                release_rx.recv().unwrap();
                drop(d);
            })
        };
        entered_rx.recv().unwrap();
        let (set_tx, set_rx) = mpsc::channel();
        let setter = {
            let cell = Arc::clone(&cell);
            thread::spawn(move || {
                cell.set(Some(2));
                set_tx.send(()).unwrap();
            })
        };
        // The setter waits while the old delivery runs ...
        assert!(set_rx.recv_timeout(Duration::from_millis(200)).is_err());
        // ... while new deliveries go on, without waiting for anything.
        thread::sleep(Duration::from_millis(20));
        assert_eq!(cell.enter().map(|d| d.callback()), Some(2));
        release_and_join(&release_tx, &set_rx, [runner, setter]);
    }
}
