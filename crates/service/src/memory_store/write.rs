//! The last stage: what is still pending is written in one transaction — each insert that
//! replaces an item followed by the `Supersede` of that item — only over the state the checks
//! saw, and each store outcome becomes its item's result.

use super::MemoryStore;
use super::batch::Batch;
use super::results::result_of;
use crate::Result;
use cortex_store::{WriteContext, WriteOp, WriteOutcome};

impl MemoryStore<'_> {
    pub(super) fn write(&self, batch: &mut Batch, now: i64) -> Result<()> {
        let mut ops = Vec::with_capacity(batch.pending.len());
        let mut positions = Vec::with_capacity(batch.pending.len());
        for pending in &batch.pending {
            ops.push(pending.op.clone());
            positions.push(pending.index);
            if let (WriteOp::Insert { record, .. }, Some(replaced)) = (&pending.op, pending.replaces) {
                ops.push(WriteOp::Supersede {
                    id: replaced.target,
                    by: record.id,
                    at: now,
                    status: replaced.status,
                });
                positions.push(pending.index);
            }
        }
        if ops.is_empty() {
            return Ok(());
        }
        let context = WriteContext {
            expected: std::mem::take(&mut batch.seen.0),
            ..self.service.write_context("memory_store")
        };
        let outcomes = self.service.view.write_batch_as(&ops, &context)?;
        // A near-duplicate of an earlier item of this batch must name the item that holds the
        // knowledge in the end: that item's stored duplicate, if it was one.
        let mut replaced: Vec<(String, String)> = Vec::new();
        for ((index, op), outcome) in positions.into_iter().zip(&ops).zip(outcomes) {
            if let WriteOp::Supersede { id, .. } = op {
                if let (Some(result), WriteOutcome::Updated { .. }) =
                    (batch.result_mut(index).as_mut(), &outcome)
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
            *batch.result_mut(index) = Some(result_of(index, op, outcome));
        }
        batch.pending.clear();
        batch.rename_existing(&replaced);
        Ok(())
    }
}
