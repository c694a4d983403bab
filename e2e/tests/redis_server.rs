//! The throwaway redis-servers of the tests do not outlive a test killed
//! before its clean-up (SIGKILL, a CI timeout): neither the server started
//! from Rust (`core/tests/redis_server`) nor one started by
//! `ffi/tests-c/redis_server.sh` directly (the C, Go, Python and Java
//! tests) is left running, and neither leaves its directory behind. A
//! server the test stops itself (a simulated crash) takes its watcher with
//! it, and a new one can be started in the same directory.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../ffi/tests-c/redis_server.sh"
);

/// The redis-server binary, as the harnesses find it.
fn binary() -> String {
    std::env::var("PAYIDEM_REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_owned())
}

/// Whether `pid` has exited: no such process, or a zombie (nobody has
/// reaped it yet, but it runs no more).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            let state = stat.rsplit_once(") ").map(|(_, rest)| rest.chars().next());
            matches!(state, Some(Some('Z' | 'X' | 'x')))
        }
    }
}

/// The running watchers of the server `pid`: the processes whose
/// arguments are `payidem-redis-watch OWNER PID DIR`.
fn watchers_of(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(process) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        let watches = args
            .windows(3)
            .any(|w| w[0] == b"payidem-redis-watch" && w[2] == pid.to_string().as_bytes());
        if watches && !gone(process) {
            found.push(process);
        }
    }
    found
}

/// Whether the server on `socket` answers PING.
fn answers(socket: &Path) -> bool {
    let Ok(mut stream) = UnixStream::connect(socket) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut reply = [0u8; 7];
    stream.write_all(b"*1\r\n$4\r\nPING\r\n").is_ok()
        && stream.read_exact(&mut reply).is_ok()
        && &reply == b"+PONG\r\n"
}

