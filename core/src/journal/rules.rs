//! The rules every journal applies the same way: what counts as the same
//! request, when a lease is free, and the errors journals answer with.

use super::{JournalScope, Lease, OperationRecord, RowAuth, StoredMacs};
use crate::error::{Error, ErrorCode, Result};
use crate::operation::{FrozenOperation, OperationState, Response};
use std::time::Duration;

/// The latest Unix time a journal accepts for `now` (SQLite keeps signed
/// 64-bit integers); later lease expiries are read as "never expires".
pub(super) const MAX_TIME: u64 = i64::MAX as u64;

/// A settled response's headers as the JSON text every journal stores
/// (`None` without a response).
pub(super) fn encoded_headers(response: Option<&Response>) -> Result<Option<String>> {
    response
        .map(|r| {
            serde_json::to_string(&r.headers).map_err(|e| {
                Error::new(
                    ErrorCode::Internal,
                    format!("journal: cannot encode response headers: {e}"),
                )
            })
        })
        .transpose()
}

/// A settled response as stored: its status (`None`: no response), its
/// headers as [`encoded_headers`] wrote them, its body and whether it was
/// replayed; `corrupt` names what is wrong.
pub(super) fn stored_response(
    status: Option<i64>,
    headers: Option<String>,
    body: Option<Vec<u8>>,
    replayed: bool,
    corrupt: impl Fn(&str) -> Error,
) -> Result<Option<Response>> {
    let Some(status) = status else {
        return Ok(None);
    };
    let status = u16::try_from(status).map_err(|_| corrupt("response status out of range"))?;
    let headers = match headers {
        Some(json) => serde_json::from_str::<Vec<(String, String)>>(&json)
            .map_err(|_| corrupt("response headers are not a JSON array of pairs"))?,
        None => Vec::new(),
    };
    Ok(Some(Response {
        status,
        headers,
        body: body.unwrap_or_default(),
        replayed,
    }))
}

/// Refuses a `now` no journal can store.
pub(super) fn check_now(now: u64) -> Result<()> {
    if now > MAX_TIME {
        return Err(Error::invalid("now", format!("must be at most {MAX_TIME}")));
    }
    Ok(())
}

/// Refuses a lease without an owner.
pub(super) fn check_lease(lease: &Lease) -> Result<()> {
    if lease.owner.is_empty() {
        return Err(Error::invalid("lease", "the owner must not be empty"));
    }
    Ok(())
}

/// The expiry as stored: capped at [`MAX_TIME`].
pub(super) fn stored_expiry(lease: &Lease) -> u64 {
    lease.expires_at.min(MAX_TIME)
}

/// Refuses a state a call cannot end in.
pub(super) fn check_finish_state(state: OperationState) -> Result<()> {
    if state == OperationState::InFlight {
        return Err(Error::invalid(
            "state",
            "a call ends settled, unknown or pending, never in_flight",
        ));
    }
    Ok(())
}

/// `Ok` when `new` asks for exactly the request `existing` froze (method,
/// path, idempotency key and body hash); otherwise `idempotency_conflict`
/// naming the fields that differ.
pub(super) fn same_request(existing: &FrozenOperation, new: &FrozenOperation) -> Result<()> {
    let mut differs = Vec::new();
    if existing.method != new.method {
        differs.push("method");
    }
    if existing.path != new.path {
        differs.push("path");
    }
    if existing.idempotency_key != new.idempotency_key {
        differs.push("idempotency key");
    }
    if existing.body_sha256 != new.body_sha256 {
        differs.push("body");
    }
    if differs.is_empty() {
        return Ok(());
    }
    Err(Error::new(
        ErrorCode::IdempotencyConflict,
        format!(
            "order id {:?} is already journaled with another {}",
            new.order_id,
            differs.join(", ")
        ),
    )
    .with_operation(&new.order_id, &new.idempotency_key))
}

/// The `idempotency_conflict` for a key that another order id already holds.
pub(super) fn key_taken(new: &FrozenOperation, other_order_id: &str) -> Error {
    Error::new(
        ErrorCode::IdempotencyConflict,
        format!(
            "idempotency key of order id {:?} is already used by order id {:?}",
            new.order_id, other_order_id
        ),
    )
    .with_operation(&new.order_id, &new.idempotency_key)
}

/// Whether `lease` may take an operation whose lease is held by `holder`
/// until `expires` (both `None` when free): free, expired at `now`
/// (`expires <= now`), held by the same owner, or held by a process of this
/// machine that no longer exists.
pub(super) fn lease_free(
    holder: Option<&str>,
    expires: Option<u64>,
    lease: &Lease,
    now: u64,
) -> bool {
    match holder {
        None => true,
        Some(owner) if owner == lease.owner => true,
        Some(owner) => match expires {
            None => true,
            Some(at) => at <= now || super::owner::owner_is_gone(owner),
        },
    }
}

