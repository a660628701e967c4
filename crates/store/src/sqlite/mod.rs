//! The embedded default: one SQLite file in WAL mode, FTS5 BM25 for lexical search.
//!
//! One writer connection (serialized, `BEGIN IMMEDIATE`) and a small pool of readers, so finds
//! run in parallel and never wait on a write (WAL readers see the last commit). Several
//! processes may open the same file: WAL plus a busy timeout make their writers take turns,
//! and every dedupe check runs inside the writer's transaction. A process that may only read
//! the file (or its folder) opens it read-only: reads work, writes say why they cannot.

mod chain;
mod changes;
pub(crate) mod connect;
mod expected;
mod fts;
mod git;
mod graph;
mod keys;
pub(crate) mod migrate;
mod neighbours;
mod read;
mod row;
mod unembedded;
mod write;

use crate::audit_chain::{ChainRecord, SchemaDrift, TrailMismatch};
use crate::{
    ApiKeyRow, ApiKeys, AuditChain, AuditQuery, AuditRecord, ChangeCursor, ChangeFeed, Changes, DenseSearch,
    ExportedItem, GraphLinks, ItemReads, ItemVectors, ItemWrites, LexicalMatch, LexicalQuery, LexicalSearch,
    Link, Maintenance, Metadata, Reembedding, Result, Stats, StoreError, StoredItem, VectorRow, WriteContext,
    WriteOp, WriteOutcome,
};
use connect::{ReadMode, Reader, ReaderPool};
use cortex_domain::graph::Cascade;
use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use uuid::Uuid;

pub use chain::register_functions;
pub use migrate::MIGRATIONS;

