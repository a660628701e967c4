//! The store as the holder of an API key sees it: only the items its tenant bound
//! ([`cortex_domain::tenant::Bound`]) admits exist. Every path of the service reads and writes
//! through this view, so no flow needs its own check to keep a tenant in:
//! - reads by id return only admitted items (a find by `ids`, update and delete targets,
//!   `supersedes`, relation ends, the checks of governance and merges);
//! - searches, counts and the briefing's reads carry the bound as a filter clause;
//! - a word is known only when an admitted item holds it (the hints' and typo corrections'
//!   vocabulary is the lexical index's, checked against the bound in `crate::vocabulary`);
//! - links and audit records of items outside are left out;
//! - a batch's update, delete or supersede of an item outside is answered as for an id that
//!   names no item, and nothing of it is written.
//!
//! The flows check scopes too, for the clear per-item error (`forbidden_scope`); this view is
//! what holds when a flow forgets.

use cortex_domain::query::{ParsedQuery, Term};
use cortex_domain::tenant::Bound;
use cortex_domain::{Scope, graph::Cascade};
use cortex_store::audit_chain::{ChainRecord, SchemaDrift, TrailMismatch};
use cortex_store::{
    ApiKeyRow, ApiKeys, AuditQuery, AuditRecord, AuditTrail, ChangeCursor, Changes, Combine, DenseMatch,
    ExportedItem, Filters, GraphLinks, ItemReads, ItemVectors, ItemWrites, LexicalMatch, LexicalQuery,
    LexicalSearch, Link, Maintenance, Metadata, Neighbour, Result, Stats, Store, StoredItem, VectorRow,
    VectorSource, WriteContext, WriteOp, WriteOutcome,
};
use std::collections::HashSet;
use std::sync::Arc;
use uuid::Uuid;

pub struct BoundedStore {
    inner: Arc<dyn Store>,
    bound: Bound,
}

impl BoundedStore {
    pub fn new(inner: Arc<dyn Store>, bound: Bound) -> BoundedStore {
        BoundedStore { inner, bound }
    }

    fn bounded(&self, filters: &Filters) -> Filters {
        Filters { bound: Some(self.bound.clone()), ..filters.clone() }
    }

    fn admits(&self, scope: &Scope) -> bool {
        self.bound.admits(scope)
    }

    /// The ids among `ids` of items stored inside the bound (deleted ones included).
    fn inside(&self, ids: &[Uuid]) -> Result<HashSet<Uuid>> {
        if ids.is_empty() {
            return Ok(HashSet::new());
        }
        Ok(self
            .inner
            .get(ids)?
            .into_iter()
            .filter(|i| self.admits(&i.record.scope))
            .map(|i| i.record.id)
            .collect())
    }

    /// Whether some item inside the bound (live or not) holds this index term.
    fn term_inside(&self, term: &str) -> Result<bool> {
        let query = LexicalQuery {
            query: ParsedQuery { include: vec![Term::Word(term.to_string())], ..ParsedQuery::default() },
            combine: Combine::All,
            filters: Filters {
                bound: Some(self.bound.clone()),
                include_expired: true,
                include_superseded: true,
                ..Filters::default()
            },
            pool: 1,
        };
        Ok(self.inner.count_lexical(&query, 1)? > 0)
    }

    /// Whether a write op stays inside the bound: what it inserts is scoped inside, what it
    /// changes in place is stored inside (`inside`), and an update leaves it inside.
    fn op_inside(&self, op: &WriteOp, inside: &HashSet<Uuid>, stored: &[StoredItem]) -> bool {
        match op {
            WriteOp::Insert { record, .. } => self.admits(&record.scope),
            WriteOp::Update { record } => {
                inside.contains(&record.id)
                    && stored
                        .iter()
                        .find(|s| s.record.id == record.id)
                        .is_some_and(|s| self.admits(&record.scope.or(&s.record.scope)))
            }
            WriteOp::Delete { id, .. } | WriteOp::Supersede { id, .. } => inside.contains(id),
            // A refusal recorded about a stored item must be about one inside; one about an
            // item never stored must be scoped inside.
            WriteOp::Blocked(attempt) => {
                self.admits(&attempt.scope)
                    && stored
                        .iter()
                        .find(|s| s.record.id == attempt.id)
                        .is_none_or(|_| inside.contains(&attempt.id))
            }
            // Moving items between stores is the local user's (`cortex import`).
            WriteOp::Import { .. } => false,
        }
    }
}

