//! What a run needs to write: the items earlier runs made (read back by their
//! `metadata.ingest`), compared with what the files make now, and the supersedes the
//! decision records name.

use super::Ingest;
use super::report::{IngestReport, Unlinked};
use crate::Result;
use cortex_domain::sources::adr::Direction;
use cortex_domain::sources::{READER_VERSION, SourceItem, resolve_link};
use cortex_domain::{Kind, Scope};
use cortex_store::{Filters, StoredItem};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use uuid::Uuid;

pub(crate) const FROM_FILES: &str = "files";
pub(crate) const FROM_GIT: &str = "git";

/// How many earlier items one read brings back at most (each whole, its text and metadata).
const LISTED_PER_READ: usize = 2_000;

/// One item the sources want in memory.
pub(crate) struct Wanted {
    /// The file's path relative to the root (empty for a commit).
    pub path: String,
    pub item: SourceItem,
    /// What the source made of the item, hashed: equal hashes mean nothing to write.
    pub hash: String,
    /// The stored item an exported file names (live, of the file's kind): the item the file
    /// updates, compared field by field instead of by hash.
    pub matched: Option<Box<StoredItem>>,
    /// The repository files the item comes from (`source.files`): its file, when the file
    /// lies in the checkout the service stands in; a commit's files.
    pub files: Vec<String>,
    /// The commit it records (`source.commit`): a commit's own hash.
    pub commit: Option<String>,
}

impl Wanted {
    pub fn new(path: &str, item: SourceItem) -> Wanted {
        let text = format!(
            "{READER_VERSION}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{:?}",
            item.kind.as_str(),
            Value::Object(item.data.clone()),
            Value::Object(item.metadata.clone()),
            item.occurred_at
        );
        let hash = Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
        Wanted { path: path.to_string(), item, hash, matched: None, files: Vec::new(), commit: None }
    }
}

/// An item an earlier run made.
#[derive(Debug, Clone)]
pub(crate) struct Existing {
    pub id: Uuid,
    pub kind: Kind,
    pub path: String,
    pub key: String,
    pub hash: String,
    pub superseded_by: Option<Uuid>,
    /// Made by a version of ingest that named no root: updated when a file of this root
    /// names it again, never deleted (it may be another checkout's).
    pub legacy: bool,
    /// The reader version that made it (0: one that did not say).
    pub reader: u64,
    pub scope: Scope,
    /// When it was last written (epoch ms).
    pub written: i64,
}

/// What to write.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// Wanted items to insert, each with the path of the record it supersedes, if any.
    pub inserts: Vec<(usize, Option<String>)>,
    /// Wanted items whose stored item changes.
    pub updates: Vec<(usize, Uuid)>,
    pub deletes: Vec<Existing>,
    /// Decision records already stored, by path: what a new record may supersede.
    pub stored_records: HashMap<String, Existing>,
    /// Supersedes to make between records both stored already.
    pub links: Vec<StoredLink>,
    /// Wanted items whose stored item already holds what the source says, with it.
    pub unchanged: Vec<(usize, Existing)>,
}

/// A supersede named between two stored records: `new` replaces `old`.
#[derive(Debug, Clone)]
pub(crate) struct StoredLink {
    pub new_path: String,
    pub old_path: String,
    pub new: Uuid,
    pub old: Uuid,
}

impl Wanted {
    /// Whether the stored item it was matched with already holds what the file says.
    fn same_as_matched(&self, stored: &StoredItem) -> bool {
        let parts = self.item.exported.as_ref();
        stored.record.data.as_object().cloned().unwrap_or_default() == self.item.data
            && stored.record.content == parts.and_then(|p| p.content.clone())
            && stored.record.tags == parts.map(|p| p.tags.clone()).unwrap_or_default()
    }
}

