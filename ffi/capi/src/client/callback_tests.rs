//! Tests of the client's C callbacks: nothing fires after the client is
//! freed, nothing of a freed client survives, and no lock is held while a
//! callback runs (re-entry and a blocked callback deadlock nothing).

use std::ffi::{c_char, c_void};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use crate::base::callback::release_and_join;
use crate::base::enums::{payidem_result, payidem_step_type};
use crate::client::call::*;
use crate::client::events::payidem_client_set_event_json_callback;
use crate::client::*;
use crate::fixtures::{begin, call_step, client};
use crate::metrics::payidem_client_metrics;
use crate::operation::step::*;
use crate::payidem_attempt_outcome;

fn step_kind(call: *mut payidem_call) -> u32 {
    let step = call_step(call);
    let kind = unsafe { payidem_step_kind(step) };
    unsafe { payidem_step_free(step) };
    kind
}

/// Sends the call's attempt and reports a 201: the call ends succeeded.
fn drive_to_success(call: *mut payidem_call) {
    assert_eq!(step_kind(call), payidem_step_type::PAYIDEM_STEP_SEND as u32);
    let rc = unsafe {
        payidem_call_report(
            call,
            payidem_attempt_outcome::PAYIDEM_ATTEMPT_RESPONSE as u32,
            201,
            ptr::null(),
            0,
            b"{}".as_ptr(),
            2,
            ptr::null(),
            ptr::null_mut(),
        )
    };
    assert_eq!(rc, payidem_result::PAYIDEM_OK);
    assert_eq!(step_kind(call), payidem_step_type::PAYIDEM_STEP_END as u32);
}

/// One whole call of `order` on `c`: begin, a 201, free.
fn pay(c: *const payidem_client, order: &str) {
    let call = begin(c, order);
    drive_to_success(call);
    unsafe { payidem_call_free(call) };
}

unsafe extern "C" fn count_attempt(userdata: *mut c_void, _: *const payidem_attempt_event) {
    (*userdata.cast::<AtomicUsize>()).fetch_add(1, Ordering::SeqCst);
}

unsafe extern "C" fn count_json(userdata: *mut c_void, _: *const c_char) {
    (*userdata.cast::<AtomicUsize>()).fetch_add(1, Ordering::SeqCst);
}

fn register(c: *const payidem_client, attempts: &AtomicUsize, json: &AtomicUsize) {
    unsafe {
        payidem_client_set_event_callback(
            c,
            Some(count_attempt),
            ptr::from_ref(attempts).cast_mut().cast(),
        );
        payidem_client_set_event_json_callback(
            c,
            Some(count_json),
            ptr::from_ref(json).cast_mut().cast(),
        );
    }
}

#[test]
fn a_call_that_outlives_its_client_fires_none_of_its_callbacks() {
    let (attempts, json) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let a = client("");
    register(a, &attempts, &json);
    // The callbacks work while the client lives: one attempt, one end.
    pay(a, "ord-live");
    assert_eq!(attempts.load(Ordering::SeqCst), 1);
    assert_eq!(json.load(Ordering::SeqCst), 2);

    let call = begin(a, "ord-orphan");
    unsafe { payidem_client_free(a) };
    // The attempt's event and the call's end come after the free.
    drive_to_success(call);
    unsafe { payidem_call_free(call) };
    assert_eq!(attempts.load(Ordering::SeqCst), 1, "attempt after free");
    assert_eq!(json.load(Ordering::SeqCst), 2, "JSON event after free");

    // A new client (often at the freed one's address) starts with none,
    // and its own callbacks never reach the old client's userdata.
    let (b_attempts, b_json) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let b = client("");
    pay(b, "ord-b1");
    register(b, &b_attempts, &b_json);
    let old_call = {
        let a2 = client("");
        register(a2, &attempts, &json);
        let call = begin(a2, "ord-a2");
        unsafe { payidem_client_free(a2) };
        call
    };
    pay(b, "ord-b2");
    drive_to_success(old_call);
    unsafe { payidem_call_free(old_call) };
    assert_eq!(b_attempts.load(Ordering::SeqCst), 1);
    assert_eq!(b_json.load(Ordering::SeqCst), 2);
    assert_eq!(attempts.load(Ordering::SeqCst), 1);
    assert_eq!(json.load(Ordering::SeqCst), 2);
    unsafe { payidem_client_free(b) };
}

