//! Issue 22 through the C ABI: a password in a journal URL, a proxy URL or
//! a replay store URL appears in no error message the exported functions
//! return (`payidem_error_message`), whichever call fails.

use std::ffi::{CStr, CString};
use std::ptr;

use payidem_capi::*;

const PASSWORD: &str = "PASSWORD-x7Qz";
const SECRET: &[u8] = b"capi-secret-test-0123456789abcdef";

/// The message of `err` (then freed); fails when it shows the password.
#[track_caller]
fn checked_message(what: &str, err: *mut payidem_error) -> String {
    assert!(!err.is_null(), "{what}: no error");
    // SAFETY: err is a live error from the ABI; the message lives as long
    // as it, and is copied before it is freed.
    let message = unsafe {
        let text = CStr::from_ptr(payidem_error_message(err))
            .to_string_lossy()
            .into_owned();
        payidem_error_free(err);
        text
    };
    assert!(
        !message.contains(PASSWORD),
        "{what} shows the password: {message}"
    );
    message
}

/// `payidem_client_new` with these options; the error when it fails.
fn client_new(options: &serde_json::Value) -> Result<*mut payidem_client, *mut payidem_error> {
    let json = CString::new(options.to_string()).unwrap();
    let mut client = ptr::null_mut();
    let mut err = ptr::null_mut();
    // SAFETY: every pointer is valid for the call.
    let rc = unsafe {
        payidem_client_new(
            json.as_ptr(),
            SECRET.as_ptr(),
            SECRET.len(),
            &mut client,
            &mut err,
        )
    };
    if rc == payidem_result::PAYIDEM_OK {
        Ok(client)
    } else {
        Err(err)
    }
}

#[test]
fn journals_that_cannot_be_opened_name_no_password() {
    for (journal, shown) in [
        ("postgres://u:PASSWORD-x7Qz@127.0.0.1:1/db".to_owned(), None),
        (
            "postgres://127.0.0.1:1/db?password=PASSWORD-x7Qz".to_owned(),
            None,
        ),
        // Mistyped, taken for a file (relative: no such directory here).
        (
            "postgress://u:PASSWORD-x7Qz@127.0.0.1:1/db".to_owned(),
            Some("postgress://***@127.0.0.1:1/db"),
        ),
        (
            "host=127.0.0.1 password=PASSWORD-x7Qz/db".to_owned(),
            Some("host=127.0.0.1 password=***"),
        ),
    ] {
        let options = serde_json::json!({
            "base_url": "http://127.0.0.1:1",
            "key_id": "key_1",
            "journal_path": journal,
            "connect_timeout_ms": 2000,
        });
        let err = match client_new(&options) {
            Err(err) => err,
            // A PostgreSQL journal connects lazily: the client starts and
            // its call answers the journal's error.
            Ok(client) => {
                assert!(shown.is_none(), "{journal}");
                let rc = execute(client, "ord-capi-pg");
                assert_eq!(rc.0, payidem_result::PAYIDEM_JOURNAL_ERROR);
                rc.1
            }
        };
        let message = checked_message("payidem_client_new", err);
        assert!(message.contains("journal"), "{message}");
        if let Some(shown) = shown {
            assert!(message.contains(shown), "{message}");
        }
    }
}

/// One payment through `client` (then freed): its result and error.
fn execute(client: *mut payidem_client, order_id: &str) -> (payidem_result, *mut payidem_error) {
    let order_id = CString::new(order_id).unwrap();
    let method = CString::new("POST").unwrap();
    let path = CString::new("/v1/payments").unwrap();
    let body = br#"{"amount":1}"#;
    let mut outcome = ptr::null_mut();
    let mut err = ptr::null_mut();
    // SAFETY: every pointer is valid for the call; NULL key and status
    // path are allowed.
    let rc = unsafe {
        payidem_client_execute(
            client,
            order_id.as_ptr(),
            method.as_ptr(),
            path.as_ptr(),
            body.as_ptr(),
            body.len(),
            ptr::null(),
            ptr::null(),
            &mut outcome,
            &mut err,
        )
    };
    // SAFETY: the client is live and freed once.
    unsafe { payidem_client_free(client) };
    (rc, err)
}

