//! A client whose PostgreSQL journal is down when it is created: it is
//! created, answers `journal_error` (sending nothing) while the server is
//! down, and works (its operations journaled, sealed and verified) once
//! the server is back. Against the test's own PostgreSQL (e2e/src/pg.rs),
//! stopped at the client's creation and started after.

use payidem::{ErrorCode, JournalChoice};
use payidem_e2e::pg::PgServer;
use payidem_e2e::{client, start_mock, OwnedSpec};

#[test]
fn a_client_starts_while_its_postgres_journal_is_down_and_works_once_it_is_back() {
    let mock = start_mock();
    let mut server = PgServer::start();
    let url = server.create_db("lazy");
    server.stop_immediate().expect("the server stops");

    let c = client(&mock.url(), JournalChoice::Postgres(url.clone()));
    let spec = OwnedSpec::payment("lazy-1", 1500, true);
    for _ in 0..2 {
        let err = c.execute(&spec.spec()).unwrap_err();
        assert_eq!(err.code(), ErrorCode::Journal, "{err}");
    }
    assert!(
        mock.stats().orders.is_empty(),
        "nothing is sent without a durable record"
    );

    server.start_again().expect("the server starts again");
    let outcome = c.execute(&spec.spec()).expect("the payment settles");
    assert_eq!(outcome.response.status, 201);
    assert_eq!(mock.stats().orders.len(), 1);
    // Journaled and sealed as by a client that connected at once: another
    // client with the same key reads it back (its MACs verified) and
    // answers it settled without sending it again.
    let requests = mock.stats().requests;
    let again = client(&mock.url(), JournalChoice::Postgres(url));
    let replayed = again
        .execute(&spec.spec())
        .expect("answered from the journal");
    assert_eq!(replayed.response.status, 201);
    assert_eq!(mock.stats().requests, requests, "nothing sent again");
}
