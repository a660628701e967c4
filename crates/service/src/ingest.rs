//! The store flow: validate → normalize → hash (all in the domain) → scope → natural keys →
//! graph references (`references`) → governance → embed → near-duplicates → exact dedupe and write of the whole batch in one transaction (the store)
//! → one result per input item.

use crate::response::{ErrorBody, ItemResult, ItemStatus, StoreResponse, StoreSummary};
use crate::semantic::{Compare, EmbeddingInputs};
use crate::{MemoryService, Result};
use cortex_domain::governance::{StoredView, check_delete, check_update};
use cortex_domain::graph;
use cortex_domain::item::{ItemOp, NewItem, derive, parse_store_request};
use cortex_domain::natural_key::{self, OnMatch};
use cortex_domain::{ErrorCode, Kind, Scope, ValidationError};
use cortex_domain::{lifecycle, near_duplicate};
use cortex_store::{BlockedAttempt, DuplicateReason, Filters, Record, WriteContext, WriteOp, WriteOutcome};
use uuid::Uuid;

impl MemoryService {
    /// Handles one `memory_store` request. A request-level problem is an `Err`; problems of
    /// single items are results of their own, and never stop the valid items.
    pub fn store(&self, args: &serde_json::Value) -> Result<StoreResponse> {
        let parsed = parse_store_request(args)?;
        let now = self.now()?;
        let mut results: Vec<Option<ItemResult>> = vec![None; parsed.len()];
        let mut ops = Vec::new();
        let mut positions = Vec::new();
        // What each new item replaces, by request position.
        let mut supersedes: Vec<(usize, Uuid)> = Vec::new();
        for (index, item) in parsed.into_iter().enumerate() {
            match item {
                Ok(op) => {
                    if let ItemOp::Upsert(item) = &op
                        && let Some(old) = item.supersedes
                    {
                        supersedes.push((index, old));
                    }
                    ops.push(self.write_op(op, now));
                    positions.push(index);
                }
                Err(error) => results[index] = Some(refused(index, raw_kind(args, index), &error)),
            }
        }
        let (mut blocked, keyed) = self.resolve_natural_keys(&mut ops, &positions, now)?;
        let unresolved = self.resolve_references(&mut ops, &positions)?;
        drop_refused(args, unresolved, &mut ops, &mut positions, &mut results);
        blocked.extend(self.govern(&mut ops, &positions, now)?);
        let unreplaceable = self.check_supersedes(args, &supersedes)?;
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
            let context =
                WriteContext { request_id: Some(Uuid::now_v7().to_string()), ..WriteContext::default() };
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

    /// Inserts whose natural key a live item of the project holds (issue, pr_context, ddl):
    /// an issue or pull request updates that item instead; a DDL migration with a different
    /// checksum becomes a `Blocked` op (the same checksum stays an insert, which the store
    /// reports as a duplicate, as it does for changes). Returns the refusals and, for the
    /// inserts turned into updates, why.
    #[allow(clippy::type_complexity)]
    fn resolve_natural_keys(
        &self,
        ops: &mut [WriteOp],
        positions: &[usize],
        now: i64,
    ) -> Result<(Vec<(usize, ValidationError)>, Vec<(usize, String)>)> {
        let mut blocked = Vec::new();
        let mut keyed = Vec::new();
        // Earlier inserts of this batch own their key too: a later one updates them.
        let mut in_batch: Vec<(Scope, String, Uuid)> = Vec::new();
        for (op, &index) in ops.iter_mut().zip(positions) {
            let WriteOp::Insert { record, .. } = op else { continue };
            let Some(key) = record.data.as_object().and_then(|d| natural_key::natural_key(record.kind, d))
            else {
                continue;
            };
            let on_match = natural_key::on_match(record.kind);
            if on_match == OnMatch::Skip {
                continue;
            }
            let earlier = in_batch
                .iter()
                .find(|(scope, k, _)| *k == key && scope.same_project(&record.scope))
                .map(|(_, _, id)| *id);
            let owner = match earlier {
                Some(id) => Some(id),
                None => self.store.natural_key_owner(&record.scope, &key)?,
            };
            let Some(owner) = owner else {
                in_batch.push((record.scope.clone(), key, record.id));
                continue;
            };
            match on_match {
                OnMatch::Update => {
                    let mut updated = record.clone();
                    updated.id = owner;
                    if record.kind == Kind::Entity
                        && earlier.is_none()
                        && let Some(current) = self.store.get(&[owner])?.first()
                    {
                        merge_entity(&mut updated, &current.record);
                    }
                    keyed.push((index, format!("{}: updated in place", natural_key::describe(record.kind))));
                    *op = WriteOp::Update { record: updated };
                }
                OnMatch::SameChecksum => {
                    let stored = self.store.get(&[owner])?;
                    let Some(current) = stored.first() else { continue };
                    let (old, new) = (current.record.data.get("checksum"), record.data.get("checksum"));
                    if old == new {
                        continue;
                    }
                    let error = ValidationError::new(
                        ErrorCode::BusinessRuleBlocked,
                        format!("items[{index}].data.ddl_text"),
                        format!(
                            "migration {} is already stored (item {owner}) with another checksum; an applied migration never changes",
                            record.data.get("migration_id").map(|v| v.to_string()).unwrap_or_default()
                        ),
                        "store the change as a new migration with its own migration_id",
                    );
                    *op = WriteOp::Blocked(Box::new(BlockedAttempt {
                        id: owner,
                        kind: record.kind,
                        scope: current.record.scope.clone(),
                        hash: Some(current.record.content_hash.clone()),
                        source: record.source.clone(),
                        reason: error.message.clone(),
                        at: now,
                    }));
                    blocked.push((index, error));
                }
                OnMatch::Skip => {}
            }
        }
        Ok((blocked, keyed))
    }

    /// Replaces each update or delete that a governance rule refuses with a `Blocked` op, so
    /// the attempt is audited in the batch's transaction; returns the refusals by request
    /// position.
    fn govern(
        &self,
        ops: &mut [WriteOp],
        positions: &[usize],
        now: i64,
    ) -> Result<Vec<(usize, ValidationError)>> {
        let ids: Vec<Uuid> = ops
            .iter()
            .filter_map(|op| match op {
                WriteOp::Update { record } => Some(record.id),
                WriteOp::Delete { id, .. } => Some(*id),
                _ => None,
            })
            .collect();
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let stored = self.store.get(&ids)?;
        let mut blocked = Vec::new();
        for (op, &index) in ops.iter_mut().zip(positions) {
            let (id, source) = match op {
                WriteOp::Update { record } => (record.id, record.source.clone()),
                WriteOp::Delete { id, .. } => (*id, None),
                _ => continue,
            };
            // Missing, deleted or of another kind: the store answers those.
            let Some(current) = stored.iter().find(|s| s.record.id == id && s.deleted_at.is_none()) else {
                continue;
            };
            let c = &current.record;
            let view = StoredView {
                id: c.id,
                kind: c.kind,
                status: c.status.as_deref(),
                data: &c.data,
                content_hash: &c.content_hash,
            };
            let verdict = match op {
                WriteOp::Update { record } if record.kind == c.kind => {
                    check_update(view, &record.data, &record.content_hash)
                }
                WriteOp::Delete { kind, .. } if kind.is_none_or(|k| k == c.kind) => check_delete(view),
                _ => Ok(()),
            };
            if let Err(error) = verdict {
                let error = error.under(&format!("items[{index}]"));
                *op = WriteOp::Blocked(Box::new(BlockedAttempt {
                    id: c.id,
                    kind: c.kind,
                    scope: c.scope.clone(),
                    hash: Some(c.content_hash.clone()),
                    source,
                    reason: error.message.clone(),
                    at: now,
                }));
                blocked.push((index, error));
            }
        }
        Ok(blocked)
    }

    /// Each item naming `supersedes` must name a live item that nothing superseded yet; the
    /// refusals by request position.
    fn check_supersedes(
        &self,
        args: &serde_json::Value,
        wanted: &[(usize, Uuid)],
    ) -> Result<Vec<(usize, ValidationError)>> {
        if wanted.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<Uuid> = wanted.iter().map(|(_, id)| *id).collect();
        let stored = self.store.get(&ids)?;
        let mut refused = Vec::new();
        for &(index, id) in wanted {
            let problem = match stored.iter().find(|s| s.record.id == id) {
                None => Some(format!("no item {id} exists")),
                Some(s) if s.deleted_at.is_some() => Some(format!("item {id} is deleted")),
                Some(s) => s.superseded_by.map(|by| format!("item {id} is already superseded by {by}")),
            };
            if let Some(message) = problem {
                let named_on_top = args["items"][index].get("supersedes").is_some_and(|v| !v.is_null());
                let field = if named_on_top { "supersedes" } else { "data.supersedes" };
                refused.push((
                    index,
                    ValidationError::new(
                        ErrorCode::NotFound,
                        format!("items[{index}].{field}"),
                        message,
                        "name the id of the live item this one replaces (memory_find returns ids), or leave out `supersedes`",
                    ),
                ));
            }
        }
        Ok(refused)
    }

    /// Embeds every inserted or updated item in one batch: its whole text and, for a long
    /// document, each of its chunks (`semantic::EmbeddingInputs`).
    fn attach_vectors(&self, ops: &mut [WriteOp]) {
        let inputs: Vec<EmbeddingInputs> = ops
            .iter()
            .filter_map(|op| match op {
                WriteOp::Insert { record, .. } | WriteOp::Update { record } => {
                    Some(EmbeddingInputs::of(record))
                }
                WriteOp::Delete { .. }
                | WriteOp::Import { .. }
                | WriteOp::Supersede { .. }
                | WriteOp::Blocked(_) => None,
            })
            .collect();
        let refs: Vec<&str> = inputs.iter().flat_map(EmbeddingInputs::texts).collect();
        let Some(vectors) = self.semantic.embed_for_store(&*self.store, &refs) else { return };
        let mut vectors = vectors.into_iter();
        let mut inputs = inputs.iter();
        for op in ops.iter_mut() {
            if let WriteOp::Insert { record, .. } | WriteOp::Update { record } = op
                && let Some(input) = inputs.next()
            {
                (record.vector, record.chunks) = input.take(&mut vectors);
            }
        }
    }

    /// For each op, the live item it nearly duplicates and the similarity: same kind, same full
    /// scope, updated within the policy's window, cosine at or above its threshold — or an
    /// earlier item of the same batch. Only inserts that allow dedupe and have a vector qualify.
    fn near_duplicates(&self, ops: &[WriteOp], now: i64) -> Vec<Option<(Uuid, f64)>> {
        let policy = self.near_duplicate_policy;
        let mut found: Vec<Option<(Uuid, f64)>> = vec![None; ops.len()];
        for (i, op) in ops.iter().enumerate() {
            let WriteOp::Insert { record, dedupe: true } = op else { continue };
            if !near_duplicate::applies_to(record.kind) {
                continue;
            }
            let Some(vector) = &record.vector else { continue };
            let same_place = Filters {
                kinds: vec![record.kind],
                scope_equals: Filters::exact_scope(&record.scope),
                since: Some(policy.window_start(now)),
                until: None,
                tags: Vec::new(),
                status: None,
                now,
                include_superseded: false,
                include_expired: false,
            };
            let stored =
                match self.semantic.nearest(&*self.store, vector, 1, &same_place, Compare::WholeTexts) {
                    Ok(hits) => hits.first().map(|h| (h.id, f64::from(h.score))),
                    Err(e) => {
                        tracing::warn!("near-duplicate check skipped: {e}");
                        None
                    }
                };
            let in_batch = ops[..i]
                .iter()
                .zip(&found)
                .filter_map(|(earlier, dup)| match earlier {
                    WriteOp::Insert { record: e, .. }
                        if dup.is_none() && e.kind == record.kind && e.scope == record.scope =>
                    {
                        let v = e.vector.as_ref()?;
                        Some((e.id, f64::from(cortex_vector::cosine(v, vector)?)))
                    }
                    _ => None,
                })
                .max_by(|a, b| a.1.total_cmp(&b.1));
            found[i] = [stored, in_batch]
                .into_iter()
                .flatten()
                .filter(|(_, similarity)| policy.is_near_duplicate(*similarity))
                .max_by(|a, b| a.1.total_cmp(&b.1));
        }
        found
    }

    fn write_op(&self, op: ItemOp, now: i64) -> WriteOp {
        match op {
            ItemOp::Delete { id, kind } => WriteOp::Delete { id, kind, at: now },
            ItemOp::Upsert(item) => match item.id {
                // An update keeps the stored scope for fields the caller does not name.
                Some(id) => WriteOp::Update { record: record(*item.clone(), id, item.scope.clone(), now) },
                None => {
                    let scope = item.scope.or(&self.inferred.scope);
                    let dedupe = item.dedupe;
                    WriteOp::Insert { record: record(*item, Uuid::now_v7(), scope, now), dedupe }
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

fn op_kind(op: &WriteOp) -> Option<String> {
    match op {
        WriteOp::Insert { record, .. } | WriteOp::Update { record } => Some(record.kind.to_string()),
        WriteOp::Delete { kind, .. } => kind.map(|k| k.to_string()),
        WriteOp::Import { item, .. } => Some(item.record.kind.to_string()),
        WriteOp::Blocked(attempt) => Some(attempt.kind.to_string()),
        WriteOp::Supersede { .. } => None,
    }
}

/// The kind an item names, when it names a real one, for the result of a refused item.
fn raw_kind(args: &serde_json::Value, index: usize) -> Option<String> {
    let name = args.get("items")?.get(index)?.get("kind")?.as_str()?;
    cortex_domain::Kind::parse(name).map(|k| k.to_string())
}

fn near_duplicate(index: usize, op: &WriteOp, existing: Uuid, similarity: f64) -> ItemResult {
    let kind = op_kind(op);
    ItemResult {
        index: index as i64,
        status: ItemStatus::SkippedDedupe,
        id: Some(existing.to_string()),
        existing_id: Some(existing.to_string()),
        reason: Some(format!(
            "near-duplicate (cosine {similarity:.3}) of an existing {} in the same scope; send \"dedupe\": false to store it anyway",
            kind.as_deref().unwrap_or("item")
        )),
        similarity: Some((similarity * 1000.0).round() / 1000.0),
        kind,
        error: None,
    }
}

fn refused(index: usize, kind: Option<String>, error: &ValidationError) -> ItemResult {
    ItemResult {
        index: index as i64,
        status: ItemStatus::ValidationError,
        id: None,
        kind,
        existing_id: None,
        reason: None,
        similarity: None,
        error: Some(ErrorBody::from(error)),
    }
}

fn result_of(index: usize, op: &WriteOp, outcome: WriteOutcome) -> ItemResult {
    let kind = op_kind(op);
    let done = |status, id: Uuid, reason: Option<String>| ItemResult {
        index: index as i64,
        status,
        id: Some(id.to_string()),
        kind: kind.clone(),
        existing_id: None,
        reason,
        similarity: None,
        error: None,
    };
    let path = |field: &str| format!("items[{index}].{field}");
    match outcome {
        WriteOutcome::Inserted { id } => done(ItemStatus::Inserted, id, None),
        WriteOutcome::Updated { id } => done(ItemStatus::Updated, id, None),
        // The refusal's error body is filled in by `store` from `govern`'s answer.
        WriteOutcome::Blocked { id } => done(ItemStatus::BusinessRuleBlocked, id, None),
        WriteOutcome::Deleted { id, already, cascaded } => {
            let reason = if already {
                Some("the item was already deleted".to_string())
            } else {
                (cascaded > 0).then(|| {
                    format!("{cascaded} relation(s) and observation(s) attached to it were deleted too")
                })
            };
            done(ItemStatus::Deleted, id, reason)
        }
        WriteOutcome::Duplicate { existing_id, reason } => {
            let what = kind.as_deref().unwrap_or("item");
            let reason = match reason {
                DuplicateReason::IdempotencyKey => {
                    "an item with this idempotency_key already exists in this project".to_string()
                }
                DuplicateReason::ContentHash => format!(
                    "exact duplicate (same normalized text) of an existing {what} in the same scope; send \"dedupe\": false to store it anyway"
                ),
                DuplicateReason::SameId => format!("an {what} with this id is already stored"),
                DuplicateReason::NaturalKey => match kind.as_deref().and_then(cortex_domain::Kind::parse) {
                    Some(k) => format!("{}: already stored", natural_key::describe(k)),
                    None => "an item with the same natural key is already stored".to_string(),
                },
            };
            ItemResult {
                existing_id: Some(existing_id.to_string()),
                ..done(ItemStatus::SkippedDedupe, existing_id, Some(reason))
            }
        }
        WriteOutcome::NotFound { id } => refused(
            index,
            kind,
            &ValidationError::new(
                ErrorCode::NotFound,
                path("id"),
                format!("no live item has id {id}"),
                "check the id with memory_find {\"ids\": [...]}; leave `id` out to create a new item",
            ),
        ),
        WriteOutcome::KindMismatch { id, stored } => refused(
            index,
            kind.clone(),
            &ValidationError::new(
                ErrorCode::KindMismatch,
                path("kind"),
                format!("item {id} is a {stored}, not a {}", kind.as_deref().unwrap_or("?")),
                format!(
                    "send \"kind\": \"{stored}\" to change this item, or leave `id` out to create a new one"
                ),
            ),
        ),
    }
}

fn summarize(results: &[ItemResult]) -> StoreSummary {
    let mut s = StoreSummary { total: results.len() as i64, ..StoreSummary::default() };
    for r in results {
        let counter = match r.status {
            ItemStatus::Inserted => &mut s.inserted,
            ItemStatus::Updated => &mut s.updated,
            ItemStatus::Deleted => &mut s.deleted,
            ItemStatus::SkippedDedupe => &mut s.skipped_dedupe,
            ItemStatus::BusinessRuleBlocked => &mut s.business_rule_blocked,
            ItemStatus::ValidationError => &mut s.validation_error,
        };
        *counter += 1;
    }
    s
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

/// An entity stored again under its name: the fields, content and tags it leaves out keep
/// their stored values (`graph::merge_entity_data`), and its text is derived anew.
fn merge_entity(record: &mut Record, stored: &Record) {
    let (Some(new), Some(old)) = (record.data.as_object(), stored.data.as_object()) else { return };
    let data = graph::merge_entity_data(old, new);
    let content = record.content.take().or_else(|| stored.content.clone());
    let derived = derive(record.kind, content.as_deref(), &data);
    record.title = derived.title;
    record.body = derived.body;
    record.content_hash = derived.content_hash;
    record.data = serde_json::Value::Object(data);
    record.content = content;
    for tag in &stored.tags {
        if !record.tags.contains(tag) {
            record.tags.push(tag.clone());
        }
    }
    if record.metadata.is_none() {
        record.metadata = stored.metadata.clone();
    }
}

/// The ops with a `Supersede` right after each insert that replaces an item, in the same
/// transaction (and at the same request position).
fn with_supersedes(
    ops: Vec<WriteOp>,
    positions: Vec<usize>,
    supersedes: &[(usize, Uuid)],
    now: i64,
) -> (Vec<WriteOp>, Vec<usize>) {
    let mut out_ops = Vec::with_capacity(ops.len());
    let mut out_positions = Vec::with_capacity(positions.len());
    for (op, index) in ops.into_iter().zip(positions) {
        let follow = match &op {
            WriteOp::Insert { record, .. } => supersedes
                .iter()
                .find(|(at, _)| *at == index)
                .map(|&(_, id)| WriteOp::Supersede { id, by: record.id, at: now }),
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