#[test]
fn a_proxy_password_is_in_no_error() {
    let refused = serde_json::json!({
        "base_url": "http://127.0.0.1:1",
        "key_id": "key_1",
        "journal_path": ":memory:",
        "proxy": "socks5://u:PASSWORD-x7Qz@127.0.0.1:1",
    });
    checked_message("a refused proxy", client_new(&refused).expect_err("socks5"));

    let options = serde_json::json!({
        "base_url": "http://platform.invalid:8080",
        "key_id": "key_1",
        "journal_path": ":memory:",
        "allow_insecure_http": true,
        "proxy": "http://u:PASSWORD-x7Qz@127.0.0.1:1",
        "retry": {"max_attempts": 1},
    });
    let client = client_new(&options).unwrap_or_else(|e| panic!("{}", checked_message("new", e)));
    let (rc, err) = execute(client, "ord-capi-1");
    assert_ne!(rc, payidem_result::PAYIDEM_OK);
    checked_message("a call through an unreachable proxy", err);
}

#[test]
fn a_replay_store_password_is_in_no_error() {
    let new = |url: &str| {
        let url = CString::new(url).unwrap();
        let mut verifier = ptr::null_mut();
        let mut err = ptr::null_mut();
        // SAFETY: every pointer is valid for the call.
        let rc = unsafe {
            payidem_verifier_new_with_replay_store(300, 1000, url.as_ptr(), &mut verifier, &mut err)
        };
        (rc, verifier, err)
    };
    for bad in [
        "rediss://:PASSWORD-x7Qz@127.0.0.1:1",
        "redis://:PASSWORD-x7Qz@127.0.0.1:notaport",
    ] {
        let (rc, _, err) = new(bad);
        assert_eq!(rc, payidem_result::PAYIDEM_INVALID_ARGUMENT, "{bad}");
        checked_message(bad, err);
    }

    let (rc, verifier, _) = new("redis://:PASSWORD-x7Qz@127.0.0.1:1");
    assert_eq!(rc, payidem_result::PAYIDEM_OK);
    let key_id = CString::new("key_1").unwrap();
    let secrets = [SECRET.as_ptr()];
    let lens = [SECRET.len()];
    let mut err = ptr::null_mut();
    // SAFETY: one secret of the given length.
    let rc = unsafe {
        payidem_verifier_add_key(
            verifier,
            key_id.as_ptr(),
            secrets.as_ptr(),
            lens.as_ptr(),
            1,
            &mut err,
        )
    };
    assert_eq!(rc, payidem_result::PAYIDEM_OK);

    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let body = br#"{"amount":1}"#;
    let signer = payidem::protocol::Signer::new("key_1", SECRET).unwrap();
    let attempt = signer
        .sign_attempt(
            "POST",
            "/v1/payments",
            "create-1",
            body,
            now,
            payidem::protocol::Nonce::from_random_bytes([9; 16]),
        )
        .unwrap();
    let owned: Vec<(CString, CString)> = attempt
        .headers()
        .map(|(n, v)| (CString::new(n).unwrap(), CString::new(v).unwrap()))
        .collect();
    let headers: Vec<payidem_header> = owned
        .iter()
        .map(|(n, v)| payidem_header {
            name: n.as_ptr(),
            value: v.as_ptr(),
        })
        .collect();
    let method = CString::new("POST").unwrap();
    let path = CString::new("/v1/payments").unwrap();
    let mut status = 0u16;
    let mut err = ptr::null_mut();
    // SAFETY: every pointer is valid for the call.
    let rc = unsafe {
        payidem_verifier_verify(
            verifier,
            method.as_ptr(),
            path.as_ptr(),
            headers.as_ptr(),
            headers.len(),
            body.as_ptr(),
            body.len(),
            now,
            &mut status,
            &mut err,
        )
    };
    assert_eq!(rc, payidem_result::PAYIDEM_REPLAY_STORE_UNAVAILABLE);
    assert_eq!(status, 503);
    checked_message("payidem_verifier_verify", err);
    // SAFETY: the verifier is live and freed once.
    unsafe { payidem_verifier_free(verifier) };
}
