//! Starts a throwaway PostgreSQL server (`payidem_e2e::pg`), prints its
//! directory and waits until killed: the tests of `tests/pg_server.rs`
//! kill it and check that the server does not outlive it.

use std::io::Write;

fn main() {
    let server = payidem_e2e::pg::PgServer::start();
    let mut out = std::io::stdout();
    writeln!(out, "{}", server.socket_dir().display()).expect("stdout");
    out.flush().expect("stdout");
    loop {
        std::thread::park();
    }
}
