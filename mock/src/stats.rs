//! The oracle: what the mock did, counted under the lock of the state it
//! describes.

use std::collections::BTreeMap;

use serde::Serialize;

/// What happened to one order id.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OrderStats {
    /// Payments created for the order id (the mock allows at most one, so
    /// anything above 1 would be a double charge).
    pub payments_created: u64,
    /// The idempotency keys whose operation created a payment.
    pub idempotency_keys: Vec<String>,
    /// Idempotency keys of creates refused with `duplicate_order` (a client
    /// that re-keyed a retry shows up here).
    pub duplicate_keys: Vec<String>,
}

/// Request counts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RequestStats {
    /// Every request seen, answered or dropped.
    pub total: u64,
    /// Requests per route, e.g. `"POST /v1/payments"`.
    pub by_route: BTreeMap<String, u64>,
    /// Requests per answer status; a dropped connection counts as `"dropped"`.
    pub by_status: BTreeMap<String, u64>,
    /// Error answers per error code.
    pub by_error_code: BTreeMap<String, u64>,
}

/// A snapshot of the mock's counters, as served by `GET /_mock/stats`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Per order id.
    pub orders: BTreeMap<String, OrderStats>,
    /// Creates refused because the order id already had a payment under
    /// another idempotency key.
    pub duplicate_order: u64,
    /// Payments held now.
    pub payments: u64,
    /// Refunds held now.
    pub refunds: u64,
    /// Request counts.
    pub requests: RequestStats,
    /// Faults injected, per kind.
    pub faults: BTreeMap<String, u64>,
    /// Answers replayed from the idempotency store.
    pub replays: u64,
    /// Idempotency keys held now (finished or running).
    pub idempotency_keys_stored: u64,
}

impl Stats {
    pub(crate) fn payment_created(&mut self, order_id: &str, idempotency_key: &str) {
        let order = self.orders.entry(order_id.to_owned()).or_default();
        order.payments_created += 1;
        order.idempotency_keys.push(idempotency_key.to_owned());
    }

    pub(crate) fn duplicate(&mut self, order_id: &str, idempotency_key: &str) {
        self.duplicate_order += 1;
        let order = self.orders.entry(order_id.to_owned()).or_default();
        order.duplicate_keys.push(idempotency_key.to_owned());
    }

    pub(crate) fn request(&mut self, route: &str, status: Option<u16>, code: Option<&str>) {
        self.requests.total += 1;
        *self.requests.by_route.entry(route.to_owned()).or_default() += 1;
        let status = status.map_or_else(|| "dropped".to_owned(), |s| s.to_string());
        *self.requests.by_status.entry(status).or_default() += 1;
        if let Some(code) = code {
            *self
                .requests
                .by_error_code
                .entry(code.to_owned())
                .or_default() += 1;
        }
    }

    pub(crate) fn fault(&mut self, name: &str) {
        *self.faults.entry(name.to_owned()).or_default() += 1;
    }
}
