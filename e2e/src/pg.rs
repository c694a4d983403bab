//! A throwaway PostgreSQL server for tests: `initdb` into a temporary
//! directory, `pg_ctl start` on a unix socket in that directory (no TCP),
//! `pg_ctl stop -m immediate` when dropped, or by a watcher
//! (`ffi/tests-c/pg_server.sh watch`) when the process dies without
//! dropping it. [`PgServer::try_start_tls`]
//! also listens on 127.0.0.1 and accepts TCP logins over TLS only.
//!
//! The server binaries are looked up under `/usr/lib/postgresql/*/bin`
//! (the Debian package; `make pg-deps` installs it) or in `PAYIDEM_PG_BIN`.
//! PostgreSQL refuses to run as root: when the tests run as root the
//! directory is given to the `postgres` user and `initdb`/`pg_ctl` run
//! through `runuser -u postgres --`. A server that cannot be started fails
//! the test with a message saying why; it is never skipped.
//!
//! This file is also compiled into the core crate's tests (`#[path]`), so
//! it uses only std, `libc`, `tempfile` and `postgres`.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// The server's superuser and database.
pub const USER: &str = "postgres";

/// Stops a server and removes its directory once the process that
/// started it has exited, however it exited.
const WATCHER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../ffi/tests-c/pg_server.sh");

/// A running throwaway server.
pub struct PgServer {
    dir: tempfile::TempDir,
    bin: PathBuf,
    run_as: Option<&'static str>,
    running: bool,
    /// The TCP port on 127.0.0.1 (TLS only), when listening on one.
    tls_port: Option<u16>,
}

impl std::fmt::Debug for PgServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgServer")
            .field("dir", &self.dir.path())
            .field("running", &self.running)
            .finish()
    }
}

/// The directory holding `initdb` and `pg_ctl`: `PAYIDEM_PG_BIN`, or the
/// newest `/usr/lib/postgresql/*/bin`.
pub fn find_bin() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("PAYIDEM_PG_BIN") {
        return Ok(PathBuf::from(dir));
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|e| {
            format!(
                "no PostgreSQL server: /usr/lib/postgresql cannot be read ({e}); \
                 run `make pg-deps` (apt-get install postgresql) or set PAYIDEM_PG_BIN"
            )
        })?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin).ok_or_else(|| {
        "no PostgreSQL server: no /usr/lib/postgresql/*/bin/initdb; run `make pg-deps` \
         (apt-get install postgresql) or set PAYIDEM_PG_BIN"
            .to_owned()
    })
}