fn target(op: &WriteOp) -> Option<Uuid> {
    match op {
        WriteOp::Update { record } => Some(record.id),
        WriteOp::Delete { id, .. } | WriteOp::Supersede { id, .. } => Some(*id),
        WriteOp::Blocked(attempt) => Some(attempt.id),
        WriteOp::Insert { .. } | WriteOp::Import { .. } => None,
    }
}

fn op_id(op: &WriteOp) -> Uuid {
    match op {
        WriteOp::Insert { record, .. } | WriteOp::Update { record } => record.id,
        WriteOp::Delete { id, .. } | WriteOp::Supersede { id, .. } => *id,
        WriteOp::Blocked(attempt) => attempt.id,
        WriteOp::Import { item, .. } => item.record.id,
    }
}

impl ItemWrites for BoundedStore {
    fn write_batch_as(&self, ops: &[WriteOp], context: &WriteContext) -> Result<Vec<WriteOutcome>> {
        let targets: Vec<Uuid> = ops.iter().filter_map(target).collect();
        let stored = if targets.is_empty() { Vec::new() } else { self.inner.get(&targets)? };
        let inside: HashSet<Uuid> =
            stored.iter().filter(|i| self.admits(&i.record.scope)).map(|i| i.record.id).collect();
        let admitted: Vec<bool> = ops.iter().map(|op| self.op_inside(op, &inside, &stored)).collect();
        if admitted.iter().all(|a| *a) {
            return self.inner.write_batch_as(ops, context);
        }
        let kept: Vec<WriteOp> =
            ops.iter().zip(&admitted).filter(|(_, a)| **a).map(|(op, _)| op.clone()).collect();
        let mut written =
            if kept.is_empty() { Vec::new() } else { self.inner.write_batch_as(&kept, context)? }.into_iter();
        let mut out = Vec::with_capacity(ops.len());
        for (op, admitted) in ops.iter().zip(admitted) {
            match admitted {
                true => out.extend(written.next()),
                false => out.push(WriteOutcome::NotFound { id: op_id(op) }),
            }
        }
        Ok(out)
    }
}

impl ItemReads for BoundedStore {
    fn get(&self, ids: &[Uuid]) -> Result<Vec<StoredItem>> {
        Ok(self.inner.get(ids)?.into_iter().filter(|i| self.admits(&i.record.scope)).collect())
    }

    fn recent(&self, filters: &Filters, limit: usize) -> Result<Vec<StoredItem>> {
        self.inner.recent(&self.bounded(filters), limit)
    }

    fn natural_key_owner(&self, scope: &Scope, key: &str) -> Result<Option<Uuid>> {
        if !self.admits(scope) {
            return Ok(None);
        }
        self.inner.natural_key_owner(scope, key)
    }

    fn idempotency_owner(&self, scope: &Scope, key: &str) -> Result<Option<Uuid>> {
        if !self.admits(scope) {
            return Ok(None);
        }
        self.inner.idempotency_owner(scope, key)
    }

    /// Only the neighbours the bound admits: the filter carries it, and the anchors are the
    /// caller's own hits.
    fn session_neighbours(&self, ids: &[Uuid], filters: &Filters, window: usize) -> Result<Vec<Neighbour>> {
        self.inner.session_neighbours(ids, &self.bounded(filters), window)
    }
}

impl LexicalSearch for BoundedStore {
    fn search_lexical(&self, query: &LexicalQuery) -> Result<Vec<LexicalMatch>> {
        self.inner.search_lexical(&LexicalQuery { filters: self.bounded(&query.filters), ..query.clone() })
    }

    fn count_lexical(&self, query: &LexicalQuery, cap: usize) -> Result<usize> {
        self.inner
            .count_lexical(&LexicalQuery { filters: self.bounded(&query.filters), ..query.clone() }, cap)
    }

    fn knows_word(&self, word: &str) -> Result<bool> {
        Ok(self.inner.knows_word(word)? && self.term_inside(word)?)
    }

    fn surface_word(&self, term: &str) -> Result<String> {
        self.inner.surface_word(term)
    }
}

impl VectorSource for BoundedStore {
    // The in-process index loads every item; its searches carry the bound in their filters.
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

    fn vectors_of(&self, ids: &[Uuid]) -> Result<Vec<ItemVectors>> {
        let inside = self.inside(ids)?;
        Ok(self.inner.vectors_of(ids)?.into_iter().filter(|v| inside.contains(&v.id)).collect())
    }

    fn set_vectors(&self, vectors: &[ItemVectors]) -> Result<()> {
        let ids: Vec<Uuid> = vectors.iter().map(|v| v.id).collect();
        let inside = self.inside(&ids)?;
        let kept: Vec<ItemVectors> = vectors.iter().filter(|v| inside.contains(&v.id)).cloned().collect();
        self.inner.set_vectors(&kept)
    }

