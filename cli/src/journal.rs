//! `payidem journal …`: every command works through the library's
//! [`Journal`] trait, so any backend the library has serves them all.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use payidem::journal::{
    Journal, JournalKey, JournalOpenOptions, JournalScope, Listed, OperationRecord,
};
use payidem::operation::OperationState;
use payidem::{CallOptions, Client, ClientConfig, ErrorCode, JournalChoice};
use serde_json::{json, Value};
use zeroize::Zeroizing;

use crate::args::{
    JournalArg, JournalCommand, JournalKeyArg, KeyArgs, Outcome, ResumeArgs, ENV_BASE_URL,
    ENV_JOURNAL, ENV_SECRET,
};
use crate::render;
use crate::{out, out_json, secret, Done, Exit, Failure};

/// The current Unix time.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// An opened journal and the name it was opened by.
struct Opened {
    journal: Arc<dyn Journal>,
    name: String,
    /// Where the journal key rows are verified with came from, if any.
    key_from: Option<KeyFrom>,
}

/// Where a journal key came from.
#[derive(Clone, Copy)]
enum KeyFrom {
    /// Derived from the API secret, as a client without its own key does.
    Secret,
    /// `--journal-key-file`.
    File,
}

impl KeyFrom {
    fn as_str(self) -> &'static str {
        match self {
            KeyFrom::Secret => "secret",
            KeyFrom::File => "file",
        }
    }
}

/// Opens the journal `--journal` / `$PAYIDEM_JOURNAL` names, or the
/// library's default one, read-only and without a journal key (rows are
/// read as stored).
fn open(arg: &JournalArg) -> Result<Opened, Failure> {
    open_keyed(arg, None, true, None)
}

/// The key of `--journal-key-file`, else the one derived from
/// `--secret-file` / `$PAYIDEM_SECRET`, else none.
fn key_of(
    secret_file: Option<PathBuf>,
    key: &JournalKeyArg,
) -> Result<Option<(JournalKey, KeyFrom)>, Failure> {
    let secret = optional_secret(secret_file)?;
    journal_key(key, secret.as_deref().map(Vec::as_slice))
}

/// The secret of `--secret-file`, else `$PAYIDEM_SECRET`, if either is given.
fn optional_secret(secret_file: Option<PathBuf>) -> Result<Option<secret::Secret>, Failure> {
    let env_set = std::env::var_os(ENV_SECRET).is_some_and(|v| !v.is_empty());
    if secret_file.is_none() && !env_set {
        return Ok(None);
    }
    let args = KeyArgs {
        key_id: None,
        secret_file,
    };
    secret::secret(&args).map(Some)
}

/// The journal key: the one in `--journal-key-file` (hex, as the clients
/// were given it), else the one derived from `secret`, else none. Errors
/// name the file, never its content.
fn journal_key(
    arg: &JournalKeyArg,
    secret: Option<&[u8]>,
) -> Result<Option<(JournalKey, KeyFrom)>, Failure> {
    let Some(path) = &arg.journal_key_file else {
        return Ok(secret.map(|s| (JournalKey::derive_from_secret(s), KeyFrom::Secret)));
    };
    let file = Zeroizing::new(secret::read_input("--journal-key-file", path)?);
    let text = std::str::from_utf8(&file).unwrap_or("");
    let text = text
        .strip_suffix('\n')
        .map_or(text, |t| t.strip_suffix('\r').unwrap_or(t));
    JournalKey::from_hex(text)
        .map(|k| Some((k, KeyFrom::File)))
        .map_err(|e| {
            Failure::new(
                Exit::Usage,
                format!(
                    "the journal key file {} does not hold a journal key in hex: {}",
                    path.display(),
                    e.message()
                ),
            )
        })
}

