//! Persistence for Cortex Memory. Backends persist and retrieve; they decide no policy.
//!
//! Every backend implements [`Store`] and passes the same conformance tests
//! (`tests/conformance.rs`).

pub mod audit_chain;
mod error;
mod model;
mod open;
pub mod postgres;
pub mod sqlite;

pub use error::{Result, StoreError};
pub use model::*;
pub use open::{DbTarget, PoolConfig, open};
pub use postgres::PostgresStore;
pub use sqlite::SqliteStore;

use cortex_domain::query::ParsedQuery;
use uuid::Uuid;

pub trait Store: Send + Sync {
    /// Applies a batch in one transaction; one outcome per op, in order. Every change it makes
    /// is recorded in the audit trail (by the database itself) with `context`.
    fn write_batch_as(&self, ops: &[WriteOp], context: &WriteContext) -> Result<Vec<WriteOutcome>>;
    /// [`Store::write_batch_as`] with no request or actor named.
    fn write_batch(&self, ops: &[WriteOp]) -> Result<Vec<WriteOutcome>> {
        self.write_batch_as(ops, &WriteContext::default())
    }
    /// Removes for good up to `limit` items that expired at or before `now` (deleted ones too),
    /// in one transaction, each audited as `purge`; or, with `dry_run`, only counts all of
    /// them. Counts per kind either way. Callers loop until it returns nothing.
    fn purge_expired(&self, now: i64, limit: usize, dry_run: bool) -> Result<Vec<(String, i64)>>;
    /// The live item of `scope`'s org and project with this natural key, if any.
    fn natural_key_owner(&self, scope: &cortex_domain::Scope, key: &str) -> Result<Option<Uuid>>;
    /// The item of `scope`'s org and project holding this idempotency key (deleted or not):
    /// the item an insert with the key turns out a duplicate of.
    fn idempotency_owner(&self, scope: &cortex_domain::Scope, key: &str) -> Result<Option<Uuid>>;
    /// Live links touching any of `ids`: relations from or to them, observations of them (as
    /// entities), and those of `ids` that are observations themselves.
    fn links(&self, ids: &[Uuid]) -> Result<Vec<Link>>;
    /// How many live, unexpired relations point at each of `ids` (ids with none left out).
    fn incoming_links(&self, ids: &[Uuid], now: i64) -> Result<Vec<(Uuid, i64)>>;
    /// Audit records, oldest first.
    fn audit(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>>;
    /// The best lexical matches, best first (phase 1 of a search: rank on light columns).
    fn search_lexical(&self, query: &LexicalQuery) -> Result<Vec<LexicalMatch>>;
    /// Whole items with snippets for the chosen matches, in the order of `ids` (phase 2:
    /// only the page pays for reading text and cutting snippets).
    fn fetch_matches(&self, query: &ParsedQuery, ids: &[Uuid]) -> Result<Vec<Candidate>>;
    /// How many live items match (capped at `cap`), for suggestions.
    fn count_lexical(&self, query: &LexicalQuery, cap: usize) -> Result<usize>;
    /// Items by id, including soft-deleted ones (the caller decides what to show).
    fn get(&self, ids: &[Uuid]) -> Result<Vec<StoredItem>>;
    /// Whether the index knows `word` at all.
    fn knows_word(&self, word: &str) -> Result<bool>;
    /// Index terms sharing `word`'s first letter, with document counts, for spelling.
    /// Terms may be stems; [`Store::surface_word`] turns one back into a written word.
    fn words_like(&self, word: &str) -> Result<Vec<(String, i64)>>;
    /// A word as it appears in some document for an index term.
    fn surface_word(&self, term: &str) -> Result<String>;
    /// The most widespread index terms with their document counts.
    fn top_terms(&self, limit: usize) -> Result<Vec<(String, i64)>>;
    fn stats(&self) -> Result<Stats>;
    /// Items changed (inserted, updated, deleted) at or after `since` (epoch ms), with their
    /// vectors, for keeping an in-process vector index current.
    fn vectors_changed_since(&self, since: i64) -> Result<Vec<VectorRow>>;
    /// A number that changes whenever any connection (any process) commits a write.
    fn change_counter(&self) -> Result<i64>;
    /// A value from the store's own metadata (e.g. `embedding_model`).
    fn meta(&self, key: &str) -> Result<Option<String>>;
    fn set_meta(&self, key: &str, value: &str) -> Result<()>;
    /// The `k` nearest whole texts of live items to `vector` and the `k` nearest chunks, that
    /// pass `filters`, best first, when the backend searches vectors itself (PostgreSQL:
    /// pgvector HNSW); `None` when the caller must keep its own index (SQLite). One item may
    /// come back more than once (its whole text and chunks).
    fn search_dense(&self, vector: &[f32], filters: &Filters, k: usize) -> Result<Option<Vec<DenseMatch>>> {
        let _ = (vector, filters, k);
        Ok(None)
    }
    /// Replaces the vectors (and chunk vectors) of these items: a re-embedding (`cortex
    /// reindex`), so nothing else about them changes — not `updated_at`, not the audit trail.
    /// Unknown ids are skipped.
    fn set_vectors(&self, vectors: &[ItemVectors]) -> Result<()>;
    /// The vectors of these items, those that have one (in no particular order): the exact
    /// values behind an approximate in-process search.
    fn vectors_of(&self, ids: &[Uuid]) -> Result<Vec<ItemVectors>>;
    /// Every item (deleted ones too) with its vector, in id order, after `after`: one page of
    /// an export.
    fn export_page(&self, after: Option<Uuid>, limit: usize) -> Result<Vec<ExportedItem>>;
    /// Runs raw SQL outside every rule of the service, returning the rows it changed. For
    /// tests and tooling that check what the database itself refuses.
    fn execute_raw(&self, sql: &str) -> Result<u64>;
    /// Where the data lives, for humans (a path, or a URL without its password).
    fn label(&self) -> String;

    /// The time, in epoch ms, every writer of this store agrees on: PostgreSQL's clock for a
    /// shared server (clients' clocks differ), this machine's for a SQLite file.
    fn now(&self) -> Result<i64> {
        Ok(chrono::Utc::now().timestamp_millis())
    }

    // The audit chain (`audit_chain`): what `cortex audit --verify` and `doctor` check.

    /// Up to `limit` audit records after seq `after`, oldest first, with their hashes.
    fn audit_chain(&self, after: i64, limit: usize) -> Result<Vec<audit_chain::ChainRecord>>;
    /// The audit record with this seq.
    fn audit_record(&self, seq: i64) -> Result<Option<audit_chain::ChainRecord>>;
    /// The record just before the newest `n` (where a check of the newest `n` starts), or
    /// `None` when there are no more than `n`.
    fn audit_record_before_last(&self, n: usize) -> Result<Option<audit_chain::ChainRecord>>;
    /// Items whose state their audit trail does not explain, at most `limit`.
    fn audit_trail_mismatches(&self, limit: usize) -> Result<Vec<audit_chain::TrailMismatch>>;
    /// Schema objects (the audit triggers first of all) that are not what the migrations made.
    fn schema_drift(&self) -> Result<Vec<audit_chain::SchemaDrift>>;
    /// What the database's own consistency check finds wrong (empty when all is well);
    /// `full` runs the slow, thorough check.
    fn integrity_problems(&self, full: bool) -> Result<Vec<String>>;
}
