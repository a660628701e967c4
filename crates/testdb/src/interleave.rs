//! A store that lets a test run another process's write at one exact point: between the
//! moment a service has read and checked what it is about to write over and the moment its
//! write transaction opens. Every role is passed through to the real store; only the next
//! `write_batch_as` first runs the step the test gave. Test support, not a product seam: the
//! product's store contract has no hook.

use cortex_domain::graph::Cascade;
use cortex_domain::provenance::{BranchMerge, PathChange, PathHead, Provenance, RepoBranch};
use cortex_store::audit_chain::{ChainRecord, SchemaDrift, TrailMismatch};
use cortex_store::*;
use std::sync::{Arc, Mutex};
use uuid::Uuid;

type Step = Box<dyn FnOnce() + Send>;

/// The real store, with a step to run before its next write.
pub struct Interleaved {
    inner: Arc<dyn Store>,
    before_write: Mutex<Option<Step>>,
}

impl Interleaved {
    pub fn new(inner: Arc<dyn Store>) -> Arc<Interleaved> {
        Arc::new(Interleaved { inner, before_write: Mutex::new(None) })
    }

    /// Runs `step` just before the next write batch (once); the writes after it go straight through.
    pub fn before_next_write(&self, step: impl FnOnce() + Send + 'static) {
        *self.before_write.lock().unwrap() = Some(Box::new(step));
    }

    /// Whether the step given has run.
    pub fn step_ran(&self) -> bool {
        self.before_write.lock().unwrap().is_none()
    }
}

impl ItemWrites for Interleaved {
    fn write_batch_as(&self, ops: &[WriteOp], context: &WriteContext) -> Result<Vec<WriteOutcome>> {
        let step = self.before_write.lock().unwrap().take();
        if let Some(step) = step {
            step();
        }
        self.inner.write_batch_as(ops, context)
    }
    fn now(&self) -> Result<i64> {
        self.inner.now()
    }
}

impl ItemReads for Interleaved {
    fn get(&self, ids: &[Uuid]) -> Result<Vec<StoredItem>> {
        self.inner.get(ids)
    }
    fn recent(&self, filters: &cortex_store::Filters, limit: usize) -> Result<Vec<StoredItem>> {
        self.inner.recent(filters, limit)
    }
    fn natural_key_owner(&self, scope: &cortex_domain::Scope, key: &str) -> Result<Option<Uuid>> {
        self.inner.natural_key_owner(scope, key)
    }
    fn idempotency_owner(&self, scope: &cortex_domain::Scope, key: &str) -> Result<Option<Uuid>> {
        self.inner.idempotency_owner(scope, key)
    }
    fn session_neighbours(
        &self,
        ids: &[Uuid],
        filters: &cortex_store::Filters,
        window: usize,
    ) -> Result<Vec<cortex_store::Neighbour>> {
        self.inner.session_neighbours(ids, filters, window)
    }
    fn audit(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>> {
        self.inner.audit(query)
    }
    fn places(&self) -> Result<Vec<cortex_store::Place>> {
        self.inner.places()
    }
}

impl LexicalSearch for Interleaved {
    fn search_lexical(&self, query: &LexicalQuery) -> Result<Vec<LexicalMatch>> {
        self.inner.search_lexical(query)
    }
    fn count_lexical(&self, query: &LexicalQuery, cap: usize) -> Result<usize> {
        self.inner.count_lexical(query, cap)
    }
}

impl ChangeFeed for Interleaved {
    fn vector_rows(&self, ids: Option<&[Uuid]>) -> Result<Vec<VectorRow>> {
        self.inner.vector_rows(ids)
    }
    fn change_head(&self) -> Result<ChangeCursor> {
        self.inner.change_head()
    }
    fn changes_since(&self, cursor: ChangeCursor, limit: usize) -> Result<Changes> {
        self.inner.changes_since(cursor, limit)
    }
    fn change_counter(&self) -> Result<i64> {
        self.inner.change_counter()
    }
}

impl DenseSearch for Interleaved {
    fn vectors_of(&self, ids: &[Uuid]) -> Result<Vec<ItemVectors>> {
        self.inner.vectors_of(ids)
    }
    fn search_dense(&self, vector: &[f32], filters: &Filters, k: usize) -> Result<Option<Vec<DenseMatch>>> {
        self.inner.search_dense(vector, filters, k)
    }
}

impl Reembedding for Interleaved {
    fn set_vectors(&self, vectors: &[ItemVectors]) -> Result<()> {
        self.inner.set_vectors(vectors)
    }
    fn unembedded(&self, after: Option<Uuid>, limit: usize) -> Result<Vec<Uuid>> {
        self.inner.unembedded(after, limit)
    }
    fn count_unembedded(&self) -> Result<i64> {
        self.inner.count_unembedded()
    }
    fn searched_vectors(&self) -> Result<Option<(i64, i64)>> {
        self.inner.searched_vectors()
    }
}

impl GraphLinks for Interleaved {
    fn links(&self, ids: &[Uuid]) -> Result<Vec<Link>> {
        self.inner.links(ids)
    }
    fn incoming_links(&self, ids: &[Uuid], relations: &Filters) -> Result<Vec<(Uuid, i64)>> {
        self.inner.incoming_links(ids, relations)
    }
}

impl AuditChain for Interleaved {
    fn audit_chain(&self, after: i64, limit: usize) -> Result<Vec<ChainRecord>> {
        self.inner.audit_chain(after, limit)
    }
    fn audit_record(&self, seq: i64) -> Result<Option<ChainRecord>> {
        self.inner.audit_record(seq)
    }
    fn audit_record_before_last(&self, n: usize) -> Result<Option<ChainRecord>> {
        self.inner.audit_record_before_last(n)
    }
    fn audit_trail_mismatches(&self, limit: usize) -> Result<Vec<TrailMismatch>> {
        self.inner.audit_trail_mismatches(limit)
    }
    fn schema_drift(&self) -> Result<Vec<SchemaDrift>> {
        self.inner.schema_drift()
    }
}

impl Maintenance for Interleaved {
    fn purge_expired(
        &self,
        now: i64,
        limit: usize,
        dry_run: bool,
        cascade: Cascade,
        context: &WriteContext,
    ) -> Result<Vec<(String, i64)>> {
        self.inner.purge_expired(now, limit, dry_run, cascade, context)
    }
    fn stats(&self) -> Result<Stats> {
        self.inner.stats()
    }
    fn export_page(&self, after: Option<Uuid>, limit: usize) -> Result<Vec<ExportedItem>> {
        self.inner.export_page(after, limit)
    }
    fn label(&self) -> String {
        self.inner.label()
    }
    fn engine(&self) -> cortex_store::Engine {
        self.inner.engine()
    }
    fn integrity_problems(&self, full: bool) -> Result<Vec<String>> {
        self.inner.integrity_problems(full)
    }
    fn connections(&self) -> usize {
        self.inner.connections()
    }
    fn ready(&self) -> Result<Readiness> {
        self.inner.ready()
    }
}

impl Metadata for Interleaved {
    fn meta(&self, key: &str) -> Result<Option<String>> {
        self.inner.meta(key)
    }
    fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        self.inner.set_meta(key, value)
    }
}

