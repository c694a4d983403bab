//! Issue 22: a password in a journal URL, a proxy URL or a replay store URL
//! never appears in anything the library prints: `Debug` of every config
//! and store, and the messages of the errors a failing connect returns.

mod support;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use payidem::journal::{JournalKey, PostgresJournal, PostgresJournalOptions};
use payidem::protocol::{Nonce, Signer};
use payidem::verifier::replay_store::{RedisStoreConfig, ReplayStore};
use payidem::verifier::{IncomingRequest, Verifier, VerifierConfig};
use payidem::{Client, ClientConfig, ErrorCode, JournalChoice};
use support::*;

const PASSWORD: &str = "PASSWORD-x7Qz";
const PG_URL: &str = "postgres://u:PASSWORD-x7Qz@127.0.0.1:1/db";
const PROXY_URL: &str = "http://u:PASSWORD-x7Qz@127.0.0.1:1";
const REDIS_URL: &str = "redis://:PASSWORD-x7Qz@127.0.0.1:1";

/// Fails naming `what` when `shown` holds the password.
fn assert_hidden(what: &str, shown: &str) {
    assert!(
        !shown.contains(PASSWORD),
        "{what} shows the password: {shown}"
    );
}

/// Every way an error can be printed.
fn assert_error_hidden(what: &str, e: &payidem::Error) {
    assert_hidden(what, e.message());
    assert_hidden(what, &e.to_string());
    assert_hidden(what, &format!("{e:?}"));
}