impl Ingest<'_> {
    /// The live items of this project that a `from` ingest of `root` (of any root: `None`)
    /// made, each reduced to its source as soon as it is read. The store's `recent` read
    /// returns whole items, so they are read [`LISTED_PER_READ`] at a time: by windows of
    /// their update time, a window that comes back full halved until none does (one store
    /// call writes at most 100 items at one instant, so a millisecond never overflows).
    pub(crate) fn ingested(&self, from: &str, root: Option<&str>, kinds: &[Kind]) -> Result<Vec<Existing>> {
        let scope = &self.service.inferred.scope;
        let mut filters = Filters {
            kinds: kinds.to_vec(),
            include_superseded: true,
            include_expired: true,
            now: self.service.now()?,
            ..Filters::default()
        };
        for (field, value) in [("org", &scope.org), ("project", &scope.project)] {
            if let Some(value) = value {
                filters.scope_equals.push((field, value.clone()));
            }
        }
        let mut out = Vec::new();
        let mut windows = vec![(0, i64::MAX / 2)];
        while let Some((since, until)) = windows.pop() {
            let window = Filters { since: Some(since), until: Some(until), ..filters.clone() };
            let items = self.service.view.recent(&window, LISTED_PER_READ)?;
            if items.len() == LISTED_PER_READ && until - since > 1 {
                let middle = since + (until - since) / 2;
                windows.push((since, middle));
                windows.push((middle, until));
                continue;
            }
            out.extend(items.into_iter().filter_map(|item| existing(&item, from, root)));
        }
        Ok(out)
    }
}

/// What an item an ingest made says of its source; `None` for an item of another ingest, root
/// or none.
fn existing(item: &StoredItem, from: &str, root: Option<&str>) -> Option<Existing> {
    let source = item.record.metadata.as_ref()?.get("ingest")?;
    let text = |field: &str| source.get(field).and_then(Value::as_str).map(str::to_string);
    let stored_root = text("root")?;
    let legacy = stored_root.is_empty();
    let ours = root.is_none_or(|root| stored_root == root || legacy);
    (text("from")? == from && ours).then(|| Existing {
        id: item.record.id,
        kind: item.record.kind,
        path: text("path").unwrap_or_default(),
        key: text("key").unwrap_or_default(),
        hash: text("hash").unwrap_or_default(),
        superseded_by: item.superseded_by,
        legacy: legacy && root.is_some_and(|r| !r.is_empty()),
        reader: source.get("reader").and_then(Value::as_u64).unwrap_or(0),
        scope: item.record.scope.clone(),
        written: item.record.updated_at,
    })
}

/// Compares what the sources want with what earlier runs stored. `covered` says whether a
/// path lies in what this run read (an item of a covered path no source wants is deleted).
/// Counts what stays unchanged, and each wanted item's status, into `report`.
pub(crate) fn plan(
    wanted: &[Wanted],
    existing: Vec<Existing>,
    covered: impl Fn(&str) -> bool,
    report: &mut IngestReport,
) -> Plan {
    // An item an exported file names is that file's, wherever an earlier run put it.
    let matched: Vec<Uuid> = wanted.iter().filter_map(|w| Some(w.matched.as_ref()?.record.id)).collect();
    let mut by_key: HashMap<(String, String), Existing> = existing
        .into_iter()
        .filter(|e| !matched.contains(&e.id))
        .map(|e| ((e.path.clone(), e.key.clone()), e))
        .collect();
    let mut plan = Plan {
        stored_records: by_key
            .values()
            .filter(|e| e.kind == Kind::Decision)
            .map(|e| (e.path.clone(), e.clone()))
            .collect(),
        ..Plan::default()
    };
    for w in wanted.iter().filter(|w| w.item.kind == Kind::Decision) {
        if let Some(stored) = &w.matched {
            let existing = Existing {
                id: stored.record.id,
                kind: stored.record.kind,
                path: w.path.clone(),
                key: w.item.key.clone(),
                hash: String::new(),
                superseded_by: stored.superseded_by,
                legacy: false,
                reader: 0,
                scope: stored.record.scope.clone(),
                written: stored.record.updated_at,
            };
            plan.stored_records.insert(w.path.clone(), existing);
        }
    }
    let mut inserts = Vec::new();
    for (i, w) in wanted.iter().enumerate() {
        let counts = report.kind(w.item.kind.as_str());
        if let Some(status) = cortex_domain::kind::status_from_data(w.item.kind, &w.item.data) {
            *counts.statuses.entry(status).or_default() += 1;
        }
        if let Some(stored) = &w.matched {
            if w.same_as_matched(stored) {
                counts.unchanged += 1;
            } else {
                plan.updates.push((i, stored.record.id));
            }
            continue;
        }
        match by_key.remove(&(w.path.clone(), w.item.key.clone())) {
            None => inserts.push(i),
            Some(stored) if stored.hash == w.hash && stored.kind == w.item.kind => {
                counts.unchanged += 1;
                plan.unchanged.push((i, stored));
            }
            Some(stored) if stored.kind == w.item.kind => plan.updates.push((i, stored.id)),
            // The file became another kind of document: its old item goes, a new one comes.
            Some(stored) => {
                plan.deletes.push(stored);
                inserts.push(i);
            }
        }
    }
    plan.deletes.extend(by_key.into_values().filter(|e| covered(&e.path) && !e.legacy));
    let targets = supersede_targets(wanted, &inserts, &plan.stored_records, &mut plan.links, report);
    plan.inserts = inserts.into_iter().map(|i| (i, targets.get(&i).cloned())).collect();
    plan
}

