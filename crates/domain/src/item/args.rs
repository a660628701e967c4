//! An item's fields in a `memory_store` batch, one definition each ([`ARGS`]): the item's
//! schema in the tool's input schema is generated from them and [`parse_item`] parses by
//! walking them; then the checks across fields (the operation; a kind's `data` against the
//! kind's table; `content` or `data`; what `supersedes` may name).

use super::fields::{SOURCE_FIELDS, parse_idempotency_key, parse_metadata, parse_source, parse_tags};
use super::{ItemOp, NewItem};
use crate::args::shape::{Custom, KindName, ScopeObject, schemas};
use crate::args::{self, Arg, Field, Word};
use crate::error::{ErrorCode, ValidationError, shown};
use crate::item::{Derived, derive};
use crate::kind::{self, Kind};
use crate::limits::MAX_CONTENT_BYTES;
use crate::scope::Scope;
use crate::text;
use crate::ttl::TtlPolicy;
use serde_json::{Map, Value, json};
use uuid::Uuid;

/// What a write does with its item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Operation {
    /// Insert, or update the item named by `id`.
    #[default]
    Upsert,
    Delete,
    /// Bring back a deleted item.
    Restore,
}

impl Word for Operation {
    const ALL: &'static [Operation] = &[Operation::Upsert, Operation::Delete, Operation::Restore];

    fn as_str(self) -> &'static str {
        match self {
            Operation::Upsert => "upsert",
            Operation::Delete => "delete",
            Operation::Restore => "restore",
        }
    }
}

/// An item as its fields build it, before the checks across them.
#[derive(Default)]
pub struct Draft {
    pub(super) kind: Option<Kind>,
    pub(super) content: Option<String>,
    pub(super) data: Option<Map<String, Value>>,
    pub(super) scope: Scope,
    pub(super) tags: Vec<String>,
    pub(super) metadata: Option<Value>,
    pub(super) source: Option<Value>,
    pub(super) idempotency_key: Option<String>,
    pub(super) ttl: Option<TtlPolicy>,
    pub(super) expires_at: Option<i64>,
    pub(super) occurred_at: Option<i64>,
    pub(super) supersedes: Option<Uuid>,
    pub(super) id: Option<Uuid>,
    pub(super) operation: Operation,
    /// `dedupe: false` was given.
    pub(super) no_dedupe: bool,
}

type ItemField<S> = Field<Draft, S>;

pub const KIND: ItemField<KindName> = Field {
    name: "kind",
    doc: Some("Needed for a new item (adr = decision, pr = pr_context); not for a delete."),
    shape: KindName,
    set: |d, v| d.kind = Some(v),
};
pub const CONTENT: ItemField<Custom<Option<String>>> = Field {
    name: "content",
    doc: Some("Free text (≤256 KiB)."),
    shape: Custom { schema: schemas::string, parse: parse_content },
    set: |d, v| d.content = v,
};
pub const DATA: ItemField<Custom<Map<String, Value>>> = Field {
    name: "data",
    doc: Some(
        "The kind's fields, e.g. decision {component, status, title, rationale}. Errors list what is missing.",
    ),
    shape: Custom { schema: schemas::open_object, parse: parse_data },
    set: |d, v| d.data = Some(v),
};
pub const SCOPE: ItemField<ScopeObject> = Field {
    name: "scope",
    doc: Some("Missing fields default to the server's org/project/branch."),
    shape: ScopeObject,
    set: |d, v| d.scope = v,
};
pub const TAGS: ItemField<Custom<Vec<String>>> = Field {
    name: "tags",
    doc: None,
    shape: Custom { schema: schemas::strings, parse: |v| parse_tags(Some(v)) },
    set: |d, v| d.tags = v,
};
pub const METADATA: ItemField<Custom<Option<Value>>> = Field {
    name: "metadata",
    doc: None,
    shape: Custom { schema: schemas::open_object, parse: |v| parse_metadata(Some(v)) },
    set: |d, v| d.metadata = v,
};
pub const SOURCE: ItemField<Custom<Option<Value>>> = Field {
    name: "source",
    doc: Some("Who stored it."),
    shape: Custom { schema: || schemas::closed_strings(&SOURCE_FIELDS), parse: |v| parse_source(Some(v)) },
    set: |d, v| d.source = v,
};
pub const IDEMPOTENCY_KEY: ItemField<Custom<Option<String>>> = Field {
    name: "idempotency_key",
    doc: Some("The same key twice stores one item."),
    shape: Custom { schema: schemas::string, parse: |v| parse_idempotency_key(Some(v)) },
    set: |d, v| d.idempotency_key = v,
};
pub const TTL: ItemField<Custom<TtlPolicy>> = Field {
    name: "ttl",
    doc: Some("short 30d, default 90d, long 365d, permanent (default per kind)"),
    shape: Custom { schema: schemas::words::<TtlPolicy>, parse: TtlPolicy::from_json },
    set: |d, v| d.ttl = Some(v),
};
pub const EXPIRES_AT: ItemField<Custom<i64>> = Field {
    name: "expires_at",
    doc: Some("RFC 3339: expire at this instant instead"),
    shape: Custom { schema: schemas::string, parse: parse_expires_at },
    set: |d, v| d.expires_at = Some(v),
};
pub const OCCURRED_AT: ItemField<Custom<i64>> = Field {
    name: "occurred_at",
    doc: Some(
        "RFC 3339 or YYYY-MM-DD: when what it records happened (a commit, a release); recent = newest by it",
    ),
    shape: Custom { schema: schemas::string, parse: parse_occurred_at },
    set: |d, v| d.occurred_at = Some(v),
};
pub const SUPERSEDES: ItemField<Custom<Uuid>> = Field {
    name: "supersedes",
    doc: Some("Id of the item this new one replaces (it leaves finds)"),
    shape: Custom { schema: schemas::string, parse: parse_supersedes },
    set: |d, v| d.supersedes = Some(v),
};
pub const ID: ItemField<Custom<Uuid>> = Field {
    name: "id",
    doc: Some("With upsert: update this item. With delete/restore: the item to delete/undelete."),
    shape: Custom { schema: schemas::string, parse: parse_id },
    set: |d, v| d.id = Some(v),
};
pub const OPERATION: ItemField<Custom<Operation>> = Field {
    name: "operation",
    doc: Some("upsert (default), delete or restore"),
    shape: Custom { schema: schemas::words::<Operation>, parse: parse_operation },
    set: |d, v| d.operation = v,
};
pub const DEDUPE: ItemField<Custom<bool>> = Field {
    name: "dedupe",
    doc: Some("false stores an exact duplicate anyway"),
    shape: Custom { schema: schemas::boolean, parse: parse_dedupe },
    set: |d, v| d.no_dedupe = !v,
};

