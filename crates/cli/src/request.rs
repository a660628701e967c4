//! The requests `cortex store` and `cortex find` hand the service: the JSON `store` reads is
//! parsed as the tool's arguments are, and `find`'s flags are read one by one by the rules of
//! the arguments they mirror, so a bad value is refused as the tool would refuse it.

use crate::args::FindFlags;
use cortex_domain::args::shape::Text;
use cortex_domain::find::args::{DEPTH, EXPAND, LIMIT, MODE, SINCE, TAGS, TYPES, WIDEN};
use cortex_domain::find::filter::status_word;
use cortex_domain::find::{Author, FindFilter};
use cortex_domain::item::StoreRequest;
use cortex_domain::query::validate_query;
use cortex_domain::scope::{Scope, check_value};
use cortex_domain::{FindRequest, ValidationError};
use serde_json::Value;

/// `cortex store`'s input: one item, an array of items, or the tool's `{"items": [...]}`.
pub fn store_request(input: &Value) -> Result<StoreRequest, ValidationError> {
    match input {
        Value::Array(items) => StoreRequest::from_items(items),
        Value::Object(map) if map.contains_key("items") => StoreRequest::from_json(input),
        one => StoreRequest::from_items(std::slice::from_ref(one)),
    }
}

/// The find the flags ask for, read in the order the tool reads its arguments.
pub fn find_request(flags: &FindFlags) -> Result<FindRequest, ValidationError> {
    validate_query(&flags.query)?;
    let mut request = FindRequest::query(flags.query.as_str());
    if let Some(mode) = &flags.mode {
        request = request.with_mode(MODE.shape.parse_str(MODE.name, mode)?);
    }
    let filter = FindFilter {
        types: TYPES.shape.parse_strs(TYPES.name, flags.kinds.iter().map(String::as_str))?,
        tags: TAGS.shape.parse_strs(TAGS.name, flags.tags.iter().map(String::as_str))?,
        status: flags.status.as_deref().map(status_word),
        since: flags.since.as_deref().map(|since| SINCE.shape.parse_str(SINCE.name, since)).transpose()?,
        author: flags.author.as_deref().map(Author::parse_arg).transpose()?,
        ..FindFilter::default()
    };
    request = request.with_filter(filter);
    let mut scope = Scope::default();
    for (field, value) in [("org", &flags.org), ("project", &flags.project), ("branch", &flags.branch)] {
        if let Some(value) = value {
            scope.set(field, check_value(field, value).map_err(|e| e.under("scope"))?);
        }
    }
    if !scope.is_empty() {
        request = request.with_scope(scope);
    }
    if let Some(widen) = &flags.widen {
        request = request.with_widen(WIDEN.shape.parse_str(WIDEN.name, widen)?);
    }
    if let Some(limit) = flags.limit {
        request = request.with_limit(LIMIT.shape.check(LIMIT.name, limit)? as usize);
    }
    if let Some(expand) = &flags.expand {
        request = request.with_expand(EXPAND.shape.parse_str(EXPAND.name, expand)?);
    }
    if let Some(depth) = flags.depth {
        request = request.with_depth(DEPTH.shape.check(DEPTH.name, depth)? as u8);
    }
    match &flags.cursor {
        Some(cursor) => request.after(&Text::of(cursor)),
        None => Ok(request),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn flags(query: &str) -> FindFlags {
        FindFlags {
            query: query.into(),
            mode: None,
            kinds: Vec::new(),
            org: None,
            project: None,
            branch: None,
            widen: None,
            status: None,
            tags: Vec::new(),
            since: None,
            author: None,
            limit: None,
            cursor: None,
            expand: None,
            depth: None,
        }
    }

    #[test]
    fn the_flags_are_the_request_the_same_arguments_parse_to() {
        let given = FindFlags {
            mode: Some("fast".into()),
            kinds: vec!["decision".into(), "adr".into()],
            org: Some(" acme ".into()),
            branch: Some("main".into()),
            widen: Some("org".into()),
            status: Some("In progress".into()),
            tags: vec![" Infra ".into(), "db".into()],
            since: Some("7d".into()),
            author: Some(" claude ".into()),
            limit: Some(5),
            expand: Some("relations".into()),
            depth: Some(2),
            ..flags("deploy")
        };
        let sent = json!({"query": "deploy", "mode": "fast", "types": ["decision", "adr"],
            "scope": {"org": " acme ", "branch": "main"}, "widen": "org", "status": "In progress",
            "tags": [" Infra ", "db"], "since": "7d", "author": "claude", "limit": 5,
            "expand": "relations", "depth": 2});
        assert_eq!(find_request(&given).unwrap(), FindRequest::from_json(&sent).unwrap());
    }

    #[test]
    fn a_bad_flag_is_refused_naming_the_argument() {
        for (given, field) in [
            (flags(""), "query"),
            (FindFlags { kinds: vec!["nope".into()], ..flags("x") }, "types[0]"),
            (FindFlags { limit: Some(0), ..flags("x") }, "limit"),
            (FindFlags { since: Some("last week".into()), ..flags("x") }, "since"),
            (FindFlags { depth: Some(9), ..flags("x") }, "depth"),
            (FindFlags { author: Some(" ".into()), ..flags("x") }, "author"),
            (FindFlags { branch: Some("a\nb".into()), ..flags("x") }, "scope.branch"),
            (FindFlags { cursor: Some("nope".into()), ..flags("x") }, "cursor"),
        ] {
            assert_eq!(find_request(&given).unwrap_err().field, field);
        }
    }

    #[test]
    fn store_input_is_an_item_a_list_or_the_tool_s_arguments() {
        let item = json!({"kind": "todo", "content": "x"});
        let one = store_request(&item).unwrap();
        assert_eq!(store_request(&json!([item])).unwrap(), one);
        assert_eq!(store_request(&json!({"items": [item]})).unwrap(), one);
        assert_eq!(store_request(&json!([])).unwrap_err().field, "items");
    }
}
