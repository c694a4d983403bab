//! The one way an exported function gives out, frees and reads an opaque
//! handle, and writes borrowed text, bytes and headers into the caller's
//! output pointers (as rustls-ffi's `ffi.rs` castable helpers and
//! `panic.rs` boundary do for rustls). Every exported function stays
//! written out in its own file (cbindgen reads them there); its body is a
//! call into this layer.
//!
//! The promises, the same for every handle type:
//! - a `_new` writes its handle only on success ([`give`]);
//! - a `_free` of NULL does nothing, and a panic while dropping is stopped
//!   at the boundary ([`free`]);
//! - an accessor of a NULL handle gives its fallback (0, false, NULL), and
//!   a panic inside it gives the fallback too ([`read_or`], [`text_of`],
//!   [`bytes_of`]);
//! - `*_header_at` checks the handle, then `name_out`, then `value_out`,
//!   then `index`, naming the first that is wrong ([`header_at`]);
//! - text written into caller memory reports its length also when the
//!   buffer is too small ([`write_text`]).

use std::ffi::{c_char, CStr};
use std::ptr;

use crate::base::boundary::{guard, guard_value};
use crate::base::enums::payidem_result;
use crate::base::error::{payidem_error, FfiError};
use crate::base::text::{self, bytes, out, Out};

/// Boxes `value` and writes the new handle into `slot`: the one way a
/// function gives out a handle the caller frees with its `_free`.
pub(crate) fn give<T>(slot: Out<'_, *mut T>, value: T) {
    slot.write(Box::into_raw(Box::new(value)));
}

/// Frees a handle [`give`] gave out. NULL does nothing; a panic while
/// dropping is stopped here.
///
/// # Safety
/// `handle` is NULL or a live handle of type `T` from [`give`], freed once.
pub(crate) unsafe fn free<T>(handle: *mut T) {
    if !handle.is_null() {
        guard_value((), || drop(Box::from_raw(handle)));
    }
}

/// `read(&*handle)`, or `fallback` for a NULL handle or a panic.
///
/// # Safety
/// `handle` is NULL or a live handle of type `T`.
pub(crate) unsafe fn read_or<T, R: Copy>(
    handle: *const T,
    fallback: R,
    read: impl FnOnce(&T) -> R,
) -> R {
    guard_value(fallback, || handle.as_ref().map_or(fallback, read))
}

/// The text `read` borrows from `*handle`, valid while the handle lives;
/// NULL for a NULL handle, for `None`, or for a panic.
///
/// # Safety
/// `handle` is NULL or a live handle of type `T`.
pub(crate) unsafe fn text_of<T>(
    handle: *const T,
    read: impl FnOnce(&T) -> Option<&CStr>,
) -> *const c_char {
    read_or(handle, ptr::null(), |h| {
        read(h).map_or(ptr::null(), CStr::as_ptr)
    })
}

/// Writes the bytes `read` borrows from `*handle` into `*bytes_out` and
/// `*len_out` and gives true; gives false and writes nothing when any
/// argument is NULL, when `read` finds none, or on a panic.
///
/// # Safety
/// `handle` is NULL or a live handle of type `T`; `bytes_out` and
/// `len_out` are NULL or writable.
pub(crate) unsafe fn bytes_of<T>(
    handle: *const T,
    bytes_out: *mut *const u8,
    len_out: *mut usize,
    read: impl FnOnce(&T) -> Option<&[u8]>,
) -> bool {
    if bytes_out.is_null() || len_out.is_null() {
        return false;
    }
    read_or(handle, false, |h| {
        read(h).is_some_and(|bytes| {
            bytes_out.write(bytes.as_ptr());
            len_out.write(bytes.len());
            true
        })
    })
}

/// Writes the header at `index` of `headers` (borrowed from the handle
/// called `owner` in messages) into `*name_out` and `*value_out`. Checks
/// `name_out`, then `value_out`, then `index`; writes nothing on failure.
///
/// # Safety
/// `name_out` and `value_out` are NULL or writable.
pub(crate) unsafe fn header_at<N: AsRef<CStr>, V: AsRef<CStr>>(
    owner: &str,
    headers: &[(N, V)],
    index: usize,
    name_out: *mut *const c_char,
    value_out: *mut *const c_char,
) -> Result<(), FfiError> {
    let name_slot = out(name_out, "name_out")?;
    let value_slot = out(value_out, "value_out")?;
    let (name, value) = headers.get(index).ok_or_else(|| {
        FfiError::invalid(
            "index",
            format!("is {index}; the {owner} has {} headers", headers.len()),
        )
    })?;
    name_slot.write(name.as_ref().as_ptr());
    value_slot.write(value.as_ref().as_ptr());
    Ok(())
}