#[test]
fn nothing_of_a_freed_client_survives_1000_create_free_cycles() {
    let (attempts, json) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let mut seen = std::collections::HashSet::new();
    let mut reused = 0;
    for _ in 0..1000 {
        let c = client("");
        if !seen.insert(c as usize) {
            reused += 1;
        }
        // Whatever lived at this address before, the new client has no
        // callback of its own yet.
        let (events, json_events) = unsafe { (&(*c).callback, &(*c).json_callback) };
        assert!(events.enter().is_none() && json_events.enter().is_none());
        register(c, &attempts, &json);
        let weak = (Arc::downgrade(events), Arc::downgrade(json_events));
        unsafe { payidem_client_free(c) };
        // Freed with the client: no registry keeps a slot per address.
        assert!(weak.0.upgrade().is_none() && weak.1.upgrade().is_none());
    }
    eprintln!("{reused} of 1000 clients reused a freed client's address");

    // With a call outstanding, the registrations live on (closed) only
    // until the call is freed.
    let c = client("");
    register(c, &attempts, &json);
    let weak = unsafe { Arc::downgrade(&(*c).callback) };
    let call = begin(c, "ord-held");
    unsafe { payidem_client_free(c) };
    assert!(weak.upgrade().is_some_and(|cell| cell.enter().is_none()));
    unsafe { payidem_call_free(call) };
    assert!(weak.upgrade().is_none());
    assert_eq!(attempts.load(Ordering::SeqCst), 0);
    assert_eq!(json.load(Ordering::SeqCst), 0);
}

/// What a re-entering callback needs: its client and what it saw.
struct Reentry {
    client: *const payidem_client,
    calls: AtomicUsize,
    metrics_ok: AtomicUsize,
}

unsafe extern "C" fn reenter_attempt(userdata: *mut c_void, _: *const payidem_attempt_event) {
    let r = &*userdata.cast::<Reentry>();
    r.calls.fetch_add(1, Ordering::SeqCst);
    let mut len = 0usize;
    let rc = payidem_client_metrics(r.client, 1, ptr::null_mut(), 0, &mut len, ptr::null_mut());
    if rc == payidem_result::PAYIDEM_BUFFER_TOO_SMALL && len > 0 {
        r.metrics_ok.fetch_add(1, Ordering::SeqCst);
    }
    // Registering again from inside the callback (itself, and the JSON
    // one) used to deadlock on the client's callback lock.
    payidem_client_set_event_callback(r.client, Some(reenter_attempt), userdata);
    payidem_client_set_event_json_callback(r.client, Some(reenter_json), userdata);
}

unsafe extern "C" fn reenter_json(userdata: *mut c_void, _: *const c_char) {
    let r = &*userdata.cast::<Reentry>();
    r.calls.fetch_add(1, Ordering::SeqCst);
    // A whole call on the same client from inside its own event, once.
    static NESTED: AtomicBool = AtomicBool::new(false);
    if !NESTED.swap(true, Ordering::SeqCst) {
        pay(r.client, "ord-nested");
    }
    payidem_client_set_event_json_callback(r.client, Some(reenter_json), userdata);
}

/// Runs `body` on another thread; a deadlock fails instead of hanging.
fn within(limit: Duration, what: &str, body: impl FnOnce() + Send + 'static) {
    let (done_tx, done_rx) = mpsc::channel();
    thread::spawn(move || {
        body();
        done_tx.send(()).unwrap();
    });
    match done_rx.recv_timeout(limit) {
        Ok(()) => {}
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: deadlocked ({limit:?})"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what}: panicked"),
    }
}

struct SendPtr<T>(*const T);
// SAFETY: the tests share the client and the Reentry only while both live
// (the client's functions are safe from any thread).
unsafe impl<T> Send for SendPtr<T> {}
unsafe impl<T> Sync for SendPtr<T> {}

