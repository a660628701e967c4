//! Parsing one `memory_store` request into per-item operations.
//!
//! The request is taken as raw JSON on purpose: a typed deserializer would reject the whole
//! batch on the first bad item, while every item here gets its own result and a field path.//!
//! - [`derive`]: an item's title, searchable body and content hash
//! - [`fields`]: the optional fields every kind shares (tags, metadata, source, idempotency key)

mod derive;
mod fields;

pub use derive::{Derived, derive, field_texts};

use crate::error::{ErrorCode, ValidationError, json_type_name, shown};
use crate::kind::{self, Kind};
use crate::limits::*;
use crate::scope::Scope;
use crate::text;
use crate::ttl::TtlPolicy;
use fields::{parse_idempotency_key, parse_metadata, parse_source, parse_tags};
use serde_json::{Map, Value};
use uuid::Uuid;

/// One validated item operation.
#[derive(Debug, Clone, PartialEq)]
pub enum ItemOp {
    Upsert(Box<NewItem>),
    Delete {
        id: Uuid,
        kind: Option<Kind>,
    },
    /// Undoes a soft delete: the item is live again, as it was when deleted.
    Restore {
        id: Uuid,
        kind: Option<Kind>,
    },
}

impl ItemOp {
    pub fn kind(&self) -> Option<Kind> {
        match self {
            ItemOp::Upsert(item) => Some(item.kind),
            ItemOp::Delete { kind, .. } | ItemOp::Restore { kind, .. } => *kind,
        }
    }
}

/// A validated, normalized item ready to be written.
#[derive(Debug, Clone, PartialEq)]
pub struct NewItem {
    pub kind: Kind,
    /// Set when the caller updates an existing item.
    pub id: Option<Uuid>,
    pub title: String,
    pub content: Option<String>,
    pub data: Map<String, Value>,
    /// Searchable text other than the title: `content` and the text fields of `data`.
    pub body: String,
    /// SHA-256 of the normalized title and body.
    pub content_hash: String,
    /// The scope the caller named; the service fills the rest from the inferred scope.
    pub scope: Scope,
    pub tags: Vec<String>,
    pub metadata: Option<Value>,
    pub source: Option<Value>,
    pub idempotency_key: Option<String>,
    pub ttl: Option<TtlPolicy>,
    /// An explicit end of life (epoch ms), over any policy.
    pub expires_at: Option<i64>,
    pub status: Option<String>,
    /// `false` stores an exact duplicate anyway.
    pub dedupe: bool,
    /// The live item this new one replaces (`supersedes`, or a decision's `data.supersedes`).
    pub supersedes: Option<Uuid>,
}

/// The fields an item may have; the tool's input schema lists the same (a test in
/// `crates/mcp` holds them together).
pub const ITEM_FIELDS: &[&str] = &[
    "kind",
    "content",
    "data",
    "scope",
    "tags",
    "metadata",
    "source",
    "idempotency_key",
    "ttl",
    "expires_at",
    "supersedes",
    "id",
    "operation",
    "dedupe",
];

/// Validates the request envelope (`items` present, an array, 1..=100) and each item.
/// The outer error is a request-level refusal; inner errors are per item, with paths like
/// `items[2].data.rationale`.
pub fn parse_store_request(args: &Value) -> Result<Vec<Result<ItemOp, ValidationError>>, ValidationError> {
    let example =
        "send {\"items\": [{\"kind\": \"section\", \"data\": {\"title\": \"...\", \"body\": \"...\"}}]}";
    let Value::Object(args) = args else {
        return Err(ValidationError::wrong_type("arguments", "an object with `items`", args));
    };
    if let Some(key) = args.keys().find(|k| k.as_str() != "items") {
        let key = shown(key);
        return Err(ValidationError::new(
            ErrorCode::UnknownField,
            key.clone(),
            format!("`{key}` is not a memory_store argument"),
            "memory_store takes only `items`; per-item options (idempotency_key, ttl, dedupe, ...) go inside each item",
        ));
    }
    let items = match args.get("items") {
        None | Some(Value::Null) => return Err(ValidationError::missing("items", example)),
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(ValidationError::new(
                ErrorCode::WrongType,
                "items",
                format!("`items` must be an array, got {}", json_type_name(other)),
                example,
            ));
        }
    };
    if items.is_empty() {
        return Err(ValidationError::new(ErrorCode::Empty, "items", "`items` is empty", example));
    }
    if items.len() > MAX_BATCH_ITEMS {
        return Err(ValidationError::new(
            ErrorCode::TooMany,
            "items",
            format!("{} items sent; at most {MAX_BATCH_ITEMS} fit in one call", items.len()),
            format!("split the batch into calls of at most {MAX_BATCH_ITEMS} items"),
        ));
    }
    Ok(items
        .iter()
        .enumerate()
        .map(|(i, item)| parse_item(item).map_err(|e| e.under(&format!("items[{i}]"))))
        .collect())
}