/// Opens the journal with `key` when there is one: its seal is checked and
/// every row read against its integrity MACs. `read_only` opens a SQLite
/// file read-only (nothing created, migrated or written; a write-protected
/// file or directory works).
fn open_keyed(
    arg: &JournalArg,
    key: Option<(JournalKey, KeyFrom)>,
    read_only: bool,
    scope: Option<JournalScope>,
) -> Result<Opened, Failure> {
    let opened = payidem::journal::open(
        &JournalChoice::from_setting(arg.journal.as_deref()),
        JournalOpenOptions {
            journal_key: key.as_ref().map(|(k, _)| k.clone()),
            scope,
            existing_only: true,
            read_only,
        },
    )
    .map_err(|e| {
        let mut failure = Failure::from(e);
        if failure.message.ends_with("does not exist") {
            let hint = format!(" (pass --journal PATH or set {ENV_JOURNAL})");
            failure.message.push_str(&hint);
        }
        failure
    })?;
    Ok(Opened {
        journal: opened.journal,
        name: opened.name,
        key_from: key.map(|(_, from)| from),
    })
}

/// Runs one `journal` command.
pub fn run(command: JournalCommand, json: bool) -> Done {
    match command {
        JournalCommand::List {
            journal,
            state,
            older_than,
        } => {
            let states: Vec<OperationState> = if state.is_empty() {
                OperationState::ALL.to_vec()
            } else {
                state.iter().map(|s| s.state()).collect()
            };
            list(&open(&journal)?, &states, older_than, json)
        }
        JournalCommand::Show {
            journal,
            order_id,
            body,
        } => show(&open(&journal)?, &order_id, body, json),
        JournalCommand::Resume(args) => resume(args, json),
        JournalCommand::Reconcile {
            journal,
            order_id,
            outcome,
            reference,
            by,
            secret_file,
            key,
        } => {
            let by = match by {
                Some(by) => by,
                None => operator(),
            };
            let opened = open_keyed(&journal, key_of(secret_file, &key)?, false, None)?;
            reconcile(&opened, &order_id, outcome, &reference, &by, json)
        }
        JournalCommand::Purge {
            journal,
            settled_older_than,
            secret_file,
            key,
        } => {
            let opened = open_keyed(&journal, key_of(secret_file, &key)?, false, None)?;
            purge(&opened, settled_older_than, json)
        }
        JournalCommand::Key { secret_file } => {
            let Some(secret) = optional_secret(secret_file)? else {
                return Err(Failure::new(
                    Exit::Usage,
                    format!("give the API secret: --secret-file PATH or ${ENV_SECRET}"),
                ));
            };
            out(&JournalKey::derived_hex(&secret));
            Ok(Exit::Ok)
        }
        JournalCommand::Export { journal } => export(&open(&journal)?),
        JournalCommand::Stats {
            journal,
            prometheus,
        } => {
            let opened = open(&journal)?;
            crate::stats::run(&*opened.journal, &opened.name, prometheus, json)
        }
        JournalCommand::Check {
            journal,
            secret_file,
            key,
            against,
        } => {
            let export = match &against {
                Some(path) => Some(read_export(path)?),
                None => None,
            };
            let key = key_of(secret_file, &key)?;
            let keyed = key.is_some();
            match open_keyed(&journal, key, true, None) {
                Ok(opened) => check(&opened, export.as_ref(), json),
                // The key did not open the journal (another key, no seal,
                // a seal record altered): that is what the check found.
                Err(refused) if keyed && refused.code == Some("journal_error") => {
                    if json {
                        out_json(&json!({"ok": false, "problems": [refused.message]}));
                    } else {
                        out(&format!("problem: {}\nNOT OK\n", refused.message));
                    }
                    Ok(Exit::Unsound)
                }
                Err(other) => Err(other),
            }
        }
    }
}

