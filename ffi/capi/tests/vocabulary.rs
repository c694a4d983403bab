//! Every C enum of `include/payidem.h` that numbers a core vocabulary has
//! exactly the core table's values: the constant `PREFIX` + the upper-case
//! core name, with the core number (plus the C ABI's own values listed
//! here), and its name function answers the core name for every number.

use std::collections::BTreeMap;
use std::ffi::{c_char, CStr};
use std::path::PathBuf;

use payidem::vocabulary::tables;
use payidem_capi as c;

fn header() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../include/payidem.h");
    std::fs::read_to_string(path).expect("include/payidem.h")
}

/// The constants of `enum <name> { ... }` in the header, with their values.
fn c_enum(header: &str, name: &str) -> BTreeMap<String, u32> {
    let start = header
        .find(&format!("enum {name}\n"))
        .unwrap_or_else(|| panic!("the header has no enum {name}"));
    let body = &header[start..];
    let body = &body[body.find('{').unwrap() + 1..body.find("};").unwrap()];
    body.lines()
        .map(str::trim)
        .filter(|l| l.starts_with("PAYIDEM_"))
        .map(|l| {
            let (constant, value) = l.trim_end_matches(',').split_once(" = ").unwrap();
            (constant.to_owned(), value.parse().unwrap())
        })
        .collect()
}

/// The C ABI's own constants, which no core table holds.
fn c_only(c_type: &str) -> &'static [(&'static str, u32)] {
    match c_type {
        "payidem_result" => &[("PAYIDEM_OK", 0), ("PAYIDEM_BUFFER_TOO_SMALL", 100)],
        "payidem_operation_state" => &[("PAYIDEM_STATE_NOT_FOUND", 0)],
        _ => &[],
    }
}

fn name_function(c_type: &str) -> extern "C" fn(u32) -> *const c_char {
    match c_type {
        "payidem_result" => c::payidem_result_name,
        "payidem_operation_state" => c::payidem_operation_state_name,
        "payidem_attempt_kind" => c::payidem_attempt_kind_name,
        "payidem_next_action" => c::payidem_next_action_name,
        "payidem_landed" => c::payidem_landed_name,
        "payidem_decision_kind" => c::payidem_decision_kind_name,
        "payidem_step_type" => c::payidem_step_type_name,
        "payidem_attempt_outcome" => c::payidem_attempt_outcome_name,
        other => panic!("no name function for {other}"),
    }
}

fn text(p: *const c_char) -> Option<String> {
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_owned())
}

#[test]
fn every_c_enum_is_its_core_table() {
    let h = header();
    for table in tables() {
        let mut expected: BTreeMap<String, u32> = table
            .values
            .iter()
            .map(|(name, n)| (format!("{}{}", table.c_prefix, name.to_uppercase()), *n))
            .collect();
        for (constant, n) in c_only(table.c_type) {
            expected.insert((*constant).to_owned(), *n);
        }
        assert_eq!(c_enum(&h, table.c_type), expected, "{}", table.c_type);
    }
}

#[test]
fn every_name_function_answers_the_core_name() {
    for table in tables() {
        let name_of = name_function(table.c_type);
        for (name, n) in &table.values {
            assert_eq!(
                text(name_of(*n)).as_deref(),
                Some(*name),
                "{}",
                table.c_type
            );
        }
        let highest = table.values.iter().map(|(_, n)| *n).max().unwrap();
        for unknown in [highest + 1, 99, 101, u32::MAX] {
            assert_eq!(text(name_of(unknown)), None, "{} {unknown}", table.c_type);
        }
    }
    assert_eq!(text(c::payidem_result_name(0)).as_deref(), Some("ok"));
    assert_eq!(
        text(c::payidem_result_name(100)).as_deref(),
        Some("buffer_too_small")
    );
    assert_eq!(text(c::payidem_operation_state_name(0)), None);
}

#[test]
fn signed_header_names_are_the_cores() {
    let names: Vec<String> = (0..)
        .map_while(|i| text(c::payidem_signed_header_name(i)))
        .collect();
    assert_eq!(names, payidem::protocol::headers::SIGNED);
    assert_eq!(text(c::payidem_signed_header_name(u32::MAX)), None);
}
