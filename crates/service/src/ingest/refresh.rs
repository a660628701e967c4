//! Items a run leaves unchanged although their file moved on. A file edited in one part (one
//! section, one release) leaves the items of its other parts as the file says them, but
//! their commit behind the file's last change, so finds would flag them as out of date: the
//! run has just read the file, so such an item is written again as it is, stamped at the
//! current commit. So is an item that does not name its file yet (one an earlier version of
//! ingest made). An item flagged for other files too (a source file its text names) stays
//! flagged: reading the document says nothing of whether it still matches the code.

use super::Ingest;
use super::plan::{Plan, Wanted};
use super::report::IngestReport;
use crate::Result;
use crate::git::stale::{Asked, check};
use crate::git::stamp;

impl Ingest<'_> {
    /// Moves the unchanged items to refresh into the plan's updates.
    pub(super) fn refresh(
        &self,
        wanted: &[Wanted],
        plan: &mut Plan,
        report: &mut IngestReport,
    ) -> Result<()> {
        let named: Vec<usize> =
            (0..plan.unchanged.len()).filter(|&n| !wanted[plan.unchanged[n].0].files.is_empty()).collect();
        if named.is_empty() {
            return Ok(());
        }
        stamp::bring_table_to_head(self.service);
        let asked: Vec<Asked<'_>> = named
            .iter()
            .map(|&n| {
                let e = &plan.unchanged[n].1;
                Asked { id: e.id, kind: e.kind, scope: &e.scope, written: e.written }
            })
            .collect();
        let found = check(self.service.view.as_ref(), &self.service.inferred.scope, &asked)?;
        let mut again = Vec::new();
        for &n in &named {
            let (i, e) = &plan.unchanged[n];
            let own = &wanted[*i].files;
            let needed = match found.get(&e.id) {
                None => true,
                Some((provenance, stale)) => {
                    own.iter().any(|f| !provenance.paths().any(|p| p == f))
                        || stale.as_ref().is_some_and(|s| s.files.iter().all(|f| own.contains(&f.path)))
                }
            };
            if needed {
                again.push((*i, e.id));
            }
        }
        for (i, id) in again {
            report.kind(wanted[i].item.kind.as_str()).unchanged -= 1;
            plan.updates.push((i, id));
        }
        Ok(())
    }
}
