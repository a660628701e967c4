//! Persistence for Cortex Memory. Backends persist and retrieve; they decide no policy: every
//! rule reaches them as a verdict the domain decided (which duplicate check wins, what a
//! supersede writes into a status, which links go with a deleted item) carried by the values
//! of [`model`](WriteOp), and every filter as the [`Clause`]s of one rule ([`filter`](Filters)).
//!
//! The contract is split by who may call it. [`TenantStore`] is what a request may do with
//! items — [`ItemWrites`], [`ItemReads`], [`LexicalSearch`], [`DenseSearch`], [`GraphLinks`] —
//! every call of which a tenant's view can answer within its bound. [`AdminStore`] is what spans
//! every tenant — [`ChangeFeed`], [`Reembedding`], [`AuditChain`], [`Maintenance`],
//! [`Metadata`], [`ApiKeys`] — held only by the service's own paths. [`Store`] is both: the
//! whole, unbounded store. Every backend passes the same conformance tests (`tests/suite`).
//! Raw SQL is not part of the contract: tests reach it through `cortex-testdb`.

pub mod audit_chain;
mod audit_operation;
mod error;
mod filter;
mod item_columns;
pub mod item_trail;
pub mod key_trail;
mod model;
mod open;
pub mod postgres;
mod shared_limits;
mod shared_sessions;
pub mod sqlite;

pub use audit_operation::AuditOperation;
pub use error::{Result, StoreError};
pub use filter::{Clause, Filters, ItemFacts};
pub use model::*;
pub use open::{DEFAULT_POOL_SIZE, DbTarget, Engine, PoolConfig, migrate_to, open};
pub use postgres::PostgresStore;
pub use shared_limits::{Admission, SharedLimits};
pub use shared_sessions::{
    NewUiSession, PendingLimits, PendingSignIn, SessionLimits, SharedSessions, UiSessionRow,
};
pub use sqlite::SqliteStore;

use cortex_domain::graph::Cascade;
use cortex_domain::provenance::{BranchMerge, PathChange, PathHead, Provenance, RepoBranch};
use uuid::Uuid;

/// How many entries the change log keeps at least (the migrations `0010_change_log.sql` and
/// `0009_change_log.sql` prune older ones, 1,024 at a time).
pub const CHANGE_LOG_RETENTION: i64 = 100_000;

/// Every role at once: the whole, unbounded store, which only the service's own paths hold
/// (the derived indexes, maintenance, the operator's commands). A backend implements each role;
/// `Store` comes with them. A caller's view of it is a [`TenantStore`] only.
pub trait Store: TenantStore + AdminStore {}

impl<T> Store for T where T: TenantStore + AdminStore {}

/// What a request may do with items, and nothing else: every call is one a tenant's view can
/// answer within its bound (`cortex_service`'s `BoundedStore` implements exactly this part).
pub trait TenantStore: ItemWrites + ItemReads + LexicalSearch + DenseSearch + GraphLinks + GitReads {}

impl<T> TenantStore for T where T: ItemWrites + ItemReads + LexicalSearch + DenseSearch + GraphLinks + GitReads
{}

/// What spans every tenant: the change feed the derived indexes read, whole-store upkeep and
/// checks, the audit trail's hash chain, metadata and API keys. No tenant's view implements it,
/// so code holding only a view cannot reach it.
pub trait AdminStore:
    ChangeFeed + Reembedding + AuditChain + Maintenance + Metadata + ApiKeys + GitHistory
{
}

impl<T> AdminStore for T where
    T: ChangeFeed + Reembedding + AuditChain + Maintenance + Metadata + ApiKeys + GitHistory
{
}

/// Writing items: a batch of writes in one transaction, audited.
pub trait ItemWrites: Send + Sync {
    /// Applies a batch in one transaction; one outcome per op, in order. Every change it makes
    /// is recorded in the audit trail (by the database itself) with `context`.
    fn write_batch_as(&self, ops: &[WriteOp], context: &WriteContext) -> Result<Vec<WriteOutcome>>;
    /// [`ItemWrites::write_batch_as`] with no request or actor named.
    fn write_batch(&self, ops: &[WriteOp]) -> Result<Vec<WriteOutcome>> {
        self.write_batch_as(ops, &WriteContext::default())
    }
    /// The time, in epoch ms, every writer of this store agrees on: PostgreSQL's clock for a
    /// shared server (clients' clocks differ), this machine's for a SQLite file.
    fn now(&self) -> Result<i64> {
        Ok(chrono::Utc::now().timestamp_millis())
    }
}

