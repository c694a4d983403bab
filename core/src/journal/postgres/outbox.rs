//! The outbox insert: the statement a caller runs in its own transaction
//! to record an operation as pending, for any instance to take over.

use std::fmt;

use postgres::types::{IsNull, ToSql, Type};

use super::PostgresJournal;
use crate::error::{Error, Result};
use crate::journal::{rules, OperationRecord};
use crate::operation::{FrozenOperation, OperationState};

/// The SQL placeholder style of [`OutboxInsert::sql`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamStyle {
    /// `$1, $2, …`: the server's own style (Rust `postgres`/`sqlx`, Go
    /// `pgx`/`lib/pq`, libpq's `PQexecParams`, Python `asyncpg`).
    Dollar,
    /// `%s`: Python DB-API drivers (`psycopg`, `psycopg2`).
    Format,
}

/// One value of an [`OutboxInsert`].
#[derive(Clone, PartialEq, Eq)]
pub enum OutboxValue {
    /// A `text` value.
    Text(String),
    /// A `bytea` value (the body).
    Bytes(Vec<u8>),
    /// SQL NULL (a missing status path).
    Null,
}

impl fmt::Debug for OutboxValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutboxValue::Text(s) => f.debug_tuple("Text").field(s).finish(),
            OutboxValue::Bytes(b) => write!(f, "Bytes({} bytes)", b.len()),
            OutboxValue::Null => f.write_str("Null"),
        }
    }
}

impl ToSql for OutboxValue {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut postgres::types::private::BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            OutboxValue::Text(s) => s.to_sql(ty, out),
            OutboxValue::Bytes(b) => b.to_sql(ty, out),
            OutboxValue::Null => Ok(IsNull::Yes),
        }
    }

    fn accepts(ty: &Type) -> bool {
        <String as ToSql>::accepts(ty) || <Vec<u8> as ToSql>::accepts(ty)
    }

    postgres::types::to_sql_checked!();
}

/// The statement that records an operation as pending, without a lease, in
/// the caller's own transaction (the outbox): see
/// [`PostgresJournal::outbox_insert`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutboxInsert {
    /// The `INSERT` statement, with placeholders in the requested style.
    pub sql: String,
    /// Its seven parameters, in order: order id, idempotency key, method,
    /// path, body (bytea), body SHA-256 (hex), status path (or NULL).
    pub params: Vec<OutboxValue>,
}

impl OutboxInsert {
    /// The parameters as the `postgres` crate takes them:
    /// `tx.execute(&insert.sql, &insert.sql_params())`.
    pub fn sql_params(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.params
            .iter()
            .map(|p| p as &(dyn ToSql + Sync))
            .collect()
    }
}

impl PostgresJournal {
    /// The statement and parameters that record `operation` as pending,
    /// without a lease, in the caller's own transaction, together with the
    /// caller's business rows (the outbox pattern), with `$n` placeholders.
    /// Any instance's [`Journal::claim_next`](crate::journal::Journal::claim_next) (e.g.
    /// [`Client::take_over`](crate::Client::take_over)) later takes and
    /// sends it, with its key and body unchanged.
    ///
    /// The journal's tables must exist (a [`PostgresJournal`] was opened on
    /// the database once). The insert fails with a unique violation when
    /// the order id or the key is already journaled; nothing else checks
    /// it. Build `operation` with [`Client::freeze`](crate::Client::freeze)
    /// so that the path carries the client's base-URL prefix.
    pub fn outbox_insert(operation: &FrozenOperation) -> OutboxInsert {
        PostgresJournal::outbox_insert_with(operation, ParamStyle::Dollar)
    }

    /// [`PostgresJournal::outbox_insert`] with placeholders in `style`.
    ///
    /// The row carries no integrity MAC: a journal with a key (every
    /// [`Client`](crate::Client)'s) refuses it once its rows are sealed.
    /// Use [`Client::outbox_insert`](crate::Client::outbox_insert) or
    /// [`PostgresJournal::outbox_insert_keyed`].
    pub fn outbox_insert_with(operation: &FrozenOperation, style: ParamStyle) -> OutboxInsert {
        PostgresJournal::outbox_row(operation, style, None)
    }

    /// [`PostgresJournal::outbox_insert_with`] whose row carries its
    /// integrity MACs for this journal (its id), under this handle's key and
    /// scope, created at `now` (literals in the statement, so the
    /// parameters stay the seven of [`OutboxInsert::params`]).
    /// `invalid_argument` (`journal_key`) for a handle without the key.
    pub fn outbox_insert_keyed(
        &self,
        operation: &FrozenOperation,
        style: ParamStyle,
        now: u64,
    ) -> Result<OutboxInsert> {
        rules::check_now(now)?;
        // The MACs are bound to the journal's seal, read when connected.
        self.ready("make an outbox insert")?;
        let record = OperationRecord {
            operation: operation.clone(),
            state: OperationState::Pending,
            attempts: 0,
            created_at: now,
            updated_at: now,
            response: None,
        };
        let scope = self.options.scope.as_ref();
        let (Some(row_mac), Some(state_mac)) = self.guard.auth().macs(scope, &record)? else {
            return Err(Error::invalid(
                "journal_key",
                "an outbox row's MACs need the journal key",
            ));
        };
        let quote = |v: Option<&String>| v.map_or("NULL".to_owned(), |v| quote_literal(v));
        let extra = format!(
            ", platform, key_id, created_at, updated_at, row_mac, state_mac) VALUES ({{marks}}, \
             'pending', {}, {}, to_timestamp({now}), to_timestamp({now}), '{row_mac}', '{state_mac}')",
            quote(scope.map(|s| &s.platform)),
            quote(scope.map(|s| &s.key_id)),
        );
        Ok(PostgresJournal::outbox_row(operation, style, Some(&extra)))
    }

    /// The outbox statement; `extra` replaces the columns' end and the
    /// values (`{marks}` stands for the placeholders).
    fn outbox_row(
        operation: &FrozenOperation,
        style: ParamStyle,
        extra: Option<&str>,
    ) -> OutboxInsert {
        let marks: Vec<String> = (1..=7)
            .map(|n| match style {
                ParamStyle::Dollar => format!("${n}"),
                ParamStyle::Format => "%s".to_owned(),
            })
            .collect();
        let marks = marks.join(", ");
        let sql = format!(
            "INSERT INTO payidem_operations (order_id, idempotency_key, method, path, body, \
             body_sha256, status_path, state{}",
            match extra {
                Some(extra) => extra.replace("{marks}", &marks),
                None => format!(") VALUES ({marks}, 'pending')"),
            }
        );
        let op = operation;
        OutboxInsert {
            sql,
            params: vec![
                OutboxValue::Text(op.order_id.clone()),
                OutboxValue::Text(op.idempotency_key.clone()),
                OutboxValue::Text(op.method.clone()),
                OutboxValue::Text(op.path.clone()),
                OutboxValue::Bytes(op.body.clone()),
                OutboxValue::Text(op.body_sha256.clone()),
                op.status_path
                    .clone()
                    .map_or(OutboxValue::Null, OutboxValue::Text),
            ],
        }
    }
}

/// `text` as an SQL string literal (standard_conforming_strings: quotes
/// doubled; an `E` literal would treat backslashes otherwise).
pub(super) fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}