pub struct SqliteStore {
    path: PathBuf,
    readers: ReaderPool,
    /// The connection whose `data_version` is the change counter: one connection's own
    /// count, so successive readings compare (the pool's connections count separately).
    watch: Mutex<Connection>,
    /// `None` when the process may only read the file. Declared last so it closes last: the
    /// last connection to close checkpoints the WAL into the file and removes it, which a
    /// read-only reader cannot do.
    writer: Option<Mutex<Connection>>,
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path` and brings its schema up to date;
    /// read-only when this process may not write the file or its folder.
    pub fn open(path: &Path) -> Result<SqliteStore> {
        if let Some(dir) = path.parent()
            && !dir.as_os_str().is_empty()
            && !dir.exists()
        {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::Open {
                path: path.display().to_string(),
                reason: format!("cannot create folder {}: {e}", dir.display()),
            })?;
        }
        match SqliteStore::open_writable(path) {
            Err(e) if connect::is_read_only(&e) && path.exists() => SqliteStore::open_read_only(path),
            other => other,
        }
    }

    fn open_writable(path: &Path) -> Result<SqliteStore> {
        let mut writer = connect::writer(path)?;
        migrate::run(&mut writer)?;
        let readers = ReaderPool::new(path, ReadMode::Shared)?;
        let watch = connect::reader(path, ReadMode::Shared)?;
        Ok(SqliteStore {
            path: path.to_path_buf(),
            writer: Some(Mutex::new(writer)),
            readers,
            watch: Mutex::new(watch),
        })
    }

    /// Opens a file this process may only read. Its schema must be this build's already.
    pub fn open_read_only(path: &Path) -> Result<SqliteStore> {
        let mode = connect::read_only_mode(path)?;
        let probe = connect::reader(path, mode)?;
        let missing = migrate::pending(&probe, migrate::latest())?;
        if missing > 0 {
            return Err(StoreError::NeedsMigration {
                path: path.display().to_string(),
                found: migrate::current_version(&probe).unwrap_or(0),
                known: migrate::latest(),
            });
        }
        tracing::info!(path = %path.display(), "the database is read-only to this process: opened for reading");
        let readers = ReaderPool::new(path, mode)?;
        Ok(SqliteStore { path: path.to_path_buf(), writer: None, readers, watch: Mutex::new(probe) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether writes are possible (false when the file is read-only to this process).
    pub fn writable(&self) -> bool {
        self.writer.is_some()
    }

    fn reader(&self) -> Result<Reader<'_>> {
        self.readers.get()
    }

    fn writer(&self) -> Result<MutexGuard<'_, Connection>> {
        let writer = self.writer.as_ref().ok_or_else(|| StoreError::ReadOnly { path: self.label() })?;
        // A poisoned lock only means another thread panicked mid-write; the transaction
        // rolled back and the connection is fine.
        Ok(writer.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl ItemWrites for SqliteStore {
    fn write_batch_as(&self, ops: &[WriteOp], context: &WriteContext) -> Result<Vec<WriteOutcome>> {
        let mut conn = self.writer()?;
        write::apply_batch(&mut conn, ops, context)
    }
}

impl ItemReads for SqliteStore {
    fn get(&self, ids: &[Uuid]) -> Result<Vec<StoredItem>> {
        read::get(&*self.reader()?, ids)
    }

    fn recent(&self, filters: &crate::Filters, limit: usize) -> Result<Vec<StoredItem>> {
        read::recent(&*self.reader()?, filters, limit)
    }

    fn natural_key_owner(&self, scope: &cortex_domain::Scope, key: &str) -> Result<Option<Uuid>> {
        read::natural_key_owner(&*self.reader()?, scope, key)
    }

    fn idempotency_owner(&self, scope: &cortex_domain::Scope, key: &str) -> Result<Option<Uuid>> {
        read::idempotency_owner(&*self.reader()?, scope, key)
    }

    fn session_neighbours(
        &self,
        ids: &[Uuid],
        filters: &crate::Filters,
        window: usize,
    ) -> Result<Vec<crate::Neighbour>> {
        neighbours::session_neighbours(&*self.reader()?, ids, filters, window)
    }

    fn audit(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>> {
        chain::audit(&*self.reader()?, query)
    }

    fn places(&self) -> Result<Vec<crate::Place>> {
        read::places(&*self.reader()?)
    }
}

impl LexicalSearch for SqliteStore {
    fn search_lexical(&self, query: &LexicalQuery) -> Result<Vec<LexicalMatch>> {
        read::search(&*self.reader()?, query)
    }

    fn count_lexical(&self, query: &LexicalQuery, cap: usize) -> Result<usize> {
        read::count(&*self.reader()?, query, cap)
    }
}

impl ChangeFeed for SqliteStore {
    fn vector_rows(&self, ids: Option<&[Uuid]>) -> Result<Vec<VectorRow>> {
        read::vector_rows(&*self.reader()?, ids)
    }

    fn change_head(&self) -> Result<ChangeCursor> {
        changes::head(&*self.reader()?)
    }

    fn changes_since(&self, cursor: ChangeCursor, limit: usize) -> Result<Changes> {
        changes::since(&*self.reader()?, cursor, limit)
    }

    fn change_counter(&self) -> Result<i64> {
        // data_version moves when another connection commits; total_changes covers this
        // connection's own writes (which go through `writer`, itself "another" connection).
        let watch = self.watch.lock().unwrap_or_else(|e| e.into_inner());
        Ok(watch.query_row("PRAGMA data_version", [], |r| r.get(0))?)
    }
}

impl DenseSearch for SqliteStore {
    fn vectors_of(&self, ids: &[Uuid]) -> Result<Vec<ItemVectors>> {
        read::vectors_of(&*self.reader()?, ids)
    }
}

impl Reembedding for SqliteStore {
    fn set_vectors(&self, vectors: &[ItemVectors]) -> Result<()> {
        let mut conn = self.writer()?;
        write::set_vectors(&mut conn, vectors)
    }

    fn unembedded(&self, after: Option<Uuid>, limit: usize) -> Result<Vec<Uuid>> {
        unembedded::page(&*self.reader()?, after, limit)
    }

    fn count_unembedded(&self) -> Result<i64> {
        unembedded::count(&*self.reader()?)
    }

    fn searched_vectors(&self) -> Result<Option<(i64, i64)>> {
        Ok(None)
    }
}

impl GraphLinks for SqliteStore {
    fn links(&self, ids: &[Uuid]) -> Result<Vec<Link>> {
        graph::links(&*self.reader()?, ids)
    }

    fn incoming_links(&self, ids: &[Uuid], relations: &crate::Filters) -> Result<Vec<(Uuid, i64)>> {
        graph::incoming_links(&*self.reader()?, ids, relations)
    }
}

impl AuditChain for SqliteStore {
    fn audit_chain(&self, after: i64, limit: usize) -> Result<Vec<ChainRecord>> {
        chain::chain_page(&*self.reader()?, after, limit)
    }

    fn audit_record(&self, seq: i64) -> Result<Option<ChainRecord>> {
        chain::chain_record_at(&*self.reader()?, seq)
    }

    fn audit_record_before_last(&self, n: usize) -> Result<Option<ChainRecord>> {
        chain::record_before_last(&*self.reader()?, n)
    }

    fn audit_trail_mismatches(&self, limit: usize) -> Result<Vec<TrailMismatch>> {
        chain::trail_mismatches(&*self.reader()?, limit)
    }

    fn schema_drift(&self) -> Result<Vec<SchemaDrift>> {
        chain::schema_drift(&*self.reader()?)
    }
}

impl Maintenance for SqliteStore {
    fn purge_expired(
        &self,
        now: i64,
        limit: usize,
        dry_run: bool,
        cascade: Cascade,
        context: &WriteContext,
    ) -> Result<Vec<(String, i64)>> {
        if dry_run {
            return read::expired_by_kind(&*self.reader()?, now);
        }
        let mut conn = self.writer()?;
        write::purge_expired(&mut conn, now, limit, cascade, context)
    }

    fn stats(&self) -> Result<Stats> {
        read::stats(&*self.reader()?)
    }

    fn export_page(&self, after: Option<Uuid>, limit: usize) -> Result<Vec<ExportedItem>> {
        read::export_page(&*self.reader()?, after, limit)
    }

    fn label(&self) -> String {
        self.path.display().to_string()
    }

    fn engine(&self) -> crate::Engine {
        crate::Engine::Sqlite
    }

    fn ready(&self) -> Result<crate::Readiness> {
        Ok(crate::Readiness { schema_version: migrate::current_version(&*self.reader()?)? })
    }

    fn integrity_problems(&self, full: bool) -> Result<Vec<String>> {
        read::integrity_problems(&*self.reader()?, full)
    }

    fn connections(&self) -> usize {
        connect::READERS as usize
    }
}

impl Metadata for SqliteStore {
    fn meta(&self, key: &str) -> Result<Option<String>> {
        use rusqlite::OptionalExtension;
        Ok(self
            .reader()?
            .query_row("SELECT value FROM store_meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()?)
    }

    fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        let conn = self.writer()?;
        conn.execute(
            "INSERT INTO store_meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [key, value],
        )?;
        Ok(())
    }
}

impl crate::GitReads for SqliteStore {
    fn provenance_of(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, cortex_domain::provenance::Provenance)>> {
        git::provenance_of(&*self.reader()?, ids)
    }

    fn path_changes(
        &self,
        at: &cortex_domain::provenance::RepoBranch,
        paths: &[String],
    ) -> Result<Vec<cortex_domain::provenance::PathChange>> {
        git::path_changes(&*self.reader()?, at, paths)
    }

    fn path_head(
        &self,
        at: &cortex_domain::provenance::RepoBranch,
    ) -> Result<Option<cortex_domain::provenance::PathHead>> {
        git::path_head(&*self.reader()?, at)
    }

    fn merges(&self, org: &str, project: &str) -> Result<Vec<cortex_domain::provenance::BranchMerge>> {
        git::merges(&*self.reader()?, org, project)
    }
}

impl crate::GitHistory for SqliteStore {
    fn write_paths(
        &self,
        at: &cortex_domain::provenance::RepoBranch,
        head: &cortex_domain::provenance::PathHead,
        rows: &[cortex_domain::provenance::PathChange],
        whole: bool,
    ) -> Result<()> {
        git::write_paths(&mut *self.writer()?, at, head, rows, whole)
    }

    fn record_merge(
        &self,
        merge: &cortex_domain::provenance::BranchMerge,
        context: &WriteContext,
    ) -> Result<Option<i64>> {
        git::record_merge(&mut *self.writer()?, merge, context)
    }

    fn undo_merges(
        &self,
        place: &cortex_domain::provenance::RepoBranch,
        from: &str,
        at: i64,
        context: &WriteContext,
    ) -> Result<u64> {
        git::undo_merges(&mut *self.writer()?, place, from, at, context)
    }

    fn provenance_page(
        &self,
        after: Option<Uuid>,
        limit: usize,
    ) -> Result<Vec<(Uuid, cortex_domain::provenance::Provenance)>> {
        git::provenance_page(&*self.reader()?, after, limit)
    }

    fn git_tables(&self) -> Result<crate::GitTables> {
        git::git_tables(&*self.reader()?)
    }

    fn import_git_tables(&self, tables: &crate::GitTables, context: &WriteContext) -> Result<()> {
        git::import_git_tables(&mut *self.writer()?, tables, context)
    }
}

impl ApiKeys for SqliteStore {
    fn create_key(&self, key: &ApiKeyRow, context: &WriteContext) -> Result<bool> {
        keys::create(&*self.writer()?, key, context)
    }

    fn keys(&self) -> Result<Vec<ApiKeyRow>> {
        keys::all(&*self.reader()?)
    }

    fn key_by_lookup(&self, lookup: &str) -> Result<Option<ApiKeyRow>> {
        keys::by_lookup(&*self.reader()?, lookup)
    }

    fn revoke_key(&self, org: &str, name: &str, at: i64, context: &WriteContext) -> Result<bool> {
        keys::revoke(&*self.writer()?, org, name, at, context)
    }

    fn restore_key(&self, org: &str, name: &str, context: &WriteContext) -> Result<crate::KeyRestore> {
        keys::restore(&*self.writer()?, org, name, context)
    }

    fn any_key(&self) -> Result<bool> {
        keys::any(&*self.reader()?)
    }

    fn record_sign_in(&self, org: &str, summary: &str, context: &WriteContext) -> Result<()> {
        keys::record_sign_in(&*self.writer()?, org, summary, context)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn closing_the_store_folds_the_wal_into_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.db");
        let store = super::SqliteStore::open(&path).unwrap();
        crate::Metadata::set_meta(&store, "k", "v").unwrap();
        drop(store);
        assert!(
            !dir.path().join("m.db-wal").exists(),
            "the last connection checkpointed and removed the WAL"
        );
    }

    /// Reads used to share one connection behind a mutex, so a slow find
    /// held every other. A read held open here does not stop others, on other threads.
    #[test]
    fn reads_run_beside_a_read_in_progress() {
        let dir = tempfile::tempdir().unwrap();
        let store = super::SqliteStore::open(&dir.path().join("m.db")).unwrap();
        let held = store.reader().unwrap();
        held.execute_batch("BEGIN; SELECT count(*) FROM items;").unwrap();
        std::thread::scope(|s| {
            let others: Vec<_> =
                (0..3).map(|_| s.spawn(|| crate::Maintenance::stats(&store).unwrap().items)).collect();
            for other in others {
                assert_eq!(other.join().unwrap(), 0);
            }
        });
        held.execute_batch("COMMIT").unwrap();
    }
}