fn list(j: &Opened, states: &[OperationState], older_than: Option<u64>, json: bool) -> Done {
    let now = unix_now();
    let (records, invalid) = every_row(j)?;
    let records: Vec<OperationRecord> = records
        .into_iter()
        .filter(|r| states.contains(&r.state))
        .filter(|r| older_than.is_none_or(|min| render::age(r, now) > min))
        .collect();
    if json {
        out_json(&json!({
            "journal": j.name,
            "now": now,
            "operations": records.iter().map(|r| render::record_json(r, now, false)).collect::<Vec<_>>(),
            "invalid": invalid_json(&invalid),
        }));
    } else if records.is_empty() && invalid.is_empty() {
        out("no operations\n");
    } else {
        let mut text = format!(
            "{:<10} {:<24} {:>8} {:>3}  REQUEST  KEY\n",
            "STATE", "ORDER_ID", "AGE", "TRY"
        );
        for r in &records {
            text.push_str(&render::list_line(r, now));
        }
        // Never hidden, whatever the filter: an edited row must show.
        for (order_id, problem) in &invalid {
            text.push_str(&format!(
                "{:<10} {:<24} {}\n",
                "INVALID",
                render::field(order_id),
                render::field(problem)
            ));
        }
        out(&text);
    }
    Ok(Exit::Ok)
}

/// The order id and problem of a row that does not read back valid.
type InvalidRow = (String, String);

/// Every row of the journal: the valid records, and each row that does
/// not read back valid.
fn every_row(j: &Opened) -> Result<(Vec<OperationRecord>, Vec<InvalidRow>), Failure> {
    let mut records = Vec::new();
    let mut invalid = Vec::new();
    for listed in j.journal.list_every()? {
        match listed {
            Listed::Valid(record) => records.push(record),
            Listed::Invalid { order_id, problem } => invalid.push((order_id, problem)),
        }
    }
    Ok((records, invalid))
}

fn invalid_json(invalid: &[InvalidRow]) -> Value {
    invalid
        .iter()
        .map(|(order_id, problem)| json!({"order_id": order_id, "problem": problem}))
        .collect()
}

/// The record of `order_id`, or exit 3.
fn get(j: &Opened, order_id: &str) -> Result<OperationRecord, Failure> {
    j.journal.get(order_id)?.ok_or_else(|| {
        Failure::new(
            Exit::NotFound,
            format!("order id {order_id:?} is not in journal {}", j.name),
        )
    })
}

fn show(j: &Opened, order_id: &str, body: bool, json: bool) -> Done {
    let now = unix_now();
    let record = get(j, order_id)?;
    // Only this operation's: an order id may be reused after a purge.
    let reconciliations: Vec<_> = j
        .journal
        .reconciliations(Some(order_id))?
        .into_iter()
        .filter(|r| r.idempotency_key == record.operation.idempotency_key)
        .collect();
    if json {
        let mut value = render::record_json(&record, now, body);
        value["reconciliations"] = reconciliations
            .iter()
            .map(render::reconciliation_json)
            .collect();
        out_json(&value);
    } else {
        out(&render::show_text(&record, &reconciliations, now, body));
    }
    Ok(Exit::Ok)
}

/// Who runs the command: `$USER`, else `$LOGNAME`, else `uid N`; on
/// Windows `%USERNAME%`, else `unknown user`.
fn operator() -> String {
    #[cfg(not(windows))]
    let vars = ["USER", "LOGNAME"];
    #[cfg(windows)]
    let vars = ["USERNAME"];
    for var in vars {
        if let Ok(name) = std::env::var(var) {
            if !name.trim().is_empty() {
                return name;
            }
        }
    }
    #[cfg(not(windows))]
    // SAFETY: getuid has no preconditions and cannot fail.
    return format!("uid {}", unsafe { libc::getuid() });
    #[cfg(windows)]
    "unknown user".to_owned()
}

