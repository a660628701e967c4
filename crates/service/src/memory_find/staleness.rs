//! Hits that may be out of date: the files an item concerns changed in commits after the one
//! it was written at (`cortex_domain::provenance::staleness`). Read for the page only, from
//! each item's provenance and the path table of the caller's branch (the item's own when the
//! caller's has none, or the item is of another project) — two reads per find, no git.

use super::MemoryFind;
use crate::Result;
use crate::response::{FindResponse, ProvenanceView, StaleView};
use cortex_domain::ScopeFilter;
use cortex_domain::provenance::{Provenance, RepoBranch, goes_stale, staleness};
use std::collections::BTreeMap;
use uuid::Uuid;

impl MemoryFind<'_> {
    pub(super) fn flag_stale(&self, filter: &ScopeFilter, response: &mut FindResponse) -> Result<()> {
        let ids: Vec<Uuid> = response.hits.iter().map(|h| h.id).collect();
        if ids.is_empty() {
            return Ok(());
        }
        let found: BTreeMap<Uuid, Provenance> = self.service.view.provenance_of(&ids)?.into_iter().collect();
        if found.is_empty() {
            return Ok(());
        }
        // The table each hit is compared with, and the paths asked of it.
        let mut tables: BTreeMap<RepoBranch, Vec<String>> = BTreeMap::new();
        let mut place_of: BTreeMap<Uuid, RepoBranch> = BTreeMap::new();
        for hit in &response.hits {
            let (Some(p), Some(scope)) = (found.get(&hit.id), hit.scope.as_ref()) else { continue };
            if p.files.is_empty() || !goes_stale(hit.kind) {
                continue;
            }
            let own = |s: &cortex_domain::Scope| RepoBranch {
                org: s.org.clone().unwrap_or_default(),
                project: s.project.clone().unwrap_or_default(),
                branch: s.branch.clone().unwrap_or_default(),
            };
            let mut place = own(scope);
            if scope.same_project(&filter.caller) {
                let callers = own(&filter.caller);
                if self.service.view.path_head(&callers)?.is_some() {
                    place = callers;
                }
            }
            tables.entry(place.clone()).or_default().extend(p.paths().map(str::to_string));
            place_of.insert(hit.id, place);
        }
        let mut rows = BTreeMap::new();
        for (place, mut paths) in tables {
            paths.sort();
            paths.dedup();
            let read = self.service.view.path_changes(&place, &paths)?;
            rows.insert(place, read);
        }
        for hit in &mut response.hits {
            let Some(p) = found.get(&hit.id) else { continue };
            hit.provenance = Some(ProvenanceView::from(p));
            let Some(place) = place_of.get(&hit.id) else { continue };
            let written = cortex_domain::time::parse_instant(&hit.updated_at).unwrap_or(i64::MAX);
            if let Some(stale) = staleness(p, written, &rows[place]) {
                hit.stale = Some(StaleView::files_changed(&stale));
            }
        }
        Ok(())
    }
}
