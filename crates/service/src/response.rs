//! What the service answers. These types are the tools' `outputSchema` and the CLI's JSON,
//! so a field added here reaches every client.

use cortex_domain::args::Word;
use cortex_domain::limits::MAX_BRIEF_TITLE_CHARS;
use cortex_domain::text::truncate_chars;
use cortex_domain::{Kind, Mode, Scope, ScopeLevel, ScopeMatch, ValidationError};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ItemStatus {
    Inserted,
    Updated,
    Deleted,
    SkippedDedupe,
    BusinessRuleBlocked,
    ValidationError,
}

impl ItemStatus {
    pub const ALL: [ItemStatus; 6] = [
        ItemStatus::Inserted,
        ItemStatus::Updated,
        ItemStatus::Deleted,
        ItemStatus::SkippedDedupe,
        ItemStatus::BusinessRuleBlocked,
        ItemStatus::ValidationError,
    ];

    /// The status as it is sent (and as `/metrics` labels it).
    pub fn as_str(self) -> &'static str {
        match self {
            ItemStatus::Inserted => "inserted",
            ItemStatus::Updated => "updated",
            ItemStatus::Deleted => "deleted",
            ItemStatus::SkippedDedupe => "skipped_dedupe",
            ItemStatus::BusinessRuleBlocked => "business_rule_blocked",
            ItemStatus::ValidationError => "validation_error",
        }
    }
}

/// A refusal with the field it concerns and how to fix it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ErrorBody {
    /// Machine-readable reason, e.g. `missing_field`.
    pub code: String,
    /// Path of the offending field, e.g. `items[2].data.rationale`.
    pub field: String,
    pub message: String,
    /// What to do instead.
    pub human_hint: String,
}

impl From<&ValidationError> for ErrorBody {
    fn from(e: &ValidationError) -> Self {
        ErrorBody {
            code: e.code.as_str().to_string(),
            field: e.field.clone(),
            message: e.message.clone(),
            human_hint: e.human_hint.clone(),
        }
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ItemResult {
    /// Position of the item in the request.
    pub index: i64,
    pub status: ItemStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// For `skipped_dedupe`: the item that already holds this knowledge.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub existing_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// For a near-duplicate: the cosine similarity to `existing_id`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
    /// Items in force in the same scope this one may contradict or duplicate (nothing was
    /// refused); `hint` says how to replace one. Each `{id, title, why}`: the shape is left
    /// out of the output schema, which every session pays for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<Value>")]
    pub may_contradict: Vec<ConflictView>,
    /// What to do about `may_contradict`, in one line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// Secrets replaced by a marker (or private spans removed) before the item was stored.
    /// Absent when nothing was taken. Its output schema says only "an array": every byte of it
    /// is sent to every client; docs/TOOLS.md says what each entry holds (`{field, rule}`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Option<Vec<Value>>")]
    pub redacted: Vec<Redacted>,
}

/// A stored item a new one may contradict or duplicate.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ConflictView {
    pub id: String,
    pub title: String,
    /// Why they look close (same component, shared title words, similar text).
    pub why: String,
}

/// Why a hit may be out of date.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct StaleView {
    /// In a few words: which files changed in how many commits, or a runbook not verified.
    pub why: String,
    /// The files it concerns that changed since it was written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// Commits that changed them since (the most any one file saw), when the history says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commits: Option<i64>,
    /// The newest of those changes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub newest: Option<String>,
}

impl StaleView {
    /// A runbook not verified for a while (`cortex_domain::lifecycle::is_stale`).
    pub fn unverified_runbook() -> StaleView {
        StaleView {
            why: format!("runbook not verified for {} days", cortex_domain::lifecycle::STALE_RUNBOOK_DAYS),
            files: Vec::new(),
            commits: None,
            newest: None,
        }
    }

    /// Files changed since the item's commit.
    pub fn files_changed(stale: &cortex_domain::provenance::Stale) -> StaleView {
        StaleView {
            why: stale.why(),
            files: stale.files.iter().map(|f| f.path.clone()).collect(),
            commits: stale.commits(),
            newest: Some(cortex_domain::time::format_instant(stale.newest())),
        }
    }
}

/// Where an item came from in git: the commit it was written at and the files it concerns.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ProvenanceView {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Some of its files had uncommitted changes when it was written.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dirty: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
}

impl From<&cortex_domain::provenance::Provenance> for ProvenanceView {
    fn from(p: &cortex_domain::provenance::Provenance) -> ProvenanceView {
        ProvenanceView {
            commit: p.commit.clone(),
            branch: p.branch.clone(),
            dirty: p.dirty,
            files: p.paths().map(str::to_string).collect(),
        }
    }
}

/// A secret taken out of an item's text before it was stored: where, and which rule found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Redacted {
    /// The field inside the item: `content`, `data.body`, `metadata.note`, ….
    pub field: String,
    /// The rule that found it (`github-pat`, `private-key`, `password-in-url`, …; `private`
    /// for a `<private>` span, removed whole).
    pub rule: String,
}

