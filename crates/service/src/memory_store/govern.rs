//! Governance and replacement: updates and deletes a rule refuses become audited `Blocked`
//! ops; an item naming `supersedes` must name a live item nothing superseded yet.

use super::MemoryStore;
use super::batch::Batch;
use crate::Result;
use cortex_domain::governance::{
    StoredView, SupersedeTarget, check_delete, check_supersede_target, check_update,
};
use cortex_domain::lifecycle;
use cortex_store::{BlockedAttempt, StoredItem, WriteOp};
use uuid::Uuid;

/// What governance judges of a stored item.
pub(crate) fn view_of(item: &StoredItem) -> StoredView<'_> {
    let c = &item.record;
    StoredView {
        id: c.id,
        kind: c.kind,
        status: c.status.as_deref(),
        data: &c.data,
        content_hash: &c.content_hash,
        governed_since: item.governed_since,
    }
}

impl MemoryStore<'_> {
    /// Replaces each update or delete that a governance rule refuses with a `Blocked` op, so
    /// the attempt is audited in the batch's transaction; notes the refusals in
    /// `batch.blocked`. Each verdict is made against the stored item as read here, which joins
    /// `seen`: the batch is written only if the item is still in that state (a
    /// decision accepted by another process in between must not let an edit through).
    pub(super) fn govern(&self, batch: &mut Batch, now: i64) -> Result<()> {
        let ids: Vec<Uuid> = batch
            .pending
            .iter()
            .filter_map(|p| match &p.op {
                WriteOp::Update { record } => Some(record.id),
                WriteOp::Delete { id, .. } => Some(*id),
                _ => None,
            })
            .collect();
        if ids.is_empty() {
            return Ok(());
        }
        let stored = self.service.view.get(&ids)?;
        for item in &stored {
            batch.seen.saw(item);
        }
        for pending in &mut batch.pending {
            let (index, op) = (pending.index, &mut pending.op);
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
            let view = view_of(current);
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
                batch.blocked.push((index, error));
            }
        }
        Ok(())
    }

    /// Each item naming `supersedes` must name a live item that nothing superseded yet; the
    /// others are refused. Fills in what superseding each target writes into its status
    /// (`lifecycle::status_when_superseded`, by the target's kind).
    pub(super) fn check_supersedes(&self, batch: &mut Batch) -> Result<()> {
        let ids: Vec<Uuid> = batch.pending.iter().filter_map(|p| p.replaces).map(|r| r.target).collect();
        if ids.is_empty() {
            return Ok(());
        }
        let stored = self.service.view.get(&ids)?;
        let mut refused = Vec::new();
        for pending in &mut batch.pending {
            let index = pending.index;
            let Some(replacement) = pending.replaces.as_mut() else { continue };
            let id = replacement.target;
            let found = stored.iter().find(|s| s.record.id == id);
            replacement.status = found.and_then(|s| lifecycle::status_when_superseded(s.record.kind));
            let target = match found {
                None => SupersedeTarget::Missing,
                Some(s) if s.deleted_at.is_some() => SupersedeTarget::Deleted,
                Some(s) => s.superseded_by.map_or(SupersedeTarget::Live, SupersedeTarget::SupersededBy),
            };
            if let Err(error) = check_supersede_target(id, target) {
                refused.push((index, replacement.on_item, error));
            }
        }
        for (index, on_item, error) in refused {
            let at = if on_item { format!("items[{index}]") } else { format!("items[{index}].data") };
            batch.refuse(index, &error.under(&at));
        }
        Ok(())
    }
}
