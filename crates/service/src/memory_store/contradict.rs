//! After the write: each inserted decision, runbook or section in force names, in its result,
//! the items in force of its kind and scope it may contradict or duplicate, and the one line
//! that makes it replace one (`crate::contradictions`). Nothing is refused on it.

use super::MemoryStore;
use super::batch::Batch;
use crate::Result;
use crate::response::ItemStatus;
use cortex_domain::conflicts::{checked, supersede_hint};
use uuid::Uuid;

impl MemoryStore<'_> {
    pub(super) fn name_contradictions(&self, batch: &mut Batch, now: i64) -> Result<()> {
        let mut inserted: Vec<(usize, Uuid)> = Vec::new();
        for index in 0..batch.slots() {
            let Some(result) = batch.result_mut(index).as_ref() else { continue };
            let kind = result.kind.as_deref().and_then(cortex_domain::Kind::parse);
            if result.status == ItemStatus::Inserted
                && kind.is_some_and(checked)
                && let Some(id) = result.id.as_deref().and_then(|id| Uuid::parse_str(id).ok())
            {
                inserted.push((index, id));
            }
        }
        if inserted.is_empty() {
            return Ok(());
        }
        let ids: Vec<Uuid> = inserted.iter().map(|(_, id)| *id).collect();
        let new = self.service.view.get(&ids)?;
        let found = crate::contradictions::possible(self.service.view.as_ref(), &new, now)?;
        for (index, id) in inserted {
            let Some(close) = found.get(&id) else { continue };
            if let Some(result) = batch.result_mut(index).as_mut() {
                result.may_contradict = close
                    .iter()
                    .map(|(view, c)| crate::response::ConflictView { why: c.why.clone(), ..view.clone() })
                    .collect();
                result.hint = Some(supersede_hint(&id.to_string(), &close[0].0.id));
            }
        }
        Ok(())
    }
}
