//! Abusive clients for the robustness tests: idle connections, bodies that
//! never come, huge headers, raw requests, and a mock binary started with a
//! chosen descriptor limit. All traffic goes to 127.0.0.1; every loop is
//! bounded in count and time.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Raises this process's soft descriptor limit to its hard limit (at most
/// 65536), so the attacking side can hold well over a thousand sockets.
pub fn raise_nofile() {
    // SAFETY: getrlimit/setrlimit on a local, fully initialised struct.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            lim.rlim_cur = lim.rlim_max.min(65_536);
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

/// The mock binary, started with `RLIMIT_NOFILE` set to `nofile`.
pub struct Spawned {
    pub child: Child,
    pub addr: SocketAddr,
}

impl Spawned {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }
    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn spawn_with_nofile(nofile: u64, args: &[&str]) -> Spawned {
    let mut command = Command::new(env!("CARGO_BIN_EXE_payidem-mock"));
    command
        .args(["--port", "0", "--control", "--seed", "5"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // SAFETY: setrlimit is async-signal-safe; nothing else runs in the child
    // between fork and exec.
    unsafe {
        command.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: nofile,
                rlim_max: nofile,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = command.spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line
        .trim_end()
        .strip_prefix("listening on 127.0.0.1:")
        .unwrap_or_else(|| panic!("first line: {line:?}"))
        .parse()
        .unwrap();
    Spawned {
        child,
        addr: SocketAddr::from(([127, 0, 0, 1], port)),
    }
}

/// Opens up to `n` connections that send nothing, stopping at the first
/// connect that fails or takes longer than `patience` (the server stopped
/// accepting and its backlog is full).
pub fn idle_connections(addr: SocketAddr, n: usize, patience: Duration) -> Vec<TcpStream> {
    let started = Instant::now();
    let mut out = Vec::with_capacity(n);
    while out.len() < n && started.elapsed() < Duration::from_secs(30) {
        match TcpStream::connect_timeout(&addr, patience) {
            Ok(s) => out.push(s),
            Err(_) => break,
        }
    }
    out
}

/// `n` connections that each declare a 100,000-byte body (under the 1 MiB
/// limit) and send one byte of it.
pub fn slow_bodies(addr: SocketAddr, n: usize) -> Vec<TcpStream> {
    (0..n)
        .map(|_| {
            let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).unwrap();
            s.write_all(
                b"POST /v1/payments HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{",
            )
            .unwrap();
            s
        })
        .collect()
}

/// Sends one request whose single header value is `bytes` long, in 64 KiB
/// writes, on its own thread; returns what the server answered (possibly
/// nothing) once the server closes, the write fails or 30 s pass.
pub fn huge_header(addr: SocketAddr, bytes: usize) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(2)) else {
            return String::new();
        };
        let _ = s.set_write_timeout(Some(Duration::from_secs(10)));
        let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
        let mut reader = s.try_clone().unwrap();
        let answer = std::thread::spawn(move || {
            let mut out = Vec::new();
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                out.extend_from_slice(&buf[..n]);
            }
            String::from_utf8_lossy(&out).into_owned()
        });
        let started = Instant::now();
        let chunk = vec![b'a'; 64 * 1024];
        let mut sent = 0;
        let ok = s
            .write_all(b"GET /_mock/ping HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ")
            .is_ok();
        if ok {
            while sent < bytes && started.elapsed() < Duration::from_secs(30) {
                if s.write_all(&chunk).is_err() {
                    break;
                }
                sent += chunk.len();
            }
            let _ = s.write_all(b"\r\nConnection: close\r\n\r\n");
        }
        answer.join().unwrap_or_default()
    })
}

/// Sends `request` on a new connection and reads until the server closes or
/// `wait` passes.
pub fn raw(addr: SocketAddr, request: &[u8], wait: Duration) -> String {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).unwrap();
    s.set_read_timeout(Some(wait)).unwrap();
    let _ = s.write_all(request);
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The status code of a raw answer, or 0 when there was none.
pub fn status_of(answer: &str) -> u16 {
    answer
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .unwrap_or(0)
}

fn proc_status_field(pid: u32, field: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Resident memory of `pid`, in KiB.
pub fn rss_kib(pid: u32) -> u64 {
    proc_status_field(pid, "VmRSS:")
}

/// Threads of `pid`.
pub fn threads(pid: u32) -> u64 {
    proc_status_field(pid, "Threads:")
}