/// Every field an item may have, in the order its schema lists them.
pub static ARGS: [&dyn Arg<Draft>; 15] = [
    &KIND,
    &CONTENT,
    &DATA,
    &SCOPE,
    &TAGS,
    &METADATA,
    &SOURCE,
    &IDEMPOTENCY_KEY,
    &TTL,
    &EXPIRES_AT,
    &OCCURRED_AT,
    &SUPERSEDES,
    &ID,
    &OPERATION,
    &DEDUPE,
];

/// The schema of one item in a batch: a closed object of [`ARGS`].
pub fn item_schema() -> Value {
    json!({ "type": "object", "properties": args::properties(&ARGS), "additionalProperties": false })
}

/// Validates one item. Field paths in errors are relative to the item.
pub fn parse_item(value: &Value) -> Result<ItemOp, ValidationError> {
    let Value::Object(item) = value else {
        return Err(ValidationError::wrong_type("", "an object with at least `kind`", value));
    };
    let mut draft = Draft::default();
    args::parse_object(&ARGS, item, &mut draft, unknown)?;
    match draft.operation {
        Operation::Delete => {
            let id = draft.id.ok_or_else(|| {
                ValidationError::missing("id", "a delete names the item to delete by its `id`")
            })?;
            Ok(ItemOp::Delete { id, kind: draft.kind })
        }
        Operation::Restore => {
            let id = draft.id.ok_or_else(|| {
                ValidationError::missing("id", "a restore names the deleted item to bring back by its `id`")
            })?;
            Ok(ItemOp::Restore { id, kind: draft.kind })
        }
        Operation::Upsert => upsert(draft).map(|i| ItemOp::Upsert(Box::new(i))),
    }
}

fn unknown(key: &str) -> ValidationError {
    let key = shown(key);
    ValidationError::new(
        ErrorCode::UnknownField,
        key.clone(),
        format!("`{key}` is not an item field"),
        format!(
            "item fields are: {}; kind-specific fields go in `data`, free-form ones in `metadata`",
            args::names(&ARGS).join(", ")
        ),
    )
}