/// For each inserted record that replaces another, the path of the one it replaces: the
/// insert names it (`supersedes`). A link between two records stored before (a "Superseded
/// by" added to an old record) goes to `links`, made by a supersede of its own.
fn supersede_targets(
    wanted: &[Wanted],
    inserts: &[usize],
    stored: &HashMap<String, Existing>,
    links: &mut Vec<StoredLink>,
    report: &mut IngestReport,
) -> HashMap<usize, String> {
    let decisions: Vec<&str> = wanted
        .iter()
        .filter(|w| w.item.kind == Kind::Decision)
        .map(|w| w.path.as_str())
        .chain(stored.keys().map(String::as_str))
        .collect();
    let index_of: HashMap<&str, usize> = wanted
        .iter()
        .enumerate()
        .filter(|(_, w)| w.item.kind == Kind::Decision)
        .map(|(i, w)| (w.path.as_str(), i))
        .collect();
    let mut pairs: Vec<(String, String)> = Vec::new();
    for w in wanted.iter().filter(|w| w.item.kind == Kind::Decision) {
        for link in &w.item.links {
            let Some(target) = resolve_link(&w.path, &link.target, &decisions) else {
                report.unlinked.push(Unlinked {
                    path: w.path.clone(),
                    target: link.target.to_string(),
                    reason: "no ingested decision record is at that link".into(),
                });
                continue;
            };
            let pair = match link.direction {
                Direction::Supersedes => (w.path.clone(), target.to_string()),
                Direction::SupersededBy => (target.to_string(), w.path.clone()),
            };
            if pair.0 != pair.1 && !pairs.contains(&pair) {
                pairs.push(pair);
            }
        }
    }
    let mut targets: HashMap<usize, String> = HashMap::new();
    for (new, old) in pairs {
        let new_index = index_of.get(new.as_str()).copied();
        let inserted = new_index.filter(|i| inserts.contains(i));
        let old_stored = stored.get(&old);
        let done = match (stored.get(&new), old_stored) {
            (Some(n), Some(o)) => o.superseded_by == Some(n.id),
            _ => false,
        };
        let new_stored = stored.get(&new);
        let problem = match (inserted, old_stored.and_then(|o| o.superseded_by)) {
            _ if done => None,
            (None, None) if new_stored.is_some() && old_stored.is_some() => {
                let (Some(n), Some(o)) = (new_stored, old_stored) else { continue };
                if links.iter().any(|l| l.old == o.id) {
                    Some("a record is superseded by one other record; several name this one")
                } else {
                    let link =
                        StoredLink { new_path: new.clone(), old_path: old.clone(), new: n.id, old: o.id };
                    links.push(link);
                    None
                }
            }
            (Some(i), None) if !targets.contains_key(&i) => {
                targets.insert(i, old.clone());
                None
            }
            (Some(_), None) => Some("a record supersedes one other record; this one names several"),
            (Some(_), Some(_)) => Some("the record it replaces is superseded by another item already"),
            (None, Some(_)) => Some("the record it replaces is superseded by another item already"),
            (None, None) => Some("the record it replaces was not stored (refused, or passed over)"),
        };
        if let Some(reason) = problem {
            report.unlinked.push(Unlinked { path: new, target: old, reason: reason.into() });
        }
    }
    targets
}
