//! The values that cross the `Store` boundary. Policy is decided before these are built:
//! a store only persists and retrieves them.

use crate::filter::{Filters, ItemFacts};
use cortex_domain::dedupe::{DuplicateCheck, DuplicateChecks};
use cortex_domain::graph::Cascade;
use cortex_domain::lifecycle::StatusChange;
use cortex_domain::provenance::Provenance;
use cortex_domain::query::ParsedQuery;
use cortex_domain::{Kind, Scope};
use serde_json::Value;
use uuid::Uuid;

/// An item as written: validated, scoped, timestamped.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub id: Uuid,
    pub kind: Kind,
    pub scope: Scope,
    pub title: String,
    pub body: String,
    pub content: Option<String>,
    pub data: Value,
    pub metadata: Option<Value>,
    pub source: Option<Value>,
    pub tags: Vec<String>,
    pub status: Option<String>,
    pub content_hash: String,
    pub idempotency_key: Option<String>,
    pub ttl: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub expires_at: Option<i64>,
    /// When what the item records happened (a commit's time, a release's date), when it says
    /// so: "recent" orders by it, else by `updated_at`. An update that names none keeps the
    /// stored one.
    pub occurred_at: Option<i64>,
    /// The item's embedding, when an embedder ran. Not read back by `get`.
    pub vector: Option<Vec<f32>>,
    /// One embedding per chunk of a long text (`cortex_domain::chunking`), besides `vector`.
    /// Not read back by `get`.
    pub chunks: Vec<ChunkVector>,
}

impl Record {
    /// The text a find shows whole and long documents are chunked from: the content, or the
    /// searchable body when there is none.
    pub fn text(&self) -> &str {
        self.content.as_deref().unwrap_or(&self.body)
    }
}

/// A chunk of an item's text — a byte range of its content (or body, when it has no
/// content) — with the chunk's embedding.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkVector {
    pub start: u32,
    pub end: u32,
    pub vector: Vec<f32>,
}

/// A stored item's vectors: of its whole text and of its chunks ([`crate::Store::set_vectors`],
/// [`crate::Store::vectors_of`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ItemVectors {
    pub id: Uuid,
    pub vector: Vec<f32>,
    pub chunks: Vec<ChunkVector>,
}

/// One write of a batch. All writes of a batch commit together or not at all.
#[derive(Debug, Clone)]
pub enum WriteOp {
    /// Insert unless one of `checks` (`cortex_domain::dedupe`, tried in order) finds the item
    /// this one duplicates.
    Insert { record: Record, checks: DuplicateChecks },
    /// Replace the item's fields. Scope fields the record leaves unset keep their stored value;
    /// `created_at` is kept.
    Update { record: Record },
    /// Soft delete: hidden from finds, kept for audit. `cascade` (`cortex_domain::graph`) says
    /// whether the links whose end the item is go too.
    Delete { id: Uuid, kind: Option<Kind>, at: i64, cascade: Cascade },
    /// Undoes a soft delete: the item is live again as it was (the links deleted with it stay
    /// deleted: each is an item of its own to restore). Not when another live item of its org
    /// and project holds its natural key by now: two live items would then name one thing.
    Restore { id: Uuid, kind: Option<Kind>, at: i64 },
    /// An item moved from another store as it was (id, times, deletion, vector); an item
    /// with the same id already here is left alone.
    Import { item: Box<StoredItem>, vector: Option<Vec<f32>>, chunks: Vec<ChunkVector> },
    /// Marks the live item `id` as replaced by `by`, if `by` is stored and live by then: it
    /// follows the insert of `by` in the same batch, so an insert that turned out a duplicate
    /// supersedes nothing. `status` (`cortex_domain::lifecycle::status_when_superseded`) is
    /// written into the item's status and `data` when set.
    Supersede { id: Uuid, by: Uuid, at: i64, status: Option<StatusChange> },
    /// A change a governance rule refused: nothing changes, but the attempt is recorded in the
    /// audit trail with the batch's other changes.
    Blocked(Box<BlockedAttempt>),
    /// Sets the provenance of the stored item `id` (deleted or not), replacing any it had:
    /// follows the insert or update it describes in the same batch, so an insert that turned
    /// out a duplicate sets nothing. Not audited: the write it follows is.
    Provenance { id: Uuid, provenance: Box<Provenance> },
    /// Someone says the live item `id` still holds: its provenance becomes `provenance` (its
    /// commit moved forward, its files' baselines counted again) and the audit trail records a
    /// `confirm`. The item's own row is not changed.
    Confirm { id: Uuid, kind: Option<Kind>, provenance: Box<Provenance>, at: i64 },
}