/// [`lease_free`] for a journal whose store tells whether the lease
/// expired by its own clock (`expired`).
pub(super) fn lease_free_at(holder: Option<&str>, expired: bool, lease: &Lease) -> bool {
    match holder {
        None => true,
        Some(owner) if owner == lease.owner => true,
        Some(owner) => expired || super::owner::owner_is_gone(owner),
    }
}

/// [`lease_blocks`] for a journal whose store tells whether the lease
/// expired by its own clock (`expired`).
pub(super) fn lease_blocks_at(holder: Option<&str>, expired: bool) -> bool {
    holder.is_some_and(|owner| !expired && !super::owner::owner_is_gone(owner))
}

/// Whether `lease` still holds an operation whose lease is held by `holder`.
pub(super) fn lease_held(holder: Option<&str>, lease: &Lease) -> bool {
    holder == Some(lease.owner.as_str())
}

/// `operation_busy`: another call holds the operation's lease.
pub(super) fn busy(order_id: &str, idempotency_key: &str) -> Error {
    Error::new(
        ErrorCode::OperationBusy,
        format!("order id {order_id:?} is being driven by another call"),
    )
    .with_operation(order_id, idempotency_key)
}

/// `operation_busy`: the caller's lease was released or taken over.
pub(super) fn lease_lost(order_id: &str, idempotency_key: &str) -> Error {
    Error::new(
        ErrorCode::OperationBusy,
        format!("this call no longer holds the lease of order id {order_id:?}"),
    )
    .with_operation(order_id, idempotency_key)
}

/// `invalid_argument` (`order_id`): no such operation.
pub(super) fn unknown_order(order_id: &str) -> Error {
    Error::invalid(
        "order_id",
        format!("no operation with order id {order_id:?} is journaled"),
    )
}

/// Refuses what a reconciliation cannot record: a closing state other than
/// succeeded or rejected, or a `by` / `reference` that is empty, too long
/// or holds control characters (they would garble listings and logs).
pub(super) fn check_reconciliation(state: OperationState, by: &str, reference: &str) -> Result<()> {
    if !matches!(state, OperationState::Succeeded | OperationState::Rejected) {
        return Err(Error::invalid(
            "state",
            format!(
                "a reconciliation closes an operation as succeeded or rejected, not {}",
                state.as_str()
            ),
        ));
    }
    check_text("by", by, super::MAX_RECONCILED_BY_LEN)?;
    check_text(
        "reference",
        reference,
        super::MAX_RECONCILIATION_REFERENCE_LEN,
    )
}