/// Reading items by id, finding the item that holds a key, and the items' audit records.
pub trait ItemReads: Send + Sync {
    /// Items by id, including soft-deleted ones (the caller decides what to show).
    fn get(&self, ids: &[Uuid]) -> Result<Vec<StoredItem>>;
    /// The most recently updated items that pass `filters`, newest first, at most `limit`
    /// (the session briefing: decisions in force, open work).
    fn recent(&self, filters: &Filters, limit: usize) -> Result<Vec<StoredItem>>;
    /// The live item of `scope`'s org and project with this natural key, if any.
    fn natural_key_owner(&self, scope: &cortex_domain::Scope, key: &str) -> Result<Option<Uuid>>;
    /// The item of `scope`'s org and project holding this idempotency key (deleted or not):
    /// the item an insert with the key turns out a duplicate of.
    fn idempotency_owner(&self, scope: &cortex_domain::Scope, key: &str) -> Result<Option<Uuid>>;
    /// For each of `ids` that has a session (`source.session`), the nearest item of the same
    /// session stored before it and the nearest stored after it, each looked for among the
    /// `window` items stored on that side (storage order is creation order: ids are UUIDv7),
    /// and only if it passes `filters`. A store without this answers none: finds then rank
    /// without neighbours (`cortex_domain::neighbours`).
    fn session_neighbours(&self, ids: &[Uuid], filters: &Filters, window: usize) -> Result<Vec<Neighbour>> {
        let _ = (ids, filters, window);
        Ok(Vec::new())
    }
    /// Audit records (the database writes them), oldest first.
    fn audit(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>>;
    /// Every org, project and branch holding live items, with how many, in that order.
    fn places(&self) -> Result<Vec<Place>>;
}

/// The database's own full-text search: what finds ask when the lexical index (`cortex_lexical`)
/// is off, being built or failing, and the counts behind suggestions.
pub trait LexicalSearch: Send + Sync {
    /// The best lexical matches, best first (phase 1 of a search: rank on light columns).
    fn search_lexical(&self, query: &LexicalQuery) -> Result<Vec<LexicalMatch>>;
    /// How many live items match (capped at `cap`), for suggestions.
    fn count_lexical(&self, query: &LexicalQuery, cap: usize) -> Result<usize>;
}

/// The dense route's reads: the database's own vector search, and the exact vectors behind an
/// in-process one.
pub trait DenseSearch: Send + Sync {
    /// The vectors of these items, those that have one (in no particular order): the exact
    /// values behind an approximate in-process search.
    fn vectors_of(&self, ids: &[Uuid]) -> Result<Vec<ItemVectors>>;
    /// The `k` nearest whole texts of live items to `vector` and the `k` nearest chunks, that
    /// pass `filters`, best first, when the backend searches vectors itself (PostgreSQL:
    /// pgvector HNSW); `None` when the caller must keep its own index (SQLite). One item may
    /// come back more than once (its whole text and chunks).
    fn search_dense(&self, vector: &[f32], filters: &Filters, k: usize) -> Result<Option<Vec<DenseMatch>>> {
        let _ = (vector, filters, k);
        Ok(None)
    }
}

/// The change feed every index kept outside the database reads (the lexical index, the
/// in-process vector index): the database's own record of every change, by any process.
pub trait ChangeFeed: Send + Sync {
    /// The items `ids` with their vectors (every item, with `None`), deleted ones too; an id
    /// not returned is not in the store (purged). What an in-process index loads.
    fn vector_rows(&self, ids: Option<&[Uuid]>) -> Result<Vec<VectorRow>>;
    /// Where a reader that is about to load everything starts reading the change log: every
    /// change after it shows up in [`ChangeFeed::changes_since`].
    fn change_head(&self) -> Result<ChangeCursor>;
    /// Up to `limit` entries of the change log after `cursor` (the database's own record of
    /// every insert, update and delete of items and of their vectors, by any process), as the
    /// items they changed: how every index kept outside the database stays current. The log
    /// keeps its newest [`CHANGE_LOG_RETENTION`] entries or so; a reader further behind is
    /// told so ([`Changes::behind`]) and reloads.
    fn changes_since(&self, cursor: ChangeCursor, limit: usize) -> Result<Changes>;
    /// A number that changes whenever any connection (any process) commits a write: a cheap
    /// check before reading the change log. Unchanged, it promises that the log holds no entry
    /// a reader who read it at the previous value could still be missing.
    fn change_counter(&self) -> Result<i64>;
}

/// Vectors made after the fact: the background embedding of items stored without one, and
/// `cortex reindex`.
pub trait Reembedding: Send + Sync {
    /// Replaces the vectors (and chunk vectors) of these items: a re-embedding (`cortex
    /// reindex`), so nothing else about them changes — not `updated_at`, not the audit trail.
    /// Unknown ids are skipped.
    fn set_vectors(&self, vectors: &[ItemVectors]) -> Result<()>;
    /// Up to `limit` live items without a vector of their whole text, by id after `after`:
    /// stored while no embedder was available, for the background embedding to fill in.
    fn unembedded(&self, after: Option<Uuid>, limit: usize) -> Result<Vec<Uuid>>;
    /// How many live items have no vector of their whole text.
    fn count_unembedded(&self) -> Result<i64>;
    /// When the database searches vectors itself (PostgreSQL): how many it holds for live
    /// items (whole texts and chunks) and the bytes of its vector indexes on disk. `None` when
    /// the caller keeps its own index of them (SQLite), which is then what counts.
    fn searched_vectors(&self) -> Result<Option<(i64, i64)>>;
}

/// The knowledge graph's links, by their indexed ends.
pub trait GraphLinks: Send + Sync {
    /// Live links touching any of `ids`: relations from or to them, observations of them (as
    /// entities), and those of `ids` that are observations themselves.
    fn links(&self, ids: &[Uuid]) -> Result<Vec<Link>>;
    /// How many live relations that pass `relations` point at each of `ids` (ids with none
    /// left out): the filters say which count — unexpired at their `now`, and only those
    /// inside a caller's bound, so another tenant's relations never weigh in its ranking.
    fn incoming_links(&self, ids: &[Uuid], relations: &Filters) -> Result<Vec<(Uuid, i64)>>;
}

/// What a request reads of memory that follows the code: items' provenance, a branch's path
/// table (what its history last did to each path), and a project's merge records. Written by
/// [`WriteOp::Provenance`] and [`WriteOp::Confirm`] (items) and [`GitHistory`] (the tables).
pub trait GitReads: Send + Sync {
    /// The provenance of those of `ids` that have one.
    fn provenance_of(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, Provenance)>>;
    /// The rows of `at`'s path table for `paths` (a path it has no row for is left out).
    fn path_changes(&self, at: &RepoBranch, paths: &[String]) -> Result<Vec<PathChange>>;
    /// The head `at`'s path table was brought up to, if it has one.
    fn path_head(&self, at: &RepoBranch) -> Result<Option<PathHead>>;
    /// The merge records of a project, undone ones too, oldest first.
    fn merges(&self, org: &str, project: &str) -> Result<Vec<BranchMerge>>;
}

/// Keeping the git tables: `cortex git sync` brings a branch's path table to its head and
/// records the merges it sees; `cortex git unmerge` undoes a record; export and import move
/// them. Merge records are audited by the database (records about no item).
pub trait GitHistory: Send + Sync {
    /// Brings `at`'s path table to `head`: each of `rows` replaces its path's row; with
    /// `whole`, the rows not given are removed (a table built again from nothing).
    fn write_paths(&self, at: &RepoBranch, head: &PathHead, rows: &[PathChange], whole: bool) -> Result<()>;
    /// Records a merge (its `id` is ignored); `Ok(None)` when this merge of this commit is
    /// recorded already (undone or not): a merge is seen once.
    fn record_merge(&self, merge: &BranchMerge, context: &WriteContext) -> Result<Option<i64>>;
    /// Marks undone, at `at`, the live records of `from` merged into `into` in a project; how
    /// many it undid.
    fn undo_merges(&self, place: &RepoBranch, from: &str, at: i64, context: &WriteContext) -> Result<u64>;
    /// Up to `limit` items' provenance by id after `after`, in id order: one page of an export.
    fn provenance_page(&self, after: Option<Uuid>, limit: usize) -> Result<Vec<(Uuid, Provenance)>>;
    /// Every path table, head and merge record: the rest of an export.
    fn git_tables(&self) -> Result<GitTables>;
    /// Adds what an export held: rows, heads and merges already here are left alone.
    fn import_git_tables(&self, tables: &GitTables, context: &WriteContext) -> Result<()>;
}

/// What verifying the audit trail's hash chain ([`audit_chain`]) reads: `cortex audit
/// --verify` and `doctor`. The chain spans every tenant.
pub trait AuditChain: Send + Sync {
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
}

/// Whole-store work: purging, counting, exporting, checking, naming.
pub trait Maintenance: Send + Sync {
    /// Removes for good up to `limit` items that expired at or before `now` (deleted ones too),
    /// in one transaction, each audited as `purge`; or, with `dry_run`, only counts all of
    /// them. Counts per kind either way. Callers loop until it returns nothing. `cascade` says
    /// what happens to the links whose end a purged item was (`cortex_domain::graph`).
    /// `context` names who purges, for the records.
    fn purge_expired(
        &self,
        now: i64,
        limit: usize,
        dry_run: bool,
        cascade: Cascade,
        context: &WriteContext,
    ) -> Result<Vec<(String, i64)>>;
    fn stats(&self) -> Result<Stats>;
    /// Every item (deleted ones too) with its vector, in id order, after `after`: one page of
    /// an export.
    fn export_page(&self, after: Option<Uuid>, limit: usize) -> Result<Vec<ExportedItem>>;
    /// Where the data lives, for humans (a path, or a URL without its password).
    fn label(&self) -> String;
    /// Which database this is.
    fn engine(&self) -> Engine;
    /// The database answers, and at which schema version: one cheap query, for a readiness
    /// probe asked every few seconds (unlike [`Maintenance::stats`], which counts every item).
    fn ready(&self) -> Result<Readiness>;
    /// What the database's own consistency check finds wrong (empty when all is well);
    /// `full` runs the slow, thorough check.
    fn integrity_problems(&self, full: bool) -> Result<Vec<String>>;
    /// The connection pools as they are now, for the server's metrics (PostgreSQL: the
    /// primary's, and the replica's when finds have one); none for a store without pools.
    fn pool_state(&self) -> Vec<PoolState> {
        Vec::new()
    }
    /// How many calls the database serves at once: the primary pool's size (PostgreSQL), the
    /// readers (SQLite, whose one writer takes turns). The service keeps a share of them that
    /// writes cannot take, so finds are answered under any write load.
    fn connections(&self) -> usize;
}

/// The store's own key-value metadata (e.g. the embedding model its vectors come from).
pub trait Metadata: Send + Sync {
    /// A value from the store's own metadata (e.g. `embedding_model`).
    fn meta(&self, key: &str) -> Result<Option<String>>;
    fn set_meta(&self, key: &str, value: &str) -> Result<()>;
}

/// The metadata key naming the store.
const STORE_ID_KEY: &str = "store_id";

/// The store's identity: a random id recorded in its metadata on first need. What is kept
/// outside the database (the lexical index, the vector index file, the recall hook's counts)
/// records it, so that one of another database is never trusted.
pub fn identity(store: &dyn Metadata) -> Result<String> {
    if let Some(id) = store.meta(STORE_ID_KEY)? {
        return Ok(id);
    }
    let id = Uuid::now_v7().to_string();
    store.set_meta(STORE_ID_KEY, &id)?;
    // Two processes may record one at once: the one that stayed is the identity.
    Ok(store.meta(STORE_ID_KEY)?.unwrap_or(id))
}

/// The API keys of the HTTP team server. Only a hash of each secret is stored; a key is never
/// deleted, only revoked, and creating and revoking one are recorded in the audit trail by the
/// database (records about no item: `key_create`, `key_revoke`, `key_restore` when a revocation
/// is undone within its window), under the principal and
/// channel `context` names.
pub trait ApiKeys: Send + Sync {
    /// Adds a key; `Ok(false)` when a key of this name exists already in its org (revoked ones
    /// count). Names are unique per org: two orgs may each have a key `ci`.
    fn create_key(&self, key: &ApiKeyRow, context: &WriteContext) -> Result<bool>;
    /// Every key, oldest first.
    fn keys(&self) -> Result<Vec<ApiKeyRow>>;
    /// The key whose token carries this lookup id.
    fn key_by_lookup(&self, lookup: &str) -> Result<Option<ApiKeyRow>>;
    /// Revokes `org`'s key named `name` at `at`; `Ok(false)` when no unrevoked key of `org`
    /// has that name.
    fn revoke_key(&self, org: &str, name: &str, at: i64, context: &WriteContext) -> Result<bool>;
    /// Undoes the revocation of `org`'s key named `name` when it was revoked within
    /// [`cortex_domain::api_key::RESTORE_WINDOW_MS`] by the database's clock (its triggers refuse
    /// any other restore); otherwise says why not and changes nothing.
    fn restore_key(&self, org: &str, name: &str, context: &WriteContext) -> Result<KeyRestore>;
    /// Whether any key was ever created (revoked and expired ones count): from then on the
    /// HTTP server asks every request for one.
    fn any_key(&self) -> Result<bool>;
    /// Appends a `sign_in` record about no item, in `org`: someone holding admin rights signed
    /// in to the web UI (`summary` says who and how), under `context`'s principal.
    fn record_sign_in(&self, org: &str, summary: &str, context: &WriteContext) -> Result<()>;
    /// The keys' limits as every server over this database shares them; `None` where each
    /// server keeps its own (SQLite).
    fn shared_limits(&self) -> Option<std::sync::Arc<dyn SharedLimits>> {
        None
    }
    /// The web UI's sessions as every server over this database shares them; `None` where each
    /// server keeps its own (SQLite).
    fn shared_sessions(&self) -> Option<std::sync::Arc<dyn SharedSessions>> {
        None
    }
}