/// What the audit trail keeps of a refused change.
#[derive(Debug, Clone)]
pub struct BlockedAttempt {
    pub id: Uuid,
    pub kind: Kind,
    pub scope: Scope,
    /// The stored item's content hash (what was protected).
    pub hash: Option<String>,
    /// The attempt's `source` (actor, tool, session), if it named one.
    pub source: Option<Value>,
    /// Why it was refused.
    pub reason: String,
    pub at: i64,
}

/// Which check found the item a write duplicates.
pub type DuplicateReason = DuplicateCheck;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteOutcome {
    Inserted {
        id: Uuid,
    },
    Updated {
        id: Uuid,
    },
    Deleted {
        id: Uuid,
        already: bool,
        /// Relations and observations attached to the item, deleted with it.
        cascaded: u64,
    },
    /// A [`WriteOp::Restore`]; `already`: the item was not deleted.
    Restored {
        id: Uuid,
        already: bool,
    },
    Duplicate {
        existing_id: Uuid,
        reason: DuplicateReason,
    },
    NotFound {
        id: Uuid,
    },
    KindMismatch {
        id: Uuid,
        stored: Kind,
    },
    /// A [`WriteOp::Blocked`] attempt, recorded.
    Blocked {
        id: Uuid,
    },
    /// A [`WriteOp::Confirm`], recorded.
    Confirmed {
        id: Uuid,
    },
}

/// An item as read back.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredItem {
    pub record: Record,
    pub deleted_at: Option<i64>,
    /// The newer item that replaced this one.
    pub superseded_by: Option<Uuid>,
    /// When it first entered a state governance protects (`cortex_domain::governance::governs`:
    /// a decision accepted, a section approved); kept for good, whatever its status does next.
    pub governed_since: Option<i64>,
    /// Who wrote its current version: the principal of the insert or update that wrote it
    /// (`cortex_domain::principal`'s text), from the writer's context, never from a request's
    /// body; `None` when the writer was not named.
    pub author: Option<String>,
}

/// How the terms of a lexical search combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Combine {
    /// Every term must match (fast and precise for short queries).
    All,
    /// Any term may match; BM25 rewards matching more of them.
    #[default]
    Any,
}

/// A lexical search.
#[derive(Debug, Clone)]
pub struct LexicalQuery {
    pub query: ParsedQuery,
    pub combine: Combine,
    pub filters: Filters,
    /// How many best-matching candidates to return.
    pub pool: usize,
}

/// One lexical match, light enough to rank hundreds per query.
#[derive(Debug, Clone)]
pub struct LexicalMatch {
    pub id: Uuid,
    /// The lexical score, higher is better (BM25 sign-flipped).
    pub score: f64,
    pub updated_at: i64,
    pub scope: Scope,
    /// The item's kind, when the index keeps it (what a question weighs).
    pub kind: Option<Kind>,
}

/// An item stored next to another in the same session (`source.session`), as a find's
/// candidate needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Neighbour {
    /// The item it neighbours.
    pub of: Uuid,
    /// Stored before or after `of`.
    pub side: cortex_domain::neighbours::Side,
    pub id: Uuid,
    pub updated_at: i64,
    pub scope: Scope,
}

impl Neighbour {
    /// Of the items of `of`'s session around it, in id order (`(id, updated_at, scope)`), the
    /// last stored before it and the first stored after it; reading stops at the latter. The
    /// one rule of both backends' `session_neighbours`.
    pub(crate) fn closest(
        of: Uuid,
        mates: impl Iterator<Item = crate::Result<(Uuid, i64, Scope)>>,
    ) -> crate::Result<Vec<Neighbour>> {
        use cortex_domain::neighbours::Side;
        let mut before = None;
        for mate in mates {
            let (id, updated_at, scope) = mate?;
            let side = if id < of { Side::Before } else { Side::After };
            let neighbour = Neighbour { of, side, id, updated_at, scope };
            match side {
                Side::Before => before = Some(neighbour),
                Side::After => return Ok(before.into_iter().chain([neighbour]).collect()),
            }
        }
        Ok(before.into_iter().collect())
    }
}

