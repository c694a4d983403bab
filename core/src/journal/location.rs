//! Where a client keeps its journal when the caller names none, and the
//! name every language uses to ask for a memory-only journal.

#[cfg(not(windows))]
use std::ffi::OsString;
#[cfg(unix)]
use std::fs::{DirBuilder, OpenOptions};
#[cfg(unix)]
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::Result;
#[cfg(not(windows))]
use crate::error::{Error, ErrorCode};

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub(crate) use windows::{
    check_private_location, create_private_dirs, create_private_file, exposure_problem,
};

/// The journal name that selects memory only, in every language: operations
/// are lost with the process, so a crash mid-payment cannot be resumed. For
/// tests, never for production.
pub const MEMORY_JOURNAL: &str = ":memory:";

/// The file name of the default journal inside its directory.
const DEFAULT_FILE: &str = "journal.sqlite3";

/// The durable default journal of this user: `$XDG_STATE_HOME/payidem/
/// journal.sqlite3` when `XDG_STATE_HOME` is an absolute path, otherwise
/// `$HOME/.local/state/payidem/journal.sqlite3`.
///
/// `journal_error` when neither variable gives an absolute path (a service
/// without a home directory must name its journal).
///
/// On Windows: `%LOCALAPPDATA%\payidem\journal.sqlite3`, and
/// `journal_error` when `LOCALAPPDATA` is not an absolute path.
pub fn default_journal_path() -> Result<PathBuf> {
    #[cfg(windows)]
    return windows::default_path_from(std::env::var_os("LOCALAPPDATA"));
    #[cfg(not(windows))]
    default_path_from(std::env::var_os("XDG_STATE_HOME"), std::env::var_os("HOME"))
}

#[cfg(not(windows))]
fn default_path_from(state_home: Option<OsString>, home: Option<OsString>) -> Result<PathBuf> {
    let absolute = |v: Option<OsString>| v.map(PathBuf::from).filter(|p| p.is_absolute());
    let dir = match (absolute(state_home), absolute(home)) {
        (Some(state), _) => state.join("payidem"),
        (None, Some(home)) => home.join(".local").join("state").join("payidem"),
        (None, None) => {
            return Err(Error::new(
                ErrorCode::Journal,
                "no default journal location: neither XDG_STATE_HOME nor HOME is an absolute \
                 path; name a journal file",
            ))
        }
    };
    Ok(dir.join(DEFAULT_FILE))
}

/// Creates the missing directories of `path`'s parent, each readable by its
/// owner only (0700). Existing directories are left as they are.
#[cfg(unix)]
pub(crate) fn create_private_dirs(path: &Path) -> Result<()> {
    let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) else {
        return Ok(());
    };
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| {
            Error::new(
                ErrorCode::Journal,
                format!(
                    "journal {}: cannot create its directory: {e}",
                    path.display()
                ),
            )
        })
}

/// Creates `path` empty with mode 0600 when it does not exist, so that the
/// journal (and the WAL files SQLite gives the same mode) is never readable
/// by other users. An existing file is left untouched.
#[cfg(unix)]
pub(crate) fn create_private_file(path: &Path) {
    // SQLite's own names for databases that are no file.
    if path.as_os_str().is_empty() || path == Path::new(MEMORY_JOURNAL) {
        return;
    }
    // An existing file, a missing directory or a refusal is left for SQLite
    // to open or to report in its own words.
    let _ = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path);
}

