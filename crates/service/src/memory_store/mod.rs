//! The `memory_store` flow ([`MemoryStore`]), one pipeline over a batch of pending items (`batch`): validate → normalize
//! → hash (all in the domain) → secrets redacted (or refused) and the hash made again → scope (and a key's tenant bound) → natural keys → graph
//! references → governance and `supersedes` targets → embed → near-duplicates → exact dedupe
//! and write of the whole batch in one transaction (the store) → one result per input item.
//!
//! - [`batch`]: the pending items, each with its request position and op, and the results
//! - [`secrets`]: credentials in an item's text, redacted or refused (`CORTEX_SECRETS`)
//! - [`bound`]: every item's scope inside an API key's bound
//! - [`natural_keys`]: inserts that name an item already stored by its natural key
//! - [`references`]: relation and observation ends resolved to item ids
//! - [`govern`]: governance refusals and `supersedes` targets
//! - [`vectors`]: embedding and near-duplicates
//! - [`provenance`]: each item's commit and files, and a confirm's new baseline
//! - [`contradict`]: the items in force an inserted decision (runbook, section) may contradict
//! - [`write`]: the transaction, and each outcome as its item's result
//! - [`results`]: one result per input item, and the summary
//! - [`refused`]: a store the caller's role may not make, recorded as blocked attempts

mod batch;
mod bound;
mod contradict;
mod govern;
mod natural_keys;
pub(crate) mod provenance;
mod references;
mod refusal_budget;
mod refused;
mod results;
mod secrets;
mod vectors;
mod write;

pub(crate) use govern::view_of;

use crate::response::StoreResponse;
use crate::{MemoryService, Result, ServiceError};
use batch::{Batch, Pending, Replacement};
use cortex_domain::Scope;
use cortex_domain::item::{ItemOp, NewItem, StoreRequest};
use cortex_domain::lifecycle;
use cortex_domain::{dedupe, graph};
use cortex_store::{Record, StoreError, WriteOp};
use uuid::Uuid;

pub(crate) use refusal_budget::RefusalBudget;

/// The `memory_store` flow as one caller is served (see the module doc); made by
/// [`MemoryService::memory_store`].
pub struct MemoryStore<'a> {
    pub(crate) service: &'a MemoryService,
}

impl MemoryStore<'_> {
    /// Handles one `memory_store` request. A request-level problem is an `Err`; problems of
    /// single items are results of their own, and never stop the valid items.
    ///
    /// The checks read stored items before the write transaction opens; the store writes the
    /// batch only if those items are still as read (compare-and-set, `WriteContext::expected`).
    /// When another writer changed one in between, the whole request is checked again against
    /// the new state, a few times at most.
    pub fn store(&self, request: &StoreRequest) -> Result<StoreResponse> {
        request.check()?;
        let _lane = self.service.write_lane();
        let mut attempt = 1;
        loop {
            match self.store_once(request) {
                Err(ServiceError::Internal(StoreError::Conflict { id })) if attempt < CONFLICT_ATTEMPTS => {
                    tracing::debug!(attempt, %id, "an item changed while the request was checked; checking again");
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    /// One pass of the pipeline over the request's items (see `batch`).
    fn store_once(&self, request: &StoreRequest) -> Result<StoreResponse> {
        let now = self.service.now()?;
        let kinds =
            request.items.iter().map(|item| item.as_ref().map_or_else(|r| r.kind, ItemOp::kind)).collect();
        let mut redacted = Vec::new();
        let items = request
            .items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                let (op, found) = self.screen(index, item.clone()?)?;
                if !found.is_empty() {
                    redacted.push((index, found));
                }
                let (replaces, claim) = match &op {
                    ItemOp::Upsert(item) => (
                        item.supersedes.map(|target| Replacement {
                            target,
                            status: None,
                            on_item: item.supersedes_on_item,
                        }),
                        item.claim.clone(),
                    ),
                    ItemOp::Delete { .. } | ItemOp::Restore { .. } | ItemOp::Confirm { .. } => {
                        (None, Default::default())
                    }
                };
                Ok(Pending { index, op: self.write_op(op, now), replaces, claim, provenance: None })
            })
            .collect();
        let mut batch = Batch::new(kinds, items);
        batch.redacted = redacted;
        self.check_bound(&mut batch)?;
        self.resolve_natural_keys(&mut batch, now)?;
        self.resolve_references(&mut batch)?;
        self.govern(&mut batch, now)?;
        self.check_supersedes(&mut batch)?;
        self.attach_vectors(&mut batch);
        self.drop_near_duplicates(&mut batch, now);
        self.attach_provenance(&mut batch)?;
        self.write(&mut batch, now)?;
        self.name_contradictions(&mut batch, now)?;
        self.service.shared.lexical.after_write();
        Ok(batch.finish())
    }

    fn write_op(&self, op: ItemOp, now: i64) -> WriteOp {
        match op {
            ItemOp::Delete { id, kind } => WriteOp::Delete { id, kind, at: now, cascade: graph::ON_REMOVAL },
            ItemOp::Restore { id, kind } => WriteOp::Restore { id, kind, at: now },
            // The provenance is stamped by its stage (`provenance`).
            ItemOp::Confirm { id, kind } => {
                WriteOp::Confirm { id, kind, provenance: Box::default(), at: now }
            }
            ItemOp::Upsert(item) => match item.id {
                // An update keeps the stored scope for fields the caller does not name.
                Some(id) => WriteOp::Update { record: record(*item.clone(), id, item.scope.clone(), now) },
                None => {
                    let scope = item.scope.or(&self.service.inferred.scope);
                    let dedupe = item.dedupe;
                    let checks = dedupe::insert_checks(item.kind, dedupe);
                    WriteOp::Insert { record: record(*item, Uuid::now_v7(), scope, now), checks }
                }
            },
        }
    }
}

fn record(item: NewItem, id: Uuid, scope: Scope, now: i64) -> Record {
    let life = lifecycle::expiry(item.kind, &item.data, item.ttl, item.expires_at, now);
    Record {
        id,
        kind: item.kind,
        scope,
        title: item.title,
        body: item.body,
        content: item.content,
        data: serde_json::Value::Object(item.data),
        metadata: item.metadata,
        source: item.source,
        tags: item.tags,
        status: item.status,
        content_hash: item.content_hash,
        idempotency_key: item.idempotency_key,
        ttl: Some(life.ttl),
        created_at: now,
        updated_at: now,
        expires_at: life.expires_at,
        occurred_at: item.occurred_at,
        vector: None,
        chunks: Vec::new(),
    }
}

/// How many times a request is checked and written when items it was checked against keep
/// changing under it; then the conflict is the answer (nothing written, retry later).
const CONFLICT_ATTEMPTS: usize = 4;