#[test]
fn callbacks_may_reenter_their_client_while_another_thread_uses_it() {
    let c = client("");
    let reentry = Box::into_raw(Box::new(Reentry {
        client: c,
        calls: AtomicUsize::new(0),
        metrics_ok: AtomicUsize::new(0),
    }));
    unsafe {
        payidem_client_set_event_callback(c, Some(reenter_attempt), reentry.cast());
        payidem_client_set_event_json_callback(c, Some(reenter_json), reentry.cast());
    }
    let (shared_c, shared_r) = (Arc::new(SendPtr(c)), Arc::new(SendPtr(reentry)));
    within(
        Duration::from_secs(60),
        "re-entering callbacks",
        move || {
            let other = {
                let (c, r) = (Arc::clone(&shared_c), Arc::clone(&shared_r));
                thread::spawn(move || {
                    for i in 0..50 {
                        pay(c.0, &format!("ord-t2-{i}"));
                        // Re-registering from outside waits only for the
                        // deliveries of the old registration.
                        unsafe {
                            payidem_client_set_event_callback(
                                c.0,
                                Some(reenter_attempt),
                                r.0.cast_mut().cast(),
                            );
                        }
                    }
                })
            };
            for i in 0..50 {
                pay(shared_c.0, &format!("ord-t1-{i}"));
            }
            other.join().unwrap();
        },
    );
    let r = unsafe { Box::from_raw(reentry) };
    // 101 calls (one nested): an attempt and an end each.
    assert_eq!(r.calls.load(Ordering::SeqCst), 101 * 3);
    assert_eq!(r.metrics_ok.load(Ordering::SeqCst), 101);
    unsafe { payidem_client_free(c) };
}

/// A callback that blocks (on its first call only) until released.
struct Blocker {
    gate: Mutex<Option<mpsc::Receiver<()>>>,
    entered: Mutex<Option<mpsc::Sender<()>>>,
    calls: AtomicUsize,
}

unsafe extern "C" fn block_once(userdata: *mut c_void, _: *const payidem_attempt_event) {
    let b = &*userdata.cast::<Blocker>();
    b.calls.fetch_add(1, Ordering::SeqCst);
    let gate = b.gate.lock().unwrap().take();
    if let Some(gate) = gate {
        if let Some(entered) = b.entered.lock().unwrap().take() {
            entered.send(()).unwrap();
        }
        gate.recv().unwrap();
    }
}

#[test]
fn a_blocked_callback_stalls_no_other_thread_of_the_client() {
    let c = client("");
    let (release_tx, release_rx) = mpsc::channel();
    let (entered_tx, entered_rx) = mpsc::channel();
    let blocker = Box::into_raw(Box::new(Blocker {
        gate: Mutex::new(Some(release_rx)),
        entered: Mutex::new(Some(entered_tx)),
        calls: AtomicUsize::new(0),
    }));
    unsafe { payidem_client_set_event_callback(c, Some(block_once), blocker.cast()) };
    let (pc, pb) = (Arc::new(SendPtr(c)), Arc::new(SendPtr(blocker)));
    // Thread 1: its callback blocks.
    let stuck = {
        let pc = Arc::clone(&pc);
        thread::spawn(move || pay(pc.0, "ord-stuck"))
    };
    entered_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the first callback runs");
    // Thread 2: replaces the callback, so it waits for thread 1's.
    let (set_tx, set_rx) = mpsc::channel();
    let setter = {
        let (pc, pb) = (Arc::clone(&pc), Arc::clone(&pb));
        thread::spawn(move || {
            unsafe {
                payidem_client_set_event_callback(pc.0, Some(block_once), pb.0.cast_mut().cast())
            };
            set_tx.send(()).unwrap();
        })
    };
    // Thread 3: whole calls (with their callbacks), metrics and status go
    // on meanwhile: a waiting writer used to block every later reader.
    thread::sleep(Duration::from_millis(50));
    let worker = Arc::clone(&pc);
    within(
        Duration::from_secs(30),
        "calls beside a blocked callback",
        move || {
            for i in 0..10 {
                pay(worker.0, &format!("ord-free-{i}"));
            }
            let mut len = 0usize;
            let rc = unsafe {
                payidem_client_metrics(worker.0, 1, ptr::null_mut(), 0, &mut len, ptr::null_mut())
            };
            assert_eq!(rc, payidem_result::PAYIDEM_BUFFER_TOO_SMALL);
        },
    );
    assert!(
        set_rx.try_recv().is_err(),
        "replacing waits for the running callback"
    );
    release_and_join(&release_tx, &set_rx, [stuck, setter]);
    let b = unsafe { Box::from_raw(blocker) };
    assert_eq!(b.calls.load(Ordering::SeqCst), 11);
    unsafe { payidem_client_free(c) };
}
