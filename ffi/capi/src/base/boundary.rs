//! The panic boundary every exported function runs inside.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::base::enums::payidem_result;
use crate::base::error::{payidem_error, FfiError};

/// Runs `body` so that no panic crosses the C ABI. On success `*err_out`
/// (when given) becomes NULL; on failure it receives a new error the caller
/// frees. Returns the result code.
pub(crate) fn guard(
    err_out: *mut *mut payidem_error,
    body: impl FnOnce() -> Result<(), FfiError>,
) -> payidem_result {
    let outcome = catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|panic| {
        let detail = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".to_owned());
        Err(FfiError::internal(format!(
            "a bug inside payidem: a panic was stopped at the C boundary ({detail})"
        )))
    });
    match outcome {
        Ok(()) => {
            if !err_out.is_null() {
                // SAFETY: the caller passes NULL or a writable pointer.
                unsafe { err_out.write(std::ptr::null_mut()) };
            }
            payidem_result::PAYIDEM_OK
        }
        Err(error) => {
            let code = error.code;
            if !err_out.is_null() {
                let boxed = Box::into_raw(Box::new(payidem_error::from(error)));
                // SAFETY: as above.
                unsafe { err_out.write(boxed) };
            }
            code
        }
    }
}

/// Runs `body`, which cannot fail, so that no panic crosses the C ABI; a
/// panic gives `fallback`.
pub(crate) fn guard_value<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::error::{payidem_error_code, payidem_error_free, payidem_error_message};
    use std::ffi::CStr;

    #[test]
    fn a_panic_becomes_internal_error() {
        let mut err: *mut payidem_error = std::ptr::null_mut();
        let code = guard(&mut err, || panic!("boom"));
        assert_eq!(code, payidem_result::PAYIDEM_INTERNAL_ERROR);
        assert!(!err.is_null());
        unsafe {
            assert_eq!(
                payidem_error_code(err),
                payidem_result::PAYIDEM_INTERNAL_ERROR
            );
            let message = CStr::from_ptr(payidem_error_message(err)).to_str().unwrap();
            assert!(message.contains("boom"), "{message}");
            payidem_error_free(err);
        }
        assert_eq!(guard_value(7, || panic!("boom")), 7);
    }

    #[test]
    fn success_clears_the_error_slot() {
        let mut err: *mut payidem_error = std::ptr::dangling_mut::<payidem_error>();
        assert_eq!(guard(&mut err, || Ok(())), payidem_result::PAYIDEM_OK);
        assert!(err.is_null());
        assert_eq!(
            guard(std::ptr::null_mut(), || Err(FfiError::null("x"))),
            payidem_result::PAYIDEM_INVALID_ARGUMENT
        );
    }
}