/// The directory a journal file lives in (`.` for a bare file name).
fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Refuses a journal location other users could tamper with: a directory
/// that every user may write to (sticky or not, e.g. `/tmp`: another user
/// could create the file, its `-wal` or `-shm` first, or replace them), or
/// an existing file every user may write to. Group-writable directories
/// are accepted (the group is trusted like the owner). Returns why, naming
/// the directory or file and the fix; a location that cannot be examined
/// is left for SQLite to open or report.
#[cfg(unix)]
pub(crate) fn check_private_location(path: &Path) -> std::result::Result<(), String> {
    if path.as_os_str().is_empty() || path == Path::new(MEMORY_JOURNAL) {
        return Ok(());
    }
    let dir = directory_of(path);
    if let Ok(meta) = std::fs::metadata(dir) {
        let mode = meta.mode() & 0o7777;
        if mode & 0o002 != 0 {
            return Err(format!(
                "refused: its directory {} is writable by every user (mode {mode:04o}), so \
                 another user could replace or plant the journal's files; keep the journal in a \
                 directory only its owner (and group) can write, e.g. one made with mkdir -m 700",
                dir.display()
            ));
        }
    }
    if let Ok(meta) = std::fs::metadata(path) {
        let mode = meta.mode() & 0o7777;
        if meta.is_file() && mode & 0o002 != 0 {
            return Err(format!(
                "refused: the file is writable by every user (mode {mode:04o}); chmod 600 it"
            ));
        }
    }
    Ok(())
}

/// The problem [`Journal::check`](super::Journal::check) reports for a
/// journal file other users can read (its bodies and keys are then theirs
/// to see), if it is one.
#[cfg(unix)]
pub(crate) fn exposure_problem(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    let mode = meta.mode() & 0o7777;
    (meta.is_file() && mode & 0o004 != 0).then(|| {
        format!(
            "the journal file {} is readable by every user (mode {mode:04o}); it holds request \
             and response bodies: chmod 600 it",
            path.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(not(windows))]
    #[test]
    fn default_prefers_an_absolute_xdg_state_home() {
        let p = default_path_from(Some("/var/state".into()), Some("/home/u".into())).unwrap();
        assert_eq!(p, PathBuf::from("/var/state/payidem/journal.sqlite3"));
    }

    #[cfg(not(windows))]
    #[test]
    fn default_falls_back_to_home_when_xdg_is_missing_or_relative() {
        for xdg in [None, Some(OsString::from("relative/dir")), Some("".into())] {
            let p = default_path_from(xdg, Some("/home/u".into())).unwrap();
            assert_eq!(
                p,
                PathBuf::from("/home/u/.local/state/payidem/journal.sqlite3")
            );
        }
    }

    #[test]
    fn sqlite_names_that_are_no_file_are_not_created() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = std::env::current_dir().unwrap();
        for name in [MEMORY_JOURNAL, ""] {
            create_private_file(Path::new(name));
            assert!(!cwd.join(name).is_file(), "{name:?} was created");
        }
        let real = dir.path().join("j.sqlite3");
        create_private_file(&real);
        assert!(real.is_file());
    }

    #[cfg(unix)]
    #[test]
    fn world_writable_directories_and_files_are_refused_group_writable_ones_are_not() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("j.sqlite3");
        assert!(check_private_location(&file).is_ok());
        for (mode, refused) in [
            (0o1777, true),
            (0o777, true),
            (0o770, false),
            (0o755, false),
        ] {
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(mode)).unwrap();
            let got = check_private_location(&file);
            assert_eq!(got.is_err(), refused, "mode {mode:o}: {got:?}");
            if let Err(why) = got {
                assert!(why.contains(&dir.path().display().to_string()), "{why}");
                assert!(why.contains("writable by every user"), "{why}");
            }
        }
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::write(&file, b"").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(check_private_location(&file)
            .unwrap_err()
            .contains("chmod 600"));
        assert!(exposure_problem(&file).is_some());
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(check_private_location(&file).is_ok());
        assert!(exposure_problem(&file).is_none());
        assert!(check_private_location(Path::new(MEMORY_JOURNAL)).is_ok());
    }

    #[cfg(not(windows))]
    #[test]
    fn no_absolute_location_is_a_journal_error_not_the_working_directory() {
        let e = default_path_from(None, Some("home".into())).unwrap_err();
        assert_eq!(e.code(), ErrorCode::Journal);
        assert!(e.message().contains("XDG_STATE_HOME"), "{}", e.message());
        assert!(default_path_from(None, None).is_err());
    }
}