fn reconcile(
    j: &Opened,
    order_id: &str,
    outcome: Outcome,
    reference: &str,
    by: &str,
    json: bool,
) -> Done {
    let record = get(j, order_id)?;
    if record.state.is_settled() {
        return Err(Failure::new(
            Exit::Refused,
            format!(
                "order id {order_id:?} is already settled ({}); a settled operation is never changed",
                record.state.as_str()
            ),
        ));
    }
    let state = match outcome {
        Outcome::Succeeded => OperationState::Succeeded,
        Outcome::Rejected => OperationState::Rejected,
    };
    let done = j
        .journal
        .reconcile(order_id, state, by, reference, unix_now())
        .map_err(|e| {
            let refused = e.code() == ErrorCode::OperationBusy
                || (e.code() == ErrorCode::InvalidArgument && e.field() == Some("order_id"));
            let failure = Failure::from_error(&e);
            if refused {
                failure.with_exit(Exit::Refused)
            } else {
                failure
            }
        })?;
    if json {
        out_json(&json!({"reconciled": render::reconciliation_json(&done)}));
    } else {
        out(&format!(
            "order id {}: {} -> {} by {} at {} ({})\n",
            render::field(&format!("{order_id:?}")),
            done.previous_state.as_str(),
            done.state.as_str(),
            render::field(&done.by),
            render::utc(done.at),
            render::field(&done.reference)
        ));
    }
    Ok(Exit::Ok)
}

fn purge(j: &Opened, older_than: u64, json: bool) -> Done {
    let before = unix_now().saturating_sub(older_than);
    let purged = j.journal.purge_settled(before)?;
    if json {
        out_json(&json!({"purged": purged, "before": before}));
    } else {
        out(&format!(
            "purged {purged} settled operation(s) last changed before {}\n",
            render::utc(before)
        ));
    }
    Ok(Exit::Ok)
}

fn export(j: &Opened) -> Done {
    let now = unix_now();
    let (records, invalid) = every_row(j)?;
    let reconciliations = j.journal.reconciliations(None)?;
    let operations: Vec<Value> = records
        .iter()
        .map(|r| {
            let mut value = render::record_json(r, now, true);
            value["reconciliations"] = reconciliations
                .iter()
                .filter(|c| {
                    c.order_id == r.operation.order_id
                        && c.idempotency_key == r.operation.idempotency_key
                })
                .map(render::reconciliation_json)
                .collect();
            value
        })
        .collect();
    out_json(&json!({
        "format": "payidem-journal-export",
        "version": 1,
        "journal": j.name,
        "exported_at": now,
        "operations": operations,
        "invalid_operations": invalid_json(&invalid),
        "reconciliations": reconciliations.iter().map(render::reconciliation_json).collect::<Vec<_>>(),
    }));
    Ok(Exit::Ok)
}

/// The export of `--against`, parsed; errors name the file.
fn read_export(path: &std::path::Path) -> Result<Value, Failure> {
    let text = std::fs::read(path).map_err(|e| {
        Failure::new(
            Exit::Usage,
            format!("cannot read the export {}: {e}", path.display()),
        )
    })?;
    serde_json::from_slice(&text).map_err(|e| {
        Failure::new(
            Exit::Usage,
            format!("the export {} is not JSON: {e}", path.display()),
        )
    })
}

