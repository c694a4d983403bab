//! The one way a client or a tool opens a journal from what its user
//! named: the default file, a SQLite file, memory, a PostgreSQL URL, or a
//! journal the caller built.

use std::path::PathBuf;
use std::sync::Arc;

use super::{
    Journal, JournalKey, JournalScope, MemoryJournal, PostgresJournal, PostgresJournalOptions,
    SqliteJournal, SqliteJournalOptions,
};
use crate::error::{Error, ErrorCode, Result};

/// Where a client keeps its operations. Its `Debug` shows URLs and file
/// names through [`redact_url`](crate::redact::redact_url): never a password.
#[derive(Clone)]
pub enum JournalChoice {
    /// The durable default: a SQLite file at
    /// [`default_journal_path`](super::default_journal_path), its
    /// directories created owner-only (0700) and the file 0600.
    Default,
    /// A SQLite file (created 0600 if missing; its directory must exist).
    Sqlite(PathBuf),
    /// Memory only: operations are lost with the process. For tests.
    Memory,
    /// A PostgreSQL database shared by every instance of a fleet, by its
    /// connection URL (`postgres://user:password@host:port/db` or
    /// `postgresql://…`, unix sockets as `?host=/run/postgresql`); see
    /// [`PostgresJournal`]. The URL may hold a password: it is never printed.
    Postgres(String),
    /// A journal the caller built.
    Custom(Arc<dyn Journal>),
}

impl JournalChoice {
    /// The choice a binding's journal setting names: none (or empty) is the
    /// durable [`JournalChoice::Default`],
    /// [`MEMORY_JOURNAL`](super::MEMORY_JOURNAL) is
    /// [`JournalChoice::Memory`], a URL starting with `postgres://` or
    /// `postgresql://` [`JournalChoice::Postgres`], anything else a SQLite
    /// file.
    pub fn from_setting(setting: Option<&str>) -> JournalChoice {
        match setting {
            None | Some("") => JournalChoice::Default,
            Some(super::MEMORY_JOURNAL) => JournalChoice::Memory,
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                JournalChoice::Postgres(url.to_owned())
            }
            Some(path) => JournalChoice::Sqlite(PathBuf::from(path)),
        }
    }
}

impl std::fmt::Debug for JournalChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JournalChoice::Default => f.write_str("Default"),
            // A mistyped PostgreSQL URL is taken for a file name.
            JournalChoice::Sqlite(path) => f
                .debug_tuple("Sqlite")
                .field(&crate::redact::redact_url(&path.to_string_lossy()))
                .finish(),
            JournalChoice::Memory => f.write_str("Memory"),
            // The URL may carry a password.
            JournalChoice::Postgres(url) => f
                .debug_tuple("Postgres")
                .field(&crate::redact::redact_url(url))
                .finish(),
            JournalChoice::Custom(_) => f.write_str("Custom(..)"),
        }
    }
}

/// How [`open`] opens a journal.
#[derive(Clone, Debug, Default)]
pub struct JournalOpenOptions {
    /// The key of the journal's seal and rows' MACs (see
    /// [`SqliteJournalOptions::journal_key`]); a client always has one.
    pub journal_key: Option<JournalKey>,
    /// The platform and key id of the operations the handle creates and
    /// lists; `None`: every scope.
    pub scope: Option<JournalScope>,
    /// Opens only a journal that exists, creating nothing (what a tool
    /// wants): a missing SQLite file (the default one included) answers
    /// `journal_error` saying it does not exist, a PostgreSQL database
    /// without the journal's tables is refused, and a memory journal (which
    /// lives only inside the process that made it) is `invalid_argument`
    /// (`journal`). Otherwise (a client) the default file's directories and
    /// a missing file or tables are created.
    pub existing_only: bool,
    /// Opens a SQLite file read-only ([`SqliteJournalOptions::read_only`]).
    pub read_only: bool,
}

/// A journal [`open`] opened.
#[derive(Clone)]
pub struct OpenedJournal {
    /// The journal.
    pub journal: Arc<dyn Journal>,
    /// What it is named by in messages: the file's path, the database's
    /// user, host and name (never a password), `:memory:` or `custom`.
    pub name: String,
    /// The same journal when it is PostgreSQL (outbox inserts carry MACs
    /// bound to it).
    pub postgres: Option<Arc<PostgresJournal>>,
}

impl std::fmt::Debug for OpenedJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenedJournal")
            .field("name", &crate::redact::redact_url(&self.name))
            .finish_non_exhaustive()
    }
}

/// Opens the journal `choice` names with `options`: the one way a
/// [`Client`](crate::Client) and the `payidem` command open their journal.
///
/// A client's PostgreSQL journal is opened with
/// [`PostgresJournal::connect_lazily`] (an unreachable server is no error),
/// a tool's ([`JournalOpenOptions::existing_only`]) with
/// [`PostgresJournal::connect`]. Errors are those of
/// [`SqliteJournal::open`] and [`PostgresJournal::connect`]; a SQLite file's errors name it through
/// [`redact_url`](crate::redact::redact_url) (a mistyped PostgreSQL URL is taken
/// for a file name). See [`JournalOpenOptions::existing_only`] for what a
/// tool is refused.
pub fn open(choice: &JournalChoice, options: JournalOpenOptions) -> Result<OpenedJournal> {
    let path = match choice {
        JournalChoice::Default => {
            let path = super::default_journal_path()?;
            if !options.existing_only {
                super::create_private_dirs(&path)?;
            }
            path
        }
        JournalChoice::Sqlite(path) => path.clone(),
        JournalChoice::Memory if options.existing_only => {
            return Err(Error::invalid(
                "journal",
                "a memory journal lives only inside its own process; name a journal file",
            ))
        }
        JournalChoice::Memory => return Ok(unshared(Arc::new(MemoryJournal::new()), ":memory:")),
        JournalChoice::Custom(journal) => return Ok(unshared(Arc::clone(journal), "custom")),
        JournalChoice::Postgres(url) => {
            let pg = PostgresJournalOptions {
                journal_key: options.journal_key,
                scope: options.scope,
                create: !options.existing_only,
                ..PostgresJournalOptions::default()
            };
            // A client starts while its server is unreachable (each call
            // answers journal_error until it is back); a tool needs it now.
            let journal = Arc::new(if options.existing_only {
                PostgresJournal::connect(url, pg)?
            } else {
                PostgresJournal::connect_lazily(url, pg)?
            });
            return Ok(OpenedJournal {
                name: journal.target().to_owned(),
                journal: Arc::clone(&journal) as Arc<dyn Journal>,
                postgres: Some(journal),
            });
        }
    };
    let name = path.display().to_string();
    if options.existing_only && !path.exists() {
        return Err(
            Error::new(ErrorCode::Journal, format!("journal {name} does not exist"))
                .with_location_redacted(&name),
        );
    }
    let sqlite = SqliteJournalOptions {
        journal_key: options.journal_key,
        scope: options.scope,
        read_only: options.read_only,
        ..SqliteJournalOptions::default()
    };
    let journal =
        SqliteJournal::open(&path, sqlite).map_err(|e| e.with_location_redacted(&name))?;
    Ok(unshared(Arc::new(journal), &name))
}

fn unshared(journal: Arc<dyn Journal>, name: &str) -> OpenedJournal {
    OpenedJournal {
        journal,
        name: name.to_owned(),
        postgres: None,
    }
}
