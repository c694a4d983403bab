//! The simulated platform: the real verifier in front of a model of the
//! protocol's idempotency store (retention expiry, kept refusals, work in
//! progress) and of the payments it makes. It also keeps the truth the
//! invariants are checked against: every payment, who made it, and every
//! key each order was ever sent with.

use std::collections::{BTreeMap, HashMap};

use payidem::policy::Response;
use payidem::protocol::{body_sha256_hex, headers, Refusal};
use payidem::verifier::{IncomingRequest, Verifier, VerifierConfig};

/// The key id and secret the simulated clients sign with.
pub const KEY_ID: &str = "sim-key";
/// The secret of [`KEY_ID`].
pub const SECRET: &[u8] = b"payidem simulated platform secret";
/// How long the platform keeps an idempotency key (the protocol's least).
pub const RETENTION_SECS: u64 = 48 * 3600;

/// One request as it reached the platform.
#[derive(Clone, Debug)]
pub struct Request {
    /// The HTTP method.
    pub method: String,
    /// The request target.
    pub path: String,
    /// Every header as sent.
    pub headers: Vec<(String, String)>,
    /// The body as it arrived (corrupted or cut by the network, maybe).
    pub body: Vec<u8>,
}

/// A fault the platform applies to one attempt (every copy of it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlatformFault {
    /// 500, nothing done.
    E500Before,
    /// 500 after the payment committed.
    E500After,
    /// 502, nothing done.
    E502,
    /// 503 with `Retry-After` in seconds, nothing done.
    E503Secs(u64),
    /// 429 with `Retry-After` as an HTTP date, nothing done.
    E429Date(u64),
    /// 504, nothing done.
    E504Before,
    /// 504 after the payment committed.
    E504After,
}

impl PlatformFault {
    fn name(self) -> &'static str {
        match self {
            PlatformFault::E500Before => "500-before-commit",
            PlatformFault::E500After => "500-after-commit",
            PlatformFault::E502 => "502",
            PlatformFault::E503Secs(_) => "503-retry-after-secs",
            PlatformFault::E429Date(_) => "429-retry-after-date",
            PlatformFault::E504Before => "504-before-commit",
            PlatformFault::E504After => "504-after-commit",
        }
    }
}

/// A payment the platform made.
#[derive(Clone, Debug)]
pub struct Payment {
    /// The idempotency key it was made under.
    pub key: String,
    /// The body it was made from.
    pub body: Vec<u8>,
    /// The nonce of the request that made it.
    pub nonce: String,
    /// Simulated milliseconds when it committed.
    pub done_at_ms: u64,
}

struct KeyEntry {
    fingerprint: String,
    stored_at: u64,
    done_at_ms: u64,
    status: u16,
    body: Vec<u8>,
}

/// What the platform answered, with what the invariants need to know.
pub struct Answer {
    /// The HTTP answer.
    pub response: Response,
    /// Simulated milliseconds when the answer is ready to leave.
    pub ready_at_ms: u64,
    /// A problem the invariants found while handling the request.
    pub violation: Option<String>,
    /// The order id the request concerned, when known.
    pub order_id: Option<String>,
}

/// The platform and its truth.
pub struct Platform {
    verifier: Verifier,
    keys: HashMap<String, KeyEntry>,
    /// Order id → the payments made for it (more than one is a violation).
    pub payments: BTreeMap<String, Vec<Payment>>,
    /// Order id → the first key it was sent with.
    pub keys_of_order: HashMap<String, String>,
    /// Orders the platform declined (kept refusals).
    pub declined: BTreeMap<String, u32>,
    /// Keys forgotten at their retention edge.
    pub expired_keys: u64,
    /// Requests handled.
    pub requests: u64,
}

/// Whether the platform declines an order of `amount` (a refusal it keeps
/// under the key).
pub fn declines(amount: u64) -> bool {
    amount.is_multiple_of(11)
}

fn json_error(status: u16, code: &str, extra: Vec<(String, String)>) -> Response {
    let body = serde_json::json!({"error": {"code": code, "message": code}});
    let mut headers = vec![("Content-Type".to_owned(), "application/json".to_owned())];
    headers.extend(extra);
    Response::new(status, headers, body.to_string().into_bytes())
}

