//! The take-over loop of a sidecar or worker thread: the core's
//! `Client::take_over_loop`, stopped by a C callback.

use std::ffi::c_void;
use std::time::Duration;

use crate::base::boundary::guard;
use crate::base::enums::payidem_result;
use crate::base::error::{payidem_error, FfiError};
use crate::base::text::{handle, out};
use crate::client::{payidem_cancel_callback, payidem_client, Cancel};

/// Takes over, in a loop, the unsettled operations of the journal that no
/// live call holds (leases free or expired, outbox inserts), as
/// `payidem_client_take_over` does, in batches of up to `batch` (0 counts
/// as 1), until `stop` returns non-zero. When a batch found nothing (or
/// the journal could not be asked: the database may be restarting) it
/// sleeps `idle_ms`, but never longer than the client's lease heartbeat,
/// so that an operation whose holder died is picked up within one
/// heartbeat of its lease lapsing; an `idle_ms` of 0 sleeps a whole
/// heartbeat, so the loop never spins on the journal. `stop` is polled with `stop_userdata`
/// on the calling thread between operations and during the sleep (about
/// every 20 ms), never during an operation's call: the call in progress
/// ends as it would without a stop. `*driven_out` receives how many
/// operations it drove (each one's end is in the journal: read it with
/// `payidem_client_status`).
///
/// `stop` has the rules of `payidem_cancel_callback`: it must return
/// normally; the library holds no lock while it runs, so it may call any
/// function of this client (e.g. `payidem_client_status`).
///
/// Ownership: `stop_userdata` stays the caller's.
/// NULL: `client`, `stop` and `driven_out` must not be NULL (a loop
/// nothing can stop would never return); `stop_userdata` and `err_out` may
/// be NULL.
/// Threads: blocks the calling thread until `stop` returns non-zero; safe
/// from any number of threads on one client (and from any number of
/// clients on one journal): each operation is taken by one of them.
/// Errors: `PAYIDEM_INVALID_ARGUMENT` naming `client`, `stop` or
/// `driven_out`. A journal that cannot be asked is retried, not reported.
#[no_mangle]
pub unsafe extern "C" fn payidem_client_take_over_loop(
    client: *const payidem_client,
    batch: u32,
    idle_ms: u64,
    stop: payidem_cancel_callback,
    stop_userdata: *mut c_void,
    driven_out: *mut u64,
    err_out: *mut *mut payidem_error,
) -> payidem_result {
    guard(err_out, || {
        let client = handle(client, "client")?;
        let stop = stop.ok_or_else(|| FfiError::null("stop"))?;
        let slot = out(driven_out, "driven_out")?;
        let stop = Cancel {
            function: stop,
            userdata: stop_userdata,
        };
        let driven =
            client
                .inner
                .take_over_loop(batch as usize, Duration::from_millis(idle_ms), &|| {
                    stop.cancelled()
                });
        slot.write(driven);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use std::ffi::c_int;
    use std::ptr;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Instant;

    use super::*;
    use crate::base::error::{payidem_error_field, payidem_error_free};
    use crate::client::payidem_client_free;
    use crate::fixtures::client;

    /// Counts its polls; asks to stop from the `n`-th (in the userdata).
    struct Polls {
        seen: AtomicUsize,
        stop_at: usize,
    }

    impl Polls {
        fn stopping_at(stop_at: usize) -> Polls {
            Polls {
                seen: AtomicUsize::new(0),
                stop_at,
            }
        }
    }

    unsafe extern "C" fn stop_after(userdata: *mut c_void) -> c_int {
        let polls = &*userdata.cast::<Polls>();
        c_int::from(polls.seen.fetch_add(1, Ordering::SeqCst) + 1 >= polls.stop_at)
    }

    fn field_of(err: *mut payidem_error) -> String {
        let field = unsafe { std::ffi::CStr::from_ptr(payidem_error_field(err)) };
        let field = field.to_str().unwrap().to_owned();
        unsafe { payidem_error_free(err) };
        field
    }

    /// Runs a loop on `c` until `stop_at` polls of `stop`: its result, what
    /// it drove, the polls and how long it took.
    fn run_loop(
        c: *mut payidem_client,
        batch: u32,
        idle_ms: u64,
        stop_at: usize,
    ) -> (payidem_result, u64, usize, Duration) {
        let polls = Polls::stopping_at(stop_at);
        let mut driven = u64::MAX;
        let mut err = ptr::null_mut();
        let started = Instant::now();
        let rc = unsafe {
            payidem_client_take_over_loop(
                c,
                batch,
                idle_ms,
                Some(stop_after),
                ptr::from_ref(&polls).cast_mut().cast(),
                &mut driven,
                &mut err,
            )
        };
        assert!(err.is_null());
        (
            rc,
            driven,
            polls.seen.load(Ordering::SeqCst),
            started.elapsed(),
        )
    }

    #[test]
    fn an_idle_loop_sleeps_at_most_a_heartbeat_and_ends_when_stop_says_so() {
        // A heartbeat of 100 ms: an idle of an hour is cut to it, so the
        // loop looks for work again (and polls `stop`) within it.
        let c = client(r#","lease_ttl_s":1,"lease_heartbeat_ms":100"#);
        let (rc, driven, polls, took) = run_loop(c, 4, 3_600_000, 40);
        assert_eq!(rc, payidem_result::PAYIDEM_OK);
        assert_eq!(driven, 0, "nothing was there to take over");
        assert_eq!(polls, 40);
        // 40 polls of 20 ms slices: about 0.8 s, never an hour.
        assert!(took < Duration::from_secs(60), "{took:?}");
        unsafe { payidem_client_free(c) };
    }

    #[test]
    fn an_idle_of_zero_sleeps_a_whole_heartbeat_instead_of_spinning() {
        let c = client(r#","lease_ttl_s":1,"lease_heartbeat_ms":100"#);
        let (rc, driven, polls, took) = run_loop(c, 4, 0, 40);
        assert_eq!((rc, driven, polls), (payidem_result::PAYIDEM_OK, 0, 40));
        // At most six polls per 100 ms sleep: 40 take five whole sleeps or
        // more; a loop that spun would have made them at once.
        assert!(took >= Duration::from_millis(400), "{took:?}");
        unsafe { payidem_client_free(c) };
    }

    #[test]
    fn a_stop_that_answers_at_once_takes_nothing() {
        let c = client("");
        let (rc, driven, polls, _) = run_loop(c, 1, 10, 1);
        assert_eq!(rc, payidem_result::PAYIDEM_OK);
        assert_eq!((driven, polls), (0, 1));
        unsafe { payidem_client_free(c) };
    }

    #[test]
    fn null_arguments_are_named() {
        let c = client("");
        let polls = Polls::stopping_at(1);
        let data: *mut c_void = ptr::from_ref(&polls).cast_mut().cast();
        let mut driven = 0u64;
        let mut err = ptr::null_mut();
        let cases: [(
            *const payidem_client,
            payidem_cancel_callback,
            *mut u64,
            &str,
        ); 3] = [
            (ptr::null(), Some(stop_after), &mut driven, "client"),
            (c, None, &mut driven, "stop"),
            (c, Some(stop_after), ptr::null_mut(), "driven_out"),
        ];
        for (client, stop, out, field) in cases {
            let rc =
                unsafe { payidem_client_take_over_loop(client, 1, 10, stop, data, out, &mut err) };
            assert_eq!(rc, payidem_result::PAYIDEM_INVALID_ARGUMENT);
            assert_eq!(field_of(err), field);
        }
        assert_eq!(polls.seen.load(Ordering::SeqCst), 0, "stop never polled");
        unsafe { payidem_client_free(c) };
    }
}
