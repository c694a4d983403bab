//! The mock's request handling in-process (mock/src/http.rs, handler.rs,
//! routes, control, store, ledger): arbitrary bytes, or correctly signed
//! requests with fuzzed method, target, body and key, fed as a connection
//! receives them, possibly in small pieces. No panic, and every answer is
//! a well-formed HTTP/1.1 response.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use payidem::protocol::{Nonce, Signer};
use payidem_mock::fuzzing::{Harness, NOW};
use payidem_mock::{FaultSettings, DEFAULT_KEY_ID, DEFAULT_SECRET};

#[derive(Arbitrary, Debug)]
struct Signed {
    method: String,
    target: String,
    key: String,
    body: Vec<u8>,
    extra: Vec<(String, String)>,
    nonce: [u8; 16],
}

#[derive(Arbitrary, Debug)]
enum Input {
    Raw(Vec<u8>, u8),
    Requests(Vec<Signed>, u8),
}

fn signed_bytes(req: &Signed) -> Option<Vec<u8>> {
    let signer = Signer::new(DEFAULT_KEY_ID, DEFAULT_SECRET.as_bytes()).ok()?;
    let attempt = signer
        .sign_attempt(
            &req.method,
            &req.target,
            &req.key,
            &req.body,
            NOW,
            Nonce::from_random_bytes(req.nonce),
        )
        .ok()?;
    let mut out = format!("{} {} HTTP/1.1\r\nHost: fuzz\r\n", req.method, req.target).into_bytes();
    for (n, v) in attempt.headers() {
        out.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
    }
    for (n, v) in &req.extra {
        out.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
    }
    out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", req.body.len()).as_bytes());
    out.extend_from_slice(&req.body);
    Some(out)
}

fn check_answers(mut out: &[u8]) {
    while !out.is_empty() {
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut resp = httparse::Response::new(&mut headers);
        let used = match resp.parse(out) {
            Ok(httparse::Status::Complete(n)) => n,
            other => panic!(
                "answer is not HTTP: {other:?} in {:?}",
                String::from_utf8_lossy(out)
            ),
        };
        let code = resp.code.unwrap();
        let len = resp
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("content-length"))
            .map(|h| {
                std::str::from_utf8(h.value)
                    .unwrap()
                    .parse::<usize>()
                    .unwrap()
            })
            .unwrap_or(0);
        assert!(code == 100 || (200..600).contains(&code));
        assert!(
            out.len() >= used + len,
            "answer shorter than its Content-Length"
        );
        out = &out[used + len..];
    }
}

fuzz_target!(|input: Input| {
    let harness = Harness::new(FaultSettings::none());
    let out = match input {
        Input::Raw(bytes, split) => harness.feed(&bytes, usize::from(split)),
        Input::Requests(reqs, split) => {
            let bytes: Vec<u8> = reqs
                .iter()
                .take(8)
                .filter_map(signed_bytes)
                .flatten()
                .collect();
            harness.feed(&bytes, usize::from(split))
        }
    };
    check_answers(&out);
});
