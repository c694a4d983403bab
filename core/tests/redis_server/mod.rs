//! A real, throwaway `redis-server` for tests: started in its own temporary
//! directory on a unix socket (and, on request, a loopback TCP port), with
//! no persistence, stopped and restarted (empty) at will, killed on drop.
//! It is started through `ffi/tests-c/redis_server.sh`, which execs
//! redis-server (the child is the server itself) after starting a watcher:
//! a test killed before its clean-up (SIGKILL, a CI timeout) leaves neither
//! a running server nor its directory behind.
//!
//! When `redis-server` cannot be found or started the test fails with a
//! message saying how to install it (`make redis-deps`); it never skips.
//! Shared by the core tests and the mock's fleet tests (`#[path]`).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// One redis-server process (or none while stopped) and its directory.
pub struct RedisServer {
    dir: PathBuf,
    tcp_port: Option<u16>,
    child: Option<Child>,
}

/// Starts redis-server (execs it) with a watcher that kills it and removes
/// its directory once this process has exited (core and mock are both one
/// level below the repository root).
const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../ffi/tests-c/redis_server.sh"
);

/// The redis-server binary: `$PAYIDEM_REDIS_SERVER`, else `redis-server`
/// on the PATH.
fn binary() -> String {
    std::env::var("PAYIDEM_REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_owned())
}

/// Whether redis-server's error says its TCP port was already in use.
fn port_taken(why: &str) -> bool {
    why.contains("Failed listening on port")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

impl RedisServer {
    /// Starts a server listening on a unix socket only.
    pub fn start() -> RedisServer {
        RedisServer::launch(false)
    }

    /// Starts a server listening on a unix socket and on 127.0.0.1.
    pub fn start_with_tcp() -> RedisServer {
        RedisServer::launch(true)
    }

    fn launch(tcp: bool) -> RedisServer {
        let dir = std::env::temp_dir().join(format!(
            "payidem-redis-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temporary directory for redis-server");
        let mut server = RedisServer {
            dir,
            tcp_port: None,
            child: None,
        };
        // A free port can be taken by another process (a connection's
        // ephemeral port) before redis-server binds it: then take another.
        let mut attempts = 0;
        loop {
            attempts += 1;
            server.tcp_port = tcp.then(free_port);
            match server.run() {
                Ok(()) => return server,
                Err(why) if tcp && attempts < 10 && port_taken(&why) => continue,
                Err(why) => panic!("{why}"),
            }
        }
    }

    /// The server's directory (socket, log).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The running server's process id (`None` while stopped).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The socket's path.
    pub fn socket(&self) -> PathBuf {
        self.dir.join("redis.sock")
    }

    /// `unix:///…/redis.sock`.
    pub fn unix_url(&self) -> String {
        format!("unix://{}", self.socket().display())
    }

    /// `redis://127.0.0.1:PORT` (only for [`RedisServer::start_with_tcp`]).
    pub fn tcp_url(&self) -> String {
        format!(
            "redis://127.0.0.1:{}",
            self.tcp_port.expect("started with a TCP port")
        )
    }

    /// Starts the server again (after [`RedisServer::stop`]): same socket
    /// and port, empty data (nothing is persisted). The port may be held
    /// for a moment by another process; the restart waits up to 10 s for it.
    pub fn restart(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match self.run() {
                Ok(()) => return,
                Err(why) if port_taken(&why) && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(why) => panic!("{why}"),
            }
        }
    }

    /// Starts redis-server and waits until it answers PING; `Err` says why
    /// it exited or did not answer, with its log.
    fn run(&mut self) -> Result<(), String> {
        assert!(self.child.is_none(), "stop the server before restarting it");
        let _ = std::fs::remove_file(self.socket());
        let log = self.dir.join("redis.log");
        // Only what this start writes to the log tells why it failed.
        let logged_before = std::fs::metadata(&log).map_or(0, |m| m.len());
        let this_start = || {
            let text = std::fs::read(&log).unwrap_or_default();
            let from = usize::try_from(logged_before).map_or(text.len(), |n| n.min(text.len()));
            String::from_utf8_lossy(&text[from..]).into_owned()
        };
        let port = self.tcp_port.unwrap_or(0).to_string();
        let mut command = Command::new(SCRIPT);
        command
            .arg("--dir")
            .arg(&self.dir)
            .arg(binary())
            .args(["--port", &port])
            .arg("--unixsocket")
            .arg(self.socket())
            .args(["--unixsocketperm", "700"])
            .args(["--save", "", "--appendonly", "no"])
            .args(["--maxmemory-policy", "noeviction"])
            .arg("--dir")
            .arg(&self.dir)
            .arg("--logfile")
            .arg(&log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if self.tcp_port.is_some() {
            command.args(["--bind", "127.0.0.1"]);
        }
        let child = command.spawn().unwrap_or_else(|e| {
            panic!(
                "cannot start {} through {SCRIPT} ({e}): the Redis replay-store tests need a \
                 real redis-server; install it with `make redis-deps` (apt-get install -y \
                 redis-server) or set PAYIDEM_REDIS_SERVER",
                binary()
            )
        });
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if self.command(&["PING"]).as_deref() == Ok("PONG") {
                return Ok(());
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                let mut stderr = String::new();
                if let Some(mut pipe) = self.child.as_mut().and_then(|c| c.stderr.take()) {
                    let _ = pipe.read_to_string(&mut stderr);
                }
                let log = this_start();
                self.child = None;
                return Err(format!(
                    "redis-server exited at start ({status}): {stderr}its log:\n{log}"
                ));
            }
            if Instant::now() > deadline {
                let log = this_start();
                self.stop();
                return Err(format!(
                    "redis-server did not answer PING within 10 s; its log:\n{log}"
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Stops the server at once (SIGKILL: nothing is saved, like a crash).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_file(self.socket());
    }

    /// Sends one command on the unix socket and returns its reply as text
    /// (a simple string, an integer, a bulk string; `Err` for an error
    /// reply or a connection failure). Arrays are not supported.
    pub fn command(&self, args: &[&str]) -> Result<String, String> {
        let mut stream = UnixStream::connect(self.socket()).map_err(|e| e.to_string())?;
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .map_err(|e| e.to_string())?;
        let mut request = format!("*{}\r\n", args.len());
        for a in args {
            request.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        stream
            .write_all(request.as_bytes())
            .map_err(|e| e.to_string())?;
        let mut reader = BufReader::new(stream);
        let mut line = String::new();
        reader.read_line(&mut line).map_err(|e| e.to_string())?;
        let line = line.trim_end();
        match line.split_at(line.len().min(1)) {
            ("+", rest) | (":", rest) => Ok(rest.to_owned()),
            ("-", rest) => Err(rest.to_owned()),
            ("$", "-1") => Ok(String::new()),
            ("$", len) => {
                let len: usize = len.parse().map_err(|_| format!("bad reply {line}"))?;
                let mut body = vec![0u8; len + 2];
                reader.read_exact(&mut body).map_err(|e| e.to_string())?;
                body.truncate(len);
                String::from_utf8(body).map_err(|e| e.to_string())
            }
            _ => Err(format!("unsupported reply {line:?}")),
        }
    }

    /// `used_memory` from `INFO memory`, in bytes.
    pub fn used_memory(&self) -> u64 {
        let info = self.command(&["INFO", "memory"]).expect("INFO memory");
        info.lines()
            .find_map(|l| l.strip_prefix("used_memory:"))
            .and_then(|v| v.trim().parse().ok())
            .expect("used_memory in INFO memory")
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