/// A changed item as the vector index needs it: enough to filter and score, nothing more.
#[derive(Debug, Clone)]
pub struct VectorRow {
    pub id: Uuid,
    pub facts: ItemFacts,
    /// Deleted items come back too, so an index can drop them.
    pub deleted: bool,
    pub vector: Option<Vec<f32>>,
    pub chunks: Vec<ChunkVector>,
}

/// Where a reader of the change log stands ([`crate::ChangeFeed::changes_since`]): it has
/// seen every change before this point. Opaque to readers: they start from
/// [`crate::ChangeFeed::change_head`] and keep what [`Changes::next`] gives them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct ChangeCursor {
    /// PostgreSQL: changes of transactions below this id have all been seen (0 on SQLite,
    /// whose single writer commits changes in `seq` order).
    pub txn: i64,
    /// Changes up to this seq (within `txn`, on PostgreSQL) have been seen.
    pub seq: i64,
}

/// One page of the change log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changes {
    /// The items changed (inserted, updated, deleted, purged, re-embedded), each once: their
    /// current state is to be read again, and an item no longer there is gone.
    pub items: Vec<Uuid>,
    /// Where to read from next time. Changes of transactions still running may be returned
    /// again after it: re-reading an item is harmless.
    pub next: ChangeCursor,
    /// Whether the page held everything there was (else read again from `next`).
    pub complete: bool,
    /// The log no longer holds everything after the cursor (it is pruned to its newest
    /// entries): the reader must reload everything, from a new [`crate::ChangeFeed::change_head`].
    pub behind: bool,
}

impl Changes {
    /// A page of entries read after a cursor: the items they name, each once.
    pub(crate) fn page(items: Vec<Uuid>, next: ChangeCursor, complete: bool) -> Changes {
        let mut seen = std::collections::HashSet::new();
        let items = items.into_iter().filter(|id| seen.insert(*id)).collect();
        Changes { items, next, complete, behind: false }
    }

    /// The answer to a reader whose cursor is below what the log has pruned.
    pub(crate) fn behind(cursor: ChangeCursor) -> Changes {
        Changes { items: Vec::new(), next: cursor, complete: false, behind: true }
    }
}

/// One nearest neighbour found by a store that searches vectors itself.
#[derive(Debug, Clone)]
pub struct DenseMatch {
    pub id: Uuid,
    /// Cosine similarity, -1–1.
    pub score: f32,
    /// The byte range of the chunk that matched, when a chunk's vector did.
    pub chunk: Option<(u32, u32)>,
    pub facts: ItemFacts,
}

/// A live link of the knowledge graph: a relation (`from` → `to`) or an observation (of the
/// entity `from`; `to` is unset, the observation itself is the other end).
#[derive(Debug, Clone)]
pub struct Link {
    pub id: Uuid,
    pub kind: Kind,
    pub from: Uuid,
    pub to: Option<Uuid>,
    /// A relation's `relation_type` (its title); an observation's text.
    pub title: String,
    pub facts: ItemFacts,
}

/// An item with its vector, as `export` writes it and `WriteOp::Import` reads it back.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportedItem {
    pub item: StoredItem,
    pub vector: Option<Vec<f32>>,
    pub chunks: Vec<ChunkVector>,
}

/// What a readiness probe learns: the database answers, at this schema version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Readiness {
    pub schema_version: i64,
}

/// A project and branch that holds live items, and how many: what a person picks among.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// Its org, project and branch (unset where the items have none).
    pub scope: cortex_domain::Scope,
    pub items: i64,
}

/// The query behind [`crate::ItemReads::places`], the same on both backends.
pub(crate) const PLACES: &str = "SELECT org, project, branch, count(*) FROM items WHERE deleted_at IS NULL \
     GROUP BY org, project, branch ORDER BY org, project, branch";

