//! Test fixtures shared by the crate's unit tests of clients, calls and
//! operations: one secret, one client over an in-memory journal, one call
//! begun on it, one step asked of it.

use std::ffi::CString;
use std::ptr;

use crate::base::enums::payidem_result;
use crate::base::error::payidem_error;
use crate::client::call::{payidem_call, payidem_call_step, payidem_client_begin};
use crate::client::{payidem_client, payidem_client_new};
use crate::operation::step::payidem_step;

/// The key secret every test client and signer uses (key `key_test_1`).
pub(crate) const SECRET: &[u8] = b"0123456789abcdef0123";

/// The handle `make` writes into its output slot, asserting that it
/// succeeded (`make` gets the output slot and the error slot).
pub(crate) fn made<T>(
    make: impl FnOnce(*mut *mut T, *mut *mut payidem_error) -> payidem_result,
) -> *mut T {
    let mut handle = ptr::null_mut();
    let mut err = ptr::null_mut();
    assert_eq!(make(&mut handle, &mut err), payidem_result::PAYIDEM_OK);
    assert!(err.is_null() && !handle.is_null());
    handle
}

/// A client of `http://127.0.0.1:9/pay` (nothing listens there) over an
/// in-memory journal; `extra` is spliced into the options JSON (`,"k":v`).
pub(crate) fn client(extra: &str) -> *mut payidem_client {
    let json = CString::new(format!(
        r#"{{"base_url":"http://127.0.0.1:9/pay","key_id":"key_test_1","journal_path":":memory:"{extra}}}"#
    ))
    .unwrap();
    let (secret, len) = (SECRET.as_ptr(), SECRET.len());
    made(|out, err| unsafe { payidem_client_new(json.as_ptr(), secret, len, out, err) })
}

/// A call of `POST /v1/payments` with body `{"amount":1}` for `order`.
pub(crate) fn begin(c: *const payidem_client, order: &str) -> *mut payidem_call {
    let order = CString::new(order).unwrap();
    let body = b"{\"amount\":1}";
    made(|out, err| unsafe {
        payidem_client_begin(
            c,
            order.as_ptr(),
            c"POST".as_ptr(),
            c"/v1/payments".as_ptr(),
            body.as_ptr(),
            body.len(),
            ptr::null(),
            ptr::null(),
            0,
            out,
            err,
        )
    })
}

/// The call's next step (the caller frees it).
pub(crate) fn call_step(call: *mut payidem_call) -> *mut payidem_step {
    made(|out, err| unsafe { payidem_call_step(call, out, err) })
}
