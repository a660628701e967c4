//! The facts the in-process vector index filters on, kept small. A scan tests every entry, so
//! each entry holds numbers — its scope, status, tags and writer as ids into a table of the
//! distinct values — and a find compiles its filters once against that table. Testing the full
//! [`ItemFacts`] of every entry (strings behind pointers) cost more than the dot products
//! themselves (docs/BENCHMARKS_HISTORY.md has the measurement).
//!
//! [`FactTable::compile`] turns each [`Clause`] of the shared filter rule (`Filters::clauses`)
//! into its compact test, so [`CompiledFilter::admits`] decides exactly as [`Filters::admits`]
//! does (tested below).

use cortex_domain::find::Author;
use cortex_domain::{Kind, Scope};
use cortex_store::{Clause, Filters, ItemFacts};
use std::collections::HashMap;

/// An entry's facts, as ids into its [`FactTable`].
#[derive(Debug, Clone)]
pub struct CompactFacts {
    kind: Kind,
    scope: u32,
    status: Option<u32>,
    tags: Box<[u32]>,
    writer: u32,
    created_at: i64,
    updated_at: i64,
    expires_at: Option<i64>,
    superseded: bool,
    deleted: bool,
}

/// An entry's facts as a filter reads them: from [`CompactFacts`] in memory, or from an entry's
/// record in the index file (`file_entries`), without allocating.
#[derive(Debug, Clone, Copy)]
pub struct FactFields<'a> {
    pub kind: Kind,
    pub scope: u32,
    pub status: Option<u32>,
    pub tags: Tags<'a>,
    /// Who wrote the current version and the agent they claimed, as one id.
    pub writer: u32,
    pub created_at: i64,
    pub updated_at: i64,
    pub expires_at: Option<i64>,
    pub superseded: bool,
    pub deleted: bool,
}

/// An entry's tag ids: a slice in memory, or little-endian `u32`s in a file.
#[derive(Debug, Clone, Copy)]
pub enum Tags<'a> {
    Ids(&'a [u32]),
    Bytes(&'a [u8]),
}

impl Tags<'_> {
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        let (ids, bytes): (&[u32], &[u8]) = match self {
            Tags::Ids(ids) => (ids, &[]),
            Tags::Bytes(bytes) => (&[], bytes),
        };
        ids.iter().copied().chain(bytes.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
    }

    fn contains(&self, id: u32) -> bool {
        self.iter().any(|t| t == id)
    }
}

impl CompactFacts {
    pub fn fields(&self) -> FactFields<'_> {
        FactFields {
            kind: self.kind,
            scope: self.scope,
            status: self.status,
            tags: Tags::Ids(&self.tags),
            writer: self.writer,
            created_at: self.created_at,
            updated_at: self.updated_at,
            expires_at: self.expires_at,
            superseded: self.superseded,
            deleted: self.deleted,
        }
    }
}

/// The principal that wrote an entry's item and the agent it claimed.
pub type Writer = (Option<String>, Option<String>);

/// The distinct scopes, words (statuses, tags) and writers entries refer to. It only grows: values of
/// removed entries stay, which costs little since few distinct values exist.
#[derive(Debug, Default)]
pub struct FactTable {
    scopes: Interner<Scope>,
    words: Interner<String>,
    writers: Interner<Writer>,
}

/// Distinct values, each with a small id: its place in `values`.
#[derive(Debug)]
struct Interner<T> {
    values: Vec<T>,
    ids: HashMap<T, u32>,
}

impl<T> Default for Interner<T> {
    fn default() -> Self {
        Interner { values: Vec::new(), ids: HashMap::new() }
    }
}

impl<T: Eq + std::hash::Hash + Clone> Interner<T> {
    fn id<Q>(&mut self, value: &Q) -> u32
    where
        T: std::borrow::Borrow<Q>,
        Q: Eq + std::hash::Hash + ToOwned<Owned = T> + ?Sized,
    {
        if let Some(id) = self.ids.get(value) {
            return *id;
        }
        let id = self.values.len() as u32;
        self.values.push(value.to_owned());
        self.ids.insert(value.to_owned(), id);
        id
    }

