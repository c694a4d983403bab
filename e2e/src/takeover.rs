//! Takeover time in a fleet: worker processes each in a PID namespace of
//! their own (as on separate hosts: no worker can see that another one's
//! process died, so only lease expiry frees its operations), SIGKILLed, and
//! the time from each kill to the settlement, by another worker, of every
//! operation the killed worker held.

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How worker processes are isolated from each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isolation {
    /// `unshare --pid --fork` (root).
    PidNamespace,
    /// `unshare -r --pid --fork`: a user namespace makes the PID namespace
    /// possible without root.
    UserAndPidNamespace,
    /// `unshare` was refused: plain processes (a lease of a killed worker
    /// may then be seen free at once, as its process is gone).
    None,
}

impl Isolation {
    /// The first isolation this machine allows, tried with `true`.
    pub fn probe() -> Isolation {
        for (isolation, args) in [
            (Isolation::PidNamespace, &["--pid", "--fork"][..]),
            (
                Isolation::UserAndPidNamespace,
                &["-r", "--pid", "--fork"][..],
            ),
        ] {
            let ok = Command::new("unshare")
                .args(args)
                .args(["--kill-child", "true"])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                return isolation;
            }
        }
        Isolation::None
    }

    /// A command running `program` isolated: killing the command's process
    /// (SIGKILL) kills the worker with it (`--kill-child`).
    pub fn command(self, program: &str) -> Command {
        let prefix: &[&str] = match self {
            Isolation::PidNamespace => &["--pid", "--fork", "--kill-child"],
            Isolation::UserAndPidNamespace => &["-r", "--pid", "--fork", "--kill-child"],
            Isolation::None => return Command::new(program),
        };
        let mut c = Command::new("unshare");
        c.args(prefix).arg(program);
        c
    }

    /// The words of the summary line.
    pub fn describe(self) -> &'static str {
        match self {
            Isolation::PidNamespace => "PID namespaces",
            Isolation::UserAndPidNamespace => "user+PID namespaces",
            Isolation::None => "no PID namespaces (unshare refused)",
        }
    }
}

/// The operations a killed worker left, watched until another worker
/// settles each.
struct Orphan {
    order_id: String,
    killed_at: Instant,
}

/// Watches, from a thread of its own polling the journal's table every
/// 50 ms, the operations killed workers held, and records how long after
/// the kill each was settled.
pub struct TakeoverWatch {
    pending: Arc<Mutex<Vec<Orphan>>>,
    times: Arc<Mutex<Vec<Duration>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// The settled states, as the PostgreSQL journal stores them.
const SETTLED: &str = "('succeeded', 'rejected', 'conflict')";

impl TakeoverWatch {
    /// Starts watching through connections `connect` makes (`None` while
    /// the database is down).
    pub fn start(connect: impl Fn() -> Option<postgres::Client> + Send + 'static) -> Self {
        let pending: Arc<Mutex<Vec<Orphan>>> = Arc::default();
        let times: Arc<Mutex<Vec<Duration>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (p, t, s) = (pending.clone(), times.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut db: Option<postgres::Client> = None;
            let sql = format!(
                "SELECT order_id FROM payidem_operations WHERE order_id = ANY($1) \
                 AND state IN {SETTLED}"
            );
            while !s.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
                let ids: Vec<String> = lock(&p).iter().map(|o| o.order_id.clone()).collect();
                if ids.is_empty() {
                    continue;
                }
                if db.as_ref().is_none_or(postgres::Client::is_closed) {
                    db = connect();
                }
                let Some(conn) = db.as_mut() else { continue };
                let Ok(rows) = conn.query(&sql, &[&ids]) else {
                    db = None;
                    continue;
                };
                let now = Instant::now();
                let settled: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
                let mut pending = lock(&p);
                let mut times = lock(&t);
                pending.retain(|o| {
                    let done = settled.contains(&o.order_id);
                    if done {
                        times.push(now.duration_since(o.killed_at));
                    }
                    !done
                });
            }
        });
        TakeoverWatch {
            pending,
            times,
            stop,
            thread: Some(thread),
        }
    }

    /// Starts watching the journal at `url` (a PostgreSQL URL).
    pub fn on(url: &str) -> Self {
        let url = url.to_owned();
        TakeoverWatch::start(move || {
            let mut config: postgres::Config = url.parse().ok()?;
            config.connect_timeout(Duration::from_secs(2));
            config.connect(postgres::NoTls).ok()
        })
    }

    /// Adds the unsettled operations whose lease a worker with owner id
    /// prefix `owner` (see `payidem-fleet-worker --owner-file`) held when
    /// it was killed at `killed_at`; answers how many (`None`: the journal
    /// could not be read, e.g. the database is restarting).
    pub fn orphaned(
        &self,
        db: &mut postgres::Client,
        owner: &str,
        killed_at: Instant,
    ) -> Option<usize> {
        let pattern = format!("{}%", owner.replace('\\', "\\\\").replace('%', "\\%"));
        let sql = format!(
            "SELECT order_id FROM payidem_operations WHERE lease_owner LIKE $1 \
             AND state NOT IN {SETTLED}"
        );
        let rows = db.query(&sql, &[&pattern]).ok()?;
        let mut pending = lock(&self.pending);
        for row in &rows {
            pending.push(Orphan {
                order_id: row.get(0),
                killed_at,
            });
        }
        Some(rows.len())
    }

    /// Waits up to `within` for every watched operation to be settled,
    /// then stops: the takeover times, and how many were never settled.
    pub fn finish(mut self, within: Duration) -> Takeovers {
        let until = Instant::now() + within;
        while !lock(&self.pending).is_empty() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
        }
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let mut times = lock(&self.times).clone();
        times.sort();
        Takeovers {
            times,
            unsettled: lock(&self.pending).len(),
        }
    }
}

impl Drop for TakeoverWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Takeover times from kill to settlement, sorted.
#[derive(Clone, Debug, Default)]
pub struct Takeovers {
    /// One per operation a killed worker held, shortest first.
    pub times: Vec<Duration>,
    /// Operations never settled within the wait.
    pub unsettled: usize,
}

impl Takeovers {
    /// The median (zero without any).
    pub fn p50(&self) -> Duration {
        self.times
            .get(self.times.len() / 2)
            .copied()
            .unwrap_or_default()
    }

    /// The longest (zero without any).
    pub fn max(&self) -> Duration {
        self.times.last().copied().unwrap_or_default()
    }

    /// `takeover p50 …s max …s (n operations)`, for summary lines.
    pub fn summary(&self) -> String {
        format!(
            "takeover p50 {:.1}s max {:.1}s ({} operations of killed workers)",
            self.p50().as_secs_f64(),
            self.max().as_secs_f64(),
            self.times.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_and_maximum_of_sorted_times() {
        let t = Takeovers {
            times: [1, 2, 9].map(Duration::from_secs).to_vec(),
            unsettled: 0,
        };
        assert_eq!(t.p50(), Duration::from_secs(2));
        assert_eq!(t.max(), Duration::from_secs(9));
        assert!(t.summary().starts_with("takeover p50 2.0s max 9.0s"));
        assert_eq!(Takeovers::default().max(), Duration::ZERO);
    }
}
