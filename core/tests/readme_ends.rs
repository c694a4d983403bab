//! Every README's table of ends is the core's
//! ([`payidem::operation::EndKind::markdown_table`], the one statement of
//! what each end means): this test fails when one disagrees.
//!
//! `PAYIDEM_WRITE_ENDS=1 cargo test -p payidem --test readme_ends`
//! rewrites the tables.

use std::path::PathBuf;

use payidem::operation::EndKind;

const BEGIN: &str = "<!-- ends: generated from payidem::operation::EndKind (core/tests/readme_ends.rs checks it) -->\n";
const END: &str = "<!-- /ends -->";

/// The documents that show the table of ends.
const DOCUMENTS: [&str; 5] = [
    "README.md",
    "docs/protocol.md",
    "ffi/README.md",
    "bindings/go/README.md",
    "bindings/python/README.md",
];

#[test]
fn every_readme_shows_the_cores_table_of_ends() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let table = EndKind::markdown_table();
    for doc in DOCUMENTS {
        let path = root.join(doc);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{doc}: {e}"));
        let start = text
            .find(BEGIN)
            .unwrap_or_else(|| panic!("{doc} has no table of ends ({BEGIN:?})"))
            + BEGIN.len();
        let stop = start
            + text[start..]
                .find(END)
                .unwrap_or_else(|| panic!("{doc}: the table of ends is not closed"));
        if std::env::var_os("PAYIDEM_WRITE_ENDS").is_some() {
            let fresh = format!("{}{table}{}", &text[..start], &text[stop..]);
            std::fs::write(&path, fresh).unwrap();
            continue;
        }
        assert_eq!(
            &text[start..stop],
            table,
            "{doc}: its table of ends differs from the core's; run PAYIDEM_WRITE_ENDS=1 cargo test -p payidem --test readme_ends"
        );
    }
}

#[test]
fn the_table_says_what_each_end_means() {
    let table = EndKind::markdown_table();
    assert_eq!(table.lines().count(), 2 + EndKind::ALL.len());
    let row = |name: &str| {
        table
            .lines()
            .find(|l| l.starts_with(&format!("| `{name}` |")))
            .unwrap()
            .to_owned()
    };
    // key_expired: never sent again, but the journal keeps it unknown and a
    // later call settles it by a status query.
    let key_expired = row("key_expired");
    assert!(key_expired.contains("| yes | maybe | `key_expired` | `unknown` |"));
    assert!(key_expired.contains("status"));
    assert!(row("unknown").contains("| no | maybe | `outcome_unknown` | `unknown` |"));
    assert!(row("succeeded").contains("| yes | yes | none (success) | `succeeded` |"));
    assert!(row("refused").contains("| no | no | `refused` | `pending` |"));
}
