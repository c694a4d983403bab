//! `payidem`: the operator's command for the payment journal, and a signer
//! and verifier for debugging an integration. Every command, exit code and
//! JSON shape is documented in docs/cli.md and kept stable.

mod args;
mod journal;
mod manual;
mod render;
mod rollback;
mod secret;
mod sign;
mod stats;

use std::io::Write;
use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use args::{Cli, Command, Shell};

/// The exit codes, stable (docs/cli.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// The command did what it was asked.
    Ok = 0,
    /// It could not: the journal, a file or the network failed.
    Failed = 1,
    /// Bad usage: a flag, an argument or an input file's content.
    Usage = 2,
    /// The order id is not journaled.
    NotFound = 3,
    /// `journal resume` left at least one operation unsettled.
    Unsettled = 4,
    /// `journal reconcile` refused: settled already, or another call holds it.
    Refused = 5,
    /// `verify`: the request fails verification.
    Invalid = 6,
    /// `journal check` found problems.
    Unsound = 7,
}

/// A command's failure: the exit code, the library's error code when there
/// is one, and a message that names the problem and never holds a secret.
#[derive(Debug)]
pub struct Failure {
    pub exit: Exit,
    pub code: Option<&'static str>,
    pub message: String,
}

impl Failure {
    /// A failure with no library error code.
    pub fn new(exit: Exit, message: impl Into<String>) -> Failure {
        Failure {
            exit,
            code: None,
            message: message.into(),
        }
    }

    /// A library error: bad input is usage, the rest failed.
    pub fn from_error(e: &payidem::Error) -> Failure {
        let exit = match e.code() {
            payidem::ErrorCode::InvalidArgument => Exit::Usage,
            _ => Exit::Failed,
        };
        Failure {
            exit,
            code: Some(e.code().as_str()),
            message: e.message().to_owned(),
        }
    }

    /// The same failure with another exit code.
    pub fn with_exit(mut self, exit: Exit) -> Failure {
        self.exit = exit;
        self
    }
}

impl From<payidem::Error> for Failure {
    fn from(e: payidem::Error) -> Failure {
        Failure::from_error(&e)
    }
}

/// What a command prints on stdout, then how it exits.
pub type Done = Result<Exit, Failure>;

/// Writes `text` to stdout; a closed pipe (e.g. `| head`) is not an error.
pub fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

/// Writes `value` as pretty JSON and a newline to stdout, every character
/// a terminal acts on escaped (see [`json_text`]).
pub fn out_json(value: &serde_json::Value) {
    let mut text =
        json_text(&serde_json::to_string_pretty(value).unwrap_or_else(|_| "null".into()));
    text.push('\n');
    out(&text);
}

/// Serialised JSON with every character
/// [`render::unsafe_for_terminal`] written as a `\uXXXX` escape: serde
/// escapes C0 controls but writes DEL, C1 controls, U+2028/2029 and bidi
/// controls as they are. They only occur inside strings, where the escape
/// is the same value: a JSON reader sees no difference, a terminal sees no
/// control character.
pub fn json_text(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if render::unsafe_for_terminal(c) && !matches!(c, '\n' | '\t' | '\r' | ' ') {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

fn run(cli: Cli) -> Done {
    let json = cli.json;
    match cli.command {
        Command::Journal(command) => journal::run(command, json),
        Command::Sign(a) => sign::sign(a, json),
        Command::Verify(a) => sign::verify(a, json),
        Command::Completions { shell } => {
            let shell = match shell {
                Shell::Bash => clap_complete::Shell::Bash,
                Shell::Zsh => clap_complete::Shell::Zsh,
                Shell::Fish => clap_complete::Shell::Fish,
            };
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "payidem", &mut buf);
            out(&String::from_utf8_lossy(&buf));
            Ok(Exit::Ok)
        }
        Command::Man { dir: None } => {
            let page = manual::render(Cli::command()).map_err(|e| {
                Failure::new(Exit::Failed, format!("cannot render the manual: {e}"))
            })?;
            out(&page);
            Ok(Exit::Ok)
        }
        Command::Man { dir: Some(dir) } => {
            let pages = manual::pages(Cli::command()).map_err(|e| {
                Failure::new(Exit::Failed, format!("cannot render the manual: {e}"))
            })?;
            for (name, page) in pages {
                let path = dir.join(name);
                std::fs::write(&path, page).map_err(|e| {
                    Failure::new(
                        Exit::Failed,
                        format!("cannot write {}: {e}", path.display()),
                    )
                })?;
            }
            Ok(Exit::Ok)
        }
    }
}

/// `message` with every location of `locations` that occurs in it
/// replaced by its [`payidem::redact_url`] form: a message that quotes the
/// journal setting (e.g. a mistyped PostgreSQL URL taken for a file that
/// does not exist) never shows its password.
fn redact_locations(message: &str, locations: &[String]) -> String {
    let mut message = message.to_owned();
    for location in locations.iter().filter(|l| !l.is_empty()) {
        let redacted = payidem::redact_url(location);
        if redacted != *location {
            message = message.replace(location.as_str(), &redacted);
        }
    }
    message
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let json = cli.json;
    let locations = cli.locations();
    let exit = match run(cli) {
        Ok(exit) => exit,
        Err(mut failure) => {
            failure.message = redact_locations(&failure.message, &locations);
            if json {
                let value = serde_json::json!({"error": {
                    "exit": failure.exit as u8,
                    "code": failure.code,
                    "message": failure.message,
                }});
                eprintln!("{}", json_text(&value.to_string()));
            } else {
                let message = render::field(&failure.message);
                match failure.code {
                    Some(code) => eprintln!("payidem: {code}: {message}"),
                    None => eprintln!("payidem: {message}"),
                }
            }
            failure.exit
        }
    };
    ExitCode::from(exit as u8)
}