/// Validates one item. Field paths in errors are relative to the item.
pub fn parse_item(value: &Value) -> Result<ItemOp, ValidationError> {
    let Value::Object(item) = value else {
        return Err(ValidationError::wrong_type("", "an object with at least `kind`", value));
    };
    if let Some(key) = item.keys().find(|k| !ITEM_FIELDS.contains(&k.as_str())) {
        let key = shown(key);
        return Err(ValidationError::new(
            ErrorCode::UnknownField,
            key.clone(),
            format!("`{key}` is not an item field"),
            format!(
                "item fields are: {}; kind-specific fields go in `data`, free-form ones in `metadata`",
                ITEM_FIELDS.join(", ")
            ),
        ));
    }
    let id = optional_id(item)?;
    let operation = match item.get("operation") {
        None | Some(Value::Null) => "upsert".to_string(),
        Some(Value::String(op)) => op.trim().to_ascii_lowercase(),
        Some(other) => {
            return Err(ValidationError::wrong_type(
                "operation",
                "\"upsert\", \"delete\" or \"restore\"",
                other,
            ));
        }
    };
    let kind = match item.get("kind") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) => Some(Kind::parse(name).ok_or_else(|| {
            ValidationError::new(
                ErrorCode::UnknownKind,
                "kind",
                format!("`{}` is not a knowledge kind", shown(name)),
                format!("use one of: {}", Kind::names()),
            )
        })?),
        Some(other) => return Err(ValidationError::wrong_type("kind", "a string", other)),
    };
    match operation.as_str() {
        "delete" => {
            let id = id.ok_or_else(|| {
                ValidationError::missing("id", "a delete names the item to delete by its `id`")
            })?;
            Ok(ItemOp::Delete { id, kind })
        }
        "restore" => {
            let id = id.ok_or_else(|| {
                ValidationError::missing("id", "a restore names the deleted item to bring back by its `id`")
            })?;
            Ok(ItemOp::Restore { id, kind })
        }
        "upsert" => {
            let kind = kind.ok_or_else(|| {
                ValidationError::missing(
                    "kind",
                    format!("every item needs a kind, one of: {}", Kind::names()),
                )
            })?;
            parse_upsert(kind, id, item).map(|i| ItemOp::Upsert(Box::new(i)))
        }
        other => Err(ValidationError::new(
            ErrorCode::InvalidValue,
            "operation",
            format!("`{}` is not an operation", shown(other)),
            "use \"upsert\" (the default: insert, or update when `id` is given), or \"delete\" or \"restore\" with an `id`",
        )),
    }
}

fn optional_id(item: &Map<String, Value>) -> Result<Option<Uuid>, ValidationError> {
    match item.get("id") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Uuid::parse_str(text.trim()).map(Some).map_err(|_| {
            ValidationError::new(
                ErrorCode::InvalidValue,
                "id",
                format!("`id` is not an item id: `{}`", shown(text)),
                "use an `id` returned by memory_store or memory_find, or leave `id` out to create a new item",
            )
        }),
        Some(other) => Err(ValidationError::wrong_type("id", "a UUID string", other)),
    }
}

