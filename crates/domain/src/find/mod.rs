//! Parsing and checking one `memory_find` request.

use crate::error::{ErrorCode, ValidationError, json_type_name, shown};
use crate::graph::{DEFAULT_DEPTH, DEFAULT_EXPAND_LIMIT, Expand, MAX_DEPTH, MAX_EXPAND_LIMIT};
use crate::kind::Kind;
use crate::limits::*;
use crate::query::validate_query;
use crate::scope::{Scope, ScopeLevel};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use uuid::Uuid;

/// Which retrievers run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Lexical only.
    Fast,
    /// Lexical and dense, fused (the default).
    Auto,
    /// Auto plus typo tolerance (the same candidate pools) and graph expansion.
    Deep,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Fast => "fast",
            Mode::Auto => "auto",
            Mode::Deep => "deep",
        }
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

#[derive(Debug, Clone, PartialEq)]
pub struct FindRequest {
    pub query: Option<String>,
    pub ids: Vec<Uuid>,
    pub mode: Mode,
    pub types: Vec<Kind>,
    pub scope: Option<Scope>,
    pub widen: Option<ScopeLevel>,
    pub since: Option<i64>,
    pub until: Option<i64>,
    pub tags: Vec<String>,
    pub status: Option<String>,
    /// Also return items a newer item superseded (they carry `superseded_by`).
    pub include_superseded: bool,
    /// Also return expired items (until a purge removes them).
    pub include_expired: bool,
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
    /// How the routes are fused. Not an argument agents send: the default is the tuned rule;
    /// `cortex eval` compares it with fixed weights.
    pub fusion: crate::fusion::Fusion,
}

/// The arguments `memory_find` takes; the tool's input schema lists the same (a test in
/// `crates/mcp` holds them together).
pub const FIND_FIELDS: &[&str] = &[
    "query",
    "ids",
    "mode",
    "types",
    "scope",
    "widen",
    "since",
    "until",
    "tags",
    "status",
    "include_superseded",
    "include_expired",
    "limit",
    "cursor",
    "max_content_chars",
    "detail",
    "expand",
    "depth",
    "expand_limit",
];

impl FindRequest {
    /// A plain query with defaults, for the CLI and tests.
    pub fn query(text: &str) -> FindRequest {
        FindRequest {
            query: Some(text.to_string()),
            ids: Vec::new(),
            mode: Mode::Auto,
            types: Vec::new(),
            scope: None,
            widen: None,
            since: None,
            until: None,
            tags: Vec::new(),
            status: None,
            include_superseded: false,
            include_expired: false,
            limit: DEFAULT_LIMIT as usize,
            offset: 0,
            max_content_chars: DEFAULT_HIT_CONTENT_CHARS,
            detail: Detail::Full,
            expand: None,
            depth: DEFAULT_DEPTH,
            expand_limit: DEFAULT_EXPAND_LIMIT,
            fusion: crate::fusion::Fusion::TUNED,
        }
    }

