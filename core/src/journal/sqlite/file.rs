//! Opening the journal file: read-only (a copy, a read-only mount) and
//! the WAL file the group commit fsyncs.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Mutex;

use rusqlite::{Connection, OpenFlags};

use super::{
    batch, schema, Context, GroupCommit, SqliteJournal, SqliteJournalOptions, CHECKPOINT_PAGES,
};
use crate::error::Result;
use crate::journal::engine::Guard;
use crate::journal::{JournalScope, RowAuth};

/// Prepared statements a connection keeps.
const STATEMENT_CACHE: usize = 32;

impl SqliteJournal {
    /// [`SqliteJournal::open`] with [`SqliteJournalOptions::read_only`].
    /// A file without a `-wal` file beside it (closed by its last writer, a
    /// copy, a read-only mount), or whose `-shm` file cannot be created, is
    /// read as immutable: nothing is created beside it.
    pub(super) fn open_read_only(
        path: &Path,
        ctx: Context,
        options: SqliteJournalOptions,
    ) -> Result<SqliteJournal> {
        if !path.is_file() {
            return Err(ctx.refused("no journal file there (read-only: nothing is created)"));
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        // Without a WAL file nobody has the journal open for writing (the
        // last connection removes it): read it as immutable, which creates
        // no -wal or -shm file. Otherwise read it through the live WAL.
        let wal_exists = Path::new(&format!("{}-wal", path.display())).exists();
        // The first read opens the WAL index: it fails where the -shm file
        // cannot be created.
        let plain = if wal_exists {
            Connection::open_with_flags(path, flags).and_then(|db| schema::version(&db).map(|_| db))
        } else {
            Err(rusqlite::Error::InvalidQuery)
        };
        let db = match plain {
            Ok(db) => db,
            Err(_) => {
                let uri = format!("file:{}?immutable=1", uri_path(path));
                Connection::open_with_flags(&uri, flags | OpenFlags::SQLITE_OPEN_URI)
                    .map_err(|e| ctx.db("open the file read-only", e))?
            }
        };
        db.busy_timeout(options.busy_timeout)
            .map_err(|e| ctx.db("set the busy timeout", e))?;
        schema::check_readable(&db, &ctx)?;
        let found = schema::seal_record(&db).map_err(|e| ctx.db("read the seal", e))?;
        let auth = match (options.journal_key.as_ref(), found) {
            // Nothing to authenticate, and nothing may be written.
            (Some(_), None) => RowAuth::Keyless { sealed: false },
            (key, found) => {
                RowAuth::decide(key, found, true)
                    .map_err(|why| ctx.refused(why))?
                    .auth
            }
        };
        let wal =
            File::open(path).map_err(|e| ctx.refused(format!("cannot open the file: {e}")))?;
        Ok(SqliteJournal::opened(
            ctx,
            db,
            wal,
            None,
            auth,
            options.scope,
        ))
    }

    /// The handle of an opened file: `wal` is what the group commit
    /// fsyncs, `auth` how rows are authenticated.
    pub(super) fn opened(
        ctx: Context,
        db: Connection,
        wal: File,
        migrated_from: Option<u32>,
        auth: RowAuth,
        scope: Option<JournalScope>,
    ) -> SqliteJournal {
        let target = ctx.path.clone();
        // Room for every statement the journal prepares (16 by default):
        // none of the hot path's is evicted and parsed again.
        db.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        SqliteJournal {
            ctx,
            conn: Mutex::new(db),
            group: GroupCommit::new(wal),
            durable_leases: Mutex::new(HashMap::new()),
            pending: Mutex::new(batch::Pending::default()),
            hook: None,
            migrated_from,
            guard: Guard::new(auth, scope, target),
        }
    }
}

/// `path` as the path of a `file:` URI: `%`, `?`, `#` and every byte
/// beyond ASCII or below a space percent-encoded.
fn uri_path(path: &Path) -> String {
    let text = path.to_string_lossy();
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_graphic() && !matches!(b, b'%' | b'?' | b'#') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub(super) fn open_wal(db: &Connection, ctx: &Context) -> Result<File> {
    let Some(main) = db.path().filter(|p| !p.is_empty()) else {
        return Err(ctx.refused("the database has no file name"));
    };
    let wal_path = format!("{main}-wal");
    // Windows flushes (FlushFileBuffers) only a handle opened for writing.
    #[cfg(windows)]
    let wal = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&wal_path);
    #[cfg(not(windows))]
    let wal = File::open(&wal_path);
    let wal = wal.map_err(|e| {
        ctx.refused(format!(
            "cannot open the WAL file {wal_path} to fsync it: {e}"
        ))
    })?;
    if let Some(dir) = Path::new(&wal_path).parent() {
        // Some file systems refuse to fsync a directory; SQLite then does
        // without as well.
        if let Ok(dir) = File::open(dir) {
            let _ = dir.sync_all();
        }
    }
    Ok(wal)
}

/// Bytes of a WAL file before its first frame, and before each frame's page.
const WAL_HEADER: u64 = 32;
const FRAME_HEADER: u64 = 24;

/// Extends the WAL file with zeros, once, to the size it reaches when this
/// connection checkpoints (with an eighth more for the transaction that
/// crosses the threshold), so that appending frames changes no file
/// metadata: the group commit's `fdatasync` then writes data only, instead
/// of also committing the file system's journal for the new size and
/// blocks (the fsync floor's log is preallocated for the same reason).
/// SQLite reuses the file from its start after a checkpoint and keeps its
/// size, so this is the size it keeps anyway once it has wrapped.
///
/// SQLite ignores what lies past its last valid frame: a zero frame names
/// page 0 and carries no valid checksum, so recovery stops there, and a WAL
/// whose header is zeros counts as empty (its first writer writes a new
/// header). Only bytes past the file's end are written, under the WAL's
/// write lock (`BEGIN IMMEDIATE`), so no frame being appended by another
/// connection is overwritten. A file already that long is left as it is;
/// a failed write leaves zeros that SQLite ignores, and the WAL grows as
/// before.
pub(super) fn preallocate_wal(db: &Connection, ctx: &Context) -> Result<()> {
    let page_size: u64 = db
        .pragma_query_value(None, "page_size", |row| row.get(0))
        .map_err(|e| ctx.db("read the page size", e))?;
    let frames = (CHECKPOINT_PAGES + CHECKPOINT_PAGES / 8).unsigned_abs();
    let target = WAL_HEADER + frames * (FRAME_HEADER + page_size);
    let Some(main) = db.path().filter(|p| !p.is_empty()) else {
        return Err(ctx.refused("the database has no file name"));
    };
    db.execute_batch("BEGIN IMMEDIATE")
        .map_err(|e| ctx.db("lock the WAL to preallocate it", e))?;
    let extended = extend_with_zeros(Path::new(&format!("{main}-wal")), target);
    db.execute_batch("ROLLBACK")
        .map_err(|e| ctx.db("unlock the WAL", e))?;
    // Best effort: a WAL that could not be extended (a full disk) grows as
    // SQLite writes it, and is as durable.
    let _ = extended;
    Ok(())
}

/// Appends zeros to the file at `path` up to `target` bytes, then syncs it.
fn extend_with_zeros(path: &Path, target: u64) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new().write(true).open(path)?;
    let mut at = file.seek(SeekFrom::End(0))?;
    if at >= target {
        return Ok(());
    }
    let zeros = vec![0u8; 1 << 20];
    while at < target {
        let n = usize::try_from(target - at).map_or(zeros.len(), |left| left.min(zeros.len()));
        file.write_all(&zeros[..n])?;
        at += n as u64;
    }
    file.sync_data()
}
