//! Branches merged into the caller's: at branch level, a find sees their items created up to
//! each merge (`cortex_domain::provenance::visible_branches`), read from the project's merge
//! records — one small read per find, no git.

use super::MemoryFind;
use crate::Result;
use cortex_domain::provenance::visible_branches;
use cortex_domain::{ScopeFilter, ScopeLevel};

impl MemoryFind<'_> {
    pub(super) fn with_merged_branches(&self, mut filter: ScopeFilter) -> Result<ScopeFilter> {
        if filter.level != ScopeLevel::Branch {
            return Ok(filter);
        }
        let value = |field: &str| filter.equals.iter().find(|(f, _)| *f == field).map(|(_, v)| v.as_str());
        let (Some(org), Some(project), Some(branch)) = (value("org"), value("project"), value("branch"))
        else {
            return Ok(filter);
        };
        let merges = self.service.view.merges(org, project)?;
        filter.merged = visible_branches(branch, &merges);
        Ok(filter)
    }
}
