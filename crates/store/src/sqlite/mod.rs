//! The embedded default: one SQLite file in WAL mode, FTS5 BM25 for lexical search.
//!
//! Two connections: writes go through one (serialized, `BEGIN IMMEDIATE`), reads through the
//! other, so a find never waits on a write in this process. Several processes may open the
//! same file: WAL plus a busy timeout make their writers take turns, and every dedupe check
//! runs inside the writer's transaction.

mod fts;
mod graph;
mod migrate;
mod read;
mod row;
mod write;

use crate::{
    AuditQuery, AuditRecord, AuditTrail, Candidate, ExportedItem, GraphLinks, ItemReads, ItemVectors,
    ItemWrites, LexicalMatch, LexicalQuery, LexicalSearch, Link, Maintenance, Metadata, Result, Stats,
    StoreError, StoredItem, VectorRow, VectorSource, WriteContext, WriteOp, WriteOutcome,
};
use cortex_domain::graph::Cascade;
use cortex_domain::query::ParsedQuery;
use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;
use uuid::Uuid;

pub use migrate::MIGRATIONS;

/// How long a writer waits for another process's write to finish before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

pub struct SqliteStore {
    path: PathBuf,
    writer: Mutex<Connection>,
    reader: Mutex<Connection>,
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    pub fn open(path: &Path) -> Result<SqliteStore> {
        if let Some(dir) = path.parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::Open {
                path: path.display().to_string(),
                reason: format!("cannot create folder {}: {e}", dir.display()),
            })?;
        }
        let mut writer = connect(path)?;
        migrate::run(&mut writer)?;
        let reader = connect(path)?;
        Ok(SqliteStore { path: path.to_path_buf(), writer: Mutex::new(writer), reader: Mutex::new(reader) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn reader(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A poisoned lock only means another thread panicked mid-read; the connection is fine.
        self.reader.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn connect(path: &Path) -> Result<Connection> {
    let conn = Connection::open(path)
        .map_err(|e| StoreError::Open { path: path.display().to_string(), reason: e.to_string() })?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.execute_batch(
        "PRAGMA journal_mode = WAL;
         PRAGMA synchronous = NORMAL;
         PRAGMA foreign_keys = ON;
         PRAGMA temp_store = MEMORY;
         PRAGMA cache_size = -32000;",
    )?;
    Ok(conn)
}

impl ItemWrites for SqliteStore {
    fn write_batch_as(&self, ops: &[WriteOp], context: &WriteContext) -> Result<Vec<WriteOutcome>> {
        let mut conn = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        write::apply_batch(&mut conn, ops, context)
    }
}

impl ItemReads for SqliteStore {
    fn get(&self, ids: &[Uuid]) -> Result<Vec<StoredItem>> {
        read::get(&self.reader(), ids)
    }

    fn natural_key_owner(&self, scope: &cortex_domain::Scope, key: &str) -> Result<Option<Uuid>> {
        read::natural_key_owner(&self.reader(), scope, key)
    }

    fn idempotency_owner(&self, scope: &cortex_domain::Scope, key: &str) -> Result<Option<Uuid>> {
        read::idempotency_owner(&self.reader(), scope, key)
    }
}

impl LexicalSearch for SqliteStore {
    fn search_lexical(&self, query: &LexicalQuery) -> Result<Vec<LexicalMatch>> {
        read::search(&self.reader(), query)
    }

    fn fetch_matches(&self, query: &ParsedQuery, ids: &[Uuid]) -> Result<Vec<Candidate>> {
        read::fetch_matches(&self.reader(), query, ids)
    }

    fn count_lexical(&self, query: &LexicalQuery, cap: usize) -> Result<usize> {
        read::count(&self.reader(), query, cap)
    }

    fn knows_word(&self, word: &str) -> Result<bool> {
        read::knows_word(&self.reader(), word)
    }

    fn words_like(&self, word: &str) -> Result<Vec<(String, i64)>> {
        read::words_like(&self.reader(), word)
    }

    fn surface_word(&self, term: &str) -> Result<String> {
        read::surface_word(&self.reader(), term)
    }

    fn top_terms(&self, limit: usize) -> Result<Vec<(String, i64)>> {
        read::top_terms(&self.reader(), limit)
    }
}

impl VectorSource for SqliteStore {
    fn vectors_changed_since(&self, since: i64) -> Result<Vec<VectorRow>> {
        read::vectors_changed_since(&self.reader(), since)
    }

    fn change_counter(&self) -> Result<i64> {
        // data_version moves when another connection commits; total_changes covers this
        // connection's own writes (which go through `writer`, itself "another" connection).
        Ok(self.reader().query_row("PRAGMA data_version", [], |r| r.get(0))?)
    }

    fn vectors_of(&self, ids: &[Uuid]) -> Result<Vec<ItemVectors>> {
        read::vectors_of(&self.reader(), ids)
    }

    fn set_vectors(&self, vectors: &[ItemVectors]) -> Result<()> {
        let mut conn = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        write::set_vectors(&mut conn, vectors)
    }
}

impl GraphLinks for SqliteStore {
    fn links(&self, ids: &[Uuid]) -> Result<Vec<Link>> {
        graph::links(&self.reader(), ids)
    }

    fn incoming_links(&self, ids: &[Uuid], now: i64) -> Result<Vec<(Uuid, i64)>> {
        graph::incoming_links(&self.reader(), ids, now)
    }
}

impl AuditTrail for SqliteStore {
    fn audit(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>> {
        read::audit(&self.reader(), query)
    }
}

impl Maintenance for SqliteStore {
    fn purge_expired(
        &self,
        now: i64,
        limit: usize,
        dry_run: bool,
        cascade: Cascade,
    ) -> Result<Vec<(String, i64)>> {
        if dry_run {
            return read::expired_by_kind(&self.reader(), now);
        }
        let mut conn = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        write::purge_expired(&mut conn, now, limit, cascade)
    }

    fn stats(&self) -> Result<Stats> {
        read::stats(&self.reader())
    }

    fn export_page(&self, after: Option<Uuid>, limit: usize) -> Result<Vec<ExportedItem>> {
        read::export_page(&self.reader(), after, limit)
    }

    fn label(&self) -> String {
        self.path.display().to_string()
    }
}

impl Metadata for SqliteStore {
    fn meta(&self, key: &str) -> Result<Option<String>> {
        use rusqlite::OptionalExtension;
        Ok(self
            .reader()
            .query_row("SELECT value FROM store_meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()?)
    }

    fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        let conn = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        conn.execute(
            "INSERT INTO store_meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [key, value],
        )?;
        Ok(())
    }
}
