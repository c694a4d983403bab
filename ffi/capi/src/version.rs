//! The library's version and ABI version.

use std::ffi::c_char;

/// The ABI version: the number in the SONAME (`libpayidem.so.0`). It changes
/// only when a function, struct or code changes incompatibly.
pub const PAYIDEM_ABI_VERSION: u32 = 0;

/// The library's version (`PAYIDEM_VERSION_MAJOR` and friends in the
/// header are generated from the same Cargo.toml), e.g. `"0.1.0"`; compare with `PAYIDEM_VERSION` to
/// detect a header that does not match the linked library.
///
/// Ownership: the string is static; never free it.
/// NULL: never takes a pointer.
/// Threads: safe from any thread.
/// Errors: none.
#[no_mangle]
pub extern "C" fn payidem_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The ABI version of the linked library; equal to `PAYIDEM_ABI_VERSION`
/// when the header matches.
///
/// Ownership: nothing to free.
/// NULL: never takes a pointer.
/// Threads: safe from any thread.
/// Errors: none.
#[no_mangle]
pub extern "C" fn payidem_abi_version() -> u32 {
    PAYIDEM_ABI_VERSION
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn version_matches_cargo_toml() {
        let runtime = unsafe { CStr::from_ptr(payidem_version()) };
        assert_eq!(runtime.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
        assert_eq!(payidem_abi_version(), PAYIDEM_ABI_VERSION);
    }
}