#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct StoreSummary {
    pub total: i64,
    pub inserted: i64,
    pub updated: i64,
    pub deleted: i64,
    pub skipped_dedupe: i64,
    pub business_rule_blocked: i64,
    pub validation_error: i64,
}

impl StoreSummary {
    /// The items that came to `status`.
    pub fn count(&self, status: ItemStatus) -> i64 {
        match status {
            ItemStatus::Inserted => self.inserted,
            ItemStatus::Updated => self.updated,
            ItemStatus::Deleted => self.deleted,
            ItemStatus::SkippedDedupe => self.skipped_dedupe,
            ItemStatus::BusinessRuleBlocked => self.business_rule_blocked,
            ItemStatus::ValidationError => self.validation_error,
        }
    }

    /// The counter of `status`.
    pub fn count_mut(&mut self, status: ItemStatus) -> &mut i64 {
        match status {
            ItemStatus::Inserted => &mut self.inserted,
            ItemStatus::Updated => &mut self.updated,
            ItemStatus::Deleted => &mut self.deleted,
            ItemStatus::SkippedDedupe => &mut self.skipped_dedupe,
            ItemStatus::BusinessRuleBlocked => &mut self.business_rule_blocked,
            ItemStatus::ValidationError => &mut self.validation_error,
        }
    }
}

/// The answer to `memory_store`: one result per input item, in order, and the counts.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StoreResponse {
    pub results: Vec<ItemResult>,
    pub summary: StoreSummary,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ScoreBreakdown {
    pub relevance: f64,
    pub recency: f64,
    pub scope_proximity: f64,
    pub citations: f64,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Hit {
    #[schemars(with = "String")]
    pub id: Uuid,
    #[schemars(with = "String")]
    pub kind: Kind,
    pub title: String,
    /// Text around the best match, matched terms in `**`.
    pub snippet: String,
    /// The item's text, cut at `max_content_chars` (`detail: full`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub content_truncated: bool,
    // The full-detail fields are typed without `null` in the schema: they are left out,
    // never null, and a shorter schema costs every session less.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64")]
    pub score: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "ScoreBreakdown")]
    pub score_parts: Option<ScoreBreakdown>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Value")]
    pub scope: Option<Scope>,
    /// Where the item sits relative to the caller: `branch`, `project`, `org` or `other`.
    #[schemars(with = "String")]
    pub scope_match: ScopeMatch,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub created_at: Option<String>,
    pub updated_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64")]
    pub confidence: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The kind's structured fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// The newer item that replaced this one (only with `include_superseded`, or by `ids`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    /// May be out of date: the files it concerns changed since it was written (or a runbook
    /// was not verified for 90 days). Check before relying on it; `memory_store` with
    /// `"operation": "confirm"` says it still holds. `{why, files, commits, newest}`
    /// (`StaleView`), its shape left out of the output schema as `chunk`'s is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Value")]
    pub stale: Option<StaleView>,
    /// The commit it was written at and the files it concerns (`detail: full`); its shape
    /// (`ProvenanceView`) is left out of the output schema, as `chunk`'s is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Value")]
    pub provenance: Option<ProvenanceView>,
    /// Not a match: reached by following links from a hit (`expand`); `path` says how.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expanded: bool,
    /// For an expanded item: the links from the hit it was reached from, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path: Vec<GraphEdge>,
    /// For an item read by id: its live relations, both ways.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub relations: Vec<RelationView>,
    /// For an entity read by id: its observations, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observations: Vec<ObservationView>,
    /// A long document's best-matching part (the snippet's source). Its shape is left out of
    /// the output schema, which every session pays for: see `ChunkView`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Value")]
    pub chunk: Option<ChunkView>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub chunks_matched: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A word of a closed list (a mode, a scope level), sent as the word.
fn word<W: Word, S: serde::Serializer>(value: &W, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(value.as_str())
}

impl Hit {
    /// Keeps what an agent needs to choose what to read (`detail: brief`): id, kind, title,
    /// snippet, scope level, update time, status, and the warnings (superseded, stale, how a
    /// linked item was reached). The rest comes with `ids` or `detail: full`.
    pub fn make_brief(&mut self) {
        let (title, cut) = truncate_chars(&self.title, MAX_BRIEF_TITLE_CHARS);
        if cut {
            self.title = format!("{title}…");
        }
        self.content = None;
        self.content_truncated = false;
        self.score = None;
        self.score_parts = None;
        self.scope = None;
        self.created_at = None;
        self.confidence = None;
        self.tags.clear();
        self.data = None;
        self.metadata = None;
        self.expires_at = None;
        self.relations.clear();
        self.observations.clear();
        self.chunk = None;
        self.chunks_matched = 0;
        self.provenance = None;
    }
}

/// A chunk of a long document: headings above it, its byte range in `content`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChunkView {
    pub heading_path: Vec<String>,
    pub start: usize,
    pub end: usize,
}

