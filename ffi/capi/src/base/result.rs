//! The result code of every fallible call.

use std::ffi::c_char;

use payidem::ErrorCode;

use crate::base::enums::payidem_result;

impl payidem_result {
    /// Every code, in number order.
    pub(crate) const ALL: [payidem_result; 21] = [
        payidem_result::PAYIDEM_OK,
        payidem_result::PAYIDEM_INVALID_ARGUMENT,
        payidem_result::PAYIDEM_IDEMPOTENCY_CONFLICT,
        payidem_result::PAYIDEM_REJECTED,
        payidem_result::PAYIDEM_OUTCOME_UNKNOWN,
        payidem_result::PAYIDEM_KEY_EXPIRED,
        payidem_result::PAYIDEM_OPERATION_BUSY,
        payidem_result::PAYIDEM_TRANSPORT_ERROR,
        payidem_result::PAYIDEM_JOURNAL_ERROR,
        payidem_result::PAYIDEM_MISSING_SIGNATURE,
        payidem_result::PAYIDEM_UNKNOWN_API_KEY,
        payidem_result::PAYIDEM_TIMESTAMP_OUT_OF_WINDOW,
        payidem_result::PAYIDEM_INVALID_SIGNATURE,
        payidem_result::PAYIDEM_NONCE_REUSED,
        payidem_result::PAYIDEM_REPLAY_CACHE_FULL,
        payidem_result::PAYIDEM_IDEMPOTENCY_KEY_REQUIRED,
        payidem_result::PAYIDEM_INTERNAL_ERROR,
        payidem_result::PAYIDEM_CANCELLED,
        payidem_result::PAYIDEM_REFUSED,
        payidem_result::PAYIDEM_REPLAY_STORE_UNAVAILABLE,
        payidem_result::PAYIDEM_BUFFER_TOO_SMALL,
    ];

    /// The stable snake_case name: core's name for codes 1 to 99, `ok` and
    /// `buffer_too_small` for the others.
    pub fn name(self) -> &'static str {
        match self {
            payidem_result::PAYIDEM_OK => "ok",
            payidem_result::PAYIDEM_BUFFER_TOO_SMALL => "buffer_too_small",
            other => other
                .error_code()
                .map_or("internal_error", ErrorCode::as_str),
        }
    }

    /// The same name as a NUL-terminated C string: core's for codes 1 to
    /// 99.
    fn c_name(self) -> &'static std::ffi::CStr {
        match self {
            payidem_result::PAYIDEM_OK => c"ok",
            payidem_result::PAYIDEM_BUFFER_TOO_SMALL => c"buffer_too_small",
            other => other
                .error_code()
                .map_or(c"internal_error", ErrorCode::c_name),
        }
    }

    /// Core's code for codes 1 to 99.
    pub fn error_code(self) -> Option<ErrorCode> {
        ErrorCode::ALL
            .into_iter()
            .find(|c| c.number() == self as u32)
    }

    /// The code with this number, if any.
    pub fn from_number(number: u32) -> Option<payidem_result> {
        payidem_result::ALL
            .into_iter()
            .find(|r| *r as u32 == number)
    }
}

impl From<ErrorCode> for payidem_result {
    fn from(code: ErrorCode) -> payidem_result {
        payidem_result::from_number(code.number())
            .filter(|r| (1..100).contains(&(*r as u32)))
            .unwrap_or(payidem_result::PAYIDEM_INTERNAL_ERROR)
    }
}

/// The stable snake_case name of a result number (`"ok"`,
/// `"invalid_argument"`, ..., `"buffer_too_small"`), the same name every
/// binding uses; NULL for a number that is no code.
///
/// Ownership: the string is static; never free it.
/// NULL: never takes a pointer.
/// Threads: safe from any thread.
/// Errors: none; an unknown number gives NULL.
#[no_mangle]
pub extern "C" fn payidem_result_name(code: u32) -> *const c_char {
    payidem_result::from_number(code).map_or(std::ptr::null(), |r| r.c_name().as_ptr())
}