impl Place {
    /// From the stored columns ('' for unset).
    pub fn of(org: String, project: String, branch: String, items: i64) -> Place {
        let set = |v: String| (!v.is_empty()).then_some(v);
        let scope = cortex_domain::Scope {
            org: set(org),
            project: set(project),
            branch: set(branch),
            ..Default::default()
        };
        Place { scope, items }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    pub items: i64,
    pub deleted: i64,
    pub by_kind: Vec<(String, i64)>,
    pub schema_version: i64,
    pub bytes: i64,
}

/// When a write of `r` makes it governed (`cortex_domain::governance::governs`): its
/// `updated_at`, else `None`. The stores keep the first such time for good.
pub(crate) fn governed_at(r: &Record) -> Option<i64> {
    cortex_domain::governance::governs(r.kind, r.status.as_deref(), &r.data).then_some(r.updated_at)
}

/// Scope values as stored ('' for unset), in column order org..environment.
pub(crate) fn scope_values(scope: &Scope) -> [String; 7] {
    cortex_domain::scope::SCOPE_FIELDS.map(|f| scope.get(f).unwrap_or("").to_string())
}

/// Who writes and for which request, recorded in the audit trail of every change a batch makes.
/// The audit records take the principal and the channel from here, never from an item; an
/// item's own `source` (actor, tool, session) is recorded beside them as what the client said
/// of itself.
#[derive(Debug, Clone, Default)]
pub struct WriteContext {
    pub request_id: Option<String>,
    /// Who makes the changes, as the server established it (`cortex_domain::principal`'s
    /// text); `None` is recorded as no principal.
    pub principal: Option<String>,
    /// What the changes came through: `memory_store`, `web UI`, `cortex ingest`, `cortex
    /// import`, `cortex keys`, `purge`, `cortex secrets scan`.
    pub via: Option<String>,
    /// The stored items the batch's ops were checked against (governance, an entity merge),
    /// as the checks saw them: the batch is written only if each is still in that state when
    /// its transaction holds the write lock; otherwise nothing is written and the batch fails
    /// with [`crate::StoreError::Conflict`], for the caller to read again and check again.
    pub expected: Vec<ExpectedState>,
}

/// What a check saw of a stored item: enough to tell whether anyone changed it since.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedState {
    pub id: Uuid,
    pub content_hash: String,
    pub status: Option<String>,
    pub updated_at: i64,
    pub deleted: bool,
}

impl ExpectedState {
    /// The state of `item` as read.
    pub fn of(item: &StoredItem) -> ExpectedState {
        ExpectedState {
            id: item.record.id,
            content_hash: item.record.content_hash.clone(),
            status: item.record.status.clone(),
            updated_at: item.record.updated_at,
            deleted: item.deleted_at.is_some(),
        }
    }
}

/// Which audit records to read: one item's history, or everything since an instant.
#[derive(Debug, Clone, Default)]
pub struct AuditQuery {
    pub item: Option<Uuid>,
    /// Records at or after this instant (epoch ms).
    pub since: Option<i64>,
    pub limit: usize,
    /// The newest `limit` records, newest first; otherwise the oldest, oldest first.
    pub newest_first: bool,
}

impl AuditQuery {
    /// `ORDER BY` of the query's records.
    pub(crate) fn order(&self) -> &'static str {
        if self.newest_first { "seq DESC" } else { "seq" }
    }
}

/// One change to one item, as the database recorded it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AuditRecord {
    /// Order of recording (increasing).
    pub seq: i64,
    /// When (epoch ms).
    pub at: i64,
    /// The stored text of an [`crate::AuditOperation`] (typed by [`AuditRecord::op`]).
    pub operation: String,
    pub item_id: Option<Uuid>,
    pub kind: Option<String>,
    pub scope: Scope,
    /// Who made the change, as the server established it (`key:acme/ana`, `local:dana`, …);
    /// `None` on records written before the audit_principal migration, or around Cortex.
    pub principal: Option<String>,
    /// What the change came through (`memory_store`, `web UI`, `cortex ingest`, …).
    pub via: Option<String>,
    /// What the client said of itself, as sent: a claim, not proven.
    #[serde(skip_serializing_if = "Claim::is_empty")]
    pub claimed: Claim,
    pub request_id: Option<String>,
    /// One id per write transaction: the records of one batch share it.
    pub batch_id: Option<String>,
    pub hash_before: Option<String>,
    pub hash_after: Option<String>,
    /// What changed, in a few words (`changed title, status`).
    pub summary: String,
}

