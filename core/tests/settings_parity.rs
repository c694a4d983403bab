//! The settings-parity vectors (tests/vectors/settings-v1.json) through the
//! core's own rules: every client and machine-start setting at absent, 0,
//! negative, maximum, maximum + 1 and a wrong type gives the value or the
//! error the file states. C, Go and Python run the same file.

use payidem::settings::{client, start, SettingError};
use serde_json::Value;

#[path = "support/settings_cases.rs"]
mod settings_cases;
use settings_cases::document;

fn vectors() -> Value {
    serde_json::from_str(include_str!("vectors/settings-v1.json")).unwrap()
}

fn check(case: &Value, got: Result<Value, SettingError>) {
    let setting = case["setting"].as_str().unwrap();
    let expect = &case["expect"];
    match (got, expect.get("error")) {
        (Ok(doc), None) => {
            let value = client::setting_at(&doc, setting).unwrap_or(&Value::Null);
            assert_eq!(value, &expect["value"], "{case}");
        }
        (Err(e), Some(code)) => {
            let code_of = payidem::Error::from(e.clone()).code();
            assert_eq!(code_of.as_str(), code.as_str().unwrap(), "{case}: {e}");
            assert_eq!(e.field(), expect["field"].as_str().unwrap(), "{case}: {e}");
            assert!(e.message().starts_with(e.field()), "{case}: {e}");
        }
        (got, _) => panic!("{case}: got {got:?}"),
    }
}

#[test]
fn every_client_setting_follows_its_rule() {
    let v = vectors();
    let cases = v["client"]["cases"].as_array().unwrap();
    assert!(cases.len() > 100);
    for case in cases {
        let doc = document(&v["client"]["base"], case);
        check(
            case,
            client::client_config(&doc).map(|c| client::settings_json(&c)),
        );
    }
}

#[test]
fn every_start_setting_follows_its_rule() {
    let v = vectors();
    let cases = v["start"]["cases"].as_array().unwrap();
    assert!(cases.len() > 80);
    for case in cases {
        let doc = document(&v["start"]["base"], case);
        check(case, start::start(&doc).map(|s| start::settings_json(&s)));
    }
}

#[test]
fn every_setting_has_cases_for_every_kind_of_value() {
    let v = vectors();
    for part in ["client", "start"] {
        let cases = v[part]["cases"].as_array().unwrap();
        let mut settings: Vec<&str> = cases
            .iter()
            .filter(|c| c["case"] != "unknown")
            .map(|c| c["setting"].as_str().unwrap())
            .collect();
        settings.dedup();
        for setting in settings {
            let kinds: Vec<&str> = cases
                .iter()
                .filter(|c| c["setting"] == setting)
                .map(|c| c["case"].as_str().unwrap())
                .collect();
            if setting == "setup.retry_budget" {
                continue;
            }
            for kind in ["absent", "zero", "negative", "wrong_type"] {
                assert!(kinds.contains(&kind), "{setting} has no {kind} case");
            }
        }
    }
    let client_fields: Vec<&str> = v["client"]["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["setting"].as_str().unwrap())
        .collect();
    for field in client::FIELDS {
        if !["retry", "retry_budget"].contains(field) {
            assert!(client_fields.contains(field), "no case sets {field}");
        }
    }
}

#[test]
fn the_defaults_are_the_absent_settings() {
    let defaults = client::defaults_json();
    let v = vectors();
    for case in v["client"]["cases"].as_array().unwrap() {
        let setting = case["setting"].as_str().unwrap();
        if case["case"] == "absent" && case["expect"].get("value").is_some() {
            assert_eq!(
                client::setting_at(&defaults, setting),
                Some(&case["expect"]["value"]),
                "{setting}"
            );
        }
    }
}
