//! Inputs found by the fuzz targets in `fuzz/` (see README, Fuzzing),
//! replayed on every `cargo test`. Each test names its target and the
//! crashing input (base64 as libFuzzer printed it).

use payidem::journal::{process_owner, Journal, Lease, SqliteJournal, SqliteJournalOptions};
use payidem::operation::FrozenOperation;
use payidem::protocol::fields;
use payidem::ErrorCode;

/// fuzz target `fields`, input `cmV0OiAv` ("ret: /" as the secret): the
/// secret's error named the field "secret", which contains the input. Not
/// a leak: the message depends on the secret's length only, which this
/// checks for that input and its neighbours.
#[test]
fn fields_secret_error_depends_on_length_only() {
    for secret in ["ret: /", "secret", "cret", "", "0123456789abcde"] {
        let e = fields::check_secret(secret.as_bytes()).unwrap_err();
        let other = fields::check_secret(&vec![b'x'; secret.len()]).unwrap_err();
        assert_eq!(e.field(), Some("secret"));
        assert_eq!(e.message(), other.message(), "{secret:?}");
    }
}

/// fuzz target `journal_rows`, input `kP//////////AP//AA==`: a clock past
/// i64::MAX (SQLite's integers) is refused with `invalid_argument` naming
/// `now` by every journal call that takes one, never a panic or a wrapped
/// value in the file.
#[test]
fn journal_rows_clock_past_i64_is_invalid_argument() {
    let dir = tempfile::tempdir().unwrap();
    let journal = SqliteJournal::open(
        dir.path().join("j.sqlite3"),
        SqliteJournalOptions::default(),
    )
    .unwrap();
    let now = u64::MAX;
    let lease = Lease {
        owner: process_owner("fuzz", 1),
        expires_at: now,
    };
    let op = FrozenOperation {
        order_id: "ord-1".into(),
        idempotency_key: "create-ord-1".into(),
        method: "POST".into(),
        path: "/v1/payments".into(),
        body: b"{}".to_vec(),
        body_sha256: "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a".into(),
        status_path: None,
    };
    let e = journal.open(&op, &lease, now).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert_eq!(e.field(), Some("now"));
    let e = journal.claim("ord-1", &lease, now).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert!(journal.get("ord-1").unwrap().is_none());
}
