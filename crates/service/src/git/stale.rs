//! Which of some items may be out of date (`cortex_domain::provenance::staleness`): each item's
//! provenance read with the rows of the path table it is compared with — the caller's branch's
//! when the item is of the caller's project and that branch has a table, else the item's own
//! branch's. Two reads per call plus one per table, no git: what a find, the session briefing
//! and the recall hook pay.

use crate::Result;
use cortex_domain::provenance::{Provenance, RepoBranch, Stale, goes_stale, staleness};
use cortex_domain::{Kind, Scope};
use cortex_store::{StoredItem, TenantStore};
use std::collections::BTreeMap;
use uuid::Uuid;

/// An item as the check needs it.
pub(crate) struct Asked<'a> {
    pub id: Uuid,
    pub kind: Kind,
    pub scope: &'a Scope,
    /// When it was last written (epoch ms).
    pub written: i64,
}

impl<'a> Asked<'a> {
    pub fn of(item: &'a StoredItem) -> Self {
        let r = &item.record;
        Asked { id: r.id, kind: r.kind, scope: &r.scope, written: r.updated_at }
    }
}

/// Each asked item's provenance (those that have one) and, when its files changed since, why.
pub(crate) fn check(
    view: &dyn TenantStore,
    caller: &Scope,
    items: &[Asked<'_>],
) -> Result<BTreeMap<Uuid, (Provenance, Option<Stale>)>> {
    let ids: Vec<Uuid> = items.iter().map(|i| i.id).collect();
    if ids.is_empty() {
        return Ok(BTreeMap::new());
    }
    let found: BTreeMap<Uuid, Provenance> = view.provenance_of(&ids)?.into_iter().collect();
    let mut tables: BTreeMap<RepoBranch, Vec<String>> = BTreeMap::new();
    let mut place_of: BTreeMap<Uuid, RepoBranch> = BTreeMap::new();
    let mut has_table: BTreeMap<RepoBranch, bool> = BTreeMap::new();
    for item in items {
        let Some(p) = found.get(&item.id) else { continue };
        if p.files.is_empty() || !goes_stale(item.kind) {
            continue;
        }
        let mut place = place(item.scope);
        if item.scope.same_project(caller) {
            let callers = self::place(caller);
            let known = match has_table.get(&callers) {
                Some(known) => *known,
                None => {
                    let known = view.path_head(&callers)?.is_some();
                    has_table.insert(callers.clone(), known);
                    known
                }
            };
            if known {
                place = callers;
            }
        }
        tables.entry(place.clone()).or_default().extend(p.paths().map(str::to_string));
        place_of.insert(item.id, place);
    }
    let mut rows = BTreeMap::new();
    for (place, mut paths) in tables {
        paths.sort();
        paths.dedup();
        let read = view.path_changes(&place, &paths)?;
        rows.insert(place, read);
    }
    let mut out = BTreeMap::new();
    for item in items {
        let Some(p) = found.get(&item.id) else { continue };
        let stale = place_of.get(&item.id).and_then(|place| staleness(p, item.written, &rows[place]));
        out.insert(item.id, (p.clone(), stale));
    }
    Ok(out)
}

fn place(scope: &Scope) -> RepoBranch {
    RepoBranch {
        org: scope.org.clone().unwrap_or_default(),
        project: scope.project.clone().unwrap_or_default(),
        branch: scope.branch.clone().unwrap_or_default(),
    }
}