/// The body of every `*_header_at` that answers a result code: checks the
/// handle (the parameter called `owner`), then writes the header at
/// `index` of the list `headers` borrows from it, as [`header_at`] does.
///
/// # Safety
/// `handle` is NULL or a live handle of type `T`; `name_out`, `value_out`
/// and `err_out` are NULL or writable.
pub(crate) unsafe fn header_of<T, N: AsRef<CStr>, V: AsRef<CStr>>(
    owner: &str,
    handle: *const T,
    index: usize,
    name_out: *mut *const c_char,
    value_out: *mut *const c_char,
    err_out: *mut *mut payidem_error,
    headers: impl FnOnce(&T) -> &[(N, V)],
) -> payidem_result {
    guard(err_out, || {
        let owned = text::handle(handle, owner)?;
        header_at(owner, headers(owned), index, name_out, value_out)
    })
}

/// A required byte buffer (a secret): unlike [`bytes`], NULL is refused
/// even with length 0, naming `name`.
///
/// # Safety
/// `ptr` is NULL or `len` readable bytes that outlive `'a`.
pub(crate) unsafe fn req_bytes<'a>(
    ptr: *const u8,
    len: usize,
    name: &str,
) -> Result<&'a [u8], FfiError> {
    if ptr.is_null() {
        return Err(FfiError::null(name));
    }
    bytes(ptr, len, name)
}

/// Copies `text` and a NUL into the fixed-size C string `field`, cut to fit
/// (callers pass text whose length rule makes it fit).
pub(crate) fn fill(field: &mut [c_char], text: &str) {
    let bytes = text.as_bytes();
    let len = bytes.len().min(field.len() - 1);
    // SAFETY: `len` bytes fit in `field` with room for the NUL.
    unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), field.as_mut_ptr().cast::<u8>(), len) };
    field[len] = 0;
}

/// The body of every function that writes text into the caller's `buf`
/// with its length in `*len_out`: runs `text` inside the panic boundary
/// and writes what it gives as [`write_text`] does (the parameter `buf`).
///
/// # Safety
/// As [`write_text`]; `err_out` is NULL or writable.
pub(crate) unsafe fn text_out<T>(
    buf: *mut c_char,
    buf_len: usize,
    len_out: *mut usize,
    err_out: *mut *mut payidem_error,
    text: impl FnOnce() -> Result<T, FfiError>,
) -> payidem_result
where
    T: std::ops::Deref,
    T::Target: AsRef<str>,
{
    guard(err_out, || {
        write_text(text()?.as_ref(), buf, buf_len, len_out, "buf")
    })
}

