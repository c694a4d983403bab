//! Conversions between C arguments and Rust values, each naming the
//! parameter it checks.

use std::borrow::Cow;
use std::ffi::{c_char, CStr, CString};

use crate::base::error::FfiError;

/// A required NUL-terminated UTF-8 string.
pub(crate) unsafe fn req_str<'a>(ptr: *const c_char, name: &str) -> Result<&'a str, FfiError> {
    if ptr.is_null() {
        return Err(FfiError::null(name));
    }
    let bytes = CStr::from_ptr(ptr).to_bytes();
    if bytes.is_ascii() {
        // SAFETY: ASCII is UTF-8.
        return Ok(std::str::from_utf8_unchecked(bytes));
    }
    std::str::from_utf8(bytes).map_err(|_| FfiError::invalid(name, "is not valid UTF-8"))
}

/// An optional NUL-terminated UTF-8 string (NULL is `None`).
pub(crate) unsafe fn opt_str<'a>(
    ptr: *const c_char,
    name: &str,
) -> Result<Option<&'a str>, FfiError> {
    if ptr.is_null() {
        Ok(None)
    } else {
        req_str(ptr, name).map(Some)
    }
}

/// A string received from the network (a header): read lossily, since such
/// bytes can never satisfy a protocol rule anyway and must not turn a
/// verification answer into an argument error.
pub(crate) unsafe fn lossy_str<'a>(
    ptr: *const c_char,
    name: &str,
) -> Result<Cow<'a, str>, FfiError> {
    if ptr.is_null() {
        return Err(FfiError::null(name));
    }
    Ok(CStr::from_ptr(ptr).to_string_lossy())
}

/// A byte buffer given as pointer and length; NULL with length 0 is empty.
pub(crate) unsafe fn bytes<'a>(
    ptr: *const u8,
    len: usize,
    name: &str,
) -> Result<&'a [u8], FfiError> {
    slice(ptr, len, name, "length")
}

/// An array of `T` given as pointer and count; NULL with count 0 is empty.
pub(crate) unsafe fn array<'a, T>(
    ptr: *const T,
    count: usize,
    name: &str,
) -> Result<&'a [T], FfiError> {
    slice(ptr, count, name, "count")
}

/// `n` values of `T` at `ptr`, the parameter `name` whose size is called
/// its `unit` in messages ("length", "count"); NULL with 0 is empty.
unsafe fn slice<'a, T>(
    ptr: *const T,
    n: usize,
    name: &str,
    unit: &str,
) -> Result<&'a [T], FfiError> {
    if n == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(FfiError::invalid(
            name,
            format!("is NULL but its {unit} is {n}"),
        ));
    }
    if n > isize::MAX as usize / std::mem::size_of::<T>().max(1) {
        return Err(FfiError::invalid(name, format!("{unit} {n} is impossible")));
    }
    Ok(std::slice::from_raw_parts(ptr, n))
}

/// A required handle.
pub(crate) unsafe fn handle<'a, T>(ptr: *const T, name: &str) -> Result<&'a T, FfiError> {
    ptr.as_ref().ok_or_else(|| FfiError::null(name))
}

/// A required handle the function changes (a call, an operation), named
/// `name` when NULL.
///
/// # Safety
/// `ptr` is NULL or a live handle of type `T` that no one else uses now.
pub(crate) unsafe fn handle_mut<'a, T>(ptr: *mut T, name: &str) -> Result<&'a mut T, FfiError> {
    ptr.as_mut().ok_or_else(|| FfiError::null(name))
}

/// A required output pointer, checked before any work is done.
pub(crate) fn out<'a, T>(ptr: *mut T, name: &str) -> Result<Out<'a, T>, FfiError> {
    if ptr.is_null() {
        Err(FfiError::null(name))
    } else {
        Ok(Out(ptr, std::marker::PhantomData))
    }
}

/// An output pointer known not to be NULL; written only on success.
pub(crate) struct Out<'a, T>(*mut T, std::marker::PhantomData<&'a mut T>);

impl<T> Out<'_, T> {
    /// Writes the value (without reading or dropping the old one, which may
    /// be uninitialised C memory).
    pub(crate) fn write(self, value: T) {
        // SAFETY: checked non-NULL; the caller promised a writable T.
        unsafe { self.0.write(value) }
    }
}

/// A C string of arbitrary text: an interior NUL (only possible in text
/// from the network) is shown as `\0`.
pub(crate) fn c_string(text: impl Into<String>) -> CString {
    let text = text.into();
    match CString::new(text) {
        Ok(c) => c,
        Err(e) => {
            let text = String::from_utf8_lossy(&e.into_vec()).replace('\0', "\\0");
            CString::new(text).expect("every NUL was replaced")
        }
    }
}