/// What a client said of itself with a change (the item's `source`): taken as sent, never
/// checked. On records written before the audit_principal migration it holds the writer's name (the web UI's key,
/// an OAuth subject) when the item named none, and the channel (`cortex import`, `purge`) as
/// its tool: those records have no principal.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Claim {
    pub actor: Option<String>,
    pub tool: Option<String>,
    pub session: Option<String>,
}

impl Claim {
    pub fn is_empty(&self) -> bool {
        self.actor.is_none() && self.tool.is_none() && self.session.is_none()
    }
}

impl AuditRecord {
    /// The operation, or `None` for a text no version of Cortex writes.
    pub fn op(&self) -> Option<crate::AuditOperation> {
        crate::AuditOperation::parse(&self.operation)
    }
}

/// A stored kind, or an error naming it (never another kind in its place).
pub(crate) fn parse_kind(text: &str) -> crate::Result<Kind> {
    Kind::parse(text).ok_or_else(|| {
        crate::StoreError::Corrupt(format!("items.kind holds {text:?}, which is no known kind"))
    })
}

/// `(kind, count)` pairs in kind order.
pub(crate) fn count_by_kind(kinds: Vec<String>) -> Vec<(String, i64)> {
    let mut counts: std::collections::BTreeMap<String, i64> = std::collections::BTreeMap::new();
    for kind in kinds {
        *counts.entry(kind).or_default() += 1;
    }
    counts.into_iter().collect()
}

/// The ends of a record's link, as the store indexes them (`cortex_domain::graph::link_ends`).
pub(crate) fn link_ends(r: &Record) -> (Option<Uuid>, Option<Uuid>) {
    cortex_domain::graph::link_ends(r.kind, &r.data)
}

/// The natural key of a record, as the store keeps it.
pub(crate) fn natural_key_of(r: &Record) -> Option<String> {
    r.data.as_object().and_then(|data| cortex_domain::natural_key::natural_key(r.kind, data))
}

/// An API key as stored: everything but the secret, of which only the SHA-256 (hex) is kept.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiKeyRow {
    pub name: String,
    /// The public part of the token, unique: finds the row before the secret is checked.
    pub lookup: String,
    pub secret_hash: String,
    pub org: String,
    /// Empty: every project of the org.
    pub projects: Vec<String>,
    pub role: cortex_domain::api_key::Role,
    /// `None`: the server's default rate.
    pub rate_per_second: Option<f64>,
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

/// What asking the database to restore a revoked key came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyRestore {
    /// The key is live again, and a `key_restore` record says so.
    Restored,
    /// No key of this org has this name.
    Unknown,
    /// The key is not revoked: nothing to restore.
    NotRevoked,
    /// Revoked longer ago than the restore window (by the database's clock): never restored.
    TooLate,
}

impl KeyRestore {
    /// Why a key whose `revoked_at` reads `revoked` (`None`: no such key) was not restored.
    pub fn why_not(revoked: Option<Option<i64>>) -> KeyRestore {
        match revoked {
            None => KeyRestore::Unknown,
            Some(None) => KeyRestore::NotRevoked,
            Some(Some(_)) => KeyRestore::TooLate,
        }
    }
}

/// One connection pool's state: connections open, and how many of them wait unused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolState {
    /// `primary` or `replica`.
    pub pool: &'static str,
    pub connections: u32,
    pub idle: u32,
}

/// The git tables of a store, whole: what an export carries besides items and their
/// provenance.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitTables {
    pub heads: Vec<(cortex_domain::provenance::RepoBranch, cortex_domain::provenance::PathHead)>,
    pub paths: Vec<(cortex_domain::provenance::RepoBranch, cortex_domain::provenance::PathChange)>,
    pub merges: Vec<cortex_domain::provenance::BranchMerge>,
}