fn check(j: &Opened, export: Option<&Value>, json: bool) -> Done {
    let mut report = j.journal.check()?;
    if let Some(export) = export {
        match j.journal.list(&OperationState::ALL) {
            Ok(records) => report.problems.extend(
                crate::rollback::problems(&records, export)
                    .map_err(|why| Failure::new(Exit::Usage, format!("--against: {why}")))?,
            ),
            // A row failing its MAC is a problem found already.
            Err(e) => report.problems.push(format!(
                "--against: the operations cannot be listed: {}",
                e.message()
            )),
        }
    }
    let sound = report.is_sound();
    let now = unix_now();
    let offsets = j.journal.clock_offsets()?;
    if json {
        out_json(&json!({
            "journal": j.name,
            "ok": sound,
            "backend": report.backend,
            "schema_version": report.schema_version,
            "library_schema_version": report.library_schema_version,
            "migrated_from": report.migrated_from,
            "operations": report.operations,
            "reconciliations": report.reconciliations,
            "problems": report.problems,
            "macs_verified": report.macs_verified,
            "journal_key": j.key_from.map(KeyFrom::as_str),
            "clock_offsets": offsets.iter().map(|o| json!({
                "platform": o.platform,
                "offset_secs": o.offset_secs,
                "measured_at": o.measured_at,
                "age_secs": now.saturating_sub(o.measured_at),
            })).collect::<Vec<_>>(),
        }));
    } else {
        let version = |v: Option<u32>| v.map_or("-".to_owned(), |v| v.to_string());
        let mut text = format!(
            "journal {} ({}): schema version {} (this build: {}){}\n{} operation(s), {} reconciliation(s)\n",
            render::field(&j.name),
            report.backend,
            version(report.schema_version),
            version(report.library_schema_version),
            report
                .migrated_from
                .map_or(String::new(), |v| format!(", migrated from {v} just now")),
            report.operations,
            report.reconciliations,
        );
        text.push_str(match (report.macs_verified, j.key_from) {
            (true, Some(KeyFrom::File)) => {
                "integrity MACs: checked for every operation (journal key from --journal-key-file)\n"
            }
            (true, _) => {
                "integrity MACs: checked for every operation (journal key from the secret)\n"
            }
            (false, _) => {
                "integrity MACs: not verified (pass --secret-file, set PAYIDEM_SECRET or pass \
                 --journal-key-file)\n"
            }
        });
        for o in &offsets {
            text.push_str(&format!(
                "clock offset for {}: {:+} s, measured {} ago\n",
                render::field(&o.platform),
                o.offset_secs,
                render::span(now.saturating_sub(o.measured_at))
            ));
        }
        for p in &report.problems {
            text.push_str(&format!("problem: {}\n", render::field(p)));
        }
        text.push_str(if sound { "ok\n" } else { "NOT OK\n" });
        out(&text);
    }
    Ok(if sound { Exit::Ok } else { Exit::Unsound })
}

/// The base URL, key id and platform origin `resume` sends to, the origin
/// as the client computes it (so the journal's scope is the client's).
fn platform_of(args: &ResumeArgs, secret: &[u8]) -> Result<(String, String, String), Failure> {
    let base_url = args
        .platform
        .base_url
        .clone()
        .filter(|u| !u.is_empty())
        .ok_or_else(|| {
            Failure::new(
                Exit::Usage,
                format!("no platform: pass --base-url or set {ENV_BASE_URL}"),
            )
        })?;
    let key_id = secret::key_id(&args.platform.key)?;
    let mut probe = ClientConfig::new(base_url.clone(), key_id.clone());
    probe.journal = JournalChoice::Memory;
    let origin = payidem::journal::platform_origin(&Client::new(probe, secret)?.url(""));
    Ok((base_url, key_id, origin))
}