/// `unix` as an HTTP date (`Retry-After` in its date form).
fn http_date(unix: u64) -> String {
    httpdate::fmt_http_date(std::time::UNIX_EPOCH + std::time::Duration::from_secs(unix))
}

impl Default for Platform {
    fn default() -> Platform {
        Platform::new()
    }
}

impl Platform {
    /// A platform knowing [`KEY_ID`].
    pub fn new() -> Platform {
        let mut verifier = Verifier::new(VerifierConfig {
            nonce_capacity_per_key: 1_000_000,
            shards: 1,
            ..VerifierConfig::default()
        })
        .expect("a valid verifier configuration");
        verifier
            .add_key(KEY_ID, &[SECRET])
            .expect("a valid simulated key");
        Platform {
            verifier,
            keys: HashMap::new(),
            payments: BTreeMap::new(),
            keys_of_order: HashMap::new(),
            declined: BTreeMap::new(),
            expired_keys: 0,
            requests: 0,
        }
    }

    /// Handles `request` arriving at `now_ms` (the platform's clock), with
    /// `fault` drawn for its attempt and `processing_ms` of work for a new
    /// payment. `frozen` gives the body each order was frozen with.
    pub fn handle(
        &mut self,
        request: &Request,
        now_ms: u64,
        fault: Option<PlatformFault>,
        processing_ms: u64,
        frozen: &dyn Fn(&str) -> Option<Vec<u8>>,
    ) -> Answer {
        self.requests += 1;
        let now = now_ms / 1000;
        let mut answer = Answer {
            response: Response::default(),
            ready_at_ms: now_ms,
            violation: None,
            order_id: None,
        };
        let before = |f: PlatformFault| match f {
            PlatformFault::E500Before => Some(json_error(500, "internal_error", vec![])),
            PlatformFault::E502 => Some(json_error(502, "bad_gateway", vec![])),
            PlatformFault::E503Secs(s) => Some(json_error(
                503,
                "service_unavailable",
                vec![(headers::RETRY_AFTER.to_owned(), s.to_string())],
            )),
            PlatformFault::E429Date(s) => Some(json_error(
                429,
                "rate_limited",
                vec![(headers::RETRY_AFTER.to_owned(), http_date(now + s))],
            )),
            PlatformFault::E504Before => Some(json_error(504, "gateway_timeout", vec![])),
            _ => None,
        };
        if let Some(r) = fault.and_then(before) {
            answer.response = r;
            return answer;
        }
        let pairs: Vec<(&str, &str)> = request
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let incoming = IncomingRequest {
            method: &request.method,
            path: &request.path,
            headers: &pairs,
            body: &request.body,
        };
        let verified = match self.verifier.verify(&incoming, now) {
            Ok(v) => v,
            Err(e) => {
                let refusal = Refusal::for_error(&e);
                let hs = refusal
                    .headers()
                    .iter()
                    .map(|(n, v)| ((*n).to_owned(), v.clone()))
                    .collect();
                answer.response = Response::new(refusal.status(), hs, refusal.body().to_vec());
                return answer;
            }
        };
        let nonce = verified.nonce.to_owned();
        if request.method == "GET" {
            answer.response = self.status(&request.path, now_ms);
            answer.order_id = request.path.rsplit('/').next().map(str::to_owned);
            return answer;
        }
        let Some(key) = verified.idempotency_key.map(str::to_owned) else {
            answer.response = json_error(400, "idempotency_key_required", vec![]);
            return answer;
        };
        let parsed: Option<(String, u64)> =
            serde_json::from_slice::<serde_json::Value>(&request.body)
                .ok()
                .and_then(|v| Some((v["order_id"].as_str()?.to_owned(), v["amount"].as_u64()?)));
        let Some((order_id, amount)) = parsed else {
            answer.response = json_error(400, "invalid_request", vec![]);
            return answer;
        };
        answer.order_id = Some(order_id.clone());
        match self.keys_of_order.get(&order_id) {
            Some(first) if *first != key => {
                answer.violation = Some(format!(
                    "order {order_id} re-keyed: sent with key {key} after {first}"
                ));
            }
            Some(_) => {}
            None => {
                self.keys_of_order.insert(order_id.clone(), key.clone());
            }
        }
        let fingerprint = format!(
            "{} {} {}",
            request.method,
            request.path,
            body_sha256_hex(&request.body)
        );
        if let Some(entry) = self.keys.get(&key) {
            if now >= entry.stored_at + RETENTION_SECS {
                self.keys.remove(&key);
                self.expired_keys += 1;
            }
        }
        if let Some(entry) = self.keys.get(&key) {
            answer.response = if entry.fingerprint != fingerprint {
                json_error(409, "idempotency_conflict", vec![])
            } else if now_ms < entry.done_at_ms {
                json_error(409, "idempotency_in_progress", vec![])
            } else {
                let hs = vec![
                    ("Content-Type".to_owned(), "application/json".to_owned()),
                    (headers::IDEMPOTENT_REPLAYED.to_owned(), "true".to_owned()),
                ];
                Response::new(entry.status, hs, entry.body.clone())
            };
            return answer;
        }
        let done_at_ms = now_ms + processing_ms;
        let (status, body) = if declines(amount) {
            *self.declined.entry(order_id.clone()).or_default() += 1;
            let body =
                serde_json::json!({"error": {"code": "card_declined", "message": "declined"}});
            (402, body.to_string().into_bytes())
        } else {
            let payments = self.payments.entry(order_id.clone()).or_default();
            payments.push(Payment {
                key: key.clone(),
                body: request.body.clone(),
                nonce,
                done_at_ms,
            });
            if payments.len() > 1 {
                answer.violation = Some(format!(
                    "order {order_id}: {} platform effects (keys {})",
                    payments.len(),
                    payments
                        .iter()
                        .map(|p| p.key.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            if frozen(&order_id).as_deref() != Some(&request.body[..]) {
                answer.violation = Some(format!(
                    "order {order_id}: the platform acted on a body the client never froze"
                ));
            }
            let body = serde_json::json!({"payment_id": format!("pay-{order_id}"), "order_id": order_id, "amount": amount});
            (201, body.to_string().into_bytes())
        };
        self.keys.insert(
            key,
            KeyEntry {
                fingerprint,
                stored_at: now,
                done_at_ms,
                status,
                body: body.clone(),
            },
        );
        answer.ready_at_ms = done_at_ms;
        answer.response = match fault {
            Some(PlatformFault::E500After) => json_error(500, "internal_error", vec![]),
            Some(PlatformFault::E504After) => json_error(504, "gateway_timeout", vec![]),
            _ => Response::new(
                status,
                vec![("Content-Type".to_owned(), "application/json".to_owned())],
                body,
            ),
        };
        answer
    }

    /// The answer to a status query of `path` (`/orders/{order_id}`).
    fn status(&self, path: &str, now_ms: u64) -> Response {
        let order_id = path.rsplit('/').next().unwrap_or("");
        match self.payments.get(order_id).and_then(|p| p.first()) {
            Some(p) if p.done_at_ms <= now_ms => {
                let body = serde_json::json!({"payment_id": format!("pay-{order_id}"), "order_id": order_id});
                Response::new(
                    200,
                    vec![("Content-Type".to_owned(), "application/json".to_owned())],
                    body.to_string().into_bytes(),
                )
            }
            _ => json_error(404, "not_found", vec![]),
        }
    }

    /// Whether a payment exists for `order_id`.
    pub fn paid(&self, order_id: &str) -> bool {
        self.payments.get(order_id).is_some_and(|p| !p.is_empty())
    }

    /// The name of a fault, for traces.
    pub fn fault_name(fault: PlatformFault) -> &'static str {
        fault.name()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn retry_after_dates() {
        assert_eq!(
            super::http_date(784_111_777),
            "Sun, 06 Nov 1994 08:49:37 GMT"
        );
    }
}
