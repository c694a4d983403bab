//! The PostgreSQL journal over TLS, against a real server started by the
//! test (e2e/src/pg.rs) that accepts TCP logins over TLS only: libpq's
//! `sslmode` and `sslrootcert` URL parameters, the server always verified.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use payidem::journal::{Journal, Lease, Opened, PostgresJournal, PostgresJournalOptions};
use payidem::operation::OperationState;
use payidem::ErrorCode;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};

#[path = "../../e2e/src/pg.rs"]
mod pg;

mod fixtures;
use fixtures::{now, op};

/// A CA; its certificate, its key.
fn ca(name: &str) -> (rcgen::Certificate, KeyPair) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    (params.self_signed(&key).unwrap(), key)
}

/// The server (its certificate names 127.0.0.1 only, signed by the test
/// CA), the test CA's PEM file and another CA's.
struct Setup {
    server: &'static pg::PgServer,
    ca: PathBuf,
    other_ca: PathBuf,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let (ca_cert, ca_key) = ca("payidem test CA");
        let (other_cert, _) = ca("someone else's CA");
        let server_key = KeyPair::generate().unwrap();
        let server_cert = CertificateParams::new(vec!["127.0.0.1".to_owned()])
            .unwrap()
            .signed_by(&server_key, &ca_cert, &ca_key)
            .unwrap();
        let server = pg::PgServer::try_start_tls(&server_cert.pem(), &server_key.serialize_pem())
            .unwrap_or_else(|why| panic!("cannot start PostgreSQL with TLS: {why}"));
        let server = pg::keep_until_exit(server);
        // In the server's directory, removed with it when the process exits.
        let write = |name: &str, pem: String| {
            let path = server.socket_dir().join(name);
            std::fs::write(&path, pem).unwrap();
            path
        };
        let ca = write("ca.pem", ca_cert.pem());
        let other_ca = write("other-ca.pem", other_cert.pem());
        Setup {
            server,
            ca,
            other_ca,
        }
    })
}

fn fresh_db(name: &str) -> String {
    setup()
        .server
        .connect("postgres")
        .batch_execute(&format!("CREATE DATABASE \"{name}\""))
        .unwrap();
    name.to_owned()
}

fn root(path: &Path) -> String {
    format!("sslrootcert={}", path.display())
}

fn connect(db: &str, params: &str) -> payidem::Result<PostgresJournal> {
    let url = setup().server.tcp_url_for(db, params);
    PostgresJournal::connect(&url, PostgresJournalOptions::default())
}

/// The journal's sessions on the server, and how many of them use TLS.
fn sessions(db: &str) -> (i64, i64) {
    let row = setup()
        .server
        .connect("postgres")
        .query_one(
            "SELECT count(*), count(*) FILTER (WHERE s.ssl)
             FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)
             WHERE a.datname = $1 AND a.application_name = 'payidem'",
            &[&db],
        )
        .unwrap();
    (row.get(0), row.get(1))
}

#[test]
fn verify_full_with_the_servers_ca_journals_over_tls() {
    let s = setup();
    let db = fresh_db("tls_full");
    let params = format!("sslmode=verify-full&{}", root(&s.ca));
    let j = connect(&db, &params).unwrap();
    let lease = Lease {
        owner: "pos-1".into(),
        expires_at: now() + 60,
    };
    let opened = j.open_to_send(&op("tls-1"), &lease, now()).unwrap();
    assert!(matches!(opened, Opened::Created(_)));
    j.finish("tls-1", &lease, OperationState::Succeeded, None, 0, now())
        .unwrap();
    let record = j.get("tls-1").unwrap().unwrap();
    assert_eq!(record.state, OperationState::Succeeded);
    assert_eq!(record.operation.idempotency_key, "create-tls-1");
    let (all, tls) = sessions(&db);
    assert!(all >= 1, "the journal keeps its idle connection");
    assert_eq!(tls, all, "every session of the journal uses TLS");
    drop(j);

    // The same database read back over TLS by another handle (verify-ca).
    let again = connect(&db, &format!("sslmode=verify-ca&{}", root(&s.ca))).unwrap();
    assert_eq!(
        again.get("tls-1").unwrap().unwrap().state,
        OperationState::Succeeded
    );
}

#[test]
fn a_server_certificate_from_another_ca_is_refused() {
    let s = setup();
    let db = fresh_db("tls_other_ca");
    for mode in ["verify-full", "verify-ca", "require"] {
        let err = connect(&db, &format!("sslmode={mode}&{}", root(&s.other_ca))).unwrap_err();
        assert_eq!(err.code(), ErrorCode::Journal);
        let text = err.to_string();
        assert!(
            text.contains("certificate") && text.contains("UnknownIssuer"),
            "{mode}: {text}"
        );
    }
    assert_eq!(sessions(&db), (0, 0));
}

#[test]
fn require_verifies_against_the_system_roots_when_no_root_file_is_given() {
    let db = fresh_db("tls_require_system");
    // The test CA is in no system store: the server cannot be verified.
    for params in ["sslmode=require", "sslmode=verify-full&sslrootcert=system"] {
        let err = connect(&db, params).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("UnknownIssuer") || text.contains("no CA certificate in the system"),
            "{params}: {text}"
        );
    }
    assert_eq!(sessions(&db), (0, 0));
}

#[test]
fn the_host_name_is_checked_by_verify_full_and_not_by_verify_ca() {
    let s = setup();
    let db = fresh_db("tls_names");
    let port = s.server.tls_port().unwrap();
    // Connects to 127.0.0.1 but expects the name "localhost", which the
    // certificate does not carry.
    let url = |mode: &str| {
        format!(
            "postgresql://{}@localhost:{port}/{db}?hostaddr=127.0.0.1&sslmode={mode}&{}",
            pg::USER,
            root(&s.ca)
        )
    };
    for mode in ["verify-full", "require"] {
        let err =
            PostgresJournal::connect(&url(mode), PostgresJournalOptions::default()).unwrap_err();
        assert!(
            err.to_string()
                .contains("certificate not valid for name \"localhost\""),
            "{mode}: {err}"
        );
    }
    let j = PostgresJournal::connect(&url("verify-ca"), PostgresJournalOptions::default()).unwrap();
    assert!(j.get("nothing").unwrap().is_none());
}

#[test]
fn without_tls_the_server_refuses_the_tcp_login() {
    let db = fresh_db("tls_off");
    for params in [
        "sslmode=disable",
        "sslmode=prefer",
        "application_name=payidem",
    ] {
        let err = connect(&db, params).unwrap_err();
        assert_eq!(err.code(), ErrorCode::Journal);
        assert!(err.to_string().contains("no encryption"), "{params}: {err}");
    }
}

#[test]
fn a_missing_root_file_is_named_before_any_connection() {
    let db = fresh_db("tls_missing_root");
    let err = connect(&db, "sslmode=verify-full&sslrootcert=/nonexistent/ca.pem").unwrap_err();
    assert_eq!(err.code(), ErrorCode::Journal);
    let text = err.to_string();
    assert!(
        text.contains("sslrootcert /nonexistent/ca.pem") && text.contains("TLS"),
        "{text}"
    );
    let err = connect(&db, "sslmode=verify-full&sslcert=/c.pem").unwrap_err();
    assert!(
        err.to_string().contains("sslcert is not supported"),
        "{err}"
    );
}