/// Runs `command`; an error says it could not `what`, and why.
fn succeed(command: &mut Command, what: &str) -> Result<(), String> {
    let out = command
        .output()
        .map_err(|e| format!("cannot {what}: cannot run {command:?}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "cannot {what}: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

impl PgServer {
    /// Starts a server, panicking with the reason when it cannot.
    pub fn start() -> PgServer {
        PgServer::try_start().unwrap_or_else(|why| panic!("cannot start PostgreSQL: {why}"))
    }

    /// Starts a server: `initdb` (trust authentication, no fsync of the
    /// new files) and `pg_ctl start` on a unix socket only.
    pub fn try_start() -> Result<PgServer, String> {
        let server = PgServer::init()?;
        server.started()
    }

    /// Starts a server that also listens on 127.0.0.1 (a free port, see
    /// [`PgServer::tls_port`]), where it accepts logins over TLS only
    /// (`hostssl` trust, `hostnossl` reject), presenting the PEM
    /// certificate chain `cert_pem` with its key `key_pem`.
    pub fn try_start_tls(cert_pem: &str, key_pem: &str) -> Result<PgServer, String> {
        let mut server = PgServer::init()?;
        let data = server.data_dir();
        server.give(&data.join("server.crt"), cert_pem, 0o644)?;
        server.give(&data.join("server.key"), key_pem, 0o600)?;
        let hba = data.join("pg_hba.conf");
        let rules = std::fs::read_to_string(&hba)
            .map_err(|e| format!("cannot read {}: {e}", hba.display()))?;
        server.give(
            &hba,
            &format!(
                "hostssl all all 127.0.0.1/32 trust\nhostnossl all all 127.0.0.1/32 reject\n{rules}"
            ),
            0o600,
        )?;
        // A free port can be taken by another process (a connection's
        // ephemeral port) before the server binds it: then take another.
        let mut attempts = 0;
        loop {
            attempts += 1;
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map_err(|e| format!("cannot find a free port: {e}"))?
                .port();
            server.tls_port = Some(port);
            match server.start_again() {
                Ok(()) => return Ok(server),
                Err(why) if attempts < 10 && why.contains("Address already in use") => {}
                Err(why) => return Err(why),
            }
        }
    }

    /// The TCP port of a server started with [`PgServer::try_start_tls`].
    pub fn tls_port(&self) -> Option<u16> {
        self.tls_port
    }

    /// Writes `text` to `path` with `mode`, owned by the server's user.
    fn give(&self, path: &Path, text: &str, mode: u32) -> Result<(), String> {
        use std::os::unix::fs::PermissionsExt;
        let failed = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
        std::fs::write(path, text).map_err(failed)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(failed)?;
        if let Some(user) = self.run_as {
            let what = format!("give {} to {user}", path.display());
            succeed(
                Command::new("chown").arg(format!("{user}:")).arg(path),
                &what,
            )?;
        }
        Ok(())
    }

    fn started(mut self) -> Result<PgServer, String> {
        self.start_again()?;
        Ok(self)
    }

    /// `initdb` into a new temporary directory.
    fn init() -> Result<PgServer, String> {
        let bin = find_bin()?;
        // In /tmp (world-traversable) rather than a target directory that
        // the `postgres` user may not be able to enter.
        let dir = tempfile::Builder::new()
            .prefix("payidem-pg-")
            .tempdir_in("/tmp")
            .map_err(|e| format!("cannot make a temporary directory: {e}"))?;
        let run_as = if is_root() { Some(USER) } else { None };
        if let Some(user) = run_as {
            let what = format!(
                "give {} to the {user} user (does the user exist?)",
                dir.path().display()
            );
            succeed(
                Command::new("chown")
                    .arg(format!("{user}:"))
                    .arg(dir.path()),
                &what,
            )?;
        }
        // A test killed before its clean-up leaves no server or files.
        let mut watch = Command::new(WATCHER);
        watch
            .arg("watch")
            .arg(std::process::id().to_string())
            .arg(dir.path());
        succeed(&mut watch, "watch the server's test process")?;
        let server = PgServer {
            dir,
            bin,
            run_as,
            running: false,
            tls_port: None,
        };
        let data = server.data_dir();
        server.run(
            "initdb",
            &[
                "-D",
                path_str(&data)?,
                "-U",
                USER,
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "-N",
            ],
        )?;
        Ok(server)
    }

    /// The directory of the server's socket.
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    /// The connection URL of database `db` (`postgresql://postgres@/db?host=…`).
    pub fn url_for(&self, db: &str) -> String {
        let port = self
            .tls_port
            .map_or(String::new(), |port| format!("&port={port}"));
        format!(
            "postgresql://{USER}@/{db}?host={}{port}",
            self.socket_dir().display()
        )
    }

    /// The URL of database `db` over TCP to 127.0.0.1, for a server started
    /// with [`PgServer::try_start_tls`], with `params` (e.g.
    /// `sslmode=verify-full&sslrootcert=…`) appended.
    pub fn tcp_url_for(&self, db: &str, params: &str) -> String {
        let port = self.tls_port.expect("a server listening on TCP");
        format!("postgresql://{USER}@127.0.0.1:{port}/{db}?{params}")
    }

    /// The connection URL of the `postgres` database.
    pub fn url(&self) -> String {
        self.url_for("postgres")
    }

    /// A plain connection to database `db`.
    pub fn connect(&self, db: &str) -> postgres::Client {
        let mut config: postgres::Config = self.url_for(db).parse().expect("a valid test URL");
        config.connect_timeout(Duration::from_secs(5));
        config
            .connect(postgres::NoTls)
            .unwrap_or_else(|e| panic!("cannot connect to the test server's {db}: {e}"))
    }

    /// A new empty database named `name`; its URL.
    pub fn create_db(&self, name: &str) -> String {
        self.connect("postgres")
            .batch_execute(&format!("CREATE DATABASE \"{name}\""))
            .unwrap_or_else(|e| panic!("cannot create database {name}: {e}"));
        self.url_for(name)
    }

    /// Stops the server at once, as a crash would (`pg_ctl stop -m immediate`):
    /// no checkpoint, every connection cut; the next start recovers from WAL.
    pub fn stop_immediate(&mut self) -> Result<(), String> {
        let data = self.data_dir();
        self.run(
            "pg_ctl",
            &["-D", path_str(&data)?, "-m", "immediate", "-w", "stop"],
        )?;
        self.running = false;
        Ok(())
    }

    /// Starts the stopped server again on the same socket and data.
    pub fn start_again(&mut self) -> Result<(), String> {
        let data = self.data_dir();
        let log = self.log_path();
        let tcp = match self.tls_port {
            Some(port) => format!(
                "-c listen_addresses=127.0.0.1 -p {port} -c ssl=on \
                 -c ssl_cert_file=server.crt -c ssl_key_file=server.key"
            ),
            None => "-c listen_addresses=''".to_owned(),
        };
        let options = format!(
            "-k {} {tcp} -c max_connections=200 -c unix_socket_permissions=0777",
            self.socket_dir().display()
        );
        self.run(
            "pg_ctl",
            &[
                "-D",
                path_str(&data)?,
                "-l",
                path_str(&log)?,
                "-w",
                "-t",
                "60",
                "-o",
                &options,
                "start",
            ],
        )
        .map_err(|why| format!("{why}\nserver log:\n{}", self.log()))?;
        self.running = true;
        Ok(())
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    fn run(&self, tool: &str, args: &[&str]) -> Result<Output, String> {
        let program = self.bin.join(tool);
        let mut command = match self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(&program);
                c
            }
            None => Command::new(&program),
        };
        command.args(args).current_dir(self.dir.path());
        let out = command
            .output()
            .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{tool} {} failed ({}): {}{}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stdout).trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(out)
    }
}

fn path_str(path: &Path) -> Result<&str, String> {
    path.to_str()
        .ok_or_else(|| format!("{} is not UTF-8", path.display()))
}

impl Drop for PgServer {
    fn drop(&mut self) {
        if self.running {
            let _ = self.stop_immediate();
        }
    }
}

/// Servers kept for the rest of the process by [`keep_until_exit`].
static KEPT: std::sync::Mutex<Vec<&'static PgServer>> = std::sync::Mutex::new(Vec::new());

extern "C" fn stop_kept() {
    let kept = KEPT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for server in kept.iter() {
        let data = server.data_dir();
        if let Ok(data) = path_str(&data) {
            let _ = server.run("pg_ctl", &["-D", data, "-m", "immediate", "-w", "stop"]);
        }
        let _ = std::fs::remove_dir_all(server.dir.path());
    }
}

/// Keeps `server` running until the process exits, then stops it and
/// removes its directory (`atexit`): for a server held in a static, which
/// is never dropped.
pub fn keep_until_exit(server: PgServer) -> &'static PgServer {
    static REGISTER: std::sync::Once = std::sync::Once::new();
    // SAFETY: registers a plain `extern "C" fn()` to run at exit.
    REGISTER.call_once(|| unsafe {
        libc::atexit(stop_kept);
    });
    let server: &'static PgServer = Box::leak(Box::new(server));
    KEPT.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(server);
    server
}

/// One server for the whole test process, started on first use and
/// stopped when the process exits ([`keep_until_exit`]); each test takes
/// its own database with [`fresh_db`].
pub fn shared() -> &'static PgServer {
    static SHARED: std::sync::OnceLock<&'static PgServer> = std::sync::OnceLock::new();
    SHARED.get_or_init(|| keep_until_exit(PgServer::start()))
}

/// The database a URL of [`PgServer::url_for`] names.
pub fn db_of(url: &str) -> &str {
    url.split_once("@/")
        .and_then(|(_, rest)| rest.split_once('?'))
        .map_or(url, |(db, _)| db)
}

/// How many tables of the journal (`payidem…`) the database of `url`, on
/// the [`shared`] server, holds.
pub fn journal_tables(url: &str) -> i64 {
    shared()
        .connect(db_of(url))
        .query_one(
            "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'payidem%'",
            &[],
        )
        .unwrap_or_else(|e| panic!("cannot count the journal's tables: {e}"))
        .get(0)
}

/// The URL of a new, empty database on the [`shared`] server.
pub fn fresh_db() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    shared().create_db(&format!("t{}_{n}", std::process::id()))
}
