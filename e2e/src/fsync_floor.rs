//! The cheapest durable journal this disk allows, for the client bench only:
//! the memory journal, plus each new operation appended to a preallocated
//! log file and made durable by a group-committed `fdatasync` before its
//! first attempt (each settled outcome appended after it, not waited for).
//! No recovery, no compaction, no index on disk: what any append-only
//! storage engine would at least pay per operation, so its rate bounds what
//! a durable journal can reach on this machine. Not a journal to use.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Condvar, Mutex, PoisonError};

use payidem::error::{Error, ErrorCode, Result};
use payidem::journal::{
    Journal, JournalCheck, Lease, MemoryJournal, Opened, OperationRecord, Reconciliation,
};
use payidem::operation::{FrozenOperation, OperationState, Response};

/// Bytes preallocated (written with zeros and synced) before the run, so
/// that appends change no file metadata and `fdatasync` writes data only
/// (a bench run appends under 1 MiB).
const PREALLOCATED: u64 = 16 << 20;

/// See the module's documentation.
pub struct FsyncFloor {
    inner: MemoryJournal,
    log: File,
    /// Next write offset and the number of the last record written.
    tail: Mutex<(u64, u64)>,
    group: Mutex<Group>,
    wake: Condvar,
}

struct Group {
    durable: u64,
    leading: bool,
}

impl FsyncFloor {
    /// A log file at `path`, preallocated and synced.
    pub fn create(path: &Path) -> io::Result<FsyncFloor> {
        let log = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)?;
        let zeros = vec![0u8; 1 << 20];
        for i in 0..PREALLOCATED / zeros.len() as u64 {
            log.write_all_at(&zeros, i * zeros.len() as u64)?;
        }
        log.sync_all()?;
        Ok(FsyncFloor {
            inner: MemoryJournal::new(),
            log,
            tail: Mutex::new((0, 0)),
            group: Mutex::new(Group {
                durable: 0,
                leading: false,
            }),
            wake: Condvar::new(),
        })
    }

    /// Appends `parts` (each length-prefixed) as one record; its number.
    /// Wraps to the file's start when the preallocated space is used up.
    fn append(&self, parts: &[&[u8]]) -> Result<u64> {
        let mut record = Vec::new();
        for part in parts {
            record.extend_from_slice(&(part.len() as u64).to_le_bytes());
            record.extend_from_slice(part);
        }
        let mut tail = self.tail.lock().unwrap_or_else(PoisonError::into_inner);
        let end = tail.0 + record.len() as u64;
        let at = if end > PREALLOCATED { 0 } else { tail.0 };
        self.log.write_all_at(&record, at).map_err(failed)?;
        tail.0 = at + record.len() as u64;
        tail.1 += 1;
        Ok(tail.1)
    }

    /// Returns once record `seq` is on disk, leading an `fdatasync` if none
    /// runs.
    fn wait(&self, seq: u64) -> Result<()> {
        let mut group = self.group.lock().unwrap_or_else(PoisonError::into_inner);
        while group.durable < seq {
            if group.leading {
                group = self
                    .wake
                    .wait(group)
                    .unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            group.leading = true;
            drop(group);
            let covers = self.tail.lock().unwrap_or_else(PoisonError::into_inner).1;
            let synced = self.log.sync_data();
            group = self.group.lock().unwrap_or_else(PoisonError::into_inner);
            group.leading = false;
            self.wake.notify_all();
            synced.map_err(failed)?;
            group.durable = group.durable.max(covers);
        }
        Ok(())
    }
}

impl Journal for FsyncFloor {
    fn open(&self, operation: &FrozenOperation, lease: &Lease, now: u64) -> Result<Opened> {
        self.inner.open(operation, lease, now)
    }

    fn open_to_send(&self, operation: &FrozenOperation, lease: &Lease, now: u64) -> Result<Opened> {
        let opened = self.inner.open_to_send(operation, lease, now)?;
        if matches!(opened, Opened::Created(_)) {
            let seq = self.append(&[
                operation.order_id.as_bytes(),
                operation.idempotency_key.as_bytes(),
                operation.method.as_bytes(),
                operation.path.as_bytes(),
                &operation.body,
                operation.body_sha256.as_bytes(),
                &now.to_le_bytes(),
            ])?;
            self.wait(seq)?;
        }
        Ok(opened)
    }

