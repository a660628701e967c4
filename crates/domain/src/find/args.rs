//! `memory_find`'s arguments, one definition each ([`ARGS`]): the input schema is generated
//! from them and [`FindRequest::from_json`] parses by walking them; then the checks across
//! arguments (one of `query`, `ids` or `types`; the defaults that depend on the others; the
//! cursor, bound to everything else).

use super::filter::FindFilter;
pub use super::filter::{AUTHOR, INCLUDE_EXPIRED, INCLUDE_SUPERSEDED, SINCE, STATUS, TAGS, TYPES, UNTIL};
use super::{Detail, FindRequest, Mode, cursor};
use crate::args::shape::{Ids, Int, Query, ScopeObject, Text, Words};
use crate::args::{self, Arg, Field};
use crate::error::{ErrorCode, ValidationError, shown};
use crate::graph::{DEFAULT_DEPTH, DEFAULT_EXPAND_LIMIT, Expand, MAX_DEPTH, MAX_EXPAND_LIMIT};
use crate::limits::*;
use crate::scope::ScopeLevel;
use crate::tool::Tool;
use serde_json::Value;

/// The request as the arguments build it, before the checks across them.
pub struct Draft {
    request: FindRequest,
    /// Given, else the default for a search or for a read by ids.
    max_content_chars: Option<usize>,
    /// Given, else the default for a search or for a read by ids.
    detail: Option<Detail>,
    cursor: Option<String>,
}

impl Draft {
    /// The filters being built (for the filters' own definitions, `filter.rs`).
    pub(super) fn filter(&mut self) -> &mut FindFilter {
        &mut self.request.filter
    }
}

pub(super) type FindField<S> = Field<Draft, S>;

pub const QUERY: FindField<Query> = Field {
    name: "query",
    doc: Some("A few key words (≤1000 characters); \"exact phrase\", -exclude, prefix* work."),
    shape: Query,
    set: |d, v| d.request.query = Some(v),
};
pub const IDS: FindField<Ids> = Field {
    name: "ids",
    doc: Some("Fetch these items whole instead of searching."),
    shape: Ids { max: MAX_IDS },
    set: |d, v| d.request.ids = v,
};
pub const MODE: FindField<Words<Mode>> = Field {
    name: "mode",
    doc: Some("fast = lexical; auto (default); deep"),
    shape: Words::plain(),
    set: |d, v| d.request.mode = v,
};
pub const SCOPE: FindField<ScopeObject> = Field {
    name: "scope",
    doc: Some("Naming fewer of org/project/branch widens the search."),
    shape: ScopeObject,
    set: |d, v| d.request.scope = Some(v),
};
pub const WIDEN: FindField<Words<ScopeLevel>> = Field {
    name: "widen",
    doc: Some("Default branch."),
    shape: Words::plain(),
    set: |d, v| d.request.widen = Some(v),
};
pub const LIMIT: FindField<Int> = Field {
    name: "limit",
    doc: Some("Default 10."),
    shape: Int { min: 1, max: MAX_LIMIT, default: DEFAULT_LIMIT },
    set: |d, v| d.request.limit = v as usize,
};
pub const CURSOR: FindField<Text> = Field {
    name: "cursor",
    doc: Some("next_cursor of the previous page."),
    shape: Text,
    set: |d, v| d.cursor = Some(v),
};
pub const MAX_CONTENT_CHARS: FindField<Int> = Field {
    name: "max_content_chars",
    doc: Some("Content characters per hit (default 600); implies detail full."),
    shape: Int { min: 0, max: MAX_HIT_CONTENT_CHARS as i64, default: DEFAULT_HIT_CONTENT_CHARS as i64 },
    set: |d, v| d.max_content_chars = Some(v as usize),
};
pub const DETAIL: FindField<Words<Detail>> = Field {
    name: "detail",
    doc: Some(
        "brief (default for query): id, title, snippet, status, dates; full (default for ids): also content, data, scores.",
    ),
    shape: Words::with_hint(
        "use brief (id, title, snippet: the default for a search) or full (content, data, scores: the default for `ids`)",
    ),
    set: |d, v| d.detail = Some(v),
};
pub const EXPAND: FindField<Words<Expand>> = Field {
    name: "expand",
    doc: Some(
        "Also return linked items: relations (both ways), children (what a hit points to, an entity's observations), parents. Default none; all in deep mode.",
    ),
    shape: Words::plain(),
    set: |d, v| d.request.expand = Some(v),
};
pub const DEPTH: FindField<Int> = Field {
    name: "depth",
    doc: Some("Links away to follow (default 1)."),
    shape: Int { min: 1, max: MAX_DEPTH as i64, default: DEFAULT_DEPTH as i64 },
    set: |d, v| d.request.depth = v as u8,
};
pub const EXPAND_LIMIT: FindField<Int> = Field {
    name: "expand_limit",
    doc: Some("Items expansion adds at most (default 20)."),
    shape: Int { min: 1, max: MAX_EXPAND_LIMIT as i64, default: DEFAULT_EXPAND_LIMIT as i64 },
    set: |d, v| d.request.expand_limit = v as usize,
};