    pub fn from_json(args: &Value) -> Result<FindRequest, ValidationError> {
        let Value::Object(args) = args else {
            return Err(ValidationError::wrong_type("arguments", "an object with `query` or `ids`", args));
        };
        if let Some(key) = args.keys().find(|k| !FIND_FIELDS.contains(&k.as_str())) {
            let key = shown(key);
            return Err(ValidationError::new(
                ErrorCode::UnknownField,
                key.clone(),
                format!("`{key}` is not a memory_find argument"),
                format!("memory_find takes: {}", FIND_FIELDS.join(", ")),
            ));
        }
        let query = match args.get("query") {
            None | Some(Value::Null) => None,
            Some(Value::String(q)) => {
                validate_query(q)?;
                Some(q.clone())
            }
            Some(other) => return Err(ValidationError::wrong_type("query", "a string", other)),
        };
        let ids = parse_ids(args.get("ids"))?;
        let types = parse_types(args.get("types"))?;
        if query.is_none() && ids.is_empty() && types.is_empty() {
            return Err(ValidationError::missing(
                "query",
                "pass `query` with a few words to search, `ids` to fetch items by id, or `types` alone to list the newest items of those kinds",
            ));
        }
        let mode = match text_arg(args, "mode")?.as_deref() {
            None | Some("auto") => Mode::Auto,
            Some("fast") => Mode::Fast,
            Some("deep") => Mode::Deep,
            Some(other) => return Err(invalid("mode", other, "use fast, auto or deep")),
        };
        let scope = match args.get("scope") {
            None | Some(Value::Null) => None,
            Some(v) => Some(Scope::from_json(v).map_err(|e| e.under("scope"))?),
        };
        let widen = match text_arg(args, "widen")? {
            None => None,
            Some(w) => Some(
                ScopeLevel::parse(&w)
                    .ok_or_else(|| invalid("widen", &w, "use branch, project, org or all"))?,
            ),
        };
        let since = date_arg(args, "since")?;
        let until = date_arg(args, "until")?;
        let tags = match args.get("tags") {
            None | Some(Value::Null) => Vec::new(),
            // An item holds at most MAX_TAGS tags and a hit must carry every tag asked for,
            // so a longer list can match nothing; refusing it also bounds the filter's SQL.
            Some(Value::Array(list)) if list.len() > MAX_TAGS => {
                return Err(ValidationError::new(
                    ErrorCode::TooMany,
                    "tags",
                    format!("{} tags; at most {MAX_TAGS}", list.len()),
                    format!(
                        "a hit must carry every tag given and items hold at most {MAX_TAGS}: pass the few tags that matter"
                    ),
                ));
            }
            Some(Value::Array(list)) => list
                .iter()
                .enumerate()
                .map(|(i, t)| match t {
                    Value::String(s) if !s.trim().is_empty() => Ok(s.trim().to_lowercase()),
                    other => {
                        Err(ValidationError::wrong_type(format!("tags[{i}]"), "a non-empty string", other))
                    }
                })
                .collect::<Result<_, _>>()?,
            Some(other) => {
                return Err(ValidationError::wrong_type("tags", "an array of strings", other));
            }
        };
        let status = text_arg(args, "status")?.map(|s| s.replace([' ', '-'], "_"));
        let include_superseded = bool_arg(args, "include_superseded")?;
        let include_expired = bool_arg(args, "include_expired")?;
        let limit = int_arg(args, "limit", 1, MAX_LIMIT, DEFAULT_LIMIT)? as usize;
        let by_ids = query.is_none() && !ids.is_empty();
        let default_chars = if by_ids { DEFAULT_LOOKUP_CONTENT_CHARS } else { DEFAULT_HIT_CONTENT_CHARS };
        let max_content_chars =
            int_arg(args, "max_content_chars", 0, MAX_HIT_CONTENT_CHARS as i64, default_chars as i64)?
                as usize;
        let detail = match text_arg(args, "detail")?.as_deref() {
            None if by_ids || args.contains_key("max_content_chars") => Detail::Full,
            None | Some("brief") => Detail::Brief,
            Some("full") => Detail::Full,
            Some(other) => {
                return Err(invalid(
                    "detail",
                    other,
                    "use brief (id, title, snippet: the default for a search) or full (content, data, scores: the default for `ids`)",
                ));
            }
        };
        let expand = match text_arg(args, "expand")? {
            None => None,
            Some(e) => Some(
                Expand::parse(&e)
                    .ok_or_else(|| invalid("expand", &e, "use none, relations, parents, children or all"))?,
            ),
        };
        let depth = int_arg(args, "depth", 1, MAX_DEPTH.into(), DEFAULT_DEPTH.into())? as u8;
        let expand_limit =
            int_arg(args, "expand_limit", 1, MAX_EXPAND_LIMIT as i64, DEFAULT_EXPAND_LIMIT as i64)? as usize;
        let mut request = FindRequest {
            query,
            ids,
            mode,
            types,
            scope,
            widen,
            since,
            until,
            tags,
            status,
            include_superseded,
            include_expired,
            limit,
            offset: 0,
            max_content_chars,
            detail,
            expand,
            depth,
            expand_limit,
            fusion: crate::fusion::Fusion::TUNED,
        };
        if let Some(cursor) = text_arg(args, "cursor")? {
            request.offset = decode_cursor(&cursor, request.fingerprint())?;
        }
        Ok(request)
    }

    /// The links to follow from the hits: as asked, else all of them in deep mode, else none.
    pub fn expansion(&self) -> Expand {
        self.expand.unwrap_or(if self.mode == Mode::Deep { Expand::All } else { Expand::None })
    }

    /// A hash of everything that shapes the result list (not the page), so a cursor cannot be
    /// replayed against another query.
    pub fn fingerprint(&self) -> u64 {
        let text = format!(
            "{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{}|{}",
            self.query,
            self.ids,
            self.mode,
            self.types,
            self.scope,
            self.widen,
            self.since,
            self.until,
            self.tags,
            self.status,
            self.include_superseded,
            self.include_expired
        );
        let digest = Sha256::digest(text.as_bytes());
        u64::from_be_bytes(digest[..8].try_into().unwrap_or_default())
    }

    /// The cursor for the page after the one ending at `next_offset`.
    pub fn cursor_at(&self, next_offset: usize) -> String {
        format!("{next_offset:x}.{:016x}", self.fingerprint())
    }
}

