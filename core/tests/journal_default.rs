//! The durable default journal: a client given no journal keeps its
//! operations in a SQLite file under the user's state directory, readable by
//! its owner only. (One test per process: it sets XDG_STATE_HOME.)

use std::os::unix::fs::PermissionsExt;

use payidem::journal::{default_journal_path, Journal, SqliteJournal, SqliteJournalOptions};
use payidem::{Client, ClientConfig, JournalChoice};

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_client_without_a_journal_uses_a_private_file_under_xdg_state_home() {
    let state = tempfile::tempdir().unwrap();
    std::env::set_var("XDG_STATE_HOME", state.path());
    // A permissive umask must not widen the journal's modes.
    unsafe { libc::umask(0) };

    let config = ClientConfig::new("http://127.0.0.1:9", "key_test_1");
    assert!(matches!(config.journal, JournalChoice::Default));
    let path = default_journal_path().unwrap();
    assert_eq!(path, state.path().join("payidem").join("journal.sqlite3"));
    assert!(!path.exists());

    let secret = b"sk_test_payidem_mock_secret_0001";
    let client = Client::new(config.clone(), secret).unwrap();
    assert!(client.status("no-such-order").unwrap().is_none());
    assert!(path.is_file(), "{} was not created", path.display());
    assert_eq!(mode(&path), 0o600, "journal file mode");
    assert_eq!(
        mode(path.parent().unwrap()),
        0o700,
        "journal directory mode"
    );
    drop(client);

    // The same file, found again by a second client, is a payidem journal.
    let again = Client::new(config, secret).unwrap();
    drop(again);
    let journal = SqliteJournal::open(&path, SqliteJournalOptions::default()).unwrap();
    assert!(journal
        .list(&payidem::operation::OperationState::ALL)
        .unwrap()
        .is_empty());
    assert_eq!(mode(&path), 0o600, "reopening keeps the mode");

    // Neither XDG_STATE_HOME nor HOME absolute: an error, not the working directory.
    std::env::remove_var("XDG_STATE_HOME");
    std::env::set_var("HOME", "relative-home");
    let err = Client::new(
        ClientConfig::new("http://127.0.0.1:9", "key_test_1"),
        secret,
    )
    .expect_err("no default location");
    assert_eq!(err.code(), payidem::ErrorCode::Journal);
}
