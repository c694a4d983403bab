//! The API secret and the key id: from a file or the environment, never
//! from the command line, and never printed.

use std::path::Path;

use zeroize::Zeroizing;

use crate::args::{KeyArgs, ENV_KEY_ID, ENV_SECRET};
use crate::{Exit, Failure};

/// Secret bytes, wiped when dropped.
pub type Secret = Zeroizing<Vec<u8>>;

/// The key id: `--key-id` or `$PAYIDEM_KEY_ID` (clap reads both).
pub fn key_id(args: &KeyArgs) -> Result<String, Failure> {
    match args.key_id.as_deref() {
        Some(k) if !k.is_empty() => Ok(k.to_owned()),
        _ => Err(Failure::new(
            Exit::Usage,
            format!("no key id: pass --key-id or set {ENV_KEY_ID}"),
        )),
    }
}

/// The secret: the file of `--secret-file` (one trailing newline, `\n` or
/// `\r\n`, is dropped), else `$PAYIDEM_SECRET`. Errors name the file or the
/// variable, never the content.
pub fn secret(args: &KeyArgs) -> Result<Secret, Failure> {
    let mut bytes = Zeroizing::new(match &args.secret_file {
        Some(path) => read_secret_file(path)?,
        None => match std::env::var_os(ENV_SECRET) {
            Some(v) if !v.is_empty() => v.into_encoded_bytes(),
            _ => {
                return Err(Failure::new(
                    Exit::Usage,
                    format!(
                        "no secret: pass --secret-file PATH or set {ENV_SECRET} (a secret is \
                         never taken from the command line)"
                    ),
                ))
            }
        },
    });
    if bytes.ends_with(b"\n") {
        bytes.pop();
        if bytes.ends_with(b"\r") {
            bytes.pop();
        }
    }
    Ok(bytes)
}

fn read_secret_file(path: &Path) -> Result<Vec<u8>, Failure> {
    std::fs::read(path).map_err(|e| {
        Failure::new(
            Exit::Failed,
            format!("cannot read the secret file {}: {e}", path.display()),
        )
    })
}

/// A whole input file (a body, captured headers); errors name the file and
/// the flag.
pub fn read_input(flag: &str, path: &Path) -> Result<Vec<u8>, Failure> {
    std::fs::read(path).map_err(|e| {
        Failure::new(
            Exit::Failed,
            format!("cannot read {flag} {}: {e}", path.display()),
        )
    })
}