fn check_text(field: &'static str, value: &str, max: usize) -> Result<()> {
    if value.trim().is_empty() {
        return Err(Error::invalid(field, "must not be empty"));
    }
    if value.len() > max {
        return Err(Error::invalid(
            field,
            format!("is {} bytes long; at most {max} are allowed", value.len()),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(Error::invalid(field, "must not hold control characters"));
    }
    Ok(())
}

/// `invalid_argument` (`order_id`): a settled operation is never reconciled.
pub(super) fn already_settled(order_id: &str, state: OperationState) -> Error {
    Error::invalid(
        "order_id",
        format!(
            "order id {order_id:?} is already settled ({}); only an unsettled operation can be \
             reconciled",
            state.as_str()
        ),
    )
}

/// Whether a lease held by `holder` until `expires` still excludes a
/// reconciliation at `now`: the same test as [`lease_free`] for a caller
/// that holds no lease (held, unexpired, by a process that may exist).
pub(super) fn lease_blocks(holder: Option<&str>, expires: Option<u64>, now: u64) -> bool {
    match (holder, expires) {
        (Some(owner), Some(at)) => at > now && !super::owner::owner_is_gone(owner),
        _ => false,
    }
}

/// The problem with a stored operation whose body does not match its
/// SHA-256, if any.
pub(super) fn body_problem(order_id: &str, body: &[u8], body_sha256: &str) -> Option<String> {
    (crate::protocol::body_sha256_hex(body) != body_sha256)
        .then(|| format!("order id {order_id:?}: the body does not match its stored SHA-256"))
}

/// Whether a row made for `stored` belongs to a handle of scope `handle`:
/// the same platform and key id, or either one unscoped (a tool that sees
/// every scope, a row from before rows recorded their platform).
pub(super) fn scope_matches(stored: Option<&JournalScope>, handle: Option<&JournalScope>) -> bool {
    match (stored, handle) {
        (Some(stored), Some(handle)) => stored == handle,
        _ => true,
    }
}

/// `Ok` when `op`'s row (made for `stored`) belongs to the handle's scope;
/// otherwise `idempotency_conflict` naming both platforms and key ids: an
/// order id belongs to one platform and one key, and another platform's
/// answer is never given.
pub(super) fn same_scope(
    stored: Option<&JournalScope>,
    handle: Option<&JournalScope>,
    op: &FrozenOperation,
) -> Result<()> {
    if scope_matches(stored, handle) {
        return Ok(());
    }
    let (stored, handle) = (stored.expect("scoped"), handle.expect("scoped"));
    Err(Error::new(
        ErrorCode::IdempotencyConflict,
        format!(
            "order id {:?} is journaled for platform {} with key id {:?}, and this client pays \
             through {} with key id {:?}: an order id belongs to one platform and one key; \
             refused, nothing is sent (use another order id, or the client it was made with)",
            op.order_id, stored.platform, stored.key_id, handle.platform, handle.key_id
        ),
    )
    .with_operation(&op.order_id, &op.idempotency_key))
}

/// The problem of a journal without a seal that holds operations (an
/// empty one is sealed by the first handle with a key), for
/// [`Journal::check`](super::Journal::check).
pub(super) fn seal_problem(sealed: bool, holds_operations: bool) -> Option<String> {
    (!sealed && holds_operations).then(|| {
        "the journal is not sealed (created without a journal key, or its seal was removed): \
         no row can be authenticated, and a client with a key refuses it"
            .to_owned()
    })
}

/// Every problem of one row that read back valid, for
/// [`Journal::check`](super::Journal::check): its body against its hash, a
/// missing MAC, and (with the key) its MACs and the purge horizon.
pub(super) fn row_problems(
    auth: &RowAuth,
    scope: Option<&JournalScope>,
    record: &OperationRecord,
    macs: StoredMacs<'_>,
) -> Vec<String> {
    let op = &record.operation;
    let mut problems: Vec<String> = body_problem(&op.order_id, &op.body, &op.body_sha256)
        .into_iter()
        .collect();
    if !auth.is_keyed() && (macs.row_mac.is_none() || macs.state_mac.is_none()) {
        problems.push(format!(
            "the row of order id {:?} carries no integrity MAC",
            op.order_id
        ));
    }
    problems.extend(auth.check(scope, record, macs).err());
    problems
}

/// The lease a client's calls hold when it sets no `lease_ttl`: the retry
/// deadline plus 30 s, so that a call that never renews still holds its
/// lease for as long as it can run.
pub(crate) fn default_lease_ttl(deadline: Duration) -> Duration {
    deadline.saturating_add(Duration::from_secs(30))
}

/// The heartbeat of a lease of `ttl` when none is set: a third of it, so
/// that a holder renews twice before the lease can lapse (one lost or slow
/// renewal never frees a live call's operation).
pub(crate) fn default_heartbeat(ttl: Duration) -> Duration {
    ttl / 3
}

/// The shortest heartbeat: a renewal is a journal write, and a heartbeat
/// shorter than this would spend the journal on renewals.
pub(crate) const MIN_HEARTBEAT: Duration = Duration::from_millis(100);

/// Refuses a heartbeat that cannot keep a lease of `ttl` alive: it must
/// be shorter than the ttl (the holder renews before the lease lapses)
/// and at least [`MIN_HEARTBEAT`].
pub(crate) fn check_heartbeat(heartbeat: Duration, ttl: Duration) -> Result<()> {
    if heartbeat < MIN_HEARTBEAT {
        return Err(Error::invalid(
            "lease_heartbeat",
            format!("must be at least {} ms", MIN_HEARTBEAT.as_millis()),
        ));
    }
    if heartbeat >= ttl {
        return Err(Error::invalid(
            "lease_heartbeat",
            format!(
                "must be shorter than the lease ttl ({} ms)",
                ttl.as_millis()
            ),
        ));
    }
    Ok(())
}

/// How many seconds past a lease write (open, claim, attempt record,
/// renewal) the lease holds: `ttl` plus the request timeout, rounded up,
/// so that an attempt handed out right after a write holds the lease for
/// its whole flight (nobody renews while a request is in flight) and for
/// `ttl` more. A holder that dies therefore frees its operations at most
/// this long after its last renewal.
pub(crate) fn lease_span_secs(ttl: Duration, request_timeout: Duration) -> u64 {
    let span = ttl.saturating_add(request_timeout);
    let whole = span.as_secs();
    whole.saturating_add(u64::from(span.subsec_nanos() > 0))
}

/// What a call holding a lease does about it, having last written it
/// `since` ago: `None` when the renewal is due now (before anything else
/// happens: a wait goes on or an attempt is handed out), else how long it
/// may go on before it renews (a wait is cut to it). A call hands out an
/// attempt only with a renewal younger than `heartbeat`, so the lease
/// still holds, at the send, for the attempt's flight and more than
/// `ttl - heartbeat` after it.
pub(crate) fn renewal_in(since: Duration, heartbeat: Duration) -> Option<Duration> {
    let left = heartbeat.saturating_sub(since);
    (!left.is_zero()).then_some(left)
}
