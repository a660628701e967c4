//! One `memory_find` request: what it asks for, typed. The MCP adapter parses the tool's
//! arguments into it ([`FindRequest::from_json`]); the CLI, the web UI and the harness build
//! it directly ([`FindRequest::query`] and the `with_*` methods), and the service checks
//! either kind against the same limits ([`FindRequest::check`]).
//!
//! - [`args`]: its arguments, one definition each (schema and parse), and the checks across them
//! - [`filter`]: its filters, each defined once
//! - `build`: the request built in the process, and its checks
//! - [`cursor`]: the cursor of the next page, bound to the query it came from

pub mod args;
mod build;
mod cursor;
pub mod filter;

pub use filter::{Author, FindFilter};

use crate::args::Word;
use crate::graph::{DEFAULT_DEPTH, DEFAULT_EXPAND_LIMIT, Expand};
use crate::limits::*;
use crate::scope::{Scope, ScopeLevel};
use uuid::Uuid;

/// Which retrievers run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Lexical only.
    Fast,
    /// Lexical and dense, fused (the default).
    #[default]
    Auto,
    /// Auto plus typo tolerance (the same candidate pools) and graph expansion.
    Deep,
}

impl Word for Mode {
    const ALL: &'static [Mode] = &[Mode::Fast, Mode::Auto, Mode::Deep];

    fn as_str(self) -> &'static str {
        match self {
            Mode::Fast => "fast",
            Mode::Auto => "auto",
            Mode::Deep => "deep",
        }
    }
}

impl Mode {
    /// The word of the mode (also [`Word::as_str`], here so callers need not import the trait).
    pub fn as_str(self) -> &'static str {
        Word::as_str(self)
    }
}

/// How much of each hit a find returns. An agent pays for every character of a response in
/// its context window: a search answers with what it needs to choose what to read; the item
/// itself comes whole when read by `ids` or asked for with `detail: full`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Id, kind, title, snippet, scope level, update time, status (and the flags that warn:
    /// superseded, stale, reached by a link).
    Brief,
    /// Also content, data, metadata, tags, scores, scope, relations and observations.
    Full,
}

impl Word for Detail {
    const ALL: &'static [Detail] = &[Detail::Brief, Detail::Full];