    fn claim(&self, order_id: &str, lease: &Lease, now: u64) -> Result<Opened> {
        self.inner.claim(order_id, lease, now)
    }

    fn record_attempt(&self, order_id: &str, lease: &Lease, attempts: u32, now: u64) -> Result<()> {
        self.inner.record_attempt(order_id, lease, attempts, now)
    }

    fn renew(&self, order_id: &str, lease: &Lease, now: u64) -> Result<()> {
        self.inner.renew(order_id, lease, now)
    }

    fn finish(
        &self,
        order_id: &str,
        lease: &Lease,
        state: OperationState,
        response: Option<&Response>,
        attempts: u32,
        now: u64,
    ) -> Result<()> {
        self.inner
            .finish(order_id, lease, state, response, attempts, now)?;
        let body = response.map(|r| r.body.as_slice()).unwrap_or_default();
        self.append(&[order_id.as_bytes(), state.as_str().as_bytes(), body])
            .map(drop)
    }

    fn release(&self, order_id: &str, lease: &Lease) -> Result<()> {
        self.inner.release(order_id, lease)
    }

    fn get(&self, order_id: &str) -> Result<Option<OperationRecord>> {
        self.inner.get(order_id)
    }

    fn list(&self, states: &[OperationState]) -> Result<Vec<OperationRecord>> {
        self.inner.list(states)
    }

    fn purge_settled(&self, before: u64) -> Result<usize> {
        self.inner.purge_settled(before)
    }

    fn reconcile(
        &self,
        order_id: &str,
        state: OperationState,
        by: &str,
        reference: &str,
        now: u64,
    ) -> Result<Reconciliation> {
        self.inner.reconcile(order_id, state, by, reference, now)
    }

    fn reconciliations(&self, order_id: Option<&str>) -> Result<Vec<Reconciliation>> {
        self.inner.reconciliations(order_id)
    }

    fn check(&self) -> Result<JournalCheck> {
        self.inner.check()
    }
}

fn failed(e: io::Error) -> Error {
    Error::new(
        ErrorCode::Journal,
        format!("the fsync floor's log failed: {e}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(order_id: &str) -> FrozenOperation {
        let body = crate::payment_body(order_id, 1250);
        FrozenOperation {
            order_id: order_id.into(),
            idempotency_key: format!("key-{order_id}"),
            method: "POST".into(),
            path: "/v1/payments".into(),
            body_sha256: payidem::protocol::body_sha256_hex(&body),
            body,
            status_path: None,
        }
    }

    fn holds(log: &[u8], needle: &[u8]) -> usize {
        log.windows(needle.len()).filter(|w| *w == needle).count()
    }

    /// Each new operation is in the log when `open_to_send` returns, from
    /// concurrent callers, and each outcome follows it; a resumed operation
    /// is not appended again.
    #[test]
    fn every_operation_is_logged_before_its_first_attempt() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("floor.log");
        let floor = FsyncFloor::create(&path).unwrap();
        std::thread::scope(|s| {
            for t in 0..8 {
                let (floor, path) = (&floor, &path);
                s.spawn(move || {
                    for i in 0..20 {
                        let order_id = format!("floor-{t}-{i}");
                        let lease = Lease {
                            owner: format!("caller-{t}"),
                            expires_at: 2_000,
                        };
                        let opened = floor.open_to_send(&op(&order_id), &lease, 1_000).unwrap();
                        assert!(matches!(opened, Opened::Created(_)));
                        let log = std::fs::read(path).unwrap();
                        assert_eq!(holds(&log, format!("key-{order_id}").as_bytes()), 1);
                        floor
                            .finish(&order_id, &lease, OperationState::Rejected, None, 0, 1_001)
                            .unwrap();
                    }
                });
            }
        });
        let log = std::fs::read(&path).unwrap();
        assert_eq!(holds(&log, b"key-floor-"), 160);
        assert_eq!(
            holds(&log, OperationState::Rejected.as_str().as_bytes()),
            160
        );
        let lease = Lease {
            owner: "another".into(),
            expires_at: 2_000,
        };
        let again = floor.open_to_send(&op("floor-0-0"), &lease, 1_002).unwrap();
        assert!(matches!(again, Opened::Settled(_)));
        let log = std::fs::read(&path).unwrap();
        assert_eq!(holds(&log, b"key-floor-0-0"), 1);
        assert_eq!(holds(&log, b"key-floor-"), 160);
    }
}
