//! The command line: every command, flag and environment variable.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// The environment variable naming the journal (`--journal`).
pub const ENV_JOURNAL: &str = "PAYIDEM_JOURNAL";
/// The environment variable holding the API secret (instead of `--secret-file`).
pub const ENV_SECRET: &str = "PAYIDEM_SECRET";
/// The environment variable naming the platform's base URL (`--base-url`).
pub const ENV_BASE_URL: &str = "PAYIDEM_BASE_URL";
/// The environment variable naming the key id (`--key-id`).
pub const ENV_KEY_ID: &str = "PAYIDEM_KEY_ID";

/// Look after the payment journal, and sign or verify requests.
///
/// Exit codes: 0 done; 1 failed (journal, file or network problem);
/// 2 bad usage; 3 no such order id; 4 operations left unsettled (resume);
/// 5 refused (reconcile of a settled or busy operation); 6 the request fails
/// verification; 7 the journal check found problems. The guide is cli.md:
/// /usr/share/doc/payidem-cli/docs/cli.md from the Debian package,
/// docs/cli.md in the release tarball.
#[derive(Debug, Parser)]
#[command(name = "payidem", version, propagate_version = true)]
pub struct Cli {
    /// Print machine-readable JSON on stdout (errors as JSON on stderr).
    #[arg(long, global = true)]
    pub json: bool,

    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// Every location this command line names that may carry a password
    /// (the journal, from `--journal` or `$PAYIDEM_JOURNAL`, and the base
    /// URL), as given: error messages show them redacted.
    pub fn locations(&self) -> Vec<String> {
        let Command::Journal(command) = &self.command else {
            return Vec::new();
        };
        let (journal, base_url) = match command {
            JournalCommand::List { journal, .. }
            | JournalCommand::Show { journal, .. }
            | JournalCommand::Reconcile { journal, .. }
            | JournalCommand::Purge { journal, .. }
            | JournalCommand::Stats { journal, .. }
            | JournalCommand::Export { journal }
            | JournalCommand::Check { journal, .. } => (journal, None),
            JournalCommand::Resume(args) => (&args.journal, args.platform.base_url.as_ref()),
            JournalCommand::Key { .. } => return Vec::new(),
        };
        journal.journal.iter().chain(base_url).cloned().collect()
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Inspect and repair the journal of operations.
    #[command(subcommand)]
    Journal(JournalCommand),
    /// Print the signed headers (or a curl command) for one request.
    Sign(SignArgs),
    /// Check a captured request (headers and body) and name the rule it fails.
    Verify(VerifyArgs),
    /// Print a shell completion script.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Print the manual page payidem(1) (roff).
    Man {
        /// Instead, write every manual page into this directory: payidem.1
        /// and one page per command (payidem-journal.1,
        /// payidem-journal-list.1, ...).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// Shells with completion scripts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// Where the journal is.
#[derive(Debug, Args)]
pub struct JournalArg {
    /// The journal: a SQLite file, or a PostgreSQL URL (postgres://… or
    /// postgresql://…, libpq's parameters and sslmode/sslrootcert; a
    /// database without a journal is refused, never set up). Default: the
    /// library's default journal, $XDG_STATE_HOME/payidem/journal.sqlite3 or
    /// $HOME/.local/state/payidem/journal.sqlite3.
    #[arg(long, env = ENV_JOURNAL, hide_env_values = true, value_name = "PATH|URL")]
    pub journal: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum JournalCommand {
    /// List operations, oldest first.
    List {
        #[command(flatten)]
        journal: JournalArg,
        /// Only operations in these states (repeat or comma-separate; default every state).
        #[arg(long, value_enum, value_delimiter = ',')]
        state: Vec<StateArg>,
        /// Only operations created longer ago than this (e.g. 90s, 30m, 2h, 7d).
        #[arg(long, value_name = "AGE", value_parser = parse_age)]
        older_than: Option<u64>,
    },
    /// Show one operation: state, key, attempts, times, request, reconciliations.
    Show {
        #[command(flatten)]
        journal: JournalArg,
        /// The operation's order id.
        order_id: String,
        /// Also print the frozen request body (it may hold personal data).
        #[arg(long)]
        body: bool,
    },
    /// Drive unknown operations to their end with their own key and body.
    Resume(ResumeArgs),
    /// Close an unsettled operation after checking its outcome on the platform.
    Reconcile {
        #[command(flatten)]
        journal: JournalArg,
        /// The operation's order id.
        order_id: String,
        /// What the platform says happened.
        #[arg(long = "as", value_enum, value_name = "OUTCOME")]
        outcome: Outcome,
        /// The platform's reference or ticket that proves it (recorded).
        #[arg(long, value_name = "TEXT")]
        reference: String,
        /// Who checked (default: $USER, else the user id).
        #[arg(long, value_name = "NAME")]
        by: Option<String>,
        /// A file holding the API secret (else $PAYIDEM_SECRET): a sealed
        /// journal's operations change only with the journal key.
        #[arg(long, value_name = "PATH")]
        secret_file: Option<PathBuf>,
        #[command(flatten)]
        key: JournalKeyArg,
    },
    /// Delete settled operations last changed longer ago than AGE.
    Purge {
        #[command(flatten)]
        journal: JournalArg,
        /// e.g. 7d; operations that are not settled are never deleted.
        #[arg(long, value_name = "AGE", value_parser = parse_age)]
        settled_older_than: u64,
        /// A file holding the API secret (else $PAYIDEM_SECRET): purging a
        /// sealed journal moves its purge horizon, under the journal key.
        #[arg(long, value_name = "PATH")]
        secret_file: Option<PathBuf>,
        #[command(flatten)]
        key: JournalKeyArg,
    },
    /// Print the journal key derived from an API secret, in hex: what to
    /// give clients as their journal key (or `--journal-key-file`) to keep
    /// reading a journal after the secret was rotated. A secret itself:
    /// never log it.
    Key {
        /// A file holding the API secret (else $PAYIDEM_SECRET).
        #[arg(long, value_name = "PATH")]
        secret_file: Option<PathBuf>,
    },
    /// Counts by state, key-expired operations and the oldest unknown
    /// operation's age (text, --json, or --prometheus for node_exporter's
    /// textfile collector).
    Stats {
        #[command(flatten)]
        journal: JournalArg,
        /// Print Prometheus text (exposition format 0.0.4) instead.
        #[arg(long, conflicts_with = "json")]
        prometheus: bool,
    },
    /// Every operation and reconciliation as JSON, bodies base64 (for audits).
    Export {
        #[command(flatten)]
        journal: JournalArg,
    },
    /// Check the journal: store integrity, schema version, every row (and,
    /// with the secret, every row's integrity MAC), the stored clock offsets.
    Check {
        #[command(flatten)]
        journal: JournalArg,
        /// A file holding the API secret the journal's rows are keyed from
        /// (one trailing newline is ignored; else $PAYIDEM_SECRET). With
        /// it every row's integrity MAC is verified; without it, not.
        #[arg(long, value_name = "PATH")]
        secret_file: Option<PathBuf>,
        #[command(flatten)]
        key: JournalKeyArg,
        /// An export taken earlier (`payidem journal export`): operations
        /// gone or back to an earlier state since then are problems (a
        /// journal restored from an older copy).
        #[arg(long, value_name = "EXPORT")]
        against: Option<PathBuf>,
    },
}

/// The journal key, when the clients were given one of their own.
#[derive(Debug, Args)]
pub struct JournalKeyArg {
    /// A file holding the journal key in hex, as the clients were given it
    /// (journal_key, journal_key_hex, JournalKey; one trailing newline is
    /// ignored). Rows are then verified with it instead of the key derived
    /// from the secret.
    #[arg(long, value_name = "PATH")]
    pub journal_key_file: Option<PathBuf>,
}

/// `journal resume`.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    #[command(flatten)]
    pub journal: JournalArg,
    /// The operation's order id.
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub order_id: Option<String>,
    /// Every operation whose outcome is unknown (in flight or unknown).
    #[arg(long)]
    pub all: bool,
    /// Only say what would be resumed; sends nothing, needs no secret.
    #[arg(long)]
    pub dry_run: bool,
    /// Give each operation at most this long (e.g. 30s, 2m; default the
    /// library's retry deadline).
    #[arg(long, value_name = "AGE", value_parser = parse_age)]
    pub deadline: Option<u64>,
    #[command(flatten)]
    pub platform: PlatformArgs,
    #[command(flatten)]
    pub key: JournalKeyArg,
}

/// How to reach the platform.
#[derive(Debug, Args)]
pub struct PlatformArgs {
    /// The platform's base URL, e.g. https://api.example.com.
    #[arg(long, env = ENV_BASE_URL, hide_env_values = true, value_name = "URL")]
    pub base_url: Option<String>,
    #[command(flatten)]
    pub key: KeyArgs,
}

/// A key id and where its secret is (never on the command line).
#[derive(Debug, Args)]
pub struct KeyArgs {
    /// The key id sent in X-Api-Key.
    #[arg(long, env = ENV_KEY_ID, hide_env_values = true, value_name = "KEY_ID")]
    pub key_id: Option<String>,
    /// A file holding the API secret (one trailing newline is ignored).
    /// Without it the secret comes from $PAYIDEM_SECRET; it is never taken
    /// from the command line.
    #[arg(long, value_name = "PATH")]
    pub secret_file: Option<PathBuf>,
}

/// `sign`.
#[derive(Debug, Args)]
pub struct SignArgs {
    /// The HTTP method.
    #[arg(long)]
    pub method: String,
    /// The request target as sent (path and query).
    #[arg(long)]
    pub path: String,
    /// A file holding the exact body (default: empty).
    #[arg(long, value_name = "PATH")]
    pub body_file: Option<PathBuf>,
    /// The Idempotency-Key (required for POST).
    #[arg(long, value_name = "KEY")]
    pub idempotency_key: Option<String>,
    /// Sign at this Unix time instead of now.
    #[arg(long, value_name = "UNIX_SECONDS")]
    pub timestamp: Option<u64>,
    /// Print a curl command sending the request to BASE_URL + path.
    #[arg(long, value_name = "BASE_URL")]
    pub curl: Option<String>,
    #[command(flatten)]
    pub key: KeyArgs,
}

/// `verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The captured headers, one `Name: value` a line (a request line and
    /// blank lines are skipped).
    #[arg(long, value_name = "PATH")]
    pub headers_file: PathBuf,
    /// The captured body (default: empty).
    #[arg(long, value_name = "PATH")]
    pub body_file: Option<PathBuf>,
    /// The HTTP method received.
    #[arg(long)]
    pub method: String,
    /// The request target received (path and query).
    #[arg(long)]
    pub path: String,
    /// Check as of this Unix time (e.g. when it was captured) instead of now.
    #[arg(long, value_name = "UNIX_SECONDS")]
    pub at: Option<u64>,
    #[command(flatten)]
    pub key: KeyArgs,
}

/// Operation states, as the journal names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StateArg {
    Pending,
    #[value(name = "in_flight")]
    InFlight,
    Unknown,
    Succeeded,
    Rejected,
    Conflict,
}

impl StateArg {
    /// The library's state.
    pub fn state(self) -> payidem::operation::OperationState {
        use payidem::operation::OperationState as S;
        match self {
            StateArg::Pending => S::Pending,
            StateArg::InFlight => S::InFlight,
            StateArg::Unknown => S::Unknown,
            StateArg::Succeeded => S::Succeeded,
            StateArg::Rejected => S::Rejected,
            StateArg::Conflict => S::Conflict,
        }
    }
}

/// What a reconciliation closes an operation as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Outcome {
    Succeeded,
    Rejected,
}

/// An age such as `90s`, `30m`, `2h`, `7d` or `1w`, in seconds.
pub fn parse_age(text: &str) -> Result<u64, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let value: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not an age such as 90s, 30m, 2h, 7d or 1w"))?;
    let unit_secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 604_800,
        _ => {
            return Err(format!(
                "{text:?} has no unit: write s, m, h, d or w (e.g. 2h)"
            ))
        }
    };
    value
        .checked_mul(unit_secs)
        .ok_or_else(|| format!("{text:?} is too long"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn ages_parse_with_units_only() {
        assert_eq!(parse_age("90s"), Ok(90));
        assert_eq!(parse_age("2h"), Ok(7200));
        assert_eq!(parse_age("7d"), Ok(604_800));
        assert_eq!(parse_age("1w"), Ok(604_800));
        for bad in [
            "",
            "7",
            "d",
            "-1h",
            "1.5h",
            "2 h",
            "3y",
            "99999999999999999999w",
        ] {
            assert!(parse_age(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }
}