/// Waits up to `secs` seconds for `done`; returns whether it came.
fn wait_for(secs: u64, done: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !done() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

/// Kills a server a failed test left running (only if it still is one)
/// and removes its directory.
struct Reap(u32, PathBuf);

impl Drop for Reap {
    fn drop(&mut self) {
        let comm = std::fs::read_to_string(format!("/proc/{}/comm", self.0)).unwrap_or_default();
        if !gone(self.0) && comm.starts_with("redis-server") {
            // SAFETY: a plain kill(2) of the server this test started.
            unsafe { libc::kill(self.0 as libc::pid_t, libc::SIGKILL) };
        }
        let _ = std::fs::remove_dir_all(&self.1);
    }
}

/// An owner process, SIGKILLed by the test, or on drop when a test fails
/// first (a failed test must not leave it holding the harness's pipes).
struct Owner(Child);

impl Owner {
    fn kill(&mut self) {
        self.0.kill().expect("SIGKILL");
        self.0.wait().expect("reaped");
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A new directory under /tmp, kept (the watcher is to remove it).
fn scratch_dir() -> PathBuf {
    tempfile::Builder::new()
        .prefix("payidem-redis-watch-")
        .tempdir_in("/tmp")
        .expect("a temporary directory")
        .keep()
}

/// Reads one `DIR PID` line of payidem-redis-hold.
fn read_server(out: &mut BufReader<ChildStdout>) -> (PathBuf, u32) {
    let mut line = String::new();
    out.read_line(&mut line)
        .expect("payidem-redis-hold reports");
    let (dir, pid) = line
        .trim()
        .rsplit_once(' ')
        .unwrap_or_else(|| panic!("not `DIR PID`: {line:?}"));
    (PathBuf::from(dir), pid.parse().expect("a pid"))
}

/// Expects the server `pid` to have exactly one watcher within 5 s.
fn expect_one_watcher(pid: u32) {
    assert!(
        wait_for(5, || watchers_of(pid).len() == 1),
        "not one watcher of {pid}: {:?}",
        watchers_of(pid)
    );
}

/// Kills `owner` (SIGKILL: none of its clean-up runs) and expects its
/// server `pid` to be stopped and `dir` removed within a few seconds.
fn kill_and_expect_cleaned(owner: &mut Owner, pid: u32, dir: &Path) {
    assert!(!gone(pid), "the server {pid} runs before the kill");
    expect_one_watcher(pid);
    owner.kill();
    assert!(
        wait_for(10, || gone(pid)),
        "the server {pid} outlived its killed owner by 10 s"
    );
    assert!(
        wait_for(10, || !dir.exists()),
        "{} outlived its killed owner by 10 s",
        dir.display()
    );
    assert!(
        wait_for(5, || watchers_of(pid).is_empty()),
        "the watcher of {pid} stays"
    );
}

#[test]
fn a_server_started_from_rust_stops_when_its_process_is_killed() {
    let owner = Command::new(env!("CARGO_BIN_EXE_payidem-redis-hold"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("payidem-redis-hold starts");
    let mut owner = Owner(owner);
    let mut out = BufReader::new(owner.0.stdout.take().expect("piped stdout"));
    let (dir, pid) = read_server(&mut out);
    let _reap = Reap(pid, dir.clone());
    assert!(answers(&dir.join("redis.sock")), "{}", dir.display());
    kill_and_expect_cleaned(&mut owner, pid, &dir);
}

#[test]
fn a_server_started_by_the_script_stops_when_its_caller_is_killed() {
    let dir = scratch_dir();
    // The caller is this shell: it starts the server as the C, Go, Python
    // and Java harnesses do (stdio of its own), prints its pid, then waits
    // to be killed.
    let owner = Command::new("sh")
        .arg("-c")
        .arg(
            r#""$0" --dir "$1" "$2" --port 0 --unixsocket "$1/redis.sock" --save "" \
                 --appendonly no --dir "$1" --logfile redis.log </dev/null >/dev/null 2>&1 &
               echo $!
               exec sleep 600"#,
        )
        .arg(SCRIPT)
        .arg(&dir)
        .arg(binary())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sh starts");
    let mut owner = Owner(owner);
    let mut line = String::new();
    BufReader::new(owner.0.stdout.take().expect("piped stdout"))
        .read_line(&mut line)
        .expect("the shell prints the server's pid");
    let pid: u32 = line.trim().parse().expect("a pid");
    let _reap = Reap(pid, dir.clone());
    assert!(
        wait_for(10, || answers(&dir.join("redis.sock"))),
        "the server does not answer"
    );
    kill_and_expect_cleaned(&mut owner, pid, &dir);
}

#[test]
fn a_server_its_test_stops_takes_its_watcher_along_and_starts_again() {
    let owner = Command::new(env!("CARGO_BIN_EXE_payidem-redis-hold"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("payidem-redis-hold starts");
    let mut owner = Owner(owner);
    let mut input = owner.0.stdin.take().expect("piped stdin");
    let mut out = BufReader::new(owner.0.stdout.take().expect("piped stdout"));
    let (dir, first) = read_server(&mut out);
    let _reap_first = Reap(first, dir.clone());
    expect_one_watcher(first);
    // The owner kills its server (a simulated crash) and starts another in
    // the same directory: the first watcher ends, the directory stays.
    writeln!(input, "restart").expect("stdin");
    input.flush().expect("stdin");
    let (same_dir, second) = read_server(&mut out);
    let _reap_second = Reap(second, dir.clone());
    assert_eq!(same_dir, dir);
    assert!(gone(first), "the first server {first} still runs");
    assert!(
        wait_for(3, || watchers_of(first).is_empty()),
        "the watcher of the stopped server {first} stays: {:?}",
        watchers_of(first)
    );
    assert!(
        dir.is_dir(),
        "the watcher removed the directory of a live test"
    );
    assert!(
        answers(&dir.join("redis.sock")),
        "the second server answers"
    );
    kill_and_expect_cleaned(&mut owner, second, &dir);
}

#[test]
fn the_watcher_leaves_a_server_alone_while_its_owner_lives() {
    let dir = scratch_dir();
    let caller = Command::new("sleep")
        .arg("600")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("sleep starts");
    let mut caller = Owner(caller);
    // PAYIDEM_REDIS_OWNER names the owner: here not the script's parent.
    let mut server = Command::new(SCRIPT)
        .arg("--dir")
        .arg(&dir)
        .arg(binary())
        .args(["--port", "0", "--unixsocket"])
        .arg(dir.join("redis.sock"))
        .args(["--save", "", "--appendonly", "no", "--dir"])
        .arg(&dir)
        .args(["--logfile", "redis.log"])
        .env("PAYIDEM_REDIS_OWNER", caller.0.id().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the script runs");
    let pid = server.id();
    let _reap = Reap(pid, dir.clone());
    assert!(
        wait_for(10, || answers(&dir.join("redis.sock"))),
        "the server does not answer"
    );
    std::thread::sleep(Duration::from_millis(2500));
    assert!(!gone(pid), "the server was stopped while its owner lives");
    assert!(dir.is_dir(), "removed while its owner lives");
    assert!(answers(&dir.join("redis.sock")), "the server answers");
    kill_and_expect_cleaned(&mut caller, pid, &dir);
    server.wait().expect("reaped"); // our child: a zombie until now
}