    fn known<Q>(&self, value: &Q) -> Option<u32>
    where
        T: std::borrow::Borrow<Q>,
        Q: Eq + std::hash::Hash + ?Sized,
    {
        self.ids.get(value).copied()
    }
}

impl FactTable {
    /// A table holding these values, each at its place (as [`FactTable::values`] gave them).
    pub fn from_values(scopes: Vec<Scope>, words: Vec<String>, writers: Vec<Writer>) -> FactTable {
        let mut table = FactTable::default();
        for scope in &scopes {
            table.scopes.id(scope);
        }
        for word in &words {
            table.words.id(word.as_str());
        }
        for writer in &writers {
            table.writers.id(writer);
        }
        table
    }

    /// The distinct scopes, words and writers, each at its id.
    pub fn values(&self) -> (&[Scope], &[String], &[Writer]) {
        (&self.scopes.values, &self.words.values, &self.writers.values)
    }

    pub fn compact(&mut self, facts: &ItemFacts) -> CompactFacts {
        CompactFacts {
            kind: facts.kind,
            scope: self.scopes.id(&facts.scope),
            status: facts.status.as_deref().map(|s| self.words.id(s)),
            tags: facts.tags.iter().map(|t| self.words.id(t.as_str())).collect(),
            writer: self.writers.id(&(facts.author.clone(), facts.agent.clone())),
            created_at: facts.created_at,
            updated_at: facts.updated_at,
            expires_at: facts.expires_at,
            superseded: facts.superseded,
            deleted: facts.deleted,
        }
    }

    /// The full facts again (for the few entries a search returns). An id this table does
    /// not hold (a damaged file) reads as an empty value.
    pub fn expand(&self, c: &FactFields) -> ItemFacts {
        let word = |id: u32| self.words.values.get(id as usize).cloned().unwrap_or_default();
        let (author, agent) = self.writers.values.get(c.writer as usize).cloned().unwrap_or_default();
        ItemFacts {
            kind: c.kind,
            scope: self.scopes.values.get(c.scope as usize).cloned().unwrap_or_default(),
            created_at: c.created_at,
            updated_at: c.updated_at,
            expires_at: c.expires_at,
            status: c.status.map(word),
            tags: c.tags.iter().map(word).collect(),
            superseded: c.superseded,
            deleted: c.deleted,
            author,
            agent,
        }
    }

    /// `filters`, with the scope test decided once per distinct scope and words turned to ids:
    /// one compact test per clause of the shared rule.
    pub fn compile(&self, filters: &Filters) -> CompiledFilter {
        let mut compiled = CompiledFilter {
            kinds: 0,
            scopes: vec![true; self.scopes.values.len()],
            created_by: vec![i64::MAX; self.scopes.values.len()],
            impossible: false,
            live: false,
            not_superseded: false,
            not_expired_at: None,
            status: None,
            tags: Vec::new(),
            writers: None,
            since: None,
            until: None,
        };
        for clause in filters.clauses() {
            match clause {
                Clause::Live => compiled.live = true,
                Clause::NotSuperseded => compiled.not_superseded = true,
                Clause::NotExpiredAt(now) => compiled.not_expired_at = Some(now),
                Clause::KindIn(kinds) => compiled.kinds = kinds.iter().fold(0, |bits, k| bits | kind_bit(*k)),
                Clause::ScopeEquals(field, value) => {
                    for (passes, scope) in compiled.scopes.iter_mut().zip(&self.scopes.values) {
                        *passes &= scope.get(field).unwrap_or("") == value;
                    }
                }
                Clause::ScopeIn(field, values) => {
                    for (passes, scope) in compiled.scopes.iter_mut().zip(&self.scopes.values) {
                        let held = scope.get(field).unwrap_or("");
                        *passes &= values.iter().any(|v| v == held);
                    }
                }
                Clause::BranchWithMerged(branch, merged) => {
                    let scopes = compiled.scopes.iter_mut().zip(&mut compiled.created_by);
                    for ((passes, by), scope) in scopes.zip(&self.scopes.values) {
                        let held = scope.get("branch").unwrap_or("");
                        if held != branch {
                            match merged.iter().find(|m| m.branch == held) {
                                Some(m) => *by = (*by).min(m.until),
                                None => *passes = false,
                            }
                        }
                    }
                }
                Clause::UpdatedSince(t) => compiled.since = Some(t),
                Clause::UpdatedBefore(t) => compiled.until = Some(t),
                // A status or tag no entry has admits nothing.
                Clause::StatusIs(status) => match self.words.known(status) {
                    Some(id) => compiled.status = Some(id),
                    None => compiled.impossible = true,
                },
                Clause::AuthorIs(author) => {
                    let writers =
                        compiled.writers.get_or_insert_with(|| vec![true; self.writers.values.len()]);
                    for (passes, (principal, agent)) in writers.iter_mut().zip(&self.writers.values) {
                        *passes &= match author {
                            Author::Principal(p) => principal.as_deref() == Some(p.as_str()),
                            Author::Agent(a) => agent.as_deref() == Some(a.as_str()),
                        };
                    }
                }
                Clause::HasTags(tags) => {
                    for tag in tags {
                        match self.words.known(tag.as_str()) {
                            Some(id) => compiled.tags.push(id),
                            None => compiled.impossible = true,
                        }
                    }
                }
            }
        }
        compiled
    }
}

