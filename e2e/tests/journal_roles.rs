//! The PostgreSQL rights docs/journal-integrity.md gives, on a real server:
//! the journal's tables in a schema owned by a role of payidem's own, the
//! application's role allowed to read them and nothing else. A client
//! connected as payidem's role pays; the application's role is refused
//! every UPDATE, INSERT and DELETE of the journal, and cannot alter its seal.

use payidem::ErrorCode;
use payidem::JournalChoice;
use payidem_e2e::{client, pg, start_mock, OwnedSpec};

/// `url` (the test server's `postgresql://USER@/db?host=…`) as `role`.
fn as_role(url: &str, role: &str) -> String {
    let (_, rest) = url.split_once("@/").expect("a test URL");
    format!("postgresql://{role}@/{rest}")
}

#[test]
fn the_application_role_reads_the_journal_and_cannot_write_it() {
    let url = pg::fresh_db();
    let db = pg::db_of(&url).to_owned();
    let pid = std::process::id();
    let (journal_role, app_role) = (format!("payidem_{pid}"), format!("shop_app_{pid}"));
    let server = pg::shared();
    server
        .connect(&db)
        .batch_execute(&format!(
            "CREATE ROLE {journal_role} LOGIN;
             CREATE ROLE {app_role} LOGIN;
             CREATE SCHEMA payidem AUTHORIZATION {journal_role};
             ALTER ROLE {journal_role} IN DATABASE \"{db}\" SET search_path = payidem;
             REVOKE ALL ON SCHEMA payidem FROM PUBLIC;
             REVOKE CREATE ON SCHEMA public FROM PUBLIC;
             GRANT USAGE ON SCHEMA payidem TO {app_role};
             ALTER DEFAULT PRIVILEGES FOR ROLE {journal_role} IN SCHEMA payidem
                 GRANT SELECT ON TABLES TO {app_role};"
        ))
        .unwrap();

    let mock = start_mock();
    let c = client(
        &mock.url(),
        JournalChoice::Postgres(as_role(&url, &journal_role)),
    );
    let outcome = c
        .execute(&OwnedSpec::payment("o-roles", 1250, true).spec())
        .unwrap();
    assert_eq!(outcome.response.status, 201);

    let mut app = {
        let mut config: postgres::Config = as_role(&url, &app_role).parse().unwrap();
        config.connect_timeout(std::time::Duration::from_secs(5));
        config.connect(postgres::NoTls).unwrap()
    };
    let states: Vec<String> = app
        .query("SELECT state FROM payidem.payidem_operations", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(states, ["succeeded"], "the application may read");
    for statement in [
        "UPDATE payidem.payidem_operations SET state = 'pending'",
        "UPDATE payidem.payidem_operations SET row_mac = NULL, state_mac = NULL",
        "DELETE FROM payidem.payidem_operations",
        "INSERT INTO payidem.payidem_operations (order_id, idempotency_key, method, path, body, \
         body_sha256, state) VALUES ('evil', 'k-evil', 'POST', '/v1/payments', '\\x7b7d', 'x', \
         'pending')",
        "DELETE FROM payidem.payidem_seal",
        "UPDATE payidem.payidem_seal SET purged_before = 0",
        "CREATE TABLE payidem.payidem_operations_2 (x int)",
    ] {
        let e = app.batch_execute(statement).unwrap_err();
        assert_eq!(
            e.code(),
            Some(&postgres::error::SqlState::INSUFFICIENT_PRIVILEGE),
            "{statement}: {e}"
        );
    }
    // The journal is as the client left it: a second call answers from it.
    let again = c
        .execute(&OwnedSpec::payment("o-roles", 1250, true).spec())
        .unwrap();
    assert_eq!(again.response.status, 201);
    assert_eq!(mock.stats().payments, 1);
    // And the application's role cannot be a client of it either: it
    // cannot create or write the journal's tables.
    let e = payidem::Client::new(
        payidem_e2e::fast_config(
            &mock.url(),
            JournalChoice::Postgres(as_role(&url, &app_role)),
        ),
        payidem_mock::DEFAULT_SECRET.as_bytes(),
    )
    .expect_err("the application's role is no journal writer");
    assert_eq!(e.code(), ErrorCode::Journal, "{e}");
}
