//! The one filter rule every route shares. [`Filters`] (what a find asks for) becomes a list of
//! [`Clause`]s — the conditions an item must all pass — in one place, [`Filters::clauses`].
//! Each backend renders every clause as SQL, and indexes kept outside the database test the
//! same clauses on an item's [`ItemFacts`] ([`Clause::admits`]): the matches over `Clause`
//! are exhaustive, so a new condition cannot be forgotten by one route. A property test
//! (`tests/filters.rs`) holds the SQL of both backends to [`Filters::admits`].

use crate::model::StoredItem;
use cortex_domain::find::{Author, FindFilter};
use cortex_domain::provenance::MergedBranch;
use cortex_domain::tenant::Bound;
use cortex_domain::{Kind, Scope};

/// What a search or count admits.
#[derive(Debug, Clone, Default)]
pub struct Filters {
    pub kinds: Vec<Kind>,
    /// Exact scope field values (`("branch", "main")`).
    pub scope_equals: Vec<(&'static str, String)>,
    pub since: Option<i64>,
    pub until: Option<i64>,
    pub tags: Vec<String>,
    pub status: Option<String>,
    /// Who wrote the item's current version.
    pub author: Option<Author>,
    /// Items expiring at or before this instant are hidden.
    pub now: i64,
    /// Superseded items are hidden unless this is set.
    pub include_superseded: bool,
    /// Expired items are hidden unless this is set.
    pub include_expired: bool,
    /// An API key's tenant bound: only its org (and its projects, when it names some).
    pub bound: Option<Bound>,
    /// Branches merged into the branch `scope_equals` names, whose items created up to each
    /// one's `until` pass too (`cortex_domain::provenance::visible_branches`).
    pub merged: Vec<MergedBranch>,
}

/// One condition of [`Filters`]; an item passes the filters when it passes every clause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clause<'a> {
    /// Not deleted: always, whatever the filters say.
    Live,
    NotSuperseded,
    /// No end of life, or one after this instant.
    NotExpiredAt(i64),
    /// One of these kinds (never empty).
    KindIn(&'a [Kind]),
    /// The scope field (a column name from `cortex_domain::scope::SCOPE_FIELDS`, never the
    /// caller's text) holds exactly this value; an unset field holds ''.
    ScopeEquals(&'static str, &'a str),
    /// The scope field holds one of these values (never empty).
    ScopeIn(&'static str, &'a [String]),
    /// The branch is this one, or one of `merged` and the item was created by its `until`
    /// (never empty: with no merged branch the clause is `ScopeEquals("branch", …)`).
    BranchWithMerged(&'a str, &'a [MergedBranch]),
    /// Updated at or after this instant.
    UpdatedSince(i64),
    /// Updated before this instant.
    UpdatedBefore(i64),
    StatusIs(&'a str),
    /// The recorded principal, or the claimed agent, of the current version is this one.
    AuthorIs(&'a Author),
    /// Every one of these tags (never empty).
    HasTags(&'a [String]),
}

impl Filters {
    /// The conditions these filters set, in the order the backends write them.
    pub fn clauses(&self) -> Vec<Clause<'_>> {
        let mut out = vec![Clause::Live];
        if !self.include_superseded {
            out.push(Clause::NotSuperseded);
        }
        if !self.include_expired {
            out.push(Clause::NotExpiredAt(self.now));
        }
        if !self.kinds.is_empty() {
            out.push(Clause::KindIn(&self.kinds));
        }
        out.extend(self.scope_equals.iter().map(|(field, value)| match *field {
            "branch" if !self.merged.is_empty() => Clause::BranchWithMerged(value, &self.merged),
            field => Clause::ScopeEquals(field, value),
        }));
        out.extend(self.since.map(Clause::UpdatedSince));
        out.extend(self.until.map(Clause::UpdatedBefore));
        out.extend(self.status.as_deref().map(Clause::StatusIs));
        out.extend(self.author.as_ref().map(Clause::AuthorIs));
        if !self.tags.is_empty() {
            out.push(Clause::HasTags(&self.tags));
        }
        if let Some(bound) = &self.bound {
            out.push(Clause::ScopeEquals("org", &bound.org));
            if !bound.projects.is_empty() {
                out.push(Clause::ScopeIn("project", &bound.projects));
            }
        }
        out
    }

    /// These filters with a find's own ([`FindFilter`]: kinds, dates, tags, status, whether
    /// superseded and expired items count) in place of theirs; scope, clock and bound stay,
    /// and an age in the find's dates is counted back from this clock.
    /// The filter is taken apart whole: a new filter of a find does not compile until it is
    /// given its clause here.
    pub fn with_find_filter(self, filter: &FindFilter) -> Filters {
        let FindFilter { types, since, until, tags, status, author, include_superseded, include_expired } =
            filter;
        Filters {
            kinds: types.clone(),
            since: since.map(|m| m.resolve(self.now)),
            until: until.map(|m| m.resolve(self.now)),
            tags: tags.clone(),
            status: status.clone(),
            author: author.clone(),
            include_superseded: *include_superseded,
            include_expired: *include_expired,
            ..self
        }
    }

    /// Whether an item with these facts passes, exactly as the backends' SQL decides.
    pub fn admits(&self, facts: &ItemFacts) -> bool {
        self.clauses().iter().all(|clause| clause.admits(facts))
    }

    /// Only items of exactly this scope: every field equal, unset ones included.
    pub fn exact_scope(scope: &Scope) -> Vec<(&'static str, String)> {
        cortex_domain::scope::SCOPE_FIELDS.into_iter().zip(crate::model::scope_values(scope)).collect()
    }
}

impl Clause<'_> {
    /// Whether an item with these facts passes this clause.
    pub fn admits(&self, facts: &ItemFacts) -> bool {
        match *self {
            Clause::Live => !facts.deleted,
            Clause::NotSuperseded => !facts.superseded,
            Clause::NotExpiredAt(now) => facts.expires_at.is_none_or(|t| t > now),
            Clause::KindIn(kinds) => kinds.contains(&facts.kind),
            Clause::ScopeEquals(field, value) => facts.scope.get(field).unwrap_or("") == value,
            Clause::ScopeIn(field, values) => {
                values.iter().any(|v| facts.scope.get(field).unwrap_or("") == v)
            }
            Clause::BranchWithMerged(branch, merged) => {
                let held = facts.scope.get("branch").unwrap_or("");
                held == branch || merged.iter().any(|m| m.branch == held && facts.created_at <= m.until)
            }
            Clause::UpdatedSince(t) => facts.updated_at >= t,
            Clause::UpdatedBefore(t) => facts.updated_at < t,
            Clause::StatusIs(status) => facts.status.as_deref() == Some(status),
            Clause::HasTags(tags) => tags.iter().all(|t| facts.tags.contains(t)),
            Clause::AuthorIs(Author::Principal(p)) => facts.author.as_deref() == Some(p.as_str()),
            Clause::AuthorIs(Author::Agent(a)) => facts.agent.as_deref() == Some(a.as_str()),
        }
    }
}

/// What filters test, per item.
#[derive(Debug, Clone)]
pub struct ItemFacts {
    pub kind: Kind,
    pub scope: Scope,
    pub created_at: i64,
    pub updated_at: i64,
    pub expires_at: Option<i64>,
    pub status: Option<String>,
    pub tags: Vec<String>,
    pub superseded: bool,
    pub deleted: bool,
    /// The principal that wrote the current version ([`StoredItem::author`]).
    pub author: Option<String>,
    /// The agent its writer claimed (`source.actor`, when a string).
    pub agent: Option<String>,
}

impl ItemFacts {
    /// The facts of a whole item.
    pub fn of(item: &StoredItem) -> ItemFacts {
        let r = &item.record;
        ItemFacts {
            kind: r.kind,
            scope: r.scope.clone(),
            created_at: r.created_at,
            updated_at: r.updated_at,
            expires_at: r.expires_at,
            status: r.status.clone(),
            tags: r.tags.clone(),
            superseded: item.superseded_by.is_some(),
            deleted: item.deleted_at.is_some(),
            author: item.author.clone(),
            agent: r
                .source
                .as_ref()
                .and_then(|s| s.get("actor"))
                .and_then(|a| a.as_str())
                .map(str::to_string),
        }
    }
}