    fn as_str(self) -> &'static str {
        match self {
            Detail::Brief => "brief",
            Detail::Full => "full",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct FindRequest {
    pub query: Option<String>,
    pub ids: Vec<Uuid>,
    pub mode: Mode,
    /// Which items may be hits: kinds, dates, tags, status, superseded and expired ones.
    pub filter: FindFilter,
    pub scope: Option<Scope>,
    pub widen: Option<ScopeLevel>,
    pub limit: usize,
    pub offset: usize,
    pub max_content_chars: usize,
    /// `brief` by default for a search, `full` for reads by `ids` or when `max_content_chars`
    /// is given (asking for content means wanting it).
    pub detail: Detail,
    /// Which links to follow from the hits; `None` when not given (deep mode then follows all).
    pub expand: Option<Expand>,
    /// How many links away expansion goes (1–3).
    pub depth: u8,
    /// Items expansion adds at most.
    pub expand_limit: usize,
}

impl FindRequest {
    /// Every argument at its default, no query: what the arguments' parse starts from.
    pub(crate) fn defaults() -> FindRequest {
        FindRequest {
            query: None,
            ids: Vec::new(),
            mode: Mode::Auto,
            filter: FindFilter::default(),
            scope: None,
            widen: None,
            limit: DEFAULT_LIMIT as usize,
            offset: 0,
            max_content_chars: DEFAULT_HIT_CONTENT_CHARS,
            detail: Detail::Full,
            expand: None,
            depth: DEFAULT_DEPTH,
            expand_limit: DEFAULT_EXPAND_LIMIT,
        }
    }

    /// The links to follow from the hits: as asked, else all of them in deep mode, else none.
    pub fn expansion(&self) -> Expand {
        self.expand.unwrap_or(if self.mode == Mode::Deep { Expand::All } else { Expand::None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use crate::kind::Kind;
    use serde_json::json;

    #[test]
    fn limit_is_checked() {
        for bad in [json!(0), json!(101), json!(-1), json!("5"), json!(2.5)] {
            let err = FindRequest::from_json(&json!({"query": "x", "limit": bad})).unwrap_err();
            assert_eq!(err.field, "limit", "{bad}");
        }
        assert_eq!(FindRequest::from_json(&json!({"query": "x", "limit": 100})).unwrap().limit, 100);
    }

    #[test]
    fn query_or_ids_is_needed() {
        assert_eq!(FindRequest::from_json(&json!({})).unwrap_err().field, "query");
        // Kinds alone list the newest items of those kinds, briefly, like a search.
        let list = FindRequest::from_json(&json!({"types": ["runbook"]})).unwrap();
        assert_eq!((list.query.is_none(), list.ids.is_empty(), list.detail), (true, true, Detail::Brief));
        assert_eq!(FindRequest::from_json(&json!({"query": ""})).unwrap_err().field, "query");
        let r = FindRequest::from_json(&json!({"ids": [Uuid::now_v7().to_string()]})).unwrap();
        assert_eq!(r.max_content_chars, DEFAULT_LOOKUP_CONTENT_CHARS);
    }

    #[test]
    fn cursors_round_trip_and_are_bound_to_the_query() {
        let r = FindRequest::from_json(&json!({"query": "deploy", "limit": 2})).unwrap();
        let cursor = r.cursor_at(2);
        let next = FindRequest::from_json(&json!({"query": "deploy", "limit": 2, "cursor": cursor})).unwrap();
        assert_eq!(next.offset, 2);
        let err = FindRequest::from_json(&json!({"query": "other", "cursor": cursor})).unwrap_err();
        assert_eq!(err.code, ErrorCode::BadCursor);
    }

    #[test]
    fn expansion_arguments_are_checked() {
        let r = FindRequest::from_json(&json!({"query": "x", "expand": "Children", "depth": 2})).unwrap();
        assert_eq!((r.expand, r.depth, r.expand_limit), (Some(Expand::Children), 2, DEFAULT_EXPAND_LIMIT));
        assert_eq!(
            FindRequest::from_json(&json!({"query": "x", "expand": "up"})).unwrap_err().field,
            "expand"
        );
        assert_eq!(FindRequest::from_json(&json!({"query": "x", "depth": 4})).unwrap_err().field, "depth");
        assert_eq!(
            FindRequest::from_json(&json!({"query": "x", "expand_limit": 0})).unwrap_err().field,
            "expand_limit"
        );
    }

    #[test]
    fn more_tags_than_an_item_can_hold_are_too_many() {
        let tags: Vec<String> = (0..1_000).map(|i| format!("t{i}")).collect();
        let err = FindRequest::from_json(&json!({"query": "x", "tags": tags})).unwrap_err();
        assert_eq!((err.code, err.field.as_str()), (ErrorCode::TooMany, "tags"));
        assert!(err.message.contains("1000") && err.human_hint.contains("32"), "{err:?}");
        let tags: Vec<String> = (0..MAX_TAGS).map(|i| format!("t{i}")).collect();
        assert_eq!(
            FindRequest::from_json(&json!({"query": "x", "tags": tags})).unwrap().filter.tags.len(),
            MAX_TAGS
        );
    }

    #[test]
    fn types_and_dates_are_checked() {
        assert_eq!(
            FindRequest::from_json(&json!({"query": "x", "types": ["adr", "nope"]})).unwrap_err().field,
            "types[1]"
        );
        assert_eq!(
            FindRequest::from_json(&json!({"query": "x", "since": "last week"})).unwrap_err().field,
            "since"
        );
        let r = FindRequest::from_json(&json!({"query": "x", "types": "decision", "since": "2026-01-01"}))
            .unwrap();
        assert_eq!(r.filter.types, vec![Kind::Decision]);
        assert!(r.filter.since.is_some());
    }
}
