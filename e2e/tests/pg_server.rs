//! The throwaway PostgreSQL servers of the tests do not outlive a test
//! killed before its clean-up (SIGKILL, a CI timeout): neither the server
//! started from Rust (`payidem_e2e::pg`) nor the one started by
//! `ffi/tests-c/pg_server.sh start` (the C, Go, Python, Java and docs
//! tests) is left running, and neither leaves its directory behind.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../ffi/tests-c/pg_server.sh");

/// The server's postmaster: the first line of its `postmaster.pid`.
fn postmaster(dir: &Path) -> libc::pid_t {
    let file = dir.join("data").join("postmaster.pid");
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
    text.lines()
        .next()
        .and_then(|line| line.trim().parse().ok())
        .unwrap_or_else(|| panic!("{} holds no pid: {text:?}", file.display()))
}

fn alive(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// Reads the first line `child` prints: the server's directory.
fn first_line(child: &mut Child) -> PathBuf {
    let stdout = child.stdout.take().expect("piped stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("the child prints its server's directory");
    PathBuf::from(line.trim())
}

/// Kills `child` with SIGKILL (no clean-up of its own runs) and waits for
/// the server in `dir` to be stopped and `dir` removed.
fn kill_and_expect_cleaned(child: Child, dir: &Path) {
    let pid = postmaster(dir);
    assert!(alive(pid), "the server runs before the kill");
    kill(child);
    wait_for(|| !alive(pid) && !dir.exists());
    assert!(!alive(pid), "the server {pid} outlived its killed test");
    assert!(!dir.exists(), "{} outlived its killed test", dir.display());
}

fn kill(mut child: Child) {
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
}

/// A new directory under /tmp, which the server's user can reach.
fn scratch_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("payidem-pg-watch-")
        .tempdir_in("/tmp")
        .expect("a temporary directory")
}

/// Waits up to a minute for `done`.
fn wait_for(done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_server_started_from_rust_stops_when_its_process_is_killed() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_payidem-pg-hold"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("payidem-pg-hold starts");
    let dir = first_line(&mut child);
    assert!(
        dir.starts_with("/tmp") && dir.join("data").is_dir(),
        "{}",
        dir.display()
    );
    kill_and_expect_cleaned(child, &dir);
}

#[test]
fn a_server_started_by_the_script_stops_when_its_caller_is_killed() {
    let dir = scratch_dir().keep();
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    // The caller is this shell: it starts the server as a test would,
    // prints the directory once it runs, then waits to be killed.
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(r#""$0" start "$1" >/dev/null && echo "$1" && exec sleep 600"#)
        .arg(SCRIPT)
        .arg(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sh starts");
    assert_eq!(first_line(&mut child), dir);
    kill_and_expect_cleaned(child, &dir);
}

#[test]
fn the_watcher_leaves_a_directory_alone_while_its_caller_lives() {
    let dir = scratch_dir();
    let caller = Command::new("sleep")
        .arg("600")
        .spawn()
        .expect("sleep starts");
    let watched = Command::new(SCRIPT)
        .arg("watch")
        .arg(caller.id().to_string())
        .arg(dir.path())
        .output()
        .expect("the script runs");
    assert!(watched.status.success(), "{watched:?}");
    std::thread::sleep(Duration::from_millis(2500));
    assert!(dir.path().exists(), "removed while its caller lives");
    kill(caller);
    wait_for(|| !dir.path().exists());
    assert!(!dir.path().exists(), "kept after its caller died");
}