pub(super) fn upsert(draft: Draft) -> Result<NewItem, ValidationError> {
    let kind = draft.kind.ok_or_else(|| {
        ValidationError::missing("kind", format!("every item needs a kind, one of: {}", Kind::names()))
    })?;
    let content = draft.content;
    let data = match draft.data {
        None => None,
        Some(map) => Some(kind::validate_data(kind, &map).map_err(|e| e.under("data"))?),
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
    let supersedes_on_item = draft.supersedes.is_some();
    let supersedes = check_supersedes(draft.id, draft.supersedes, &data)?;
    Ok(NewItem {
        kind,
        id: draft.id,
        title,
        status: kind::status_from_data(kind, &data),
        content,
        data,
        body,
        content_hash,
        scope: draft.scope,
        tags: draft.tags,
        metadata: draft.metadata,
        source: draft.source,
        idempotency_key: draft.idempotency_key,
        ttl: draft.ttl,
        expires_at: draft.expires_at,
        occurred_at: draft.occurred_at,
        dedupe: !draft.no_dedupe,
        supersedes,
        supersedes_on_item,
    })
}

/// The item a new one replaces: top-level `supersedes` (any kind) or a decision's
/// `data.supersedes` (already checked to be an id); both must agree, and an update replaces
/// nothing.
fn check_supersedes(
    id: Option<Uuid>,
    given: Option<Uuid>,
    data: &Map<String, Value>,
) -> Result<Option<Uuid>, ValidationError> {
    let in_data = data.get("supersedes").and_then(Value::as_str).and_then(|s| Uuid::parse_str(s.trim()).ok());
    let Some(top) = given else {
        return Ok(if id.is_none() { in_data } else { None });
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

/// Free text within its size, without NUL; blank text is no content.
fn parse_content(value: &Value) -> Result<Option<String>, ValidationError> {
    let Value::String(text) = value else {
        return Err(ValidationError::wrong_type("content", "a string", value));
    };
    check_content(text)
}

/// The rules of `content` on text: within its size, without NUL; blank text is no content.
pub(super) fn check_content(text: &str) -> Result<Option<String>, ValidationError> {
    if text.len() > MAX_CONTENT_BYTES {
        return Err(ValidationError::new(
            ErrorCode::TooLarge,
            "content",
            format!("`content` is {} bytes, over the {MAX_CONTENT_BYTES}-byte limit", text.len()),
            "split the text into several items (for example one section per heading)",
        ));
    }
    text::reject_nul("content", text)?;
    Ok((!text.trim().is_empty()).then(|| text.to_string()))
}

fn parse_data(value: &Value) -> Result<Map<String, Value>, ValidationError> {
    match value {
        Value::Object(map) => Ok(map.clone()),
        other => Err(ValidationError::wrong_type("data", "an object", other)),
    }
}

fn parse_expires_at(value: &Value) -> Result<i64, ValidationError> {
    instant("expires_at", value)
}

fn parse_occurred_at(value: &Value) -> Result<i64, ValidationError> {
    instant("occurred_at", value)
}

/// An RFC 3339 time or a `YYYY-MM-DD` date, as epoch milliseconds.
fn instant(field: &str, value: &Value) -> Result<i64, ValidationError> {
    match value {
        Value::String(text) => crate::time::parse_instant(text).map_err(|hint| {
            ValidationError::new(
                ErrorCode::InvalidValue,
                field,
                format!("`{field}` is not a time: `{}`", shown(text)),
                hint.to_string(),
            )
        }),
        other => Err(ValidationError::wrong_type(field, "an RFC 3339 time string", other)),
    }
}

fn parse_supersedes(value: &Value) -> Result<Uuid, ValidationError> {
    item_id(
        "supersedes",
        value,
        "send the id (a UUID) of the live item this one replaces, as memory_find returns it",
        "an item id (UUID string)",
    )
}

fn parse_id(value: &Value) -> Result<Uuid, ValidationError> {
    item_id(
        "id",
        value,
        "use an `id` returned by memory_store or memory_find, or leave `id` out to create a new item",
        "a UUID string",
    )
}

/// An item's id at `field`: a UUID string, refused with `hint` when it is none.
fn item_id(field: &str, value: &Value, hint: &str, expected: &str) -> Result<Uuid, ValidationError> {
    match value {
        Value::String(text) => Uuid::parse_str(text.trim()).map_err(|_| {
            ValidationError::new(
                ErrorCode::InvalidValue,
                field,
                format!("`{field}` is not an item id: `{}`", shown(text)),
                hint,
            )
        }),
        other => Err(ValidationError::wrong_type(field, expected, other)),
    }
}

fn parse_operation(value: &Value) -> Result<Operation, ValidationError> {
    let Value::String(text) = value else {
        return Err(ValidationError::wrong_type("operation", "\"upsert\", \"delete\" or \"restore\"", value));
    };
    Operation::parse_word(text).ok_or_else(|| {
        ValidationError::new(
            ErrorCode::InvalidValue,
            "operation",
            format!("`{}` is not an operation", shown(&text.trim().to_ascii_lowercase())),
            "use \"upsert\" (the default: insert, or update when `id` is given), or \"delete\" or \"restore\" with an `id`",
        )
    })
}

fn parse_dedupe(value: &Value) -> Result<bool, ValidationError> {
    match value {
        Value::Bool(b) => Ok(*b),
        other => Err(ValidationError::wrong_type("dedupe", "a boolean", other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_descriptions_quote_the_limits() {
        let doc = CONTENT.doc.unwrap_or_default();
        assert!(doc.contains(&format!("≤{} KiB", MAX_CONTENT_BYTES / 1024)), "{doc}");
    }

    #[test]
    fn a_delete_checks_the_fields_it_is_sent_too() {
        let id = Uuid::now_v7().to_string();
        let err = parse_item(&serde_json::json!({"operation": "delete", "id": id, "tags": "x"})).unwrap_err();
        assert_eq!(err.field, "tags");
    }
}
