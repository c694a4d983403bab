//! The C layer's own error messages (a NULL argument, invalid UTF-8, a
//! buffer too small, an option renamed for C) are recorded like the core's
//! (`payidem::error::text`, `PAYIDEM_ERROR_TEXT_LOG`), so that
//! `scripts/check-error-texts.sh` checks them. Under `make test-rust` the
//! log is the run's own; alone, this test records into a file of its own.
//! One test in this binary: it sets the log before any error is made.

use std::ffi::c_char;
use std::ptr;

use payidem_capi::*;

/// The log every error of this process is recorded in, and whether it is
/// this test's own: the run's, or a new one in the temp directory.
fn log_path() -> (std::path::PathBuf, bool) {
    if let Some(path) = std::env::var_os("PAYIDEM_ERROR_TEXT_LOG") {
        return (path.into(), false);
    }
    let path = std::env::temp_dir().join(format!(
        "payidem-capi-error-texts-{}.log",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    // Only this binary's one test runs, and no error was made yet.
    std::env::set_var("PAYIDEM_ERROR_TEXT_LOG", &path);
    (path, true)
}

/// The result of `call` given an error slot; the error is freed.
fn fails(call: impl FnOnce(*mut *mut payidem_error) -> payidem_result) -> payidem_result {
    let mut err = ptr::null_mut();
    let rc = call(&mut err);
    assert!(!err.is_null(), "the call failed without an error");
    // SAFETY: a live error the call gave.
    unsafe { payidem_error_free(err) };
    rc
}

#[test]
fn the_c_layers_own_messages_are_recorded_and_keep_the_rules() {
    let (path, own) = log_path();
    let secret = b"0123456789abcdef0123";
    let mut signer = ptr::null_mut();
    let mut buf = [0 as c_char; 3];
    // SAFETY: every pointer is NULL where the call allows it, or valid.
    unsafe {
        let rc = fails(|e| payidem_signer_new(ptr::null(), secret.as_ptr(), 20, &mut signer, e));
        assert_eq!(rc, payidem_result::PAYIDEM_INVALID_ARGUMENT);
        let bad_utf8 = b"k\xff\0";
        let rc = fails(|e| {
            payidem_signer_new(
                bad_utf8.as_ptr().cast(),
                secret.as_ptr(),
                20,
                &mut signer,
                e,
            )
        });
        assert_eq!(rc, payidem_result::PAYIDEM_INVALID_ARGUMENT);
        let rc = fails(|e| payidem_body_sha256_hex(ptr::null(), 0, buf.as_mut_ptr(), 3, e));
        assert_eq!(rc, payidem_result::PAYIDEM_BUFFER_TOO_SMALL);
        let options =
            c"{\"base_url\":\"https://a.example\",\"key_id\":\"k\",\"retry\":{\"max_attempts\":0}}";
        let rc = fails(|e| {
            payidem_client_new(
                options.as_ptr(),
                secret.as_ptr(),
                20,
                &mut ptr::null_mut(),
                e,
            )
        });
        assert_eq!(rc, payidem_result::PAYIDEM_INVALID_ARGUMENT);
    }
    assert!(signer.is_null(), "no signer was made");
    let log = std::fs::read_to_string(&path).expect("the error texts were recorded");
    if own {
        let _ = std::fs::remove_file(&path);
    }
    for line in [
        "ok\tinvalid_argument: key_id: must not be NULL",
        "ok\tinvalid_argument: key_id: is not valid UTF-8",
        "ok\tbuffer_too_small: buf: needs 65 bytes, 3 given",
    ] {
        assert!(
            log.lines().any(|l| l == line),
            "{line:?} is not in the log {}",
            path.display()
        );
    }
    assert!(
        log.lines()
            .any(|l| l.starts_with("ok\tinvalid_argument: retry.max_attempts: ")),
        "an option's error is recorded too: {log}"
    );
}
