//! HTTP headers passed in by the caller, and the protocol's header names.

use std::borrow::Cow;
use std::ffi::c_char;

use crate::base::error::FfiError;
use crate::base::text::{array, lossy_str};

/// One HTTP header: a name and a value, both NUL-terminated. Names compare
/// ASCII case-insensitively. Bytes that are not UTF-8 are read lossily
/// (such a value can never satisfy a protocol rule).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct payidem_header {
    /// The header's name, e.g. `"X-Nonce"`; never NULL.
    pub name: *const c_char,
    /// The header's value; never NULL (use `""` for an empty value).
    pub value: *const c_char,
}

/// One header as read from C.
pub(crate) type HeaderPair<'a> = (Cow<'a, str>, Cow<'a, str>);

/// Reads `count` headers at `ptr` into owned-or-borrowed pairs.
pub(crate) unsafe fn read_headers<'a>(
    ptr: *const payidem_header,
    count: usize,
    name: &str,
) -> Result<Vec<HeaderPair<'a>>, FfiError> {
    array(ptr, count, name)?
        .iter()
        .enumerate()
        .map(|(i, h)| {
            Ok((
                lossy_str(h.name, &format!("{name}[{i}].name"))?,
                lossy_str(h.value, &format!("{name}[{i}].value"))?,
            ))
        })
        .collect()
}
