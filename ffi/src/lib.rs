//! The shared and static library of payidem's C ABI (`libpayidem.so`,
//! `libpayidem.a`). Every function lives in `payidem-capi`; this crate only
//! links them into the C artifacts. The header is `include/payidem.h`.

pub use payidem_capi::*;