/// The highest number among payidem's stable error codes in the linked
/// library. Codes 1 to this number are exactly the core library's codes,
/// without gaps, each named by `payidem_result_name`; the C ABI's own codes
/// (from 100 up) are not counted. Lets a binding check, at run time, that
/// it knows every code of the library it is linked with.
///
/// Ownership: nothing to free.
/// NULL: never takes a pointer.
/// Threads: safe from any thread.
/// Errors: none.
#[no_mangle]
pub extern "C" fn payidem_result_max_error_code() -> u32 {
    ErrorCode::ALL
        .into_iter()
        .map(ErrorCode::number)
        .max()
        .unwrap_or(0)
}

/// Whether an operation that ended with `code` is settled for good: it is
/// never sent again, and executing or resuming it answers the same end
/// (`PAYIDEM_REJECTED`, `PAYIDEM_IDEMPOTENCY_CONFLICT`,
/// `PAYIDEM_KEY_EXPIRED`). False for every other code, including unknown
/// numbers: the operation keeps its key and may still be completed
/// (`PAYIDEM_OUTCOME_UNKNOWN`, `PAYIDEM_REFUSED`, `PAYIDEM_TRANSPORT_ERROR`,
/// `PAYIDEM_CANCELLED`, ...).
///
/// Ownership: nothing to free.
/// NULL: never takes a pointer.
/// Threads: safe from any thread.
/// Errors: none.
#[no_mangle]
pub extern "C" fn payidem_result_is_final(code: u32) -> bool {
    payidem_result::from_number(code)
        .and_then(payidem_result::error_code)
        .is_some_and(ErrorCode::is_final)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_map_one_to_one_with_core() {
        for code in ErrorCode::ALL {
            let result = payidem_result::from(code);
            assert_eq!(result as u32, code.number(), "{code}");
            assert_eq!(result.name(), code.as_str());
            assert_eq!(result.c_name().to_str().unwrap(), code.as_str());
            assert_eq!(result.error_code(), Some(code));
        }
        let abi_codes: Vec<u32> = payidem_result::ALL
            .iter()
            .map(|r| *r as u32)
            .filter(|n| (1..100).contains(n))
            .collect();
        let core_codes: Vec<u32> = ErrorCode::ALL.iter().map(|c| c.number()).collect();
        assert_eq!(
            abi_codes, core_codes,
            "codes 1..99 are exactly core's codes"
        );
    }

    #[test]
    fn names_are_unique_and_abi_codes_start_at_100() {
        let mut names: Vec<&str> = payidem_result::ALL.iter().map(|r| r.name()).collect();
        for r in payidem_result::ALL {
            assert_eq!(r.name(), r.c_name().to_str().unwrap());
            assert_eq!(payidem_result::from_number(r as u32), Some(r));
            let n = r as u32;
            assert!(n == 0 || r.error_code().is_some() || n >= 100, "{n}");
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), payidem_result::ALL.len());
        assert!(payidem_result_name(20).is_null());
        assert!(payidem_result_name(99).is_null());
    }

    #[test]
    fn max_error_code_bounds_every_core_code_without_gaps() {
        let max = payidem_result_max_error_code();
        assert_eq!(max as usize, ErrorCode::ALL.len());
        for (i, code) in ErrorCode::ALL.into_iter().enumerate() {
            assert_eq!(code.number() as usize, i + 1, "{code}");
        }
        for n in 1..=max {
            let name = payidem_result_name(n);
            assert!(!name.is_null(), "code {n} has no name");
            let name = unsafe { std::ffi::CStr::from_ptr(name) }.to_str().unwrap();
            assert_eq!(ErrorCode::from_name(name).map(ErrorCode::number), Some(n));
        }
        assert!(payidem_result_name(max + 1).is_null());
    }

    #[test]
    fn finality_is_cores() {
        for code in ErrorCode::ALL {
            assert_eq!(
                payidem_result_is_final(code.number()),
                code.is_final(),
                "{code}"
            );
        }
        assert!(!payidem_result_is_final(0));
        assert!(!payidem_result_is_final(100));
        assert!(!payidem_result_is_final(99));
    }
}
