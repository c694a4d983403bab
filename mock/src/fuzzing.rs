//! In-process entry point for the fuzz targets in `fuzz/` (cargo feature
//! `fuzzing`, never enabled by a normal build): bytes go through the same
//! HTTP parser, request pipeline and serializer as a connection's, without
//! sockets or threads, so a panic surfaces instead of being caught by the
//! worker's `catch_unwind`.

use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

use crate::clock::{ClockSetting, ServerClock};
use crate::config::MockConfig;
use crate::faults::{FaultDice, FaultSettings};
use crate::handler::{Action, Shared, State};
use crate::http::{self, Parser, Progress};
use crate::ledger::Ledger;
use crate::server::process_request;
use crate::stats::Stats;
use crate::store::Store;

/// The Unix second the harness's server clock is fixed at.
pub const NOW: u64 = 1_700_000_000;

/// A fresh mock state (default key, clock fixed at [`NOW`], no faults, a
/// small nonce cache) for one fuzz input.
pub struct Harness {
    shared: Shared,
}

impl Harness {
    /// A new harness; `faults` may inject faults from a fixed seed.
    pub fn new(faults: FaultSettings) -> Harness {
        let config = MockConfig {
            nonce_capacity: 256,
            clock: ClockSetting::Fixed(NOW),
            faults: faults.clone(),
            seed: Some(7),
            ..MockConfig::default()
        };
        let verifier = crate::server::build_verifier(&config).expect("the default key is valid");
        Harness {
            shared: Shared {
                verifier,
                state: Mutex::new(State {
                    ledger: Ledger::new(7),
                    store: Store::new(config.idempotency_retention_seconds),
                    stats: Stats::default(),
                }),
                clock: ServerClock::new(config.clock),
                dice: FaultDice::new(faults, 7),
                control: true,
                processing_delay_ms: AtomicU64::new(0),
            },
        }
    }

    /// Feeds `bytes` as one connection receives them, `split` bytes at a
    /// time (0: all at once), answering every complete request as a worker
    /// does; returns the bytes written back, in order. Stops at the first
    /// refusal, as the connection would close.
    pub fn feed(&self, bytes: &[u8], split: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let mut parser = Parser::default();
        let mut inbuf: Vec<u8> = Vec::new();
        let step = if split == 0 {
            bytes.len().max(1)
        } else {
            split
        };
        let mut chunks = bytes.chunks(step).peekable();
        loop {
            let more = chunks.next();
            if let Some(chunk) = more {
                inbuf.extend_from_slice(chunk);
            }
            loop {
                if inbuf.is_empty() && parser.at_start() {
                    break;
                }
                match parser.advance(&inbuf) {
                    Progress::Partial => {
                        if parser.owes_continue() {
                            out.extend_from_slice(http::CONTINUE);
                        }
                        break;
                    }
                    Progress::Refused(refusal) => {
                        let answer = refusal.answer();
                        out.extend(http::serialize(
                            &answer,
                            &self.shared.clock.http_date(),
                            true,
                        ));
                        return out;
                    }
                    Progress::Complete(request, used) => {
                        inbuf.drain(..used);
                        let outcome = process_request(&self.shared, &request, None);
                        // A control request may have set a pause; keep
                        // the harness fast.
                        self.shared
                            .processing_delay_ms
                            .store(0, std::sync::atomic::Ordering::Relaxed);
                        if outcome.action != Action::Drop {
                            out.extend(http::serialize(
                                &outcome.answer,
                                &self.shared.clock.http_date(),
                                request.close,
                            ));
                        }
                        if request.close || outcome.action == Action::Drop {
                            return out;
                        }
                    }
                }
            }
            if more.is_none() {
                return out;
            }
        }
    }
}