fn parse_upsert(kind: Kind, id: Option<Uuid>, item: &Map<String, Value>) -> Result<NewItem, ValidationError> {
    let content = match item.get("content") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => {
            if text.len() > MAX_CONTENT_BYTES {
                return Err(ValidationError::new(
                    ErrorCode::TooLarge,
                    "content",
                    format!("`content` is {} bytes, over the {MAX_CONTENT_BYTES}-byte limit", text.len()),
                    "split the text into several items (for example one section per heading)",
                ));
            }
            text::reject_nul("content", text)?;
            (!text.trim().is_empty()).then(|| text.clone())
        }
        Some(other) => return Err(ValidationError::wrong_type("content", "a string", other)),
    };
    let data = match item.get("data") {
        None | Some(Value::Null) => None,
        Some(Value::Object(map)) => Some(kind::validate_data(kind, map).map_err(|e| e.under("data"))?),
        Some(other) => return Err(ValidationError::wrong_type("data", "an object", other)),
    };
    if data.is_none() && (content.is_none() || kind.spec().needs_data) {
        let required: Vec<&str> = kind.spec().fields.iter().filter(|f| f.required).map(|f| f.name).collect();
        let hint = if kind.spec().needs_data {
            format!("a {kind} is structured: send `data` with {}", required.join(", "))
        } else {
            format!("send free text in `content`, or `data` with {}", required.join(", "))
        };
        return Err(ValidationError::missing(if kind.spec().needs_data { "data" } else { "content" }, hint));
    }
    let mut data = data.unwrap_or_default();
    if kind == Kind::Ddl {
        crate::natural_key::apply_ddl_checksum(&mut data).map_err(|e| e.under("data"))?;
    }
    let Derived { title, body, content_hash } = derive(kind, content.as_deref(), &data);
    let scope = match item.get("scope") {
        None | Some(Value::Null) => Scope::default(),
        Some(value) => Scope::from_json(value).map_err(|e| e.under("scope"))?,
    };
    let supersedes = parse_supersedes(id, item.get("supersedes"), &data)?;
    Ok(NewItem {
        kind,
        id,
        title,
        status: kind::status_from_data(kind, &data),
        content,
        data,
        body,
        content_hash,
        scope,
        tags: parse_tags(item.get("tags"))?,
        metadata: parse_metadata(item.get("metadata"))?,
        source: parse_source(item.get("source"))?,
        idempotency_key: parse_idempotency_key(item.get("idempotency_key"))?,
        ttl: match item.get("ttl") {
            None | Some(Value::Null) => None,
            Some(value) => Some(TtlPolicy::from_json(value)?),
        },
        expires_at: match item.get("expires_at") {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => Some(crate::time::parse_instant(text).map_err(|hint| {
                ValidationError::new(
                    ErrorCode::InvalidValue,
                    "expires_at",
                    format!("`expires_at` is not a time: `{}`", shown(text)),
                    hint,
                )
            })?),
            Some(other) => {
                return Err(ValidationError::wrong_type("expires_at", "an RFC 3339 time string", other));
            }
        },
        dedupe: match item.get("dedupe") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(b)) => *b,
            Some(other) => return Err(ValidationError::wrong_type("dedupe", "a boolean", other)),
        },
        supersedes,
    })
}

/// The item a new one replaces: top-level `supersedes` (any kind) or a decision's
/// `data.supersedes` (already checked to be an id); both must agree.
fn parse_supersedes(
    id: Option<Uuid>,
    given: Option<&Value>,
    data: &Map<String, Value>,
) -> Result<Option<Uuid>, ValidationError> {
    let in_data = data.get("supersedes").and_then(Value::as_str).and_then(|s| Uuid::parse_str(s.trim()).ok());
    let top = match given {
        None | Some(Value::Null) => return Ok(if id.is_none() { in_data } else { None }),
        Some(Value::String(text)) => Uuid::parse_str(text.trim()).map_err(|_| {
            ValidationError::new(
                ErrorCode::InvalidValue,
                "supersedes",
                format!("`supersedes` is not an item id: `{}`", shown(text)),
                "send the id (a UUID) of the live item this one replaces, as memory_find returns it",
            )
        })?,
        Some(other) => {
            return Err(ValidationError::wrong_type("supersedes", "an item id (UUID string)", other));
        }
    };
    if id.is_some() {
        return Err(ValidationError::new(
            ErrorCode::InvalidValue,
            "supersedes",
            "`supersedes` is for a new item that replaces an old one, not for an update",
            "leave out `id` to store the replacement as a new item, or leave out `supersedes`",
        ));
    }
    if in_data.is_some_and(|d| d != top) {
        return Err(ValidationError::new(
            ErrorCode::InvalidValue,
            "supersedes",
            "`supersedes` and `data.supersedes` name different items",
            "name the replaced item once, in either place",
        ));
    }
    Ok(Some(top))
}

#[cfg(test)]
mod tests {
    use super::fields::json_depth;
    use super::*;
    use serde_json::json;

    fn one(item: Value) -> Result<ItemOp, ValidationError> {
        parse_store_request(&json!({"items": [item]})).unwrap().remove(0)
    }

    fn upsert(item: Value) -> NewItem {
        match one(item).unwrap() {
            ItemOp::Upsert(i) => *i,
            other => panic!("expected upsert, got {other:?}"),
        }
    }

    #[test]
    fn request_envelope_errors_name_items() {
        for bad in
            [json!({}), json!({"items": []}), json!({"items": "x"}), json!({"items": vec![json!({}); 101]})]
        {
            assert_eq!(parse_store_request(&bad).unwrap_err().field, "items", "{bad}");
        }
    }

    #[test]
    fn per_item_errors_carry_the_index_path() {
        let results = parse_store_request(&json!({"items": [
            {"kind": "section", "content": "ok"},
            {"kind": "decision", "data": {"component": "db", "status": "accepted", "title": "t"}},
            {"kind": "bogus", "content": "x"}
        ]}))
        .unwrap();
        assert!(results[0].is_ok());
        assert_eq!(results[1].as_ref().unwrap_err().field, "items[1].data.rationale");
        assert_eq!(results[2].as_ref().unwrap_err().field, "items[2].kind");
    }