impl ApiKeys for Interleaved {
    fn create_key(&self, key: &ApiKeyRow, context: &WriteContext) -> Result<bool> {
        self.inner.create_key(key, context)
    }

    fn keys(&self) -> Result<Vec<ApiKeyRow>> {
        self.inner.keys()
    }

    fn key_by_lookup(&self, lookup: &str) -> Result<Option<ApiKeyRow>> {
        self.inner.key_by_lookup(lookup)
    }

    fn revoke_key(&self, org: &str, name: &str, at: i64, context: &WriteContext) -> Result<bool> {
        self.inner.revoke_key(org, name, at, context)
    }

    fn restore_key(&self, org: &str, name: &str, context: &WriteContext) -> Result<cortex_store::KeyRestore> {
        self.inner.restore_key(org, name, context)
    }

    fn any_key(&self) -> Result<bool> {
        self.inner.any_key()
    }

    fn record_sign_in(&self, org: &str, summary: &str, context: &WriteContext) -> Result<()> {
        self.inner.record_sign_in(org, summary, context)
    }
}

impl GitReads for Interleaved {
    fn provenance_of(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, Provenance)>> {
        self.inner.provenance_of(ids)
    }

    fn path_changes(&self, at: &RepoBranch, paths: &[String]) -> Result<Vec<PathChange>> {
        self.inner.path_changes(at, paths)
    }

    fn path_head(&self, at: &RepoBranch) -> Result<Option<PathHead>> {
        self.inner.path_head(at)
    }

    fn merges(&self, org: &str, project: &str) -> Result<Vec<BranchMerge>> {
        self.inner.merges(org, project)
    }
}

impl GitHistory for Interleaved {
    fn write_paths(&self, at: &RepoBranch, head: &PathHead, rows: &[PathChange], whole: bool) -> Result<()> {
        self.inner.write_paths(at, head, rows, whole)
    }

    fn record_merge(&self, merge: &BranchMerge, context: &WriteContext) -> Result<Option<i64>> {
        self.inner.record_merge(merge, context)
    }

    fn undo_merges(&self, place: &RepoBranch, from: &str, at: i64, context: &WriteContext) -> Result<u64> {
        self.inner.undo_merges(place, from, at, context)
    }

    fn provenance_page(&self, after: Option<Uuid>, limit: usize) -> Result<Vec<(Uuid, Provenance)>> {
        self.inner.provenance_page(after, limit)
    }

    fn git_tables(&self) -> Result<GitTables> {
        self.inner.git_tables()
    }

    fn import_git_tables(&self, tables: &GitTables, context: &WriteContext) -> Result<()> {
        self.inner.import_git_tables(tables, context)
    }
}
