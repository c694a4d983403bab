//! No import arrow in the crate points back up: every module names only
//! modules on its own layer or below (the layers are listed in `lib.rs`'s
//! module docs).
//!
//! The rule, checked on the source text: in the files of module `m` (its
//! `m.rs` or every file under `m/`), code outside comments may write
//! `crate::x` only where `x` is `m` itself or a module below `m` in
//! [`LAYERS`]; writing `crate::<Item>` (an item re-exported at the crate
//! root, such as `crate::Error`) is refused too, because the root re-exports
//! from every layer.

use std::fs;
use std::path::{Path, PathBuf};

/// The crate's modules, bottom first; modules on one line are one layer
/// and may name each other only where listed in [`SAME_LAYER`].
const LAYERS: &[&[&str]] = &[
    // The simulator's hooks (feature `sim`) and the switches that read them.
    &["sim"],
    &["sim_points"],
    &["vocabulary"],
    &["error", "hex", "redact", "metrics"],
    &["protocol"],
    &["policy"],
    &["operation"],
    &["journal"],
    &["verifier"],
    &["client"],
    &["settings"],
];

/// Arrows allowed inside one layer: `(from, to)`.
const SAME_LAYER: &[(&str, &str)] = &[("error", "redact")];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file of the top-level module `module`.
fn files_of(module: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let file = src().join(format!("{module}.rs"));
    if file.is_file() {
        out.push(file);
    }
    let dir = src().join(module);
    if dir.is_dir() {
        let mut stack = vec![dir];
        while let Some(d) = stack.pop() {
            for entry in fs::read_dir(&d).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    out.push(path);
                }
            }
        }
    }
    out.sort();
    out
}

/// The code of `text` without comments (line comments, doc comments and
/// block comments) and without the contents of string literals, so that a
/// path named in prose is not an arrow.
fn code_of(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if b[i] == b'"' {
            out.push('"');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            out.push('"');
            i += 1;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

/// Every name written right after `crate::` in `code`, with the
/// `{a, b::c}` of a grouped `use crate::{…}` spread out.
fn crate_names(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().last();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // a longer identifier ending in `crate`
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for part in group[..end].split(',') {
                let name: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    names.push(name);
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            names.push(name);
        }
    }
    names
}

/// What is wrong with module `from` naming `crate::<to>`, if anything.
fn violation(from: &str, to: &str) -> Option<String> {
    if to == from {
        return None;
    }
    let Some(to_layer) = layer_of(to) else {
        return Some(format!(
            "names crate::{to}, not a module of the layers: name the module that defines it"
        ));
    };
    let from_layer = layer_of(from).expect("checked modules are in LAYERS");
    if to_layer < from_layer || SAME_LAYER.contains(&(from, to)) {
        None
    } else {
        Some(format!(
            "names crate::{to} (layer {to_layer}), at or above its own layer {from_layer}"
        ))
    }
}

#[test]
fn every_module_of_the_crate_is_in_a_layer() {
    let mut modules: Vec<String> = fs::read_dir(src())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| {
            let name = p.file_stem()?.to_str()?.to_owned();
            (p.is_dir() || p.extension().is_some_and(|e| e == "rs")).then_some(name)
        })
        .filter(|n| n != "lib")
        .collect();
    modules.sort();
    modules.dedup();
    for m in &modules {
        assert!(
            layer_of(m).is_some(),
            "core/src/{m} is in no layer of tests/layers.rs: place it"
        );
    }
    let lib = fs::read_to_string(src().join("lib.rs")).unwrap();
    for m in &modules {
        assert!(
            lib.contains(&format!("mod {m};")),
            "lib.rs declares no `mod {m};`"
        );
    }
}

#[test]
fn no_module_names_a_module_above_it() {
    let mut wrong = Vec::new();
    let mut arrows = 0;
    for layer in LAYERS {
        for module in *layer {
            for file in files_of(module) {
                let code = code_of(&fs::read_to_string(&file).unwrap());
                for to in crate_names(&code) {
                    arrows += 1;
                    if let Some(why) = violation(module, &to) {
                        let shown = file.strip_prefix(src()).unwrap().display().to_string();
                        wrong.push(format!("{shown}: {why}"));
                    }
                }
            }
        }
    }
    assert!(
        arrows > 50,
        "the scan found only {arrows} arrows: is it reading the sources?"
    );
    wrong.sort();
    wrong.dedup();
    assert!(
        wrong.is_empty(),
        "arrows pointing up:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_scan_sees_the_arrows_it_must_refuse() {
    let code = code_of(
        "use crate::{error::Error, client::Client};\n// crate::client in prose\nlet s = \"crate::client\";\nlet e = crate::Error::invalid(\"a\", \"b\");\n$crate::journal::x();\n",
    );
    assert_eq!(crate_names(&code), ["error", "client", "Error", "journal"]);
    assert!(violation("protocol", "client").is_some());
    assert!(violation("protocol", "verifier").is_some());
    assert!(violation("operation", "Error").is_some());
    assert!(violation("policy", "operation").is_some());
    assert!(violation("metrics", "operation").is_some());
    assert!(violation("error", "redact").is_none());
    assert!(violation("verifier", "protocol").is_none());
    assert!(violation("client", "verifier").is_none());
    assert!(violation("redact", "error").is_some());
}
