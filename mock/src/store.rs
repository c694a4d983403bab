//! The idempotency store (protocol section 3, step 7), scoped per key id.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::answer::Answer;

/// What identifies a request under one idempotency key: SHA-256 of method,
/// path and the body's SHA-256.
pub(crate) type Fingerprint = [u8; 32];

pub(crate) fn fingerprint(method: &str, path: &str, body: &[u8]) -> Fingerprint {
    let body_hash = Sha256::digest(body);
    let mut h = Sha256::new();
    h.update(method.as_bytes());
    h.update(b"\n");
    h.update(path.as_bytes());
    h.update(b"\n");
    h.update(body_hash);
    h.finalize().into()
}

enum SlotState {
    Running,
    Done(Arc<Answer>),
}

struct Slot {
    fingerprint: Fingerprint,
    finished_at: u64,
    state: SlotState,
}

/// What the store says about an incoming request.
pub(crate) enum Lookup {
    /// The key was unseen; it is now marked running and the caller must
    /// [`Store::finish`] or [`Store::abandon`] it.
    Claimed,
    /// The same request is still running.
    InProgress,
    /// The same request finished; here is its answer.
    Finished(Arc<Answer>),
    /// The key was used with another request.
    Conflict,
}

/// Stored answers per key id and idempotency key.
pub(crate) struct Store {
    slots: HashMap<String, HashMap<String, Slot>>,
    expiry: VecDeque<(u64, String, String)>,
    retention_seconds: u64,
    len: usize,
}

impl Store {
    pub(crate) fn new(retention_seconds: u64) -> Store {
        Store {
            slots: HashMap::new(),
            expiry: VecDeque::new(),
            retention_seconds,
            len: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn clear(&mut self) {
        self.slots.clear();
        self.expiry.clear();
        self.len = 0;
    }

    /// Forgets finished answers older than the retention.
    fn expire(&mut self, now: u64) {
        while let Some((at, _, _)) = self.expiry.front() {
            if at.saturating_add(self.retention_seconds) > now {
                break;
            }
            let Some((at, key_id, key)) = self.expiry.pop_front() else {
                break;
            };
            let Some(keys) = self.slots.get_mut(&key_id) else {
                continue;
            };
            let expired = keys
                .get(&key)
                .is_some_and(|s| matches!(s.state, SlotState::Done(_)) && s.finished_at == at);
            if expired {
                keys.remove(&key);
                self.len -= 1;
                if keys.is_empty() {
                    self.slots.remove(&key_id);
                }
            }
        }
    }

    pub(crate) fn lookup(&mut self, key_id: &str, key: &str, fp: &Fingerprint, now: u64) -> Lookup {
        self.expire(now);
        if let Some(slot) = self.slots.get(key_id).and_then(|keys| keys.get(key)) {
            return if slot.fingerprint != *fp {
                Lookup::Conflict
            } else {
                match &slot.state {
                    SlotState::Running => Lookup::InProgress,
                    SlotState::Done(answer) => Lookup::Finished(Arc::clone(answer)),
                }
            };
        }
        let slot = Slot {
            fingerprint: *fp,
            finished_at: 0,
            state: SlotState::Running,
        };
        self.slots
            .entry(key_id.to_owned())
            .or_default()
            .insert(key.to_owned(), slot);
        self.len += 1;
        Lookup::Claimed
    }

    /// Stores the answer of a claimed key.
    pub(crate) fn finish(&mut self, key_id: &str, key: &str, answer: Arc<Answer>, now: u64) {
        if let Some(slot) = self
            .slots
            .get_mut(key_id)
            .and_then(|keys| keys.get_mut(key))
        {
            slot.state = SlotState::Done(answer);
            slot.finished_at = now;
            self.expiry
                .push_back((now, key_id.to_owned(), key.to_owned()));
        }
    }

    /// Releases a claimed key whose operation never finished (a panic).
    pub(crate) fn abandon(&mut self, key_id: &str, key: &str) {
        if let Some(keys) = self.slots.get_mut(key_id) {
            if keys
                .get(key)
                .is_some_and(|s| matches!(s.state, SlotState::Running))
            {
                keys.remove(key);
                self.len -= 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer() -> Arc<Answer> {
        Arc::new(Answer::error(402, "card_declined", "declined"))
    }

    #[test]
    fn every_case_and_expiry() {
        let mut s = Store::new(100);
        let a = fingerprint("POST", "/v1/payments", b"{}");
        let b = fingerprint("POST", "/v1/payments", b"{ }");
        assert_ne!(a, b);
        assert!(matches!(s.lookup("k", "i", &a, 1000), Lookup::Claimed));
        assert!(matches!(s.lookup("k", "i", &a, 1000), Lookup::InProgress));
        assert!(matches!(s.lookup("k", "i", &b, 1000), Lookup::Conflict));
        assert!(matches!(s.lookup("other", "i", &b, 1000), Lookup::Claimed));
        s.abandon("other", "i");
        s.finish("k", "i", answer(), 1000);
        assert!(matches!(s.lookup("k", "i", &a, 1099), Lookup::Finished(x) if x.status == 402));
        assert_eq!(s.len(), 1);
        assert!(matches!(s.lookup("k", "i", &b, 1100), Lookup::Claimed));
        assert_eq!(s.len(), 1);
    }
}
