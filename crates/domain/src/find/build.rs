//! A find built in the process (the CLI, the web UI, the harness): constructors with the
//! defaults the arguments' parse gives, `with_*` methods for the rest, and [`FindRequest::check`],
//! which holds a request built so to the limits a parsed one meets.

use super::args::{DEPTH, EXPAND_LIMIT, IDS, LIMIT, MAX_CONTENT_CHARS};
use super::cursor::{self, MAX_OFFSET};
use super::{Detail, FindFilter, FindRequest, Mode};
use crate::error::{ErrorCode, ValidationError};
use crate::graph::Expand;
use crate::kind::Kind;
use crate::limits::{DEFAULT_HIT_CONTENT_CHARS, DEFAULT_LOOKUP_CONTENT_CHARS};
use crate::scope::{Scope, ScopeLevel};
use uuid::Uuid;

impl FindRequest {
    /// A search for `text` with every other argument at its default (`auto`, brief hits, the
    /// first 10), as `{"query": text}` parses.
    pub fn query(text: impl Into<String>) -> FindRequest {
        FindRequest {
            query: Some(text.into()),
            detail: Detail::Brief,
            max_content_chars: DEFAULT_HIT_CONTENT_CHARS,
            ..FindRequest::defaults()
        }
    }

    /// These items read whole, as `{"ids": [...]}` parses.
    pub fn ids(ids: impl IntoIterator<Item = Uuid>) -> FindRequest {
        FindRequest {
            ids: ids.into_iter().collect(),
            detail: Detail::Full,
            max_content_chars: DEFAULT_LOOKUP_CONTENT_CHARS,
            ..FindRequest::defaults()
        }
    }

    /// The newest items of these kinds, as `{"types": [...]}` parses.
    pub fn newest(types: impl IntoIterator<Item = Kind>) -> FindRequest {
        FindRequest {
            filter: FindFilter::of_types(types),
            detail: Detail::Brief,
            max_content_chars: DEFAULT_HIT_CONTENT_CHARS,
            ..FindRequest::defaults()
        }
    }

    pub fn with_mode(self, mode: Mode) -> FindRequest {
        FindRequest { mode, ..self }
    }

    pub fn with_filter(self, filter: FindFilter) -> FindRequest {
        FindRequest { filter, ..self }
    }

    /// Only these kinds.
    pub fn with_types(mut self, types: impl IntoIterator<Item = Kind>) -> FindRequest {
        self.filter.types = types.into_iter().collect();
        self
    }

    pub fn with_scope(self, scope: Scope) -> FindRequest {
        FindRequest { scope: Some(scope), ..self }
    }

    pub fn with_widen(self, level: ScopeLevel) -> FindRequest {
        FindRequest { widen: Some(level), ..self }
    }

    pub fn with_limit(self, limit: usize) -> FindRequest {
        FindRequest { limit, ..self }
    }

    /// Content characters per hit; like the argument, it implies `detail: full` (set a
    /// detail after it to have another).
    pub fn with_max_content_chars(self, chars: usize) -> FindRequest {
        FindRequest { max_content_chars: chars, detail: Detail::Full, ..self }
    }

    pub fn with_detail(self, detail: Detail) -> FindRequest {
        FindRequest { detail, ..self }
    }

    pub fn with_expand(self, expand: Expand) -> FindRequest {
        FindRequest { expand: Some(expand), ..self }
    }

    pub fn with_depth(self, depth: u8) -> FindRequest {
        FindRequest { depth, ..self }
    }

    pub fn with_expand_limit(self, items: usize) -> FindRequest {
        FindRequest { expand_limit: items, ..self }
    }

    /// The page a previous page's `next_cursor` points to. Set it last: the cursor is bound to
    /// everything else the request asks (refused as `bad_cursor` otherwise).
    pub fn after(self, cursor: &str) -> Result<FindRequest, ValidationError> {
        let offset = cursor::decode(cursor, self.fingerprint())?;
        Ok(FindRequest { offset, ..self })
    }

