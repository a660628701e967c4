//! The store flow: validate → normalize → hash (all in the domain) → scope → natural keys →
//! graph references (`references`) → governance → embed → near-duplicates → exact dedupe and write of the whole batch in one transaction (the store)
//! → one result per input item.
//!
//! - [`natural_keys`]: inserts that name an item already stored by its natural key
//! - [`govern`]: governance refusals and `supersedes` targets
//! - [`vectors`]: embedding and near-duplicates
//! - [`results`]: one result per input item, and the summary
//! - `refused`: a whole store refused for the caller's role, audited on the items it named

mod govern;
mod natural_keys;
mod refused;
mod results;
mod vectors;

use crate::response::{ErrorBody, ItemResult, ItemStatus, StoreResponse};
use crate::{MemoryService, Result, ServiceError};
use cortex_domain::Scope;
use cortex_domain::ValidationError;
use cortex_domain::item::{ItemOp, NewItem, parse_store_request};
use cortex_domain::lifecycle::{self, StatusChange};
use cortex_domain::{dedupe, graph};
use cortex_store::{ExpectedState, Record, StoreError, StoredItem, WriteContext, WriteOp, WriteOutcome};
use results::{near_duplicate, raw_kind, refused, result_of, summarize};
use uuid::Uuid;

impl MemoryService {
    /// Handles one `memory_store` request. A request-level problem is an `Err`; problems of
    /// single items are results of their own, and never stop the valid items.
    ///
    /// The checks read stored items before the write transaction opens; the store writes the
    /// batch only if those items are still as read (compare-and-set, `WriteContext::expected`).
    /// When another writer changed one in between, the whole request is checked again against
    /// the new state, a few times at most.
    pub fn store(&self, args: &serde_json::Value) -> Result<StoreResponse> {
        let mut attempt = 1;
        loop {
            match self.store_once(args) {
                Err(ServiceError::Internal(StoreError::Conflict { id })) if attempt < CONFLICT_ATTEMPTS => {
                    tracing::debug!(attempt, %id, "an item changed while the request was checked; checking again");
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    fn store_once(&self, args: &serde_json::Value) -> Result<StoreResponse> {
        let parsed = parse_store_request(args)?;
        let mut seen = Seen::default();
        let now = self.now()?;
        let mut results: Vec<Option<ItemResult>> = vec![None; parsed.len()];
        let mut ops = Vec::new();
        let mut positions = Vec::new();
        // What each new item replaces, by request position.
        let mut supersedes: Vec<Replacement> = Vec::new();
        for (index, item) in parsed.into_iter().enumerate() {
            let item = item.and_then(|op| self.check_bound(op, index));
            match item {
                Ok(op) => {
                    if let ItemOp::Upsert(item) = &op
                        && let Some(old) = item.supersedes
                    {
                        supersedes.push(Replacement { index, target: old, status: None });
                    }
                    ops.push(self.write_op(op, now));
                    positions.push(index);
                }
                Err(error) => results[index] = Some(refused(index, raw_kind(args, index), &error)),
            }
        }
        let (mut blocked, keyed) = self.resolve_natural_keys(&mut ops, &positions, now, &mut seen)?;
        let unresolved = self.resolve_references(&mut ops, &positions)?;
        drop_refused(args, unresolved, &mut ops, &mut positions, &mut results);
        blocked.extend(self.govern(&mut ops, &positions, now, &mut seen)?);
        let unreplaceable = self.check_supersedes(args, &mut supersedes)?;
        drop_refused(args, unreplaceable, &mut ops, &mut positions, &mut results);
        self.attach_vectors(&mut ops);
        // Near-duplicates leave the batch here, with their result; the rest are written.
        let near = self.near_duplicates(&ops, now);
        let mut kept_ops = Vec::with_capacity(ops.len());
        let mut kept_positions = Vec::with_capacity(ops.len());
        for ((op, index), dup) in ops.into_iter().zip(positions).zip(near) {
            match dup {
                Some((existing, similarity)) => {
                    results[index] = Some(near_duplicate(index, &op, existing, similarity))
                }
                None => {
                    kept_ops.push(op);
                    kept_positions.push(index);
                }
            }
        }
        let (ops, positions) = with_supersedes(kept_ops, kept_positions, &supersedes, now);
        if !ops.is_empty() {
            let context = WriteContext {
                request_id: Some(Uuid::now_v7().to_string()),
                expected: seen.0,
                ..WriteContext::default()
            };
            let outcomes = self.store.write_batch_as(&ops, &context)?;
            // A near-duplicate of an earlier item of this batch must name the item that holds
            // the knowledge in the end: that item's stored duplicate, if it was one.
            let mut replaced: Vec<(String, String)> = Vec::new();
            for ((index, op), outcome) in positions.into_iter().zip(&ops).zip(outcomes) {
                if let WriteOp::Supersede { id, .. } = op {
                    if let (Some(result), WriteOutcome::Updated { .. }) = (results[index].as_mut(), &outcome)
                    {
                        result.reason = Some(format!("supersedes {id}, which finds now leave out"));
                    }
                    continue;
                }
                if let (WriteOp::Insert { record, .. }, WriteOutcome::Duplicate { existing_id, .. }) =
                    (op, &outcome)
                {
                    replaced.push((record.id.to_string(), existing_id.to_string()));
                }
                results[index] = Some(result_of(index, op, outcome));
            }
            for result in results.iter_mut().flatten() {
                if let Some((_, existing)) =
                    replaced.iter().find(|(new, _)| result.existing_id.as_ref() == Some(new))
                {
                    result.existing_id = Some(existing.clone());
                    result.id = Some(existing.clone());
                }
            }
        }
        for (index, error) in blocked {
            if let Some(result) = results[index].as_mut() {
                result.error = Some(ErrorBody::from(&error));
            }
        }
        for (index, reason) in keyed {
            if let Some(result) = results[index].as_mut().filter(|r| r.status == ItemStatus::Updated) {
                result.reason = Some(reason);
            }
        }
        let results: Vec<ItemResult> = results.into_iter().flatten().collect();
        let summary = summarize(&results);
        Ok(StoreResponse { results, summary })
    }

    /// For an API key's holder: the item's scope (once the request's defaults fill it, or the
    /// stored item's for an update) must lie inside the key's bound. An id outside is left to
    /// the write, which answers it as an id that names no item.
    fn check_bound(&self, op: ItemOp, index: usize) -> std::result::Result<ItemOp, ValidationError> {
        let Some(bound) = &self.bound else { return Ok(op) };
        let ItemOp::Upsert(item) = &op else { return Ok(op) };
        let field = format!("items[{index}].scope");
        let scope = match item.id {
            None => item.scope.or(&self.inferred.scope),
            Some(id) => match self.store.get(&[id]) {
                Ok(stored) => match stored.first() {
                    Some(stored) => item.scope.or(&stored.record.scope),
                    None => return Ok(op),
                },
                // The write reads it again, and reports a failure there.
                Err(_) => return Ok(op),
            },
        };
        bound.check_write(&scope, &field)?;
        Ok(op)
    }

    fn write_op(&self, op: ItemOp, now: i64) -> WriteOp {
        match op {
            ItemOp::Delete { id, kind } => WriteOp::Delete { id, kind, at: now, cascade: graph::ON_REMOVAL },
            ItemOp::Upsert(item) => match item.id {
                // An update keeps the stored scope for fields the caller does not name.
                Some(id) => WriteOp::Update { record: record(*item.clone(), id, item.scope.clone(), now) },
                None => {
                    let scope = item.scope.or(&self.inferred.scope);
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
        vector: None,
        chunks: Vec::new(),
    }
}

/// How many times a request is checked and written when items it was checked against keep
/// changing under it; then the conflict is the answer (nothing written, retry later).
const CONFLICT_ATTEMPTS: usize = 4;

/// The stored items a request's checks read, as first read: what its write must find.
#[derive(Default)]
pub(super) struct Seen(Vec<ExpectedState>);

impl Seen {
    /// Records `item` as read, unless read already (the first read is what a merge or a
    /// verdict was derived from).
    pub(super) fn saw(&mut self, item: &StoredItem) {
        if !self.0.iter().any(|e| e.id == item.record.id) {
            self.0.push(ExpectedState::of(item));
        }
    }
}

/// Takes the refused items out of the batch, each with its result.
fn drop_refused(
    args: &serde_json::Value,
    refusals: Vec<(usize, ValidationError)>,
    ops: &mut Vec<WriteOp>,
    positions: &mut Vec<usize>,
    results: &mut [Option<ItemResult>],
) {
    for (index, error) in refusals {
        results[index] = Some(refused(index, raw_kind(args, index), &error));
        if let Some(at) = positions.iter().position(|&p| p == index) {
            ops.remove(at);
            positions.remove(at);
        }
    }
}

/// An item of the request that replaces a stored one (`supersedes`).
pub(super) struct Replacement {
    index: usize,
    target: Uuid,
    /// What superseding writes into the target's status, once its kind is known.
    status: Option<StatusChange>,
}

/// The ops with a `Supersede` right after each insert that replaces an item, in the same
/// transaction (and at the same request position).
fn with_supersedes(
    ops: Vec<WriteOp>,
    positions: Vec<usize>,
    supersedes: &[Replacement],
    now: i64,
) -> (Vec<WriteOp>, Vec<usize>) {
    let mut out_ops = Vec::with_capacity(ops.len());
    let mut out_positions = Vec::with_capacity(positions.len());
    for (op, index) in ops.into_iter().zip(positions) {
        let follow = match &op {
            WriteOp::Insert { record, .. } => supersedes
                .iter()
                .find(|r| r.index == index)
                .map(|r| WriteOp::Supersede { id: r.target, by: record.id, at: now, status: r.status }),
            _ => None,
        };
        out_ops.push(op);
        out_positions.push(index);
        if let Some(follow) = follow {
            out_ops.push(follow);
            out_positions.push(index);
        }
    }
    (out_ops, out_positions)
}