/// One link of the knowledge graph: a relation, or an entity's observation
/// (`relation_type` `has_observation`).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct GraphEdge {
    /// The relation's id (the observation's own id for an observation link).
    #[schemars(with = "String")]
    pub id: Uuid,
    #[schemars(with = "String")]
    pub from: Uuid,
    #[schemars(with = "String")]
    pub to: Uuid,
    pub relation_type: String,
}

/// A relation of an item read by id, seen from that item.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RelationView {
    /// The relation's id.
    pub id: String,
    pub relation_type: String,
    /// `outgoing` (this item → other) or `incoming` (other → this item).
    pub direction: Direction,
    pub other_id: String,
    pub other_kind: String,
    pub other_title: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ObservationView {
    pub id: String,
    pub text: String,
    pub created_at: String,
}

/// The part of the graph an expansion walked.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GraphView {
    /// The links followed (`relations`, `parents`, `children` or `all`) and how far.
    pub expand: String,
    pub depth: u8,
    /// Items added to the hits by expansion.
    pub added: usize,
    /// Every item on a followed link: hits and expanded items.
    pub nodes: Vec<GraphNode>,
    pub edges: Vec<GraphEdge>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GraphNode {
    #[schemars(with = "String")]
    pub id: Uuid,
    #[schemars(with = "String")]
    pub kind: Kind,
    pub title: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SearchedScope {
    #[serde(serialize_with = "word")]
    #[schemars(with = "String")]
    pub level: ScopeLevel,
    #[serde(flatten)]
    #[schemars(with = "Value")]
    pub filter: Scope,
}

/// What a find ran. Typed up to the serializer, so no layer parses it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Route {
    /// Lexical and dense, fused.
    Hybrid,
    Lexical,
    /// Items read by id.
    Ids,
    /// Kinds without a query: the newest items of those kinds.
    Recent,
    /// The query had no searchable word.
    None,
}

impl Route {
    pub fn as_str(self) -> &'static str {
        match self {
            Route::Hybrid => "hybrid",
            Route::Lexical => "lexical",
            Route::Ids => "ids",
            Route::Recent => "recent",
            Route::None => "none",
        }
    }
}

impl std::fmt::Display for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for Route {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// Which way a relation points, seen from the item read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// This item → the other.
    Outgoing,
    /// The other → this item.
    Incoming,
}

impl PartialEq<&str> for Direction {
    fn eq(&self, other: &&str) -> bool {
        matches!((self, *other), (Direction::Outgoing, "outgoing") | (Direction::Incoming, "incoming"))
    }
}

/// The answer to `memory_find`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FindResponse {
    pub hits: Vec<Hit>,
    /// What ran: `lexical`, `ids`, or `none` when the query had no searchable word.
    pub route_used: Route,
    /// The mode asked for.
    #[serde(serialize_with = "word")]
    #[schemars(with = "String")]
    pub mode: Mode,
    /// How well the best hit answers the query, 0–1.
    pub confidence: f64,
    pub searched_scope: SearchedScope,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Computed hints when fewer than 3 hits came back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<String>")]
    pub suggestions: Vec<Suggestion>,
    /// What the server could not do for this request (e.g. semantic search unavailable).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Ids asked for that do not exist or were deleted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_ids: Vec<String>,
    /// Ids asked for that were left out to keep the response under its size budget: read
    /// them in another call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub omitted_ids: Vec<String>,
    /// True when hits were cut to keep the response under its size budget (`notes` says how).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// Present when links were followed from the hits (`expand`, or `deep` mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graph: Option<GraphView>,
}

/// A computed hint of a find with few hits. On the wire it is a sentence in the words of the
/// tool's arguments (its `Display`); a caller with a syntax of its own (the CLI's flags) words
/// the typed change itself.
#[derive(Debug, Clone, PartialEq)]
pub enum Suggestion {
    /// `more` hits (a count, or `1000+`) in the wider scope `level`.
    Widen { more: String, level: cortex_domain::ScopeLevel },
    /// `more` hits of the kinds the `types` filter left out.
    OtherKinds { more: String },
    /// `more` hits without these narrowing arguments (`tags`, `status`, `since`, `until`).
    Unfiltered { more: String, filters: Vec<&'static str> },
    /// A hint that names no argument: every caller reads it alike.
    Text(String),
}

impl std::fmt::Display for Suggestion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Suggestion::Widen { more, level } => {
                let level = level.as_str();
                write!(f, "{more} more hit(s) in {level} scope: pass \"widen\": \"{level}\"")
            }
            Suggestion::OtherKinds { more } => {
                write!(f, "{more} more hit(s) of other kinds: drop the `types` filter")
            }
            Suggestion::Unfiltered { more, filters } => {
                write!(f, "{more} more hit(s) without the {} filter(s)", filters.join(", "))
            }
            Suggestion::Text(text) => f.write_str(text),
        }
    }
}

impl Serialize for Suggestion {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_status_is_sent_as_its_name() {
        for status in ItemStatus::ALL {
            assert_eq!(serde_json::to_value(status).unwrap(), status.as_str());
        }
    }
}
