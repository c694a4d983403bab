//! Payments and refunds: request validation and the business rules.

use std::collections::HashMap;

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde::Serialize;
use serde_json::{json, Value};

use crate::answer::Answer;
use crate::stats::Stats;

/// Largest amount accepted, in minor units.
pub const MAX_AMOUNT: u64 = 999_999_999_999;

/// A stored payment.
#[derive(Clone, Debug, Serialize)]
struct Payment {
    payment_id: String,
    order_id: String,
    amount: u64,
    currency: String,
    status: &'static str,
    created_at: u64,
    amount_refunded: u64,
}

/// A stored refund.
#[derive(Clone, Debug, Serialize)]
struct Refund {
    refund_id: String,
    payment_id: String,
    amount: u64,
    status: &'static str,
    created_at: u64,
}

/// A validated create request.
pub(crate) struct CreatePayment {
    order_id: String,
    amount: u64,
    currency: String,
}

fn parse_object(body: &[u8]) -> Result<serde_json::Map<String, Value>, Answer> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(Answer::invalid("body", "the body must be a JSON object")),
        Err(e) => Err(Answer::invalid(
            "body",
            format!("the body is not valid JSON: {e}"),
        )),
    }
}

fn amount_field(map: &serde_json::Map<String, Value>) -> Result<u64, Answer> {
    let bad = || {
        Answer::invalid(
            "amount",
            format!("amount must be an integer in 1..={MAX_AMOUNT} (minor units)"),
        )
    };
    match map.get("amount") {
        None => Err(Answer::invalid("amount", "amount is required")),
        Some(v) => v
            .as_u64()
            .filter(|a| (1..=MAX_AMOUNT).contains(a))
            .ok_or_else(bad),
    }
}

impl CreatePayment {
    /// Parses and checks `{order_id, amount, currency}`; the first bad field
    /// is named in a 400.
    pub(crate) fn parse(body: &[u8]) -> Result<CreatePayment, Answer> {
        let map = parse_object(body)?;
        let order_id = match map.get("order_id") {
            Some(Value::String(s)) => s.clone(),
            Some(_) => return Err(Answer::invalid("order_id", "order_id must be a string")),
            None => return Err(Answer::invalid("order_id", "order_id is required")),
        };
        payidem::protocol::fields::check_order_id(&order_id)
            .map_err(|e| Answer::from_payidem(&e))?;
        let amount = amount_field(&map)?;
        let currency = match map.get("currency") {
            Some(Value::String(s)) if s.len() == 3 && s.bytes().all(|b| b.is_ascii_uppercase()) => {
                s.clone()
            }
            Some(_) => {
                return Err(Answer::invalid(
                    "currency",
                    "currency must be three upper-case letters",
                ))
            }
            None => return Err(Answer::invalid("currency", "currency is required")),
        };
        Ok(CreatePayment {
            order_id,
            amount,
            currency,
        })
    }
}

/// Every payment and refund the mock holds.
pub(crate) struct Ledger {
    payments: HashMap<String, Payment>,
    by_order: HashMap<String, String>,
    refunds: HashMap<String, Refund>,
    ids: ChaCha8Rng,
}

impl Ledger {
    pub(crate) fn new(seed: u64) -> Ledger {
        Ledger {
            payments: HashMap::new(),
            by_order: HashMap::new(),
            refunds: HashMap::new(),
            ids: ChaCha8Rng::seed_from_u64(seed ^ 0x9e37_79b9_7f4a_7c15),
        }
    }

    pub(crate) fn clear(&mut self) {
        self.payments.clear();
        self.by_order.clear();
        self.refunds.clear();
    }

    pub(crate) fn payments(&self) -> usize {
        self.payments.len()
    }

    pub(crate) fn refunds(&self) -> usize {
        self.refunds.len()
    }

    fn new_id(&mut self, prefix: &str) -> String {
        let mut bytes = [0u8; 12];
        self.ids.fill_bytes(&mut bytes);
        let mut id = String::with_capacity(prefix.len() + 24);
        id.push_str(prefix);
        for b in bytes {
            id.push_str(&format!("{b:02x}"));
        }
        id
    }

    /// Creates a payment: 201, 402 `card_declined` (amount ending in 402) or
    /// 409 `duplicate_order`. The oracle is updated here, under the same lock.
    pub(crate) fn create_payment(
        &mut self,
        req: CreatePayment,
        idempotency_key: &str,
        now: u64,
        stats: &mut Stats,
    ) -> Answer {
        if self.by_order.contains_key(&req.order_id) {
            stats.duplicate(&req.order_id, idempotency_key);
            return Answer::error(
                409,
                "duplicate_order",
                "a payment already exists for this order_id under another idempotency key",
            );
        }
        if req.amount % 1000 == 402 {
            return Answer::error(402, "card_declined", "the card was declined");
        }
        let payment_id = self.new_id("pay_");
        let payment = Payment {
            payment_id: payment_id.clone(),
            order_id: req.order_id.clone(),
            amount: req.amount,
            currency: req.currency,
            status: "succeeded",
            created_at: now,
            amount_refunded: 0,
        };
        stats.payment_created(&req.order_id, idempotency_key);
        let answer = Answer::json(201, &json!(payment))
            .with_header("Location", format!("/v1/payments/{payment_id}"));
        self.by_order.insert(req.order_id, payment_id.clone());
        self.payments.insert(payment_id, payment);
        answer
    }

