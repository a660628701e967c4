//! Possible contradictions ([`Contradictions`]): decisions, runbooks and sections in force in
//! one scope that look close (`cortex_domain::conflicts`). A store names, in an inserted item's
//! result, the items in force it may contradict or duplicate (nothing is refused); `cortex
//! doctor --conflicts` lists every such pair of a project.

use crate::response::ConflictView;
use crate::{MemoryService, Result};
use cortex_domain::conflicts::{Closeness, Profile, checked, closeness, in_force, topic_field};
use cortex_domain::{Kind, Scope};
use cortex_store::{Filters, StoredItem, TenantStore};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use uuid::Uuid;

/// Items of one kind and scope read to compare a new one with: the newest this many.
pub const COMPARED: usize = 500;

/// One pair: `newer` may contradict or duplicate `older`.
#[derive(Debug, Clone, Serialize)]
pub struct ConflictPair {
    pub kind: String,
    pub branch: String,
    pub newer: ConflictView,
    pub older: ConflictView,
    /// How to make the newer replace the older.
    pub hint: String,
}

/// What `cortex doctor --conflicts` found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ConflictReport {
    /// Items in force compared.
    pub compared: usize,
    pub pairs: Vec<ConflictPair>,
}

/// Possible contradictions as one caller is served; made by [`MemoryService::contradictions`].
pub struct Contradictions<'a> {
    pub(crate) service: &'a MemoryService,
}

impl Contradictions<'_> {
    /// Every pair of items in force in the caller's project (`scope`'s, when given) that look
    /// close, per kind and branch, the newer first in each pair.
    pub fn scan(&self, scope: Option<&Scope>) -> Result<ConflictReport> {
        let scope =
            scope.map_or_else(|| self.service.inferred.scope.clone(), |s| s.or(&self.service.inferred.scope));
        if let Some(bound) = &self.service.bound {
            bound.check_read(&scope)?;
        }
        let mut report = ConflictReport::default();
        for kind in Kind::ALL.into_iter().filter(|k| checked(*k)) {
            let filters = Filters {
                kinds: vec![kind],
                scope_equals: [("org", &scope.org), ("project", &scope.project)]
                    .into_iter()
                    .filter_map(|(f, v)| v.clone().map(|v| (f, v)))
                    .collect(),
                now: self.service.now()?,
                ..Filters::default()
            };
            let items: Vec<StoredItem> = self
                .service
                .view
                .recent(&filters, 100_000)?
                .into_iter()
                .filter(|i| in_force(kind, i.record.status.as_deref()))
                .collect();
            report.compared += items.len();
            let mut by_place: HashMap<Scope, Vec<&StoredItem>> = HashMap::new();
            for item in &items {
                by_place.entry(item.record.scope.clone()).or_default().push(item);
            }
            let mut places: Vec<(Scope, Vec<&StoredItem>)> = by_place.into_iter().collect();
            places.sort_by(|a, b| a.0.branch.cmp(&b.0.branch));
            for (place, mut group) in places {
                group.sort_by_key(|i| i.record.id);
                let profiles: Vec<Profile> = group.iter().map(|i| profile(i)).collect();
                for (n, newer) in group.iter().enumerate() {
                    for (o, older) in group.iter().enumerate().take(n) {
                        if let Some(c) = closeness(&profiles[n], &profiles[o], place.project.as_deref()) {
                            report.pairs.push(pair(kind, &place, newer, older, &c));
                        }
                    }
                }
            }
        }
        Ok(report)
    }
}

/// The items in force that each of `new` (just stored, in force, of a checked kind) may
/// contradict or duplicate: those of its kind and exact scope stored before it.
pub(crate) fn possible(
    view: &dyn TenantStore,
    new: &[StoredItem],
    now: i64,
) -> Result<BTreeMap<Uuid, Vec<(ConflictView, Closeness)>>> {
    let mut out = BTreeMap::new();
    // Each compared item's profile is made once: a batch of long sections would otherwise
    // stem every older text again for each new item.
    let mut read: HashMap<(Kind, Scope), Vec<(StoredItem, Profile)>> = HashMap::new();
    for item in
        new.iter().filter(|i| checked(i.record.kind) && in_force(i.record.kind, i.record.status.as_deref()))
    {
        let key = (item.record.kind, item.record.scope.clone());
        if !read.contains_key(&key) {
            let filters = Filters {
                kinds: vec![key.0],
                scope_equals: Filters::exact_scope(&key.1),
                now,
                ..Filters::default()
            };
            let compared = view.recent(&filters, COMPARED)?.into_iter().map(|o| {
                let p = profile(&o);
                (o, p)
            });
            read.insert(key.clone(), compared.collect());
        }
        let compared = &read[&key];
        let made;
        let mine = match compared.iter().find(|(o, _)| o.record.id == item.record.id) {
            Some((_, p)) => p,
            None => {
                made = profile(item);
                &made
            }
        };
        let found: Vec<(ConflictView, Closeness)> = compared
            .iter()
            .filter(|(o, _)| {
                o.record.id < item.record.id && in_force(o.record.kind, o.record.status.as_deref())
            })
            .filter_map(|(o, p)| {
                closeness(mine, p, item.record.scope.project.as_deref()).map(|c| (view_of(o), c))
            })
            .collect();
        if !found.is_empty() {
            out.insert(item.record.id, found);
        }
    }
    Ok(out)
}

fn profile(item: &StoredItem) -> Profile {
    let r = &item.record;
    let topic = topic_field(r.kind).and_then(|f| r.data.get(f)).and_then(|v| v.as_str());
    Profile::of(r.kind, &r.title, &r.body, topic)
}

fn view_of(item: &StoredItem) -> ConflictView {
    ConflictView { id: item.record.id.to_string(), title: item.record.title.clone(), why: String::new() }
}

fn pair(kind: Kind, place: &Scope, newer: &StoredItem, older: &StoredItem, c: &Closeness) -> ConflictPair {
    let (newer, mut older) = (view_of(newer), view_of(older));
    older.why = c.why.clone();
    ConflictPair {
        kind: kind.as_str().into(),
        branch: place.branch.clone().unwrap_or_default(),
        hint: cortex_domain::conflicts::supersede_hint(&newer.id, &older.id),
        newer,
        older,
    }
}
