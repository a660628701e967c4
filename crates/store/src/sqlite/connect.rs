//! Opening connections to the database file: the writer (which migrates), a small pool of
//! readers, and the read-only fallback for a file or folder this process may only read.

use super::chain::register_functions;
use crate::{Result, StoreError};
use rusqlite::{Connection, ErrorCode, OpenFlags};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long a connection waits for another process's write to finish before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Readers kept open at most: finds run in parallel up to this many (WAL readers never block
/// each other or the writer).
pub const READERS: u32 = 4;

/// Opens a connection that may write, in WAL mode.
pub fn writer(path: &Path) -> Result<Connection> {
    let conn = Connection::open(path).map_err(|e| open_error(path, e))?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    register_functions(&conn)?;
    if conn.is_readonly(rusqlite::MAIN_DB)? {
        return Err(StoreError::ReadOnly { path: path.display().to_string() });
    }
    enter_wal(&conn, path)?;
    conn.execute_batch(
        "PRAGMA synchronous = NORMAL;
         PRAGMA foreign_keys = ON;
         PRAGMA temp_store = MEMORY;
         PRAGMA cache_size = -32000;",
    )
    .map_err(|e| read_only_or(path, e))?;
    Ok(conn)
}

/// Switches to WAL unless the file is in it already. Changing the journal mode needs the
/// database to itself, and SQLite answers "database is locked" at once (no busy handler) when
/// another process is opening the same new file: retried until [`BUSY_TIMEOUT`].
fn enter_wal(conn: &Connection, path: &Path) -> Result<()> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        let attempt =
            conn.query_row("PRAGMA journal_mode", [], |r| r.get::<_, String>(0)).and_then(|mode| match mode
                .eq_ignore_ascii_case("wal")
            {
                true => Ok(mode),
                false => conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)),
            });
        match attempt {
            Ok(mode) if mode.eq_ignore_ascii_case("wal") => return Ok(()),
            Ok(mode) => {
                return Err(StoreError::Open {
                    path: path.display().to_string(),
                    reason: format!("SQLite kept journal mode {mode} instead of WAL"),
                });
            }
            Err(e) if is_busy(&e) && started.elapsed() < BUSY_TIMEOUT => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(e) => return Err(read_only_or(path, e)),
        }
    }
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked))
}

/// True for the errors that mean "this process may not write here": the file or its folder
/// (where WAL keeps its `-wal` and `-shm` files) is read-only to it.
pub fn is_read_only(e: &StoreError) -> bool {
    match e {
        StoreError::ReadOnly { .. } => true,
        StoreError::Sqlite(e) => matches!(
            e.sqlite_error_code(),
            Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen | ErrorCode::PermissionDenied)
        ),
        _ => false,
    }
}

fn read_only_or(path: &Path, e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen | ErrorCode::PermissionDenied) => {
            StoreError::ReadOnly { path: path.display().to_string() }
        }
        _ => StoreError::Sqlite(e),
    }
}

fn open_error(path: &Path, e: rusqlite::Error) -> StoreError {
    StoreError::Open { path: path.display().to_string(), reason: e.to_string() }
}

/// How the readers open the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadMode {
    /// Beside a writer of this process: the usual shared-memory WAL reader.
    Shared,
    /// The process may not write the file or its folder: a read-only connection, or, when
    /// WAL's `-shm` file is absent and cannot be created, an immutable one (no other process
    /// can be writing then, since a writer keeps `-shm` in place).
    ReadOnly { immutable: bool },
}

/// Opens one reader.
pub fn reader(path: &Path, mode: ReadMode) -> Result<Connection> {
    let flags =
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    let conn = match mode {
        ReadMode::ReadOnly { immutable: true } => {
            Connection::open_with_flags(format!("file:{}?immutable=1", uri_path(path)), flags)
        }
        _ => Connection::open_with_flags(path, flags),
    }
    .map_err(|e| open_error(path, e))?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.execute_batch("PRAGMA temp_store = MEMORY; PRAGMA cache_size = -16000;")?;
    Ok(conn)
}

/// A path as the path part of a `file:` URI (`?` and `#` would end it; `%` starts an escape).
fn uri_path(path: &Path) -> String {
    let text = path.display().to_string();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '%' => out.push_str("%25"),
            '?' => out.push_str("%3f"),
            '#' => out.push_str("%23"),
            c => out.push(c),
        }
    }
    out
}

/// The read mode that works for a file this process cannot write: an ordinary read-only
/// connection when it can read (WAL's files are there or can be made), else immutable.
pub fn read_only_mode(path: &Path) -> Result<ReadMode> {
    if !path.exists() {
        return Err(StoreError::Open {
            path: path.display().to_string(),
            reason: "the file does not exist and its folder is not writable".into(),
        });
    }
    let plain = ReadMode::ReadOnly { immutable: false };
    let works = reader(path, plain)
        .and_then(|c| Ok(c.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get::<_, i64>(0))?));
    Ok(match works {
        Ok(_) => plain,
        Err(_) => ReadMode::ReadOnly { immutable: true },
    })
}

/// A few readers, opened as needed, so finds get a connection each and run in parallel.
/// Hand-rolled rather than r2d2: every connection is owned here and closes when the pool is
/// dropped, before the writer, which as the last connection folds the WAL into the file.
pub struct ReaderPool {
    path: PathBuf,
    mode: ReadMode,
    idle: Mutex<Idle>,
    returned: Condvar,
}

struct Idle {
    connections: Vec<Connection>,
    /// Connections open, idle or lent.
    open: u32,
}

impl ReaderPool {
    pub fn new(path: &Path, mode: ReadMode) -> Result<ReaderPool> {
        let first = reader(path, mode)?;
        Ok(ReaderPool {
            path: path.to_path_buf(),
            mode,
            idle: Mutex::new(Idle { connections: vec![first], open: 1 }),
            returned: Condvar::new(),
        })
    }

    /// An idle reader, a new one while fewer than [`READERS`] are open, or the next returned.
    pub fn get(&self) -> Result<Reader<'_>> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(conn) = idle.connections.pop() {
                return Ok(Reader { pool: self, conn: Some(conn) });
            }
            if idle.open < READERS {
                idle.open += 1;
                drop(idle);
                return match reader(&self.path, self.mode) {
                    Ok(conn) => Ok(Reader { pool: self, conn: Some(conn) }),
                    Err(e) => {
                        self.idle.lock().unwrap_or_else(|e| e.into_inner()).open -= 1;
                        Err(e)
                    }
                };
            }
            idle = self.returned.wait(idle).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// A reader lent by the pool; returned when dropped.
pub struct Reader<'a> {
    pool: &'a ReaderPool,
    conn: Option<Connection>,
}

impl std::ops::Deref for Reader<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn.as_ref().expect("a lent reader holds its connection until dropped")
    }
}

impl Drop for Reader<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.pool.idle.lock().unwrap_or_else(|e| e.into_inner()).connections.push(conn);
            self.pool.returned.notify_one();
        }
    }
}