#[test]
fn configs_show_redacted_urls_in_debug() {
    let mut config = ClientConfig::new("http://127.0.0.1:1", KEY_ID);
    config.journal = JournalChoice::Postgres(PG_URL.to_owned());
    config.proxy = Some(PROXY_URL.to_owned());
    config.journal_key = Some(JournalKey::new(b"JOURNAL-KEY-x7Qz-0123456789abcdef").unwrap());
    let shown = format!("{config:?} {config:#?}");
    assert_hidden("ClientConfig", &shown);
    assert!(!shown.contains("JOURNAL-KEY-x7Qz"), "{shown}");
    assert!(shown.contains(r#""journal_key_hex":"<set>""#), "{shown}");
    // What they name stays readable.
    assert!(shown.contains("postgres://***@127.0.0.1:1/db"), "{shown}");
    assert!(shown.contains("http://***@127.0.0.1:1/"), "{shown}");

    for setting in [
        PG_URL,
        "postgresql://u:PASSWORD-x7Qz@127.0.0.1:1/db",
        // Mistyped: taken for a SQLite file name.
        "postgress://u:PASSWORD-x7Qz@127.0.0.1:1/db",
        "postgres:/u:PASSWORD-x7Qz@127.0.0.1:1/db",
    ] {
        let choice = JournalChoice::from_setting(Some(setting));
        assert_hidden(setting, &format!("{choice:?}"));
    }

    let store = ReplayStore::from_url(REDIS_URL).unwrap();
    assert_hidden("ReplayStore", &format!("{store:?}"));
    let ReplayStore::Redis(config) = &store else {
        panic!("{store:?}")
    };
    assert_hidden("RedisStoreConfig", &format!("{config:#?}"));
    assert_eq!(config.redacted_url(), "redis://***@127.0.0.1:1");
    let verifier = Verifier::with_replay_store(VerifierConfig::default(), store).unwrap();
    assert_hidden("Verifier", &format!("{verifier:?}"));
}

#[test]
fn a_postgres_journal_that_cannot_connect_names_no_password() {
    let options = || PostgresJournalOptions {
        connect_timeout: Duration::from_secs(2),
        ..PostgresJournalOptions::default()
    };
    for url in [
        PG_URL.to_owned(),
        "postgres://127.0.0.1:1/db?password=PASSWORD-x7Qz".to_owned(),
        "host=127.0.0.1 port=1 user=u password=PASSWORD-x7Qz dbname=db".to_owned(),
        // Not parsable: the parser's complaint must not quote it.
        "postgres://u:PASSWORD-x7Qz@127.0.0.1:1/db?sslmode=nonsense".to_owned(),
    ] {
        let e = PostgresJournal::connect(&url, options()).unwrap_err();
        assert_eq!(e.code(), ErrorCode::Journal, "{url}: {e}");
        assert_error_hidden(&url, &e);
    }
    // A client connects lazily: it starts, and each call answers
    // journal_error (never the password) while the server is unreachable.
    let lazy = PostgresJournal::connect_lazily(PG_URL, options()).unwrap();
    assert!(!lazy.is_connected());
    assert_hidden("a lazily connected journal", &format!("{lazy:?}"));
    let mut config = ClientConfig::new("http://127.0.0.1:1", KEY_ID);
    config.journal = JournalChoice::Postgres(PG_URL.to_owned());
    let client = Client::new(config, SECRET).unwrap();
    let e = client.execute(&payment("ord-secret-pg")).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Journal, "{e}");
    assert_error_hidden("a call with an unreachable PostgreSQL journal", &e);
}

#[test]
fn a_mistyped_postgres_url_taken_for_a_file_is_named_redacted() {
    // Relative to the test's directory, where no `postgress:` (or
    // `host=…`) directory exists: SQLite cannot open them, and creates
    // nothing.
    for (setting, shown) in [
        (
            "postgress://u:PASSWORD-x7Qz@127.0.0.1:1/db",
            "postgress://***@127.0.0.1:1/db",
        ),
        // In a directory `host=… password=PASSWORD-x7Qz` that does not exist.
        (
            "host=127.0.0.1 port=1 password=PASSWORD-x7Qz/db",
            "host=127.0.0.1 port=1 password=***",
        ),
    ] {
        let mut config = ClientConfig::new("http://127.0.0.1:1", KEY_ID);
        config.journal = JournalChoice::from_setting(Some(setting));
        assert!(matches!(config.journal, JournalChoice::Sqlite(_)));
        let e = Client::new(config, SECRET).unwrap_err();
        assert_eq!(e.code(), ErrorCode::Journal, "{e}");
        assert_error_hidden("a file journal named by a mistyped URL", &e);
        // Still says which file.
        assert!(e.message().contains(shown), "{e}");
    }
}

#[test]
fn a_proxy_that_cannot_be_reached_names_no_password() {
    let mut config = config("http://platform.invalid:8080");
    config.allow_insecure_http = true;
    config.proxy = Some(PROXY_URL.to_owned());
    let client = Client::new(config, SECRET).unwrap();
    assert_hidden("Client", &format!("{client:?}"));
    let e = client.execute(&payment("ord-secret-proxy")).unwrap_err();
    assert_error_hidden("a call through an unreachable proxy", &e);

    // A proxy URL refused as such is not echoed either.
    let mut refused = support::config("http://127.0.0.1:1");
    refused.proxy = Some("socks5://u:PASSWORD-x7Qz@127.0.0.1:1".to_owned());
    let e = Client::new(refused, SECRET).unwrap_err();
    assert_eq!(e.field(), Some("proxy"), "{e}");
    assert_error_hidden("a refused proxy URL", &e);
}

#[test]
fn an_unreachable_replay_store_names_no_password() {
    let mut store = RedisStoreConfig::new(REDIS_URL);
    store.connect_timeout = Duration::from_secs(2);
    let mut verifier =
        Verifier::with_replay_store(VerifierConfig::default(), ReplayStore::Redis(store)).unwrap();
    verifier.add_key(KEY_ID, &[SECRET]).unwrap();
    let e = verifier.check_replay_store().unwrap_err();
    assert_eq!(e.code(), ErrorCode::ReplayStoreUnavailable, "{e}");
    assert_error_hidden("check_replay_store", &e);

    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let signer = Signer::new(KEY_ID, SECRET).unwrap();
    let body = br#"{"amount":1}"#;
    let attempt = signer
        .sign_attempt(
            "POST",
            "/v1/payments",
            "create-1",
            body,
            now,
            Nonce::from_random_bytes([7; 16]),
        )
        .unwrap();
    let headers: Vec<(&str, &str)> = attempt.headers().collect();
    let e = verifier
        .verify(
            &IncomingRequest {
                method: "POST",
                path: "/v1/payments",
                headers: &headers,
                body,
            },
            now,
        )
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::ReplayStoreUnavailable, "{e}");
    assert_error_hidden("verify", &e);

    for bad in [
        "rediss://:PASSWORD-x7Qz@127.0.0.1:1",
        "redis://:PASSWORD-x7Qz@127.0.0.1:notaport",
    ] {
        let e = ReplayStore::from_url(bad).unwrap_err();
        assert_error_hidden(bad, &e);
    }
}
