//! Hits that may be out of date: the files an item concerns changed in commits after the one
//! it was written at (`crate::git::stale`), read for the page only — no git.

use super::MemoryFind;
use crate::Result;
use crate::git::stale::{Asked, check};
use crate::response::{FindResponse, ProvenanceView, StaleView};
use cortex_domain::ScopeFilter;

impl MemoryFind<'_> {
    pub(super) fn flag_stale(&self, filter: &ScopeFilter, response: &mut FindResponse) -> Result<()> {
        let asked: Vec<Asked<'_>> = response
            .hits
            .iter()
            .filter_map(|h| {
                Some(Asked {
                    id: h.id,
                    kind: h.kind,
                    scope: h.scope.as_ref()?,
                    written: cortex_domain::time::parse_instant(&h.updated_at).unwrap_or(i64::MAX),
                })
            })
            .collect();
        let found = check(self.service.view.as_ref(), &filter.caller, &asked)?;
        for hit in &mut response.hits {
            let Some((provenance, stale)) = found.get(&hit.id) else { continue };
            hit.provenance = Some(ProvenanceView::from(provenance));
            if let Some(stale) = stale {
                hit.stale = Some(StaleView::files_changed(stale));
            }
        }
        Ok(())
    }
}
