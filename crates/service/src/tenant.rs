//! The store as the holder of an API key sees it: only the items its tenant bound
//! ([`cortex_domain::tenant::Bound`]) admits exist. Every path of the service reads and writes
//! through this view, so no flow needs its own check to keep a tenant in:
//! - reads by id return only admitted items (a find by `ids`, update and delete targets,
//!   `supersedes`, relation ends, the checks of governance and merges);
//! - searches, counts and the briefing's reads carry the bound as a filter clause;
//! - links and audit records of items outside are left out, and relations outside count for
//!   no item's citations;
//! - a batch's update, delete or supersede of an item outside is answered as for an id that
//!   names no item, and nothing of it is written.
//!
//! The flows check scopes too, for the clear per-item error (`forbidden_scope`); this view is
//! what holds when a flow forgets.
//!
//! It is a [`cortex_store::TenantStore`] and nothing more: what spans every tenant (the change feed, counts,
//! integrity, purge, export, metadata, keys, the audit chain) is not part of it, so a flow
//! holding it cannot reach those at all; the service reaches them through `MemoryService::whole_store`,
//! which a key's holder is refused.

use cortex_domain::Scope;
use cortex_domain::provenance::{BranchMerge, PathChange, PathHead, Provenance, RepoBranch};
use cortex_domain::tenant::Bound;
use cortex_store::{
    AuditQuery, AuditRecord, DenseMatch, DenseSearch, Filters, GitReads, GraphLinks, ItemReads, ItemVectors,
    ItemWrites, LexicalMatch, LexicalQuery, LexicalSearch, Link, Neighbour, Result, Store, StoredItem,
    WriteContext, WriteOp, WriteOutcome,
};
use std::collections::HashSet;
use std::sync::Arc;
use uuid::Uuid;

pub struct BoundedStore {
    /// The whole store: the view reads it and filters what comes back.
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
            WriteOp::Delete { id, .. } | WriteOp::Restore { id, .. } | WriteOp::Supersede { id, .. } => {
                inside.contains(id)
            }
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
            WriteOp::Provenance { id, .. } | WriteOp::Confirm { id, .. } => inside.contains(id),
        }
    }
}

fn target(op: &WriteOp) -> Option<Uuid> {
    match op {
        WriteOp::Update { record } => Some(record.id),
        WriteOp::Delete { id, .. } | WriteOp::Restore { id, .. } | WriteOp::Supersede { id, .. } => Some(*id),
        WriteOp::Blocked(attempt) => Some(attempt.id),
        WriteOp::Confirm { id, .. } => Some(*id),
        // Follows the insert or update of its item in the same batch (checked there).
        WriteOp::Insert { .. } | WriteOp::Import { .. } | WriteOp::Provenance { .. } => None,
    }
}

fn op_id(op: &WriteOp) -> Uuid {
    match op {
        WriteOp::Insert { record, .. } | WriteOp::Update { record } => record.id,
        WriteOp::Delete { id, .. } | WriteOp::Restore { id, .. } | WriteOp::Supersede { id, .. } => *id,
        WriteOp::Blocked(attempt) => attempt.id,
        WriteOp::Import { item, .. } => item.record.id,
        WriteOp::Provenance { id, .. } | WriteOp::Confirm { id, .. } => *id,
    }
}

impl ItemWrites for BoundedStore {
    fn write_batch_as(&self, ops: &[WriteOp], context: &WriteContext) -> Result<Vec<WriteOutcome>> {
        let targets: Vec<Uuid> = ops.iter().filter_map(target).collect();
        let stored = if targets.is_empty() { Vec::new() } else { self.inner.get(&targets)? };
        let inside: HashSet<Uuid> =
            stored.iter().filter(|i| self.admits(&i.record.scope)).map(|i| i.record.id).collect();
        let mut admitted: Vec<bool> = ops.iter().map(|op| self.op_inside(op, &inside, &stored)).collect();
        // An item's provenance may follow its insert in the batch: admitted with the insert.
        let fresh: HashSet<Uuid> = ops
            .iter()
            .zip(&admitted)
            .filter_map(|(op, ok)| match op {
                WriteOp::Insert { record, .. } if *ok => Some(record.id),
                _ => None,
            })
            .collect();
        for (op, ok) in ops.iter().zip(admitted.iter_mut()) {
            if let WriteOp::Provenance { id, .. } = op {
                *ok |= fresh.contains(id);
            }
        }
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

    fn now(&self) -> Result<i64> {
        self.inner.now()
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

    /// Records about items outside the bound, and about no item (keys), are left out.
    fn audit(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>> {
        Ok(self.inner.audit(query)?.into_iter().filter(|r| self.admits(&r.scope)).collect())
    }

    fn places(&self) -> Result<Vec<cortex_store::Place>> {
        Ok(self.inner.places()?.into_iter().filter(|p| self.admits(&p.scope)).collect())
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
}

impl DenseSearch for BoundedStore {
    fn vectors_of(&self, ids: &[Uuid]) -> Result<Vec<ItemVectors>> {
        let inside = self.inside(ids)?;
        Ok(self.inner.vectors_of(ids)?.into_iter().filter(|v| inside.contains(&v.id)).collect())
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

    /// Only relations inside the bound count: another tenant's links to an item cannot lift
    /// it in this tenant's ranking.
    fn incoming_links(&self, ids: &[Uuid], relations: &Filters) -> Result<Vec<(Uuid, i64)>> {
        self.inner.incoming_links(ids, &self.bounded(relations))
    }
}

impl GitReads for BoundedStore {
    /// Only the provenance of items inside the bound.
    fn provenance_of(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, Provenance)>> {
        let inside = self.inside(ids)?;
        Ok(self.inner.provenance_of(ids)?.into_iter().filter(|(id, _)| inside.contains(id)).collect())
    }

    /// Only the path tables of a project inside the bound.
    fn path_changes(&self, at: &RepoBranch, paths: &[String]) -> Result<Vec<PathChange>> {
        match self.admits_project(&at.org, &at.project) {
            true => self.inner.path_changes(at, paths),
            false => Ok(Vec::new()),
        }
    }

    fn path_head(&self, at: &RepoBranch) -> Result<Option<PathHead>> {
        match self.admits_project(&at.org, &at.project) {
            true => self.inner.path_head(at),
            false => Ok(None),
        }
    }

    fn merges(&self, org: &str, project: &str) -> Result<Vec<BranchMerge>> {
        match self.admits_project(org, project) {
            true => self.inner.merges(org, project),
            false => Ok(Vec::new()),
        }
    }
}

impl BoundedStore {
    fn admits_project(&self, org: &str, project: &str) -> bool {
        self.admits(&Scope { org: Some(org.into()), project: Some(project.into()), ..Scope::default() })
    }
}