    /// The payment with this id, or 404.
    pub(crate) fn get_payment(&self, payment_id: &str) -> Answer {
        match self.payments.get(payment_id) {
            Some(p) => Answer::json(200, &json!(p)),
            None => not_found("payment"),
        }
    }

    /// The payment of this order id, or 404.
    pub(crate) fn payment_of_order(&self, order_id: &str) -> Answer {
        match self.by_order.get(order_id) {
            Some(id) => self.get_payment(id),
            None => not_found("payment"),
        }
    }

    /// Refunds part of a payment: 201, 404, 400 naming `amount` or 422
    /// `refund_exceeds_payment`.
    pub(crate) fn refund(&mut self, payment_id: &str, body: &[u8], now: u64) -> Answer {
        if !self.payments.contains_key(payment_id) {
            return not_found("payment");
        }
        let amount = match parse_object(body).and_then(|m| amount_field(&m)) {
            Ok(a) => a,
            Err(answer) => return answer,
        };
        let refund_id = self.new_id("re_");
        let Some(payment) = self.payments.get_mut(payment_id) else {
            return not_found("payment");
        };
        let remaining = payment.amount - payment.amount_refunded;
        if amount > remaining {
            return Answer::error(
                422,
                "refund_exceeds_payment",
                format!("refund of {amount} exceeds the {remaining} that remain on the payment"),
            );
        }
        payment.amount_refunded += amount;
        let refund = Refund {
            refund_id: refund_id.clone(),
            payment_id: payment_id.to_owned(),
            amount,
            status: "succeeded",
            created_at: now,
        };
        let answer = Answer::json(201, &json!(refund)).with_header(
            "Location",
            format!("/v1/payments/{payment_id}/refunds/{refund_id}"),
        );
        self.refunds.insert(refund_id, refund);
        answer
    }

    /// The refund with this id under this payment, or 404.
    pub(crate) fn get_refund(&self, payment_id: &str, refund_id: &str) -> Answer {
        match self.refunds.get(refund_id) {
            Some(r) if r.payment_id == payment_id => Answer::json(200, &json!(r)),
            _ => not_found("refund"),
        }
    }
}

fn not_found(what: &str) -> Answer {
    Answer::error(404, "not_found", format!("no such {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(a: &Answer) -> String {
        let v: Value = serde_json::from_slice(&a.body).unwrap();
        v["error"]["field"].as_str().unwrap_or_default().to_owned()
    }

    #[test]
    fn create_validation_names_the_field() {
        let cases: [(&[u8], &str); 9] = [
            (b"{", "body"),
            (b"[]", "body"),
            (br#"{"amount":1,"currency":"EUR"}"#, "order_id"),
            (
                br#"{"order_id":"a b","amount":1,"currency":"EUR"}"#,
                "order_id",
            ),
            (br#"{"order_id":"o","amount":0,"currency":"EUR"}"#, "amount"),
            (
                br#"{"order_id":"o","amount":1.5,"currency":"EUR"}"#,
                "amount",
            ),
            (
                br#"{"order_id":"o","amount":-3,"currency":"EUR"}"#,
                "amount",
            ),
            (
                br#"{"order_id":"o","amount":3,"currency":"eur"}"#,
                "currency",
            ),
            (br#"{"order_id":"o","amount":3}"#, "currency"),
        ];
        for (body, want) in cases {
            let err = CreatePayment::parse(body).err().unwrap();
            assert_eq!(err.status, 400);
            assert_eq!(field(&err), want, "{}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn rules() {
        let mut l = Ledger::new(1);
        let mut stats = Stats::default();
        let parse = |b: &str| CreatePayment::parse(b.as_bytes()).ok().unwrap();
        let a = l.create_payment(
            parse(r#"{"order_id":"o1","amount":1402,"currency":"EUR"}"#),
            "k0",
            5,
            &mut stats,
        );
        assert_eq!(a.status, 402);
        let a = l.create_payment(
            parse(r#"{"order_id":"o1","amount":1000,"currency":"EUR"}"#),
            "k1",
            5,
            &mut stats,
        );
        assert_eq!(a.status, 201);
        let a = l.create_payment(
            parse(r#"{"order_id":"o1","amount":1000,"currency":"EUR"}"#),
            "k2",
            5,
            &mut stats,
        );
        assert_eq!(
            (a.status, a.code.as_deref()),
            (409, Some("duplicate_order"))
        );
        assert_eq!(stats.orders["o1"].payments_created, 1);
        assert_eq!(stats.orders["o1"].duplicate_keys, ["k2"]);
        let v: Value = serde_json::from_slice(&l.payment_of_order("o1").body).unwrap();
        let id = v["payment_id"].as_str().unwrap().to_owned();
        assert_eq!(l.refund(&id, br#"{"amount":600}"#, 6).status, 201);
        assert_eq!(l.refund(&id, br#"{"amount":401}"#, 6).status, 422);
        assert_eq!(l.refund(&id, br#"{"amount":400}"#, 6).status, 201);
        assert_eq!(l.refund("pay_x", br#"{"amount":1}"#, 6).status, 404);
        assert_eq!(l.get_payment("pay_x").status, 404);
    }
}