fn resume(args: ResumeArgs, json: bool) -> Done {
    // With the secret every row is checked against its MAC before anything
    // is listed or sent; a dry run without it reads the rows unchecked.
    let secret = if args.dry_run {
        optional_secret(args.platform.key.secret_file.clone())?
    } else {
        Some(secret::secret(&args.platform.key)?)
    };
    let key = journal_key(&args.key, secret.as_deref().map(Vec::as_slice))?;
    // Sending resumes only the operations made for this platform and key id
    // (an order id of another platform is refused, never sent here); a dry
    // run lists every one.
    let platform = match (&secret, args.dry_run) {
        (Some(secret), false) => Some(platform_of(&args, secret)?),
        _ => None,
    };
    let scope = platform.as_ref().map(|(_, key_id, platform)| JournalScope {
        platform: platform.clone(),
        key_id: key_id.clone(),
    });
    let j = open_keyed(&args.journal, key, false, scope)?;
    let now = unix_now();
    let targets: Vec<OperationRecord> = match &args.order_id {
        Some(order_id) => vec![get(&j, order_id)?],
        None => j
            .journal
            .list(&[OperationState::InFlight, OperationState::Unknown])?,
    };
    if args.dry_run {
        if json {
            out_json(&json!({
                "dry_run": true,
                "operations": targets.iter().map(|r| render::record_json(r, now, false)).collect::<Vec<_>>(),
            }));
        } else if targets.is_empty() {
            out("nothing to resume\n");
        } else {
            let mut text = String::new();
            for r in &targets {
                let what = if r.state.is_settled() {
                    "settled: would answer its stored outcome"
                } else if render::key_expired(r, now) && r.operation.status_path.is_none() {
                    "key expired: would answer key_expired without sending"
                } else if render::key_expired(r, now) {
                    "key expired: would only query its status"
                } else {
                    "would resume with its key"
                };
                text.push_str(&format!(
                    "{} ({}, {} old, key {}): {what}\n",
                    render::field(&r.operation.order_id),
                    r.state.as_str(),
                    render::span(render::age(r, now)),
                    render::field(&r.operation.idempotency_key)
                ));
            }
            out(&text);
        }
        return Ok(Exit::Ok);
    }

    let (Some(secret), Some((base_url, key_id, _))) = (secret, platform) else {
        return Err(Failure::new(Exit::Usage, "no secret"));
    };
    let mut config = ClientConfig::new(base_url, key_id);
    config.journal = JournalChoice::Custom(Arc::clone(&j.journal));
    // Resuming never purges anything as a side effect.
    config.settled_retention = Duration::from_secs(100 * 365 * 86_400);
    let client = Client::new(config, &secret)?;
    drop(secret);

    let mut results = Vec::new();
    let mut unsettled = 0usize;
    for target in &targets {
        let order_id = &target.operation.order_id;
        let options = CallOptions {
            deadline: args.deadline.map(Duration::from_secs),
            ..CallOptions::default()
        };
        let result = client.resume_with(order_id, options);
        let state = j.journal.get(order_id)?.map(|r| r.state);
        if !state.is_some_and(OperationState::is_settled) {
            unsettled += 1;
        }
        results.push((order_id.clone(), result, state));
    }
    if json {
        let values: Vec<Value> = results
            .iter()
            .map(|(order_id, result, state)| match result {
                Ok(o) => json!({
                    "order_id": order_id,
                    "ok": true,
                    "code": null,
                    "message": null,
                    "status": o.response.status,
                    "replayed": o.response.replayed,
                    "attempts": o.attempts,
                    "state": state.map(OperationState::as_str),
                }),
                Err(e) => json!({
                    "order_id": order_id,
                    "ok": false,
                    "code": e.code().as_str(),
                    "message": e.message(),
                    "status": e.http_status(),
                    "replayed": null,
                    "attempts": null,
                    "state": state.map(OperationState::as_str),
                }),
            })
            .collect();
        out_json(&json!({"results": values, "unsettled": unsettled}));
    } else if results.is_empty() {
        out("nothing to resume\n");
    } else {
        let mut text = String::new();
        for (order_id, result, state) in &results {
            let order_id = render::field(order_id);
            let state = state.map_or("gone", OperationState::as_str);
            match result {
                Ok(o) => text.push_str(&format!(
                    "{order_id}: HTTP {}{} after {} attempt(s); state {state}\n",
                    o.response.status,
                    if o.response.replayed {
                        " (replayed)"
                    } else {
                        ""
                    },
                    o.attempts
                )),
                Err(e) => text.push_str(&format!(
                    "{order_id}: {}: {}; state {state}\n",
                    e.code().as_str(),
                    render::field(e.message())
                )),
            }
        }
        text.push_str(&format!("{unsettled} operation(s) left unsettled\n"));
        out(&text);
    }
    Ok(if unsettled > 0 {
        Exit::Unsettled
    } else {
        Exit::Ok
    })
}
