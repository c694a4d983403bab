//! `payidem_client_target_of`: the core's base-URL check through the C ABI.

use std::ffi::{c_char, CStr, CString};
use std::ptr;

use payidem_capi as c;

const SECRET: &[u8] = b"0123456789abcdef0123";

fn client(base_url: &str) -> *mut c::payidem_client {
    let json = CString::new(format!(
        r#"{{"base_url":"{base_url}","key_id":"key_test_1","journal_path":":memory:"}}"#
    ))
    .unwrap();
    let mut client = ptr::null_mut();
    let rc = unsafe {
        c::payidem_client_new(
            json.as_ptr(),
            SECRET.as_ptr(),
            SECRET.len(),
            &mut client,
            ptr::null_mut(),
        )
    };
    assert_eq!(rc, c::payidem_result::PAYIDEM_OK);
    client
}

/// The target, or the field the error names.
fn target_of(client: *const c::payidem_client, url: &str) -> Result<String, String> {
    let url = CString::new(url).unwrap();
    let mut buf = [0 as c_char; 256];
    let mut len = 0usize;
    let mut err = ptr::null_mut();
    let rc = unsafe {
        c::payidem_client_target_of(
            client,
            url.as_ptr(),
            buf.as_mut_ptr(),
            buf.len(),
            &mut len,
            &mut err,
        )
    };
    if rc == c::payidem_result::PAYIDEM_OK {
        let text = unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_str()
            .unwrap()
            .to_owned();
        assert_eq!(text.len(), len);
        return Ok(text);
    }
    assert_eq!(rc, c::payidem_result::PAYIDEM_INVALID_ARGUMENT);
    let field = unsafe { CStr::from_ptr(c::payidem_error_field(err)) }
        .to_str()
        .unwrap()
        .to_owned();
    unsafe { c::payidem_error_free(err) };
    Err(field)
}

#[test]
fn a_url_under_the_base_gives_its_target_and_any_other_is_refused() {
    let c = client("https://pay.example/api/");
    assert_eq!(
        target_of(c, "https://pay.example:443/api/v1?x=1"),
        Ok("/v1?x=1".into())
    );
    assert_eq!(target_of(c, "HTTPS://PAY.example/api/v1"), Ok("/v1".into()));
    for outside in [
        "https://other.example/api/v1",
        "http://pay.example/api/v1",
        "https://pay.example:8443/api/v1",
        "https://pay.example/apiv1",
        "https://u:p@pay.example/api/v1",
        "/api/v1",
    ] {
        assert_eq!(target_of(c, outside), Err("url".into()), "{outside}");
    }
    unsafe { c::payidem_client_free(c) };
}

#[test]
fn null_arguments_are_named() {
    let c = client("https://pay.example");
    let mut err = ptr::null_mut();
    let rc = unsafe {
        c::payidem_client_target_of(
            c,
            ptr::null(),
            ptr::null_mut(),
            0,
            ptr::null_mut(),
            &mut err,
        )
    };
    assert_eq!(rc, c::payidem_result::PAYIDEM_INVALID_ARGUMENT);
    let field = unsafe { CStr::from_ptr(c::payidem_error_field(err)) };
    assert_eq!(field.to_str(), Ok("url"));
    unsafe {
        c::payidem_error_free(err);
        c::payidem_client_free(c);
    }
}