    /// Refuses what the arguments' parse refuses, for a request built in the process: no
    /// query, ids or kinds; a query empty or too long; numbers out of their bounds; too many
    /// ids or tags; a scope value empty, too long or holding control characters.
    pub fn check(&self) -> Result<(), ValidationError> {
        if self.query.is_none() && self.ids.is_empty() && self.filter.types.is_empty() {
            return Err(super::args::nothing_asked());
        }
        if let Some(query) = &self.query {
            crate::query::validate_query(query)?;
        }
        IDS.shape.check_count(IDS.name, self.ids.len())?;
        let number = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        LIMIT.shape.check(LIMIT.name, number(self.limit))?;
        MAX_CONTENT_CHARS.shape.check(MAX_CONTENT_CHARS.name, number(self.max_content_chars))?;
        DEPTH.shape.check(DEPTH.name, self.depth.into())?;
        EXPAND_LIMIT.shape.check(EXPAND_LIMIT.name, number(self.expand_limit))?;
        if self.offset > MAX_OFFSET {
            return Err(ValidationError::new(
                ErrorCode::InvalidValue,
                "offset",
                format!("the page starts at match {}; at most {MAX_OFFSET}", self.offset),
                "narrow the query or its filters rather than paging this far",
            ));
        }
        self.filter.check()?;
        if let Some(scope) = &self.scope {
            scope.check().map_err(|e| e.under("scope"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What a constructor builds is what the same arguments parse to.
    #[test]
    fn the_constructors_give_the_parse_s_defaults() {
        let id = Uuid::now_v7();
        let cases = [
            (FindRequest::query("deploy"), json!({"query": "deploy"})),
            (FindRequest::ids([id]), json!({"ids": [id.to_string()]})),
            (FindRequest::newest([Kind::Runbook]), json!({"types": ["runbook"]})),
            (
                FindRequest::query("x")
                    .with_mode(Mode::Fast)
                    .with_types([Kind::Decision])
                    .with_widen(ScopeLevel::All)
                    .with_limit(5)
                    .with_max_content_chars(0)
                    .with_expand(Expand::Children)
                    .with_depth(2),
                json!({"query": "x", "mode": "fast", "types": ["decision"], "widen": "all", "limit": 5,
                       "max_content_chars": 0, "expand": "children", "depth": 2}),
            ),
        ];
        for (built, sent) in cases {
            assert_eq!(built, FindRequest::from_json(&sent).unwrap(), "{sent}");
            assert!(built.check().is_ok());
        }
    }

    #[test]
    fn a_cursor_binds_a_built_request_as_a_parsed_one() {
        let first = FindRequest::query("deploy").with_limit(2);
        let cursor = first.cursor_at(2);
        let next = FindRequest::query("deploy").with_limit(2).after(&cursor).unwrap();
        assert_eq!(
            next,
            FindRequest::from_json(&json!({"query": "deploy", "limit": 2, "cursor": cursor})).unwrap()
        );
        let err = FindRequest::query("other").after(&cursor).unwrap_err();
        assert_eq!(err.code, ErrorCode::BadCursor);
    }

    #[test]
    fn a_built_request_out_of_bounds_is_refused_naming_the_argument() {
        let base = FindRequest::query("x");
        let cases = [
            (base.clone().with_limit(0), "limit"),
            (base.clone().with_limit(101), "limit"),
            (base.clone().with_depth(4), "depth"),
            (FindRequest { expand_limit: 0, ..base.clone() }, "expand_limit"),
            (FindRequest { offset: 10_001, ..base.clone() }, "offset"),
            (FindRequest::query(""), "query"),
            (FindRequest::query("x".repeat(1_001)), "query"),
            (FindRequest::ids((0..101).map(|_| Uuid::now_v7())), "ids"),
            (FindRequest { query: None, ..base.clone() }, "query"),
            (
                base.clone().with_filter(FindFilter { tags: vec![String::new()], ..FindFilter::default() }),
                "tags[0]",
            ),
            (
                base.clone().with_scope(Scope { branch: Some("a\nb".into()), ..Scope::default() }),
                "scope.branch",
            ),
        ];
        for (request, field) in cases {
            let err = request.check().unwrap_err();
            assert_eq!(err.field, field, "{request:?}");
            assert!(!err.human_hint.is_empty());
        }
    }
}
