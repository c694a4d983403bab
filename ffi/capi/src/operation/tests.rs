//! Tests of the operation and call exports: the start document, the step
//! object, the name functions against core, a client's call driven with
//! replies made up here, and a sweep of bad inputs that must never panic.

use std::ffi::{c_char, CStr, CString};
use std::ptr;

use super::step::*;
use super::*;
use crate::base::enums::{
    payidem_attempt_kind, payidem_attempt_outcome, payidem_landed, payidem_landed_name,
    payidem_next_action, payidem_next_action_name, payidem_operation_state, payidem_step_type,
};
use crate::base::error::{payidem_error_code, payidem_error_field, payidem_error_free};
use crate::client::call::*;
use crate::client::outcome::{payidem_outcome_free, payidem_outcome_http_status};
use crate::client::{payidem_client, payidem_client_free, payidem_client_status};
use crate::fixtures::{begin, call_step, client, made, SECRET};
use crate::signing::{payidem_signer_free, payidem_signer_new};

fn signer() -> *mut payidem_signer {
    let key = c"key_test_1".as_ptr();
    made(|out, err| unsafe { payidem_signer_new(key, SECRET.as_ptr(), SECRET.len(), out, err) })
}

/// A header list of one static header, as a caller reports it.
fn one_header(name: &'static CStr, value: &'static CStr) -> [payidem_header; 1] {
    [payidem_header {
        name: name.as_ptr(),
        value: value.as_ptr(),
    }]
}

/// Asserts that `step` is an END step that ended as `name`.
unsafe fn assert_end(step: *const payidem_step, name: &str) {
    assert_eq!(
        payidem_step_kind(step),
        payidem_step_type::PAYIDEM_STEP_END as u32
    );
    assert_eq!(text(payidem_step_end_name(step)).as_deref(), Some(name));
}

fn text(p: *const c_char) -> Option<String> {
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_owned())
}

/// `payidem_operation_new` on `json`: Ok(op) or Err((code, field)).
fn start(json: &str) -> Result<*mut payidem_operation, (payidem_result, Option<String>)> {
    let json = CString::new(json).unwrap();
    let mut op = ptr::null_mut();
    let mut err = ptr::null_mut();
    let rc = unsafe { payidem_operation_new(json.as_ptr(), &mut op, &mut err) };
    if rc == payidem_result::PAYIDEM_OK {
        assert!(err.is_null());
        return Ok(op);
    }
    assert!(op.is_null(), "no output on failure");
    let field = unsafe { text(payidem_error_field(err)) };
    unsafe { payidem_error_free(err) };
    Err((rc, field))
}

const OP: &str =
    r#""operation":{"order_id":"ord-1","method":"POST","path":"/v1/payments","body":"{}"}"#;

