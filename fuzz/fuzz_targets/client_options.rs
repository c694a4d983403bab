//! The C client's options JSON (ffi/capi/src/client/options.rs) through the public
//! `payidem_client_new`: no panic (a panic would be turned into
//! `PAYIDEM_INTERNAL_ERROR` by the boundary, so that result is the failure),
//! every refusal names the field, and a client that was made is freed.
//!
//! The journal is forced to memory: a fuzzed `journal_path` must not create
//! files anywhere on the machine (any other value of it is kept, so its
//! type errors are still exercised).
#![no_main]

use std::ffi::CString;
use std::ptr;

use libfuzzer_sys::fuzz_target;
use payidem_capi::*;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let json = match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(mut map)) => {
            match map.get("journal_path") {
                Some(Value::String(_)) | None => {
                    map.insert("journal_path".into(), Value::String(":memory:".into()));
                }
                Some(_) => {}
            }
            Value::Object(map).to_string()
        }
        _ => text.to_owned(),
    };
    let Ok(json) = CString::new(json) else {
        return;
    };
    let secret = b"0123456789abcdef-fuzz";
    let mut client: *mut payidem_client = ptr::null_mut();
    let mut err: *mut payidem_error = ptr::null_mut();
    let rc = unsafe {
        payidem_client_new(
            json.as_ptr(),
            secret.as_ptr(),
            secret.len(),
            &mut client,
            &mut err,
        )
    };
    assert_ne!(
        rc,
        payidem_result::PAYIDEM_INTERNAL_ERROR,
        "a panic crossed into the options parser"
    );
    if rc == payidem_result::PAYIDEM_OK {
        assert!(!client.is_null() && err.is_null());
        unsafe { payidem_client_free(client) };
    } else {
        assert!(client.is_null() && !err.is_null());
        if rc == payidem_result::PAYIDEM_INVALID_ARGUMENT {
            let field = unsafe { payidem_error_field(err) };
            assert!(!field.is_null(), "invalid_argument names its option");
        }
        unsafe { payidem_error_free(err) };
    }
});
