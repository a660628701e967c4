//! A supersede between two records both stored already: what a "Superseded by" added to an
//! old record asks. A store supersedes only with a new item, so this is the same write the
//! store flow makes after such an insert (`WriteOp::Supersede`, audited), after the same
//! checks (`check_supersede_target`).

use super::Ingest;
use crate::Result;
use cortex_domain::governance::{SupersedeTarget, check_supersede_target};
use cortex_domain::lifecycle;
use cortex_store::{WriteOp, WriteOutcome};
use uuid::Uuid;

impl Ingest<'_> {
    /// Marks `old` as replaced by `by`. `None` when made; else why not.
    pub(super) fn supersede_stored(&self, old: Uuid, by: Uuid) -> Result<Option<String>> {
        let stored = self.service.view.get(&[old, by])?;
        let find = |id: Uuid| stored.iter().find(|s| s.record.id == id);
        if find(by).is_none_or(|s| s.deleted_at.is_some()) {
            return Ok(Some("the replacing record is not stored".into()));
        }
        let target = match find(old) {
            None => SupersedeTarget::Missing,
            Some(s) if s.deleted_at.is_some() => SupersedeTarget::Deleted,
            Some(s) => s.superseded_by.map_or(SupersedeTarget::Live, SupersedeTarget::SupersededBy),
        };
        if let Err(error) = check_supersede_target(old, target) {
            return Ok(Some(error.message));
        }
        let status = find(old).and_then(|s| lifecycle::status_when_superseded(s.record.kind));
        let op = WriteOp::Supersede { id: old, by, at: self.service.now()?, status };
        let context = self.service.write_context("cortex ingest");
        Ok(match self.service.view.write_batch_as(&[op], &context)?.pop() {
            Some(WriteOutcome::Updated { .. }) => None,
            other => Some(format!("the memory did not make it ({other:?})")),
        })
    }
}
