//! The settings-parity vectors (core/tests/vectors/settings-v1.json)
//! through the C ABI: `payidem_client_options_resolve` and
//! `payidem_client_new` for the client's options,
//! `payidem_operation_start_resolve` and `payidem_operation_new` for the
//! machine's start object. Every case gives the value or the error (code
//! and field) the file states, as in Rust, Go and Python.

use std::ffi::{c_char, CStr, CString};
use std::ptr;

use payidem_capi::*;
use serde_json::Value;

#[path = "../../../core/tests/support/settings_cases.rs"]
mod settings_cases;

const SECRET: &[u8] = b"capi-settings-secret-0123456789";

fn vectors() -> Value {
    serde_json::from_str(include_str!("../../../core/tests/vectors/settings-v1.json")).unwrap()
}

fn document(base: &Value, case: &Value) -> String {
    settings_cases::document(base, case).to_string()
}

/// `(code name, field)` of `err`, then freed.
fn error_of(err: *mut payidem_error) -> (String, String) {
    assert!(!err.is_null());
    // SAFETY: a live error from the ABI, read before it is freed.
    unsafe {
        let code = CStr::from_ptr(payidem_result_name(payidem_error_code(err) as u32))
            .to_string_lossy()
            .into_owned();
        let field = payidem_error_field(err);
        let field = if field.is_null() {
            String::new()
        } else {
            CStr::from_ptr(field).to_string_lossy().into_owned()
        };
        payidem_error_free(err);
        (code, field)
    }
}

type Resolve = unsafe extern "C" fn(
    *const c_char,
    *mut *mut c_char,
    *mut *mut payidem_error,
) -> payidem_result;

fn resolve(f: Resolve, json: &str) -> Result<Value, (String, String)> {
    let json = CString::new(json).unwrap();
    let mut out = ptr::null_mut();
    let mut err = ptr::null_mut();
    // SAFETY: valid pointers; the string is freed by the ABI's own function.
    unsafe {
        if f(json.as_ptr(), &mut out, &mut err) == payidem_result::PAYIDEM_OK {
            let doc = serde_json::from_str(CStr::from_ptr(out).to_str().unwrap()).unwrap();
            payidem_string_free(out);
            Ok(doc)
        } else {
            assert!(out.is_null());
            Err(error_of(err))
        }
    }
}

fn check(case: &Value, got: &Result<Value, (String, String)>) {
    let setting = case["setting"].as_str().unwrap();
    let expect = &case["expect"];
    match (got, expect.get("error")) {
        (Ok(doc), None) => {
            let value = setting
                .split('.')
                .try_fold(doc, |v, k| v.get(k))
                .unwrap_or(&Value::Null);
            assert_eq!(value, &expect["value"], "{case}");
        }
        (Err((code, field)), Some(want)) => {
            assert_eq!(code, want.as_str().unwrap(), "{case}");
            assert_eq!(field, expect["field"].as_str().unwrap(), "{case}");
        }
        (got, _) => panic!("{case}: got {got:?}"),
    }
}

#[test]
fn every_client_setting_follows_the_cores_rule_through_the_c_abi() {
    let v = vectors();
    let cases = v["client"]["cases"].as_array().unwrap();
    for case in cases {
        let json = document(&v["client"]["base"], case);
        let got = resolve(payidem_client_options_resolve, &json);
        check(case, &got);
        if let Err(expected) = got {
            // payidem_client_new refuses the same options for the same reason.
            let json = CString::new(json).unwrap();
            let mut client = ptr::null_mut();
            let mut err = ptr::null_mut();
            // SAFETY: valid pointers.
            let rc = unsafe {
                payidem_client_new(
                    json.as_ptr(),
                    SECRET.as_ptr(),
                    SECRET.len(),
                    &mut client,
                    &mut err,
                )
            };
            assert_ne!(rc, payidem_result::PAYIDEM_OK, "{case}");
            assert_eq!(error_of(err), expected, "{case}");
        }
    }
    assert!(cases.len() > 100);
}

#[test]
fn every_start_setting_follows_the_cores_rule_through_the_c_abi() {
    let v = vectors();
    let cases = v["start"]["cases"].as_array().unwrap();
    for case in cases {
        let json = document(&v["start"]["base"], case);
        let got = resolve(payidem_operation_start_resolve, &json);
        check(case, &got);
        let c = CString::new(json).unwrap();
        let mut op = ptr::null_mut();
        let mut err = ptr::null_mut();
        // SAFETY: valid pointers; the machine is freed.
        let rc = unsafe { payidem_operation_new(c.as_ptr(), &mut op, &mut err) };
        match &got {
            Ok(_) => {
                assert_eq!(rc, payidem_result::PAYIDEM_OK, "{case}");
                unsafe { payidem_operation_free(op) };
            }
            Err(expected) => assert_eq!(&error_of(err), expected, "{case}"),
        }
    }
    assert!(cases.len() > 80);
}

#[test]
fn resolve_names_null_arguments_and_frees_null() {
    let mut err = ptr::null_mut();
    // SAFETY: NULL arguments are refused by name; freeing NULL does nothing.
    unsafe {
        let rc = payidem_client_options_resolve(c"{}".as_ptr(), ptr::null_mut(), &mut err);
        assert_ne!(rc, payidem_result::PAYIDEM_OK);
        assert_eq!(error_of(err).1, "resolved_out");
        payidem_string_free(ptr::null_mut());
    }
}

/// Both `*_resolve` functions check in one order: the JSON text, then
/// `resolved_out`, then the settings (a NULL `resolved_out` is named even
/// when the text is not a JSON object), and write nothing on failure.
#[test]
fn both_resolves_check_the_text_then_the_output_then_the_settings() {
    for (f, json_name) in [
        (payidem_client_options_resolve as Resolve, "options_json"),
        (payidem_operation_start_resolve as Resolve, "start_json"),
    ] {
        let mut out: *mut c_char = ptr::null_mut();
        let mut err = ptr::null_mut();
        // SAFETY: NULL and valid pointers only; nothing is written on failure.
        unsafe {
            let rc = f(ptr::null(), ptr::null_mut(), &mut err);
            assert_eq!(rc, payidem_result::PAYIDEM_INVALID_ARGUMENT);
            assert_eq!(error_of(err).1, json_name);
            let rc = f(c"not json".as_ptr(), ptr::null_mut(), &mut err);
            assert_eq!(rc, payidem_result::PAYIDEM_INVALID_ARGUMENT);
            assert_eq!(error_of(err).1, "resolved_out");
            let rc = f(c"not json".as_ptr(), &mut out, &mut err);
            assert_eq!(rc, payidem_result::PAYIDEM_INVALID_ARGUMENT);
            assert_eq!(error_of(err).1, json_name, "a text that is no object");
            assert!(out.is_null(), "nothing written on failure");
        }
    }
}
