//! For an API key's holder: every item's scope — filled from the request's defaults, or the
//! stored item's where an update names none — must lie inside the key's bound; an item outside
//! is refused (`forbidden_scope`). An update of an id outside is left to the write, which
//! answers it as an id that names no item (`tenant::BoundedStore`).

use super::MemoryStore;
use super::batch::Batch;
use crate::Result;
use cortex_store::WriteOp;
use uuid::Uuid;

impl MemoryStore<'_> {
    pub(super) fn check_bound(&self, batch: &mut Batch) -> Result<()> {
        let Some(bound) = &self.service.bound else { return Ok(()) };
        let updated: Vec<Uuid> = batch
            .pending
            .iter()
            .filter_map(|p| match &p.op {
                WriteOp::Update { record } => Some(record.id),
                _ => None,
            })
            .collect();
        let stored = if updated.is_empty() { Vec::new() } else { self.service.view.get(&updated)? };
        let mut refused = Vec::new();
        for pending in &batch.pending {
            let scope = match &pending.op {
                WriteOp::Insert { record, .. } => record.scope.clone(),
                WriteOp::Update { record } => match stored.iter().find(|s| s.record.id == record.id) {
                    Some(s) => record.scope.or(&s.record.scope),
                    None => continue,
                },
                _ => continue,
            };
            if let Err(error) = bound.check_write(&scope, &format!("items[{}].scope", pending.index)) {
                refused.push((pending.index, error));
            }
        }
        for (index, error) in refused {
            batch.refuse(index, &error);
        }
        Ok(())
    }
}
