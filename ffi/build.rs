//! Link settings of the shared library: the SONAME carries the ABI version
//! (`libpayidem.so.0`). rustc itself keeps every symbol but the exported
//! `payidem_*` functions local; `ffi/tests-c/check-symbols.sh` proves it.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libpayidem.so.0");
    }
}