fn kind_bit(kind: Kind) -> u64 {
    1 << (kind as u32)
}

/// [`Filters`] compiled against a [`FactTable`]; each field is one clause's test.
#[derive(Debug)]
pub struct CompiledFilter {
    /// One bit per admitted kind; 0 admits every kind.
    kinds: u64,
    /// Per scope id, whether it passes.
    scopes: Vec<bool>,
    /// Per scope id, the latest creation time that passes (a merged branch's cutoff).
    created_by: Vec<i64>,
    impossible: bool,
    live: bool,
    not_superseded: bool,
    not_expired_at: Option<i64>,
    status: Option<u32>,
    tags: Vec<u32>,
    /// Per writer id, whether it passes; `None` when no author is asked for.
    writers: Option<Vec<bool>>,
    since: Option<i64>,
    until: Option<i64>,
}

impl CompiledFilter {
    pub fn admits(&self, c: &FactFields) -> bool {
        !self.impossible
            && (self.kinds == 0 || self.kinds & kind_bit(c.kind) != 0)
            && self.scopes.get(c.scope as usize).copied().unwrap_or(false)
            && self.created_by.get(c.scope as usize).is_some_and(|by| c.created_at <= *by)
            && !(self.live && c.deleted)
            && !(self.not_superseded && c.superseded)
            && self.not_expired_at.is_none_or(|now| c.expires_at.is_none_or(|t| t > now))
            && self.since.is_none_or(|t| c.updated_at >= t)
            && self.until.is_none_or(|t| c.updated_at < t)
            && self.status.is_none_or(|s| c.status == Some(s))
            && self.tags.iter().all(|t| c.tags.contains(*t))
            && self.writers.as_ref().is_none_or(|w| w.get(c.writer as usize).copied().unwrap_or(false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cortex_domain::tenant::Bound;

    fn scope(org: &str, branch: Option<&str>) -> Scope {
        Scope { org: Some(org.into()), branch: branch.map(str::to_string), ..Scope::default() }
    }

    #[test]
    fn decides_exactly_as_the_full_filters_do() {
        let mut facts = Vec::new();
        for (i, kind) in [Kind::Decision, Kind::Runbook, Kind::Todo].into_iter().enumerate() {
            let scopes = [
                scope("acme", Some("main")),
                scope("acme", None),
                scope("other", Some("main")),
                scope("acme", Some("feat")),
            ];
            for scope in scopes {
                for status in [None, Some("open"), Some("done")] {
                    for tags in [vec![], vec!["a".to_string()], vec!["a".to_string(), "b".to_string()]] {
                        let writers = [
                            (None, None),
                            (Some("key:acme/ci"), Some("claude")),
                            (Some("local:dana"), Some("key:acme/ci")),
                        ];
                        for ((expires_at, superseded, deleted), (author, agent)) in
                            [(None, false, false), (Some(50), false, true), (Some(500), true, false)]
                                .into_iter()
                                .zip(writers)
                        {
                            facts.push(ItemFacts {
                                kind,
                                scope: scope.clone(),
                                created_at: 60 * i as i64,
                                updated_at: 100 * i as i64,
                                expires_at,
                                status: status.map(str::to_string),
                                tags: tags.clone(),
                                superseded,
                                deleted,
                                author: author.map(str::to_string),
                                agent: agent.map(str::to_string),
                            });
                        }
                    }
                }
            }
        }
        let mut filters = Vec::new();
        for kinds in [vec![], vec![Kind::Runbook], vec![Kind::Decision, Kind::Todo]] {
            for scope_equals in [
                vec![],
                vec![("org", "acme".to_string())],
                vec![("org", "acme".to_string()), ("branch", "main".to_string())],
                vec![("branch", String::new())],
            ] {
                for status in [None, Some("open"), Some("never used")] {
                    for tags in [vec![], vec!["a".to_string()], vec!["b".to_string(), "zzz".to_string()]] {
                        for (since, until, include_expired, include_superseded) in
                            [(None, None, false, false), (Some(100), Some(200), true, true)]
                        {
                            filters.push(Filters {
                                kinds: kinds.clone(),
                                scope_equals: scope_equals.clone(),
                                since,
                                until,
                                tags: tags.clone(),
                                status: status.map(str::to_string),
                                author: None,
                                now: 100,
                                include_superseded,
                                include_expired,
                                bound: None,
                                merged: Vec::new(),
                            });
                        }
                    }
                }
            }
        }
        // API-key bounds: an org alone, an org and projects (the facts' project is unset: '').
        let bounded: Vec<Filters> = filters
            .iter()
            .step_by(7)
            .flat_map(|f| {
                [
                    Bound { org: "acme".into(), projects: vec![] },
                    Bound { org: "other".into(), projects: vec![String::new()] },
                    Bound { org: "acme".into(), projects: vec!["api".into()] },
                ]
                .map(|bound| Filters { bound: Some(bound), ..f.clone() })
            })
            .collect();
        filters.extend(bounded);
        // Merged branches seen from main: one up to a time, one never seen in the facts.
        let merged: Vec<Filters> = filters
            .iter()
            .filter(|f| f.scope_equals.iter().any(|(field, v)| *field == "branch" && v == "main"))
            .map(|f| Filters {
                merged: vec![
                    cortex_domain::provenance::MergedBranch { branch: "feat".into(), until: 60 },
                    cortex_domain::provenance::MergedBranch { branch: "gone".into(), until: 999 },
                ],
                ..f.clone()
            })
            .collect();
        filters.extend(merged);
        // Authors: a principal, an agent, a principal's text claimed as an agent, no one's.
        let authored: Vec<Filters> = filters
            .iter()
            .step_by(5)
            .flat_map(|f| {
                [
                    Author::Principal("key:acme/ci".into()),
                    Author::Agent("claude".into()),
                    Author::Agent("key:acme/ci".into()),
                    Author::Principal("key:nobody/x".into()),
                ]
                .map(|author| Filters { author: Some(author), ..f.clone() })
            })
            .collect();
        filters.extend(authored);
        let mut table = FactTable::default();
        let compact: Vec<CompactFacts> = facts.iter().map(|f| table.compact(f)).collect();
        let (mut admitted, mut refused) = (0, 0);
        for filter in &filters {
            let compiled = table.compile(filter);
            for (full, small) in facts.iter().zip(&compact) {
                let expected = filter.admits(full);
                assert_eq!(compiled.admits(&small.fields()), expected, "{filter:?} on {full:?}");
                if expected { admitted += 1 } else { refused += 1 }
            }
        }
        assert!(admitted > 1000 && refused > 1000, "both outcomes exercised: {admitted} / {refused}");
        for (full, small) in facts.iter().zip(&compact) {
            let back = table.expand(&small.fields());
            assert_eq!(
                (
                    back.kind,
                    &back.scope,
                    back.updated_at,
                    back.expires_at,
                    &back.status,
                    &back.tags,
                    back.superseded,
                    back.deleted
                ),
                (
                    full.kind,
                    &full.scope,
                    full.updated_at,
                    full.expires_at,
                    &full.status,
                    &full.tags,
                    full.superseded,
                    full.deleted
                )
            );
        }
    }
}
