//! The protocol's error body (core/src/policy/error_body.rs) on arbitrary
//! bytes: no panic, and a code is only found in a JSON object that has it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use payidem::policy::error_code_from_body;

fuzz_target!(|body: &[u8]| {
    if let Some(code) = error_code_from_body(body) {
        let v: serde_json::Value = serde_json::from_slice(body).expect("a code comes from JSON");
        assert_eq!(v["error"]["code"].as_str(), Some(code.as_str()));
    }
});