    // What the background embedding and `doctor` read: they work on the whole store, never
    // through a caller's bound.
    fn unembedded(&self, after: Option<Uuid>, limit: usize) -> Result<Vec<Uuid>> {
        self.inner.unembedded(after, limit)
    }

    fn count_unembedded(&self) -> Result<i64> {
        self.inner.count_unembedded()
    }

    fn search_dense(&self, vector: &[f32], filters: &Filters, k: usize) -> Result<Option<Vec<DenseMatch>>> {
        self.inner.search_dense(vector, &self.bounded(filters), k)
    }
}

impl GraphLinks for BoundedStore {
    /// Links inside the bound whose ends are inside too (a relation the local user stored
    /// without a project may point anywhere).
    fn links(&self, ids: &[Uuid]) -> Result<Vec<Link>> {
        let links: Vec<Link> =
            self.inner.links(ids)?.into_iter().filter(|l| self.admits(&l.facts.scope)).collect();
        let ends: Vec<Uuid> = links.iter().flat_map(|l| [Some(l.from), l.to]).flatten().collect();
        let inside = self.inside(&ends)?;
        Ok(links
            .into_iter()
            .filter(|l| inside.contains(&l.from) && l.to.is_none_or(|to| inside.contains(&to)))
            .collect())
    }

    fn incoming_links(&self, ids: &[Uuid], now: i64) -> Result<Vec<(Uuid, i64)>> {
        self.inner.incoming_links(ids, now)
    }
}

impl AuditTrail for BoundedStore {
    fn audit(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>> {
        Ok(self.inner.audit(query)?.into_iter().filter(|r| self.admits(&r.scope)).collect())
    }

    // The hash chain spans every tenant: verifying it is the local user's (`cortex audit`).
    fn audit_chain(&self, _after: i64, _limit: usize) -> Result<Vec<ChainRecord>> {
        Ok(Vec::new())
    }

    fn audit_record(&self, _seq: i64) -> Result<Option<ChainRecord>> {
        Ok(None)
    }

    fn audit_record_before_last(&self, _n: usize) -> Result<Option<ChainRecord>> {
        Ok(None)
    }

    fn audit_trail_mismatches(&self, _limit: usize) -> Result<Vec<TrailMismatch>> {
        Ok(Vec::new())
    }

    fn schema_drift(&self) -> Result<Vec<SchemaDrift>> {
        Ok(Vec::new())
    }
}

/// Whole-store work is the local user's: a key's holder purges, counts and exports nothing.
impl Maintenance for BoundedStore {
    fn purge_expired(
        &self,
        _now: i64,
        _limit: usize,
        _dry_run: bool,
        _cascade: Cascade,
    ) -> Result<Vec<(String, i64)>> {
        Ok(Vec::new())
    }

    fn stats(&self) -> Result<Stats> {
        Ok(Stats::default())
    }

    fn export_page(&self, _after: Option<Uuid>, _limit: usize) -> Result<Vec<ExportedItem>> {
        Ok(Vec::new())
    }

    fn connections(&self) -> usize {
        self.inner.connections()
    }

    fn label(&self) -> String {
        self.inner.label()
    }

    fn now(&self) -> Result<i64> {
        self.inner.now()
    }

    fn integrity_problems(&self, _full: bool) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
}

impl Metadata for BoundedStore {
    fn meta(&self, key: &str) -> Result<Option<String>> {
        self.inner.meta(key)
    }

    fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        self.inner.set_meta(key, value)
    }
}

/// Keys are the local user's (`cortex keys` on the server): a key's holder sees none and may
/// make or revoke none.
impl ApiKeys for BoundedStore {
    fn create_key(&self, _key: &ApiKeyRow) -> Result<bool> {
        Err(keys_are_local())
    }

    fn keys(&self) -> Result<Vec<ApiKeyRow>> {
        Ok(Vec::new())
    }

    fn key_by_lookup(&self, _lookup: &str) -> Result<Option<ApiKeyRow>> {
        Ok(None)
    }

    fn revoke_key(&self, _name: &str, _at: i64) -> Result<bool> {
        Err(keys_are_local())
    }

    fn any_key(&self) -> Result<bool> {
        self.inner.any_key()
    }
}

fn keys_are_local() -> cortex_store::StoreError {
    cortex_store::StoreError::Unsupported {
        what: "managing API keys under an API key".into(),
        fix: "keys are made and revoked on the server, with `cortex keys`".into(),
    }
}