/// Every argument `memory_find` takes, in the order its schema lists them.
pub static ARGS: [&dyn Arg<Draft>; 20] = [
    &QUERY,
    &IDS,
    &MODE,
    &TYPES,
    &SCOPE,
    &WIDEN,
    &SINCE,
    &UNTIL,
    &TAGS,
    &STATUS,
    &AUTHOR,
    &INCLUDE_SUPERSEDED,
    &INCLUDE_EXPIRED,
    &LIMIT,
    &CURSOR,
    &MAX_CONTENT_CHARS,
    &DETAIL,
    &EXPAND,
    &DEPTH,
    &EXPAND_LIMIT,
];

/// `memory_find`'s input schema.
pub fn find_schema() -> Value {
    args::object_schema(&ARGS)
}

impl FindRequest {
    pub fn from_json(value: &Value) -> Result<FindRequest, ValidationError> {
        let Value::Object(object) = value else {
            return Err(ValidationError::wrong_type("arguments", "an object with `query` or `ids`", value));
        };
        let mut draft =
            Draft { request: FindRequest::defaults(), max_content_chars: None, detail: None, cursor: None };
        args::parse_object(&ARGS, object, &mut draft, unknown)?;
        let Draft { mut request, max_content_chars, detail, cursor } = draft;
        if request.query.is_none() && request.ids.is_empty() && request.filter.types.is_empty() {
            return Err(nothing_asked());
        }
        // A read by ids wants the items whole; a search wants enough of each hit to choose.
        let by_ids = request.query.is_none() && !request.ids.is_empty();
        request.max_content_chars = max_content_chars.unwrap_or(if by_ids {
            DEFAULT_LOOKUP_CONTENT_CHARS
        } else {
            DEFAULT_HIT_CONTENT_CHARS
        });
        request.detail = detail.unwrap_or(if by_ids || max_content_chars.is_some() {
            Detail::Full
        } else {
            Detail::Brief
        });
        if let Some(cursor) = cursor {
            request.offset = cursor::decode(&cursor, request.fingerprint())?;
        }
        Ok(request)
    }
}

/// A find with no `query`, `ids` or `types`.
pub(super) fn nothing_asked() -> ValidationError {
    ValidationError::missing(
        "query",
        "pass `query` with a few words to search, `ids` to fetch items by id, or `types` alone to list the newest items of those kinds",
    )
}

fn unknown(key: &str) -> ValidationError {
    let key = shown(key);
    ValidationError::new(
        ErrorCode::UnknownField,
        key.clone(),
        format!("`{key}` is not a {} argument", Tool::Find),
        format!("{} takes: {}", Tool::Find, args::names(&ARGS).join(", ")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The figures a description quotes are the limits the parse applies.
    #[test]
    fn the_descriptions_quote_the_limits() {
        let doc = |arg: &dyn Arg<Draft>| arg.doc().unwrap_or_default();
        assert!(doc(&QUERY).contains(&format!("≤{MAX_QUERY_CHARS} characters")));
        assert!(doc(&LIMIT).contains(&format!("Default {DEFAULT_LIMIT}.")));
        assert!(doc(&MAX_CONTENT_CHARS).contains(&format!("(default {DEFAULT_HIT_CONTENT_CHARS})")));
        assert!(doc(&DEPTH).contains(&format!("(default {DEFAULT_DEPTH})")));
        assert!(doc(&EXPAND_LIMIT).contains(&format!("(default {DEFAULT_EXPAND_LIMIT})")));
    }
}