fn decode_cursor(cursor: &str, fingerprint: u64) -> Result<usize, ValidationError> {
    let bad = || {
        ValidationError::new(
            ErrorCode::BadCursor,
            "cursor",
            "`cursor` does not belong to this query",
            "pass the `next_cursor` of the previous page with the same query and filters, or drop `cursor` to start over",
        )
    };
    let (offset, fp) = cursor.split_once('.').ok_or_else(bad)?;
    let offset = usize::from_str_radix(offset, 16).map_err(|_| bad())?;
    let fp = u64::from_str_radix(fp, 16).map_err(|_| bad())?;
    if fp != fingerprint || offset > 10_000 {
        return Err(bad());
    }
    Ok(offset)
}

fn invalid(field: &str, value: &str, hint: &str) -> ValidationError {
    ValidationError::new(
        ErrorCode::InvalidValue,
        field,
        format!("`{field}` cannot be `{}`", shown(value)),
        hint,
    )
}

fn text_arg(args: &Map<String, Value>, field: &str) -> Result<Option<String>, ValidationError> {
    match args.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_ascii_lowercase())),
        Some(other) => Err(ValidationError::wrong_type(field, "a string", other)),
    }
}

fn int_arg(
    args: &Map<String, Value>,
    field: &str,
    min: i64,
    max: i64,
    default: i64,
) -> Result<i64, ValidationError> {
    let value = match args.get(field) {
        None | Some(Value::Null) => return Ok(default),
        Some(v) => v,
    };
    let range_error = || {
        ValidationError::new(
            ErrorCode::InvalidValue,
            field,
            format!("`{field}` must be a whole number from {min} to {max}, got {value}"),
            format!("send `{field}` as a number between {min} and {max} (default {default})"),
        )
    };
    match value {
        Value::Number(n) => match n.as_i64() {
            Some(i) if (min..=max).contains(&i) => Ok(i),
            _ => Err(range_error()),
        },
        other => Err(ValidationError::new(
            ErrorCode::WrongType,
            field,
            format!("`{field}` must be a number, got {}", json_type_name(other)),
            format!("send `{field}` as a number between {min} and {max}, without quotes"),
        )),
    }
}

fn date_arg(args: &Map<String, Value>, field: &str) -> Result<Option<i64>, ValidationError> {
    match args.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => crate::time::parse_instant(s).map(Some).map_err(|hint| {
            ValidationError::new(
                ErrorCode::InvalidValue,
                field,
                format!("`{field}` is not a date: `{}`", shown(s)),
                hint,
            )
        }),
        Some(other) => Err(ValidationError::wrong_type(field, "a date string", other)),
    }
}

fn parse_ids(value: Option<&Value>) -> Result<Vec<Uuid>, ValidationError> {
    let list = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(other) => {
            return Err(ValidationError::wrong_type("ids", "an array of item ids", other));
        }
    };
    if list.len() > MAX_IDS {
        return Err(ValidationError::new(
            ErrorCode::TooMany,
            "ids",
            format!("{} ids; at most {MAX_IDS}", list.len()),
            "fetch at most 100 items per call",
        ));
    }
    list.iter()
        .enumerate()
        .map(|(i, v)| {
            let field = format!("ids[{i}]");
            match v {
                Value::String(s) => Uuid::parse_str(s.trim()).map_err(|_| {
                    ValidationError::new(
                        ErrorCode::InvalidValue,
                        field,
                        format!("`{}` is not an item id", shown(s)),
                        "use ids returned by memory_store or memory_find",
                    )
                }),
                other => Err(ValidationError::wrong_type(field, "a UUID string", other)),
            }
        })
        .collect()
}

fn parse_types(value: Option<&Value>) -> Result<Vec<Kind>, ValidationError> {
    let list = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(Value::String(one)) => {
            return parse_types(Some(&Value::Array(vec![Value::String(one.clone())])));
        }
        Some(other) => {
            return Err(ValidationError::wrong_type("types", "an array of kind names", other));
        }
    };
    let mut kinds = Vec::new();
    for (i, v) in list.iter().enumerate() {
        let field = format!("types[{i}]");
        let Value::String(name) = v else {
            return Err(ValidationError::wrong_type(field, "a kind name", v));
        };
        let kind = Kind::parse(name).ok_or_else(|| {
            ValidationError::new(
                ErrorCode::UnknownKind,
                field,
                format!("`{}` is not a knowledge kind", shown(name)),
                format!("use one of: {}", Kind::names()),
            )
        })?;
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    Ok(kinds)
}

/// An optional boolean argument, false when absent.
fn bool_arg(args: &serde_json::Map<String, Value>, name: &str) -> Result<bool, ValidationError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(ValidationError::wrong_type(name, "true or false", other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
            FindRequest::from_json(&json!({"query": "x", "tags": tags})).unwrap().tags.len(),
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
        assert_eq!(r.types, vec![Kind::Decision]);
        assert!(r.since.is_some());
    }
}