    #[test]
    fn content_only_items_take_their_title_from_the_first_line() {
        let item = upsert(json!({"kind": "section", "content": "# Deploy\nRun make deploy"}));
        assert_eq!(item.title, "Deploy");
        assert!(item.body.contains("make deploy"));
    }

    #[test]
    fn structured_kinds_need_data() {
        let err = one(json!({"kind": "entity", "content": "billing service"})).unwrap_err();
        assert_eq!(err.field, "items[0].data");
    }

    #[test]
    fn body_holds_data_text_but_not_the_title() {
        let item = upsert(json!({"kind": "decision", "data": {
            "component": "sessions", "status": "Accepted", "title": "Drop Redis",
            "rationale": "Postgres is enough", "alternatives_considered": ["keep redis"]}}));
        assert_eq!(item.title, "Drop Redis");
        assert_eq!(item.status.as_deref(), Some("accepted"));
        assert!(item.body.contains("Postgres is enough") && item.body.contains("keep redis"));
        assert!(!item.body.contains("Drop Redis"));
    }

    #[test]
    fn a_reference_by_name_is_searchable_text_and_by_id_is_not() {
        let id = Uuid::now_v7().to_string();
        let item = upsert(json!({"kind": "relation", "data": {
            "from": {"entity_type": "service", "name": "billing"}, "to": id, "relation_type": "uses"}}));
        assert!(item.body.contains("billing"));
        assert!(!item.body.contains(&id));
    }

    #[test]
    fn bad_fields_are_refused_with_paths() {
        let cases = [
            (json!({"kind": "section", "content": "a\u{0}b"}), "items[0].content"),
            (
                json!({"kind": "section", "content": "x", "scope": {"branch": "a\nb"}}),
                "items[0].scope.branch",
            ),
            (
                json!({"kind": "section", "content": "x", "idempotency_key": "k".repeat(257)}),
                "items[0].idempotency_key",
            ),
            (
                json!({"kind": "section", "content": "x", "metadata": {"a":{"b":{"c":{"d":{"e":{"f":1}}}}}}}),
                "items[0].metadata",
            ),
            (json!({"kind": "section", "content": "x", "tags": [1]}), "items[0].tags[0]"),
            (json!({"kind": "section", "content": "x", "colour": 1}), "items[0].colour"),
            (json!({"kind": "section", "content": "x".repeat(MAX_CONTENT_BYTES + 1)}), "items[0].content"),
            (json!({"operation": "delete"}), "items[0].id"),
            (json!({"operation": "restore"}), "items[0].id"),
            (json!({"kind": "section", "content": "x", "ttl": "forever"}), "items[0].ttl"),
            (json!("just text"), "items[0]"),
        ];
        for (item, field) in cases {
            let err = one(item.clone()).unwrap_err();
            assert_eq!(err.field, field, "{item}");
            assert!(!err.human_hint.is_empty());
            // Issue 15 item 10: no message or hint may name an empty field ("send `` as ...").
            assert!(!err.message.contains("``") && !err.human_hint.contains("``"), "{err:?}");
        }
    }

    #[test]
    fn an_empty_idempotency_key_is_empty_not_too_long() {
        let err = one(json!({"kind": "section", "content": "x", "idempotency_key": ""})).unwrap_err();
        assert_eq!((err.code, err.field.as_str()), (ErrorCode::Empty, "items[0].idempotency_key"));
        let err =
            one(json!({"kind": "section", "content": "x", "idempotency_key": "k".repeat(257)})).unwrap_err();
        assert_eq!(err.code, ErrorCode::TooLong);
    }

    #[test]
    fn unknown_top_level_arguments_are_refused_like_memory_find_does() {
        let err = parse_store_request(&json!({"items": [{"kind": "todo", "content": "x"}], "dry_run": true}))
            .unwrap_err();
        assert_eq!((err.code, err.field.as_str()), (ErrorCode::UnknownField, "dry_run"));
        assert!(err.human_hint.contains("items"), "{err:?}");
    }

    #[test]
    fn delete_needs_only_an_id() {
        let id = Uuid::now_v7();
        assert_eq!(
            one(json!({"operation": "delete", "id": id.to_string()})).unwrap(),
            ItemOp::Delete { id, kind: None }
        );
        assert_eq!(
            one(json!({"operation": "Restore", "id": id.to_string(), "kind": "todo"})).unwrap(),
            ItemOp::Restore { id, kind: Some(Kind::Todo) }
        );
    }

    #[test]
    fn deeply_nested_metadata_is_refused() {
        // serde_json stops parsing at 128 levels; anything that deep must still be refused.
        let mut v = json!(1);
        for _ in 0..100 {
            v = json!({"a": v});
        }
        assert_eq!(json_depth(&v), 100);
        let err = one(json!({"kind": "section", "content": "x", "metadata": v})).unwrap_err();
        assert_eq!(err.code, ErrorCode::TooLarge);
    }
}