/// Writes `text` and its NUL into the caller's `buf` of `buf_len` bytes
/// (the parameter called `name`). `*len_out` (when given) receives the
/// text's length without the NUL, also when the buffer is too small.
///
/// # Safety
/// `buf` is NULL or `buf_len` writable bytes; `len_out` is NULL or
/// writable.
pub(crate) unsafe fn write_text(
    text: &str,
    buf: *mut c_char,
    buf_len: usize,
    len_out: *mut usize,
    name: &str,
) -> Result<(), FfiError> {
    if buf.is_null() && buf_len > 0 {
        return Err(FfiError::invalid(
            name,
            format!("is NULL but its length is {buf_len}"),
        ));
    }
    if !len_out.is_null() {
        len_out.write(text.len());
    }
    let needed = text.len() + 1;
    if buf_len < needed {
        return Err(FfiError::buffer_too_small(name, needed, buf_len));
    }
    ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), text.len());
    buf.add(text.len()).write(0);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;

    use crate::base::enums::payidem_result;

    struct Thing {
        name: CString,
        body: Vec<u8>,
        headers: Vec<(&'static CStr, CString)>,
    }

    fn thing() -> *mut Thing {
        let mut slot: *mut Thing = ptr::null_mut();
        give(
            out(&mut slot, "thing_out").unwrap(),
            Thing {
                name: c"a name".to_owned(),
                body: b"{}".to_vec(),
                headers: vec![(c"X-A", c"1".to_owned()), (c"X-B", c"2".to_owned())],
            },
        );
        assert!(!slot.is_null());
        slot
    }

    #[test]
    fn accessors_of_a_null_handle_give_the_fallback() {
        let null: *const Thing = ptr::null();
        unsafe {
            assert_eq!(read_or(null, 7usize, |t| t.body.len()), 7);
            assert!(text_of(null, |t| Some(t.name.as_c_str())).is_null());
            let (mut b, mut n) = (ptr::null(), 99usize);
            assert!(!bytes_of(null, &mut b, &mut n, |t| Some(&t.body)));
            assert_eq!((b, n), (ptr::null(), 99), "nothing written");
            free(null.cast_mut());
        }
    }

    #[test]
    fn accessors_borrow_from_the_handle_and_a_panic_gives_the_fallback() {
        let t = thing();
        unsafe {
            assert_eq!(read_or(t, 0usize, |t| t.body.len()), 2);
            assert_eq!(read_or(t, 5usize, |_| panic!("boom")), 5);
            let name = text_of(t, |t| Some(t.name.as_c_str()));
            assert_eq!(CStr::from_ptr(name), c"a name");
            assert!(text_of(t, |_| None).is_null());
            let (mut b, mut n) = (ptr::null(), 0usize);
            assert!(!bytes_of(t, ptr::null_mut(), &mut n, |t| Some(&t.body)));
            assert!(!bytes_of(t, &mut b, ptr::null_mut(), |t| Some(&t.body)));
            assert!(bytes_of(t, &mut b, &mut n, |t| Some(&t.body)));
            assert_eq!(std::slice::from_raw_parts(b, n), b"{}");
            free(t);
        }
    }

    #[test]
    fn header_at_names_the_first_wrong_argument_and_writes_nothing_on_failure() {
        let t = thing();
        unsafe {
            let headers = &(*t).headers;
            let (mut n, mut v) = (ptr::null(), ptr::null());
            let e = header_at("thing", headers, 0, ptr::null_mut(), &mut v).unwrap_err();
            assert!(
                format!("{e:?}").contains(r#"field: Some("name_out")"#),
                "{e:?}"
            );
            let e = header_at("thing", headers, 0, &mut n, ptr::null_mut()).unwrap_err();
            assert!(
                format!("{e:?}").contains(r#"field: Some("value_out")"#),
                "{e:?}"
            );
            let e = header_at("thing", headers, 2, &mut n, &mut v).unwrap_err();
            assert!(
                format!("{e:?}").contains(r#"field: Some("index")"#),
                "{e:?}"
            );
            assert_eq!(e.code, payidem_result::PAYIDEM_INVALID_ARGUMENT);
            assert!(
                format!("{e:?}").contains("index: is 2; the thing has 2 headers"),
                "{e:?}"
            );
            assert!(n.is_null() && v.is_null(), "nothing written on failure");
            header_at("thing", headers, 1, &mut n, &mut v).unwrap();
            assert_eq!((CStr::from_ptr(n), CStr::from_ptr(v)), (c"X-B", c"2"));
            free(t);
        }
    }

    #[test]
    fn write_text_reports_the_length_also_when_the_buffer_is_too_small() {
        unsafe {
            let mut len = 0usize;
            let e = write_text("abc", ptr::null_mut(), 0, &mut len, "buf").unwrap_err();
            assert_eq!(e.code, payidem_result::PAYIDEM_BUFFER_TOO_SMALL);
            assert_eq!(len, 3);
            let e = write_text("abc", ptr::null_mut(), 4, &mut len, "buf").unwrap_err();
            assert_eq!(e.code, payidem_result::PAYIDEM_INVALID_ARGUMENT);
            let mut buf = [1 as c_char; 4];
            write_text("abc", buf.as_mut_ptr(), 4, ptr::null_mut(), "buf").unwrap();
            assert_eq!(CStr::from_ptr(buf.as_ptr()), c"abc");
        }
    }
}