#[test]
fn the_start_document_names_every_bad_field() {
    let cases: &[(&str, &str)] = &[
        ("not json", "start_json"),
        ("[]", "start_json"),
        (r#"{"now":1}"#, "operation"),
        (r#"{"operation":{},"now":1}"#, "operation.order_id"),
        (
            r#"{"operation":{"order_id":"o 1","method":"POST","path":"/p"},"now":1}"#,
            "operation.order_id",
        ),
        (
            r#"{"operation":{"order_id":"o","method":"post","path":"/p"},"now":1}"#,
            "operation.method",
        ),
        (
            r#"{"operation":{"order_id":"o","method":"POST","path":"p"},"now":1}"#,
            "operation.path",
        ),
        (
            r#"{"operation":{"order_id":"o","method":"POST","path":"/p","idempotency_key":""},"now":1}"#,
            "operation.idempotency_key",
        ),
        (
            r#"{"operation":{"order_id":"o","method":"POST","path":"/p","status_path":"/a b"},"now":1}"#,
            "operation.status_path",
        ),
        (
            r#"{"operation":{"order_id":"o","method":"POST","path":"/p","body_base64":"!!"},"now":1}"#,
            "operation.body_base64",
        ),
        (
            r#"{"operation":{"order_id":"o","method":"POST","path":"/p","body":"a","body_base64":"YQ=="},"now":1}"#,
            "operation.body_base64",
        ),
        (
            r#"{"operation":{"order_id":"o","method":"POST","path":"/p","extra":1},"now":1}"#,
            "operation.extra",
        ),
        (&format!("{{{OP}}}"), "now"),
        (&format!("{{{OP},\"now\":-1}}"), "now"),
        (&format!("{{{OP},\"now\":1,\"bogus\":1}}"), "bogus"),
        (
            &format!("{{{OP},\"now\":1,\"progress\":{{\"state\":\"lost\"}}}}"),
            "progress.state",
        ),
        (
            &format!("{{{OP},\"now\":1,\"progress\":{{\"attempts\":4294967296}}}}"),
            "progress.attempts",
        ),
        (
            &format!("{{{OP},\"now\":1,\"setup\":{{\"max_attempts\":0}}}}"),
            "setup.max_attempts",
        ),
        (
            &format!("{{{OP},\"now\":1,\"setup\":{{\"backoff_base_ms\":5,\"backoff_cap_ms\":1}}}}"),
            "setup.backoff_base_ms",
        ),
        (
            &format!("{{{OP},\"now\":1,\"setup\":{{\"deadline_ms\":0}}}}"),
            "setup.deadline_ms",
        ),
        (
            &format!("{{{OP},\"now\":1,\"setup\":{{\"key_retention_secs\":172801}}}}"),
            "setup.key_retention_secs",
        ),
        (
            &format!("{{{OP},\"now\":1,\"setup\":{{\"clock_offset\":\"x\"}}}}"),
            "setup.clock_offset",
        ),
        (
            &format!("{{{OP},\"now\":1,\"setup\":{{\"clock_trusted\":1}}}}"),
            "setup.clock_trusted",
        ),
        (
            &format!("{{{OP},\"now\":1,\"setup\":{{\"retry_budget\":{{\"capacity\":-1}}}}}}"),
            "setup.retry_budget.capacity",
        ),
        (
            &format!("{{{OP},\"now\":1,\"setup\":{{\"retry_budget\":{{\"bogus\":1}}}}}}"),
            "setup.retry_budget.bogus",
        ),
        (
            &format!("{{{OP},\"now\":1,\"setup\":{{\"retry_budget\":[]}}}}"),
            "setup.retry_budget",
        ),
    ];
    for (json, field) in cases {
        match start(json) {
            Ok(op) => {
                unsafe { payidem_operation_free(op) };
                panic!("{json} was accepted");
            }
            Err((code, got)) => {
                assert_eq!(code, payidem_result::PAYIDEM_INVALID_ARGUMENT, "{json}");
                assert_eq!(got.as_deref(), Some(*field), "{json}");
            }
        }
    }
}

/// Polls once and returns the step.
fn poll(
    op: *mut payidem_operation,
    s: *const payidem_signer,
    now: u64,
    ms: u64,
) -> *mut payidem_step {
    let mut step = ptr::null_mut();
    let rc = unsafe { payidem_operation_poll(op, s, now, ms, &mut step, ptr::null_mut()) };
    assert_eq!(rc, payidem_result::PAYIDEM_OK);
    step
}

fn header(step: *const payidem_step, name: &str) -> Option<String> {
    let n = unsafe { payidem_step_header_count(step) };
    (0..n).find_map(|i| {
        let (mut k, mut v) = (ptr::null(), ptr::null());
        assert!(unsafe { payidem_step_header_at(step, i, &mut k, &mut v) });
        let k = text(k).unwrap();
        k.eq_ignore_ascii_case(name).then(|| text(v).unwrap())
    })
}

#[test]
fn defaults_base64_body_and_a_whole_call_through_the_steps() {
    let s = signer();
    let op = start(
        r#"{"operation":{"order_id":"ord-9","method":"POST","path":"/v1/payments","body_base64":"eyJhIjoxfQ=="},"now":1767225600}"#
    )
    .unwrap();
    unsafe {
        let step = poll(op, s, 1767225600, 0);
        assert_eq!(
            payidem_step_kind(step),
            payidem_step_type::PAYIDEM_STEP_PERSIST as u32
        );
        assert_eq!(payidem_step_persist_attempt(step), 1);
        assert!(payidem_step_persist_first(step));
        // Accessors of other kinds answer nothing.
        assert!(payidem_step_method(step).is_null());
        assert_eq!(payidem_step_wait_ms(step), 0);
        assert!(payidem_step_end_name(step).is_null());
        let mut len = 7usize;
        assert!(payidem_step_body(step, &mut len).is_null());
        assert_eq!(len, 0);
        let mut outcome = ptr::null_mut();
        let mut err = ptr::null_mut();
        assert_eq!(
            payidem_step_end_result(step, &mut outcome, &mut err),
            payidem_result::PAYIDEM_INVALID_ARGUMENT
        );
        assert_eq!(text(payidem_error_field(err)).as_deref(), Some("step"));
        payidem_error_free(err);
        payidem_step_free(step);

        assert_eq!(
            payidem_operation_persisted(op, ptr::null_mut()),
            payidem_result::PAYIDEM_OK
        );
        let step = poll(op, s, 1767225600, 0);
        assert_eq!(
            payidem_step_kind(step),
            payidem_step_type::PAYIDEM_STEP_SEND as u32
        );
        assert_eq!(
            payidem_step_attempt_kind(step),
            payidem_attempt_kind::PAYIDEM_ATTEMPT_KIND_OPERATION as u32
        );
        assert_eq!(payidem_step_attempt_number(step), 1);
        assert_eq!(text(payidem_step_method(step)).as_deref(), Some("POST"));
        assert_eq!(
            text(payidem_step_path(step)).as_deref(),
            Some("/v1/payments")
        );
        assert_eq!(
            payidem_step_timeout_ms(step),
            0,
            "the pure machine knows no timeout"
        );
        let body = payidem_step_body(step, &mut len);
        assert_eq!(std::slice::from_raw_parts(body, len), br#"{"a":1}"#);
        assert_eq!(
            header(step, "Idempotency-Key").as_deref(),
            Some("create-ord-9")
        );
        assert_eq!(header(step, "X-Timestamp").as_deref(), Some("1767225600"));
        let (mut k, mut v) = (ptr::null(), ptr::null());
        assert!(!payidem_step_header_at(step, 99, &mut k, &mut v));
        payidem_step_free(step);

        // A 503 with Retry-After: 2 (a default setup: 200 ms base, 10 s cap).
        let headers = one_header(c"Retry-After", c"2");
        let mut reaction = payidem_reaction {
            next: 0,
            wait_ms: 9,
            status: 9,
            landed: 9,
        };
        let rc = payidem_operation_handle(
            op,
            payidem_attempt_outcome::PAYIDEM_ATTEMPT_RESPONSE as u32,
            503,
            headers.as_ptr(),
            1,
            ptr::null(),
            0,
            ptr::null(),
            1767225600,
            0,
            &mut reaction,
            ptr::null_mut(),
        );
        assert_eq!(rc, payidem_result::PAYIDEM_OK);
        assert_eq!(
            text(payidem_next_action_name(reaction.next)).as_deref(),
            Some("retry_later")
        );
        assert_eq!(reaction.wait_ms, 2000);
        assert_eq!(reaction.status, 503);
        assert_eq!(
            text(payidem_landed_name(reaction.landed)).as_deref(),
            Some("maybe")
        );
        assert_eq!(
            payidem_operation_landed(op),
            payidem_landed::PAYIDEM_LANDED_MAYBE as u32
        );

        let step = poll(op, s, 1767225600, 500);
        assert_eq!(
            payidem_step_kind(step),
            payidem_step_type::PAYIDEM_STEP_WAIT as u32
        );
        assert_eq!(payidem_step_wait_ms(step), 1500);
        payidem_step_free(step);

        // After the wait: the second attempt needs its record first.
        let step = poll(op, s, 1767225602, 2000);
        assert_eq!(
            payidem_step_kind(step),
            payidem_step_type::PAYIDEM_STEP_PERSIST as u32
        );
        assert!(!payidem_step_persist_first(step));
        assert_eq!(payidem_step_persist_attempt(step), 2);
        payidem_step_free(step);
        payidem_operation_persisted(op, ptr::null_mut());
        let step = poll(op, s, 1767225602, 2000);
        assert_eq!(payidem_step_attempt_number(step), 2);
        assert_eq!(header(step, "X-Timestamp").as_deref(), Some("1767225602"));
        payidem_step_free(step);

        let rc = payidem_operation_handle(
            op,
            payidem_attempt_outcome::PAYIDEM_ATTEMPT_RESPONSE as u32,
            201,
            ptr::null(),
            0,
            b"{\"id\":\"pay_1\"}".as_ptr(),
            14,
            ptr::null(),
            1767225602,
            2100,
            ptr::null_mut(),
            ptr::null_mut(),
        );
        assert_eq!(rc, payidem_result::PAYIDEM_OK);
        let step = poll(op, s, 1767225602, 2100);
        assert_end(step, "succeeded");
        assert_eq!(
            text(payidem_step_end_state(step)).as_deref(),
            Some("succeeded")
        );
        assert!(payidem_step_end_final(step));
        assert_eq!(
            payidem_step_end_landed(step),
            payidem_landed::PAYIDEM_LANDED_YES as u32
        );
        let mut outcome = ptr::null_mut();
        assert_eq!(
            payidem_step_end_result(step, &mut outcome, ptr::null_mut()),
            payidem_result::PAYIDEM_OK
        );
        assert_eq!(payidem_outcome_http_status(outcome), 201);
        assert_eq!(crate::client::outcome::payidem_outcome_attempts(outcome), 2);
        assert_eq!(
            text(crate::client::outcome::payidem_outcome_idempotency_key(
                outcome
            ))
            .as_deref(),
            Some("create-ord-9")
        );
        payidem_outcome_free(outcome);
        payidem_step_free(step);
        assert_eq!(payidem_operation_attempts(op), 2);
        payidem_operation_free(op);
        payidem_signer_free(s);
    }
}

#[test]
fn abandon_gives_the_ends_own_result() {
    let s = signer();
    let op = start(&format!(r#"{{{OP},"now":100}}"#)).unwrap();
    unsafe {
        payidem_step_free(poll(op, s, 100, 0));
        payidem_operation_persisted(op, ptr::null_mut());
        payidem_step_free(poll(op, s, 100, 0));
        // The attempt is out: abandoning now leaves the outcome unknown.
        let reason = CString::new("shutting down").unwrap();
        let mut end = ptr::null_mut();
        assert_eq!(
            payidem_operation_abandon(op, reason.as_ptr(), &mut end, ptr::null_mut()),
            payidem_result::PAYIDEM_OK
        );
        assert_eq!(text(payidem_step_end_name(end)).as_deref(), Some("unknown"));
        assert_eq!(
            text(payidem_step_end_state(end)).as_deref(),
            Some("unknown")
        );
        assert!(!payidem_step_end_final(end));
        let mut outcome = ptr::null_mut();
        let mut err = ptr::null_mut();
        assert_eq!(
            payidem_step_end_result(end, &mut outcome, &mut err),
            payidem_result::PAYIDEM_OUTCOME_UNKNOWN
        );
        assert!(outcome.is_null());
        assert_eq!(
            text(crate::base::error::payidem_error_order_id(err)).as_deref(),
            Some("ord-1")
        );
        assert_eq!(
            text(crate::base::error::payidem_error_idempotency_key(err)).as_deref(),
            Some("create-ord-1")
        );
        payidem_error_free(err);
        payidem_step_free(end);
        payidem_operation_free(op);
        payidem_signer_free(s);
    }
}

#[test]
fn base64_is_strict() {
    let doc = |b64: &str| {
        format!(
            r#"{{"operation":{{"order_id":"o","method":"POST","path":"/p","body_base64":"{b64}"}},"now":1}}"#
        )
    };
    let ok: &[(&str, &[u8])] = &[
        ("", b""),
        ("YQ==", b"a"),
        ("YWI=", b"ab"),
        ("YWJj", b"abc"),
        ("eyJhIjoxfQ==", br#"{"a":1}"#),
        ("+/8=", &[0xfb, 0xff]),
    ];
    for (text, bytes) in ok {
        let start = payidem::settings::start::start_from_json(&doc(text)).unwrap();
        assert_eq!(start.operation.body, *bytes, "{text}");
    }
    for bad in [
        "Y", "YQ", "YQ=", "Y===", "YR==", "YQ==YQ==", "Y Q=", "YQ-_", "====", "Y=Q=",
    ] {
        let (code, field) = start(&doc(bad)).unwrap_err();
        assert_eq!(code, payidem_result::PAYIDEM_INVALID_ARGUMENT, "{bad}");
        assert_eq!(field.as_deref(), Some("operation.body_base64"), "{bad}");
    }
}

fn state_of(c: *const payidem_client, order: &str) -> payidem_operation_state {
    let order = CString::new(order).unwrap();
    let mut found = false;
    let mut state = payidem_operation_state::PAYIDEM_STATE_NOT_FOUND;
    let mut attempts = 0;
    let rc = unsafe {
        payidem_client_status(
            c,
            order.as_ptr(),
            &mut found,
            &mut state,
            &mut attempts,
            ptr::null_mut(),
        )
    };
    assert_eq!(rc, payidem_result::PAYIDEM_OK);
    state
}

#[test]
fn a_call_driven_by_the_caller_journals_sends_and_settles() {
    use payidem_operation_state as S;
    let c = client("");
    unsafe {
        let call = begin(c, "ord-c1");
        let step = call_step(call);
        assert_eq!(
            payidem_step_kind(step),
            payidem_step_type::PAYIDEM_STEP_SEND as u32
        );
        // Recorded before it is handed out; the base URL's prefix is signed.
        assert_eq!(state_of(c, "ord-c1"), S::PAYIDEM_STATE_IN_FLIGHT);
        let path = payidem_step_path(step);
        assert_eq!(text(path).as_deref(), Some("/pay/v1/payments"));
        let t = payidem_step_timeout_ms(step);
        assert!(t > 0 && t <= 30_000, "{t}");
        let mut len = 0usize;
        assert_eq!(
            payidem_client_url(c, path, ptr::null_mut(), 0, &mut len, ptr::null_mut()),
            payidem_result::PAYIDEM_BUFFER_TOO_SMALL
        );
        let mut buf = vec![0 as c_char; len + 1];
        assert_eq!(
            payidem_client_url(
                c,
                path,
                buf.as_mut_ptr(),
                buf.len(),
                ptr::null_mut(),
                ptr::null_mut()
            ),
            payidem_result::PAYIDEM_OK
        );
        assert_eq!(
            text(buf.as_ptr()).as_deref(),
            Some("http://127.0.0.1:9/pay/v1/payments")
        );
        payidem_step_free(step);

        // A lost answer: sent, no response.
        assert_eq!(
            payidem_call_report(
                call,
                payidem_attempt_outcome::PAYIDEM_ATTEMPT_SENT_NO_RESPONSE as u32,
                0,
                ptr::null(),
                0,
                ptr::null(),
                0,
                ptr::null(),
                ptr::null_mut()
            ),
            payidem_result::PAYIDEM_OK
        );
        let step = call_step(call);
        assert_eq!(
            payidem_step_kind(step),
            payidem_step_type::PAYIDEM_STEP_WAIT as u32
        );
        payidem_step_free(step);
        // Freeing mid-call abandons it: unknown, resumable.
        payidem_call_free(call);
        assert_eq!(state_of(c, "ord-c1"), S::PAYIDEM_STATE_UNKNOWN);

        // Resume: the same key, settled by a replayed 200.
        let order = CString::new("ord-c1").unwrap();
        let mut call = ptr::null_mut();
        assert_eq!(
            payidem_client_begin_resume(c, order.as_ptr(), 5000, &mut call, ptr::null_mut()),
            payidem_result::PAYIDEM_OK
        );
        let step = call_step(call);
        assert_eq!(payidem_step_attempt_number(step), 2);
        assert_eq!(
            header(step, "Idempotency-Key").as_deref(),
            Some("create-ord-c1")
        );
        assert!(payidem_step_timeout_ms(step) <= 5000);
        payidem_step_free(step);
        let headers = one_header(c"Idempotent-Replayed", c"true");
        assert_eq!(
            payidem_call_report(
                call,
                payidem_attempt_outcome::PAYIDEM_ATTEMPT_RESPONSE as u32,
                200,
                headers.as_ptr(),
                1,
                b"{}".as_ptr(),
                2,
                ptr::null(),
                ptr::null_mut()
            ),
            payidem_result::PAYIDEM_OK
        );
        let step = call_step(call);
        assert_eq!(
            text(payidem_step_end_name(step)).as_deref(),
            Some("succeeded")
        );
        let mut outcome = ptr::null_mut();
        assert_eq!(
            payidem_step_end_result(step, &mut outcome, ptr::null_mut()),
            payidem_result::PAYIDEM_OK
        );
        assert!(crate::client::outcome::payidem_outcome_replayed(outcome));
        payidem_outcome_free(outcome);
        payidem_step_free(step);
        // Cancel after the end hides nothing.
        let mut end = ptr::null_mut();
        assert_eq!(
            payidem_call_cancel(call, &mut end, ptr::null_mut()),
            payidem_result::PAYIDEM_OK
        );
        assert_eq!(
            text(payidem_step_end_name(end)).as_deref(),
            Some("succeeded")
        );
        payidem_step_free(end);
        payidem_call_free(call);
        assert_eq!(state_of(c, "ord-c1"), S::PAYIDEM_STATE_SUCCEEDED);

        // Begun again: settled from the journal, no step to send.
        let call = begin(c, "ord-c1");
        let step = call_step(call);
        assert_end(step, "succeeded");
        assert!(payidem_step_end_final(step));
        payidem_step_free(step);
        payidem_call_free(call);

        // A cancel before anything was sent: cancelled, still pending.
        let call = begin(c, "ord-c2");
        let mut end = ptr::null_mut();
        payidem_call_cancel(call, &mut end, ptr::null_mut());
        let mut err = ptr::null_mut();
        let mut outcome = ptr::null_mut();
        assert_eq!(
            payidem_step_end_result(end, &mut outcome, &mut err),
            payidem_result::PAYIDEM_CANCELLED
        );
        assert_eq!(payidem_error_code(err), payidem_result::PAYIDEM_CANCELLED);
        assert_eq!(
            text(payidem_step_end_state(end)).as_deref(),
            Some("pending")
        );
        assert!(!payidem_step_end_final(end));
        payidem_error_free(err);
        payidem_step_free(end);
        payidem_call_free(call);
        assert_eq!(state_of(c, "ord-c2"), S::PAYIDEM_STATE_PENDING);
        payidem_client_free(c);
    }
}

#[test]
fn bad_inputs_never_panic_and_name_the_argument() {
    let s = signer();
    let c = client("");
    let op = start(&format!(r#"{{{OP},"now":100}}"#)).unwrap();
    let call = begin(c, "ord-sweep");
    let field = |err: *mut payidem_error| {
        let f = unsafe { text(payidem_error_field(err)) };
        unsafe { payidem_error_free(err) };
        f
    };
    unsafe {
        let mut step = ptr::null_mut();
        let mut oper = ptr::null_mut();
        let mut cl = ptr::null_mut();
        // Every case writes its own error slot (the cases run before the
        // checks).
        let slots: std::cell::RefCell<Vec<Box<*mut payidem_error>>> = Default::default();
        let e = || {
            let mut slot = Box::new(ptr::null_mut());
            let p: *mut *mut payidem_error = &mut *slot;
            slots.borrow_mut().push(slot);
            p
        };
        // `payidem_operation_handle` of `op` with no body bytes (only a
        // length), at time 0, without a reaction.
        let report = |outcome, status, headers, header_count, body_len, reason| {
            payidem_operation_handle(
                op,
                outcome,
                status,
                headers,
                header_count,
                ptr::null(),
                body_len,
                reason,
                0,
                0,
                ptr::null_mut(),
                e(),
            )
        };
        // `payidem_client_begin` of a POST without body, key or deadline.
        let begin_with = |client: *const payidem_client,
                          order_id: *const c_char,
                          path: *const c_char,
                          status_path: *const c_char,
                          call_out: *mut *mut payidem_call| {
            payidem_client_begin(
                client,
                order_id,
                c"POST".as_ptr(),
                path,
                ptr::null(),
                0,
                ptr::null(),
                status_path,
                0,
                call_out,
                e(),
            )
        };
        let cases: Vec<(payidem_result, &str)> = vec![
            (
                payidem_operation_new(ptr::null(), &mut oper, e()),
                "start_json",
            ),
            (
                payidem_operation_new(c"{}".as_ptr(), ptr::null_mut(), e()),
                "op_out",
            ),
            (
                payidem_operation_poll(ptr::null_mut(), s, 0, 0, &mut step, e()),
                "op",
            ),
            (
                payidem_operation_poll(op, ptr::null(), 0, 0, &mut step, e()),
                "signer",
            ),
            (
                payidem_operation_poll(op, s, 0, 0, ptr::null_mut(), e()),
                "step_out",
            ),
            (payidem_operation_persisted(ptr::null_mut(), e()), "op"),
            (report(0, 0, ptr::null(), 0, 0, ptr::null()), "outcome"),
            (report(1, 200, ptr::null(), 3, 0, ptr::null()), "headers"),
            (report(1, 200, ptr::null(), 0, 5, ptr::null()), "body"),
            (
                report(
                    1,
                    200,
                    [payidem_header {
                        name: ptr::null(),
                        value: c"v".as_ptr(),
                    }]
                    .as_ptr(),
                    1,
                    0,
                    ptr::null(),
                ),
                "headers[0].name",
            ),
            (report(2, 0, ptr::null(), 0, 0, c"\xff".as_ptr()), "reason"),
            (
                payidem_operation_abandon(op, ptr::null(), &mut step, e()),
                "reason",
            ),
            (
                payidem_operation_abandon(op, c"r".as_ptr(), ptr::null_mut(), e()),
                "end_out",
            ),
            (
                payidem_step_end_result(ptr::null(), ptr::null_mut(), e()),
                "step",
            ),
            (
                begin_with(
                    ptr::null(),
                    c"o".as_ptr(),
                    c"/p".as_ptr(),
                    ptr::null(),
                    &mut cl,
                ),
                "client",
            ),
            (
                begin_with(c, ptr::null(), c"/p".as_ptr(), ptr::null(), &mut cl),
                "order_id",
            ),
            (
                begin_with(c, c"o".as_ptr(), c"p".as_ptr(), ptr::null(), &mut cl),
                "path",
            ),
            (
                begin_with(c, c"o".as_ptr(), c"/p".as_ptr(), c"/a b".as_ptr(), &mut cl),
                "status_path",
            ),
            (
                begin_with(
                    c,
                    c"o".as_ptr(),
                    c"/p".as_ptr(),
                    ptr::null(),
                    ptr::null_mut(),
                ),
                "call_out",
            ),
            (
                payidem_client_begin_resume(c, c"never-seen".as_ptr(), 0, &mut cl, e()),
                "order_id",
            ),
            (
                payidem_client_begin_resume(c, ptr::null(), 0, &mut cl, e()),
                "order_id",
            ),
            (payidem_call_step(ptr::null_mut(), &mut step, e()), "call"),
            (payidem_call_step(call, ptr::null_mut(), e()), "step_out"),
            (
                payidem_call_report(call, 7, 0, ptr::null(), 0, ptr::null(), 0, ptr::null(), e()),
                "outcome",
            ),
            (
                payidem_call_report(
                    ptr::null_mut(),
                    1,
                    0,
                    ptr::null(),
                    0,
                    ptr::null(),
                    0,
                    ptr::null(),
                    e(),
                ),
                "call",
            ),
            (payidem_call_cancel(call, ptr::null_mut(), e()), "end_out"),
            (payidem_call_cancel(ptr::null_mut(), &mut step, e()), "call"),
            (
                payidem_client_url(
                    ptr::null(),
                    c"/p".as_ptr(),
                    ptr::null_mut(),
                    0,
                    ptr::null_mut(),
                    e(),
                ),
                "client",
            ),
            (
                payidem_client_url(c, ptr::null(), ptr::null_mut(), 0, ptr::null_mut(), e()),
                "path",
            ),
            (
                payidem_client_url(c, c"/p".as_ptr(), ptr::null_mut(), 5, ptr::null_mut(), e()),
                "buf",
            ),
        ];
        let slots = slots.into_inner();
        assert_eq!(slots.len(), cases.len());
        for ((code, name), slot) in cases.into_iter().zip(slots) {
            assert_eq!(code, payidem_result::PAYIDEM_INVALID_ARGUMENT, "{name}");
            assert_eq!(field(*slot).as_deref(), Some(name));
        }
        assert!(
            step.is_null() && oper.is_null() && cl.is_null(),
            "no output on failure"
        );

        // NULL handles read as nothing, never crash.
        assert_eq!(payidem_step_kind(ptr::null()), 0);
        assert_eq!(payidem_step_persist_attempt(ptr::null()), 0);
        assert!(!payidem_step_persist_first(ptr::null()));
        assert_eq!(payidem_step_attempt_kind(ptr::null()), 0);
        assert_eq!(payidem_step_attempt_number(ptr::null()), 0);
        assert!(payidem_step_method(ptr::null()).is_null());
        assert!(payidem_step_path(ptr::null()).is_null());
        assert_eq!(payidem_step_header_count(ptr::null()), 0);
        assert!(!payidem_step_header_at(
            ptr::null(),
            0,
            ptr::null_mut(),
            ptr::null_mut()
        ));
        assert!(payidem_step_body(ptr::null(), ptr::null_mut()).is_null());
        assert_eq!(payidem_step_timeout_ms(ptr::null()), 0);
        assert_eq!(payidem_step_wait_ms(ptr::null()), 0);
        assert!(payidem_step_end_name(ptr::null()).is_null());
        assert!(!payidem_step_end_final(ptr::null()));
        assert_eq!(payidem_step_end_landed(ptr::null()), 0);
        assert!(payidem_step_end_state(ptr::null()).is_null());
        assert_eq!(payidem_operation_attempts(ptr::null()), 0);
        assert_eq!(payidem_operation_landed(ptr::null()), 0);
        payidem_step_free(ptr::null_mut());
        payidem_operation_free(ptr::null_mut());
        payidem_call_free(ptr::null_mut());

        // Out of order: a report with nothing in flight changes nothing;
        // polling twice after a SEND ends the call as unknown.
        let mut reaction = payidem_reaction {
            next: 0,
            wait_ms: 0,
            status: 0,
            landed: 0,
        };
        assert_eq!(
            payidem_operation_handle(
                op,
                1,
                201,
                ptr::null(),
                0,
                ptr::null(),
                0,
                ptr::null(),
                100,
                0,
                &mut reaction,
                ptr::null_mut(),
            ),
            payidem_result::PAYIDEM_OK
        );
        assert_eq!(
            reaction.next,
            payidem_next_action::PAYIDEM_NEXT_GIVE_UP as u32
        );
        payidem_step_free(poll(op, s, 100, 0));
        payidem_operation_persisted(op, ptr::null_mut());
        payidem_step_free(poll(op, s, 100, 0));
        let end = poll(op, s, 100, 0);
        assert_eq!(text(payidem_step_end_name(end)).as_deref(), Some("unknown"));
        payidem_step_free(end);

        payidem_call_free(call);
        payidem_operation_free(op);
        payidem_client_free(c);
        payidem_signer_free(s);
    }
}
