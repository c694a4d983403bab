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

/// An operation a killed worker left, watched until another worker
/// settles it.
struct Orphan {
    order_id: String,
    /// The lease owner prefix of the worker killed while holding it.
    owner: String,
    killed_at: Instant,
    /// When the watch first saw the lease held by someone else (or free,
    /// or the operation settled).
    taken_at: Option<Instant>,
}

impl Orphan {
    /// Notes a look at the operation's row at `now`: whether it is settled
    /// and who holds its lease. The kill-to-claim and kill-to-settlement
    /// times once settled.
    fn look(&mut self, settled: bool, holder: Option<&str>, now: Instant) -> Option<Takeover> {
        if self.taken_at.is_none()
            && (settled || !holder.is_some_and(|h| h.starts_with(&self.owner)))
        {
            self.taken_at = Some(now);
        }
        settled.then(|| Takeover {
            claimed: self.taken_at.unwrap_or(now).duration_since(self.killed_at),
            settled: now.duration_since(self.killed_at),
        })
    }
}

/// One operation of a killed worker, taken over: how long after the kill
/// another worker held its lease, and settled it.
#[derive(Clone, Copy, Debug)]
struct Takeover {
    claimed: Duration,
    settled: Duration,
}

/// Watches, from a thread of its own polling the journal's table every
/// 50 ms, the operations killed workers held, and records how long after
/// the kill each was claimed by another worker and settled.
pub struct TakeoverWatch {
    pending: Arc<Mutex<Vec<Orphan>>>,
    done: Arc<Mutex<Vec<Takeover>>>,
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
        let done: Arc<Mutex<Vec<Takeover>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (p, t, s) = (pending.clone(), done.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut db: Option<postgres::Client> = None;
            let sql = format!(
                "SELECT order_id, state IN {SETTLED}, lease_owner FROM payidem_operations \
                 WHERE order_id = ANY($1)"
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
                let mut pending = lock(&p);
                let mut done = lock(&t);
                for row in &rows {
                    let (order_id, settled): (&str, bool) = (row.get(0), row.get(1));
                    let holder: Option<&str> = row.get(2);
                    if let Some(i) = pending.iter().position(|o| o.order_id == order_id) {
                        if let Some(takeover) = pending[i].look(settled, holder, now) {
                            done.push(takeover);
                            pending.swap_remove(i);
                        }
                    }
                }
            }
        });
        TakeoverWatch {
            pending,
            done,
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
    /// could not be read, e.g. the database is restarting). An operation
    /// already watched (its earlier holder was killed too, then this one
    /// took it over) is timed from this kill: each time runs from the kill
    /// of the operation's last holder.
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
            let order_id: String = row.get(0);
            let orphan = Orphan {
                order_id,
                owner: owner.to_owned(),
                killed_at,
                taken_at: None,
            };
            match pending.iter_mut().find(|o| o.order_id == orphan.order_id) {
                Some(watched) => *watched = orphan,
                None => pending.push(orphan),
            }
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
        let done = lock(&self.done).clone();
        let mut times: Vec<Duration> = done.iter().map(|t| t.settled).collect();
        let mut claims: Vec<Duration> = done.iter().map(|t| t.claimed).collect();
        times.sort();
        claims.sort();
        Takeovers {
            times,
            claims,
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

/// Takeover times of the operations killed workers held, sorted.
#[derive(Clone, Debug, Default)]
pub struct Takeovers {
    /// From the kill of its last holder to its settlement by another
    /// worker, one per operation, shortest first.
    pub times: Vec<Duration>,
    /// From the same kill to another worker holding its lease, shortest
    /// first.
    pub claims: Vec<Duration>,
    /// Operations never settled within the wait.
    pub unsettled: usize,
}

/// The median of sorted `times` (zero without any).
fn median(times: &[Duration]) -> Duration {
    times.get(times.len() / 2).copied().unwrap_or_default()
}

impl Takeovers {
    /// The median kill-to-settlement time (zero without any).
    pub fn p50(&self) -> Duration {
        median(&self.times)
    }

    /// The longest kill-to-settlement time (zero without any).
    pub fn max(&self) -> Duration {
        self.times.last().copied().unwrap_or_default()
    }

    /// The median kill-to-claim time (zero without any).
    pub fn claim_p50(&self) -> Duration {
        median(&self.claims)
    }

    /// The longest kill-to-claim time (zero without any).
    pub fn claim_max(&self) -> Duration {
        self.claims.last().copied().unwrap_or_default()
    }

    /// `takeover p50 …s max …s (claimed p50 …s max …s, n operations …)`,
    /// for summary lines.
    pub fn summary(&self) -> String {
        format!(
            "takeover p50 {:.1}s max {:.1}s (claimed p50 {:.1}s max {:.1}s; {} operations of \
             killed workers)",
            self.p50().as_secs_f64(),
            self.max().as_secs_f64(),
            self.claim_p50().as_secs_f64(),
            self.claim_max().as_secs_f64(),
            self.times.len()
        )
    }
}

/// What a fleet's lease settings promise about taking over the operations
/// of a worker killed while holding their leases, measured from the kill:
/// the bounds [`Takeovers`] are checked against.
#[derive(Clone, Copy, Debug)]
pub struct TakeoverBound {
    /// The workers' `lease_ttl`.
    pub lease_ttl: Duration,
    /// Their request timeout: every lease write holds the lease for
    /// `lease_ttl` plus it.
    pub request_timeout: Duration,
    /// Their lease heartbeat, which is also how long an idle take-over
    /// loop sleeps at most ([`payidem::Client::takeover_poll`]).
    pub heartbeat: Duration,
    /// Their retry deadline: the longest one call of a taken-over
    /// operation runs.
    pub deadline: Duration,
}

impl TakeoverBound {
    /// The latest a killed holder's lease lapses: its last lease write
    /// came before the kill and holds `lease_ttl` + request timeout, which
    /// the journal rounds up to whole seconds.
    pub fn lapse(&self) -> Duration {
        self.lease_ttl + self.request_timeout + Duration::from_secs(1)
    }

    /// The latest another worker's idle take-over loop claims the
    /// operation: one heartbeat after the lapse.
    pub fn claim(&self) -> Duration {
        self.lapse() + self.heartbeat
    }

    /// The latest that claim's call settles it: one call's deadline after
    /// the claim.
    pub fn settle(&self) -> Duration {
        self.claim() + self.deadline
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_and_maximum_of_sorted_times() {
        let t = Takeovers {
            times: [1, 2, 9].map(Duration::from_secs).to_vec(),
            claims: [1, 1, 5].map(Duration::from_secs).to_vec(),
            unsettled: 0,
        };
        assert_eq!(t.p50(), Duration::from_secs(2));
        assert_eq!(t.max(), Duration::from_secs(9));
        assert_eq!(
            (t.claim_p50(), t.claim_max()),
            (Duration::from_secs(1), Duration::from_secs(5))
        );
        assert!(t
            .summary()
            .starts_with("takeover p50 2.0s max 9.0s (claimed p50 1.0s max 5.0s"));
        assert_eq!(Takeovers::default().max(), Duration::ZERO);
    }

    #[test]
    fn an_orphan_is_claimed_when_another_owner_or_none_holds_it() {
        let killed_at = Instant::now();
        let mut o = Orphan {
            order_id: "o".into(),
            owner: "h/1/".into(),
            killed_at,
            taken_at: None,
        };
        let later = |ms| killed_at + Duration::from_millis(ms);
        assert!(o.look(false, Some("h/1/i/3"), later(100)).is_none());
        assert!(o.taken_at.is_none(), "still its killed holder's");
        assert!(o.look(false, Some("h/2/i/7"), later(4000)).is_none());
        let t = o.look(true, None, later(4500)).expect("settled");
        assert_eq!(
            (t.claimed, t.settled),
            (Duration::from_millis(4000), Duration::from_millis(4500))
        );
        let mut free = Orphan {
            taken_at: None,
            ..o
        };
        free.killed_at = killed_at;
        assert!(free.look(false, None, later(10)).is_none());
        assert_eq!(free.taken_at, Some(later(10)));
    }

    #[test]
    fn the_bounds_add_up_from_the_settings() {
        let b = TakeoverBound {
            lease_ttl: Duration::from_secs(3),
            request_timeout: Duration::from_millis(300),
            heartbeat: Duration::from_secs(1),
            deadline: Duration::from_secs(4),
        };
        assert_eq!(b.lapse(), Duration::from_millis(4300));
        assert_eq!(b.claim(), Duration::from_millis(5300));
        assert_eq!(b.settle(), Duration::from_millis(9300));
    }
}
