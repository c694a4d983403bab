//! Cost of one signing call through the C ABI against the same call in
//! Rust, in one process: `payidem_signer_sign_into` and
//! `payidem_signer_sign_attempt` (+ free) against `Signer::sign_attempt`
//! with an `OsNonceSource` nonce, 256-byte body. Each round times every
//! variant back to back (in alternating order, so drift of a shared machine
//! hits all alike). Reported per variant: the fastest round (the least
//! disturbed by other processes on a shared machine, the figure compared)
//! and the median round; ratios against the Rust anchor of the same kind.
//! Target: ≤ 1.1×.
//!
//! `cargo bench -p payidem-capi --bench sign_ffi` (set
//! `PAYIDEM_BENCH_ROUNDS` to change the 101 rounds).

use std::hint::black_box;
use std::time::Instant;

use payidem::protocol::{NonceSource, OsNonceSource, Signer};
use payidem_capi::*;

const SECRET: &[u8] = b"sk_test_0123456789abcdef0123456789abcdef";
const CALLS_PER_ROUND: u32 = 2_000;
const TIMESTAMP: u64 = 1_767_225_600;

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

fn time(mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..CALLS_PER_ROUND {
        f();
    }
    start.elapsed().as_nanos() as f64 / f64::from(CALLS_PER_ROUND)
}

fn main() {
    let rounds: usize = std::env::var("PAYIDEM_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(201);
    let body: Vec<u8> = (0..256u32).map(|i| b'a' + (i % 26) as u8).collect();
    let rust_signer = Signer::new("key_live_1", SECRET).unwrap();
    let mut c_signer: *mut payidem_signer = std::ptr::null_mut();
    let rc = unsafe {
        payidem_signer_new(
            c"key_live_1".as_ptr(),
            SECRET.as_ptr(),
            SECRET.len(),
            &mut c_signer,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(rc, payidem_result::PAYIDEM_OK);

    let rust = || {
        let signed = rust_signer
            .sign_attempt(
                "POST",
                "/v1/payments",
                "create-ord-bench",
                black_box(&body),
                TIMESTAMP,
                OsNonceSource.next_nonce(),
            )
            .unwrap();
        black_box(signed.signature().as_str().as_bytes()[0]);
    };
    let mut headers = std::mem::MaybeUninit::<payidem_signed_headers>::uninit();
    let mut into = || unsafe {
        let rc = payidem_signer_sign_into(
            c_signer,
            c"POST".as_ptr(),
            c"/v1/payments".as_ptr(),
            c"create-ord-bench".as_ptr(),
            black_box(body.as_ptr()),
            body.len(),
            TIMESTAMP,
            headers.as_mut_ptr(),
            std::ptr::null_mut(),
        );
        assert_eq!(rc, payidem_result::PAYIDEM_OK);
        black_box(headers.assume_init_ref().signature[0]);
    };
    let handle = || unsafe {
        let mut attempt: *mut payidem_signed_attempt = std::ptr::null_mut();
        let rc = payidem_signer_sign_attempt(
            c_signer,
            c"POST".as_ptr(),
            c"/v1/payments".as_ptr(),
            c"create-ord-bench".as_ptr(),
            black_box(body.as_ptr()),
            body.len(),
            TIMESTAMP,
            &mut attempt,
            std::ptr::null_mut(),
        );
        assert_eq!(rc, payidem_result::PAYIDEM_OK);
        black_box(*payidem_signed_attempt_signature(attempt));
        payidem_signed_attempt_free(attempt);
    };

    // Warm-up: caches, the thread's nonce generator, the allocator.
    time(rust);
    time(&mut into);
    time(handle);
    let (mut r, mut i, mut h) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        if round % 2 == 0 {
            r.push(time(rust));
            i.push(time(&mut into));
            h.push(time(handle));
        } else {
            h.push(time(handle));
            i.push(time(&mut into));
            r.push(time(rust));
        }
    }
    unsafe { payidem_signer_free(c_signer) };
    println!(
        "sign one attempt, 256-byte body, {rounds} rounds x {CALLS_PER_ROUND} calls; ns/call (ratio to Rust)"
    );
    println!("variant                                     fastest round        median round");
    for (name, times) in [
        ("rust   Signer::sign_attempt (anchor)", &r),
        ("c-abi  payidem_signer_sign_into", &i),
        ("c-abi  payidem_signer_sign_attempt + free", &h),
    ] {
        println!(
            "{name:<43} {:7.1} ({:.3}x)    {:7.1} ({:.3}x)",
            min(times),
            min(times) / min(&r),
            median(times),
            median(times) / median(&r)
        );
    }
}
