//! The optional fields every kind shares: tags, metadata, source and idempotency key, each
//! checked against its limits with a hint naming the fix.

use crate::error::{ErrorCode, ValidationError};
use crate::limits::*;
use crate::text;
use serde_json::{Map, Value};

pub(super) fn parse_tags(value: Option<&Value>) -> Result<Vec<String>, ValidationError> {
    let list = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(other) => {
            return Err(ValidationError::wrong_type("tags", "an array of strings", other));
        }
    };
    check_tag_count(list.len())?;
    let mut tags = Vec::with_capacity(list.len());
    for (i, tag) in list.iter().enumerate() {
        let Value::String(text) = tag else {
            return Err(ValidationError::wrong_type(format!("tags[{i}]"), "a string", tag));
        };
        add_tag(&mut tags, i, text)?;
    }
    Ok(tags)
}

/// Tags given as text (an item built in the process): the rules of [`parse_tags`].
pub(super) fn check_tags(list: &[String]) -> Result<Vec<String>, ValidationError> {
    check_tag_count(list.len())?;
    let mut tags = Vec::with_capacity(list.len());
    for (i, text) in list.iter().enumerate() {
        add_tag(&mut tags, i, text)?;
    }
    Ok(tags)
}

fn check_tag_count(count: usize) -> Result<(), ValidationError> {
    if count > MAX_TAGS {
        return Err(ValidationError::new(
            ErrorCode::TooMany,
            "tags",
            format!("{count} tags; at most {MAX_TAGS}"),
            "keep the few tags you will filter on",
        ));
    }
    Ok(())
}

/// The tag at position `i`, trimmed and lowercased, added unless already there. A tag holding
/// a credential keeps its case: the scanner's rules know tokens by their capitals (`AKIA…`),
/// and the store's first stage must still find it to redact or refuse it.
fn add_tag(tags: &mut Vec<String>, i: usize, text: &str) -> Result<(), ValidationError> {
    let text = text.trim();
    let text = if crate::secrets::scan(text).is_empty() { text.to_lowercase() } else { text.to_string() };
    if text.is_empty() || text.chars().count() > MAX_TAG_CHARS || text.chars().any(char::is_control) {
        return Err(ValidationError::new(
            ErrorCode::InvalidValue,
            format!("tags[{i}]"),
            format!(
                "tag `{}` must be 1–{MAX_TAG_CHARS} characters without control characters",
                crate::error::shown(&text)
            ),
            "use short labels such as \"auth\" or \"perf\"",
        ));
    }
    if !tags.contains(&text) {
        tags.push(text);
    }
    Ok(())
}

pub(super) fn parse_metadata(value: Option<&Value>) -> Result<Option<Value>, ValidationError> {
    let value = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(v @ Value::Object(_)) => v,
        Some(other) => return Err(ValidationError::wrong_type("metadata", "an object", other)),
    };
    let depth = json_depth(value);
    if depth > MAX_METADATA_DEPTH {
        return Err(ValidationError::new(
            ErrorCode::TooLarge,
            "metadata",
            format!("`metadata` is nested {depth} levels deep; at most {MAX_METADATA_DEPTH}"),
            "flatten `metadata` into a few levels of keys",
        ));
    }
    let size = value.to_string().len();
    if size > MAX_METADATA_BYTES {
        return Err(ValidationError::new(
            ErrorCode::TooLarge,
            "metadata",
            format!("`metadata` is {size} bytes; at most {MAX_METADATA_BYTES}"),
            "keep metadata small; long text belongs in `content`",
        ));
    }
    if value.to_string().contains("\\u0000") {
        return Err(ValidationError::new(
            ErrorCode::ControlCharacter,
            "metadata",
            "`metadata` contains a NUL character",
            "remove the \\u0000 characters",
        ));
    }
    Ok(Some(value.clone()))
}

/// Depth of nested objects and arrays; a scalar is depth 0, `{}` depth 1.
pub(super) fn json_depth(value: &Value) -> usize {
    // Iterative, so a hostile 10,000-deep document cannot overflow the stack here.
    let mut max = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((v, d)) = stack.pop() {
        match v {
            Value::Object(map) => {
                max = max.max(d + 1);
                stack.extend(map.values().map(|c| (c, d + 1)));
            }
            Value::Array(list) => {
                max = max.max(d + 1);
                stack.extend(list.iter().map(|c| (c, d + 1)));
            }
            _ => {}
        }
    }
    max
}

/// The fields of an item's `source` kept with it (who stored it).
pub const SOURCE_FIELDS: [&str; 3] = ["actor", "tool", "session"];
/// The fields of an item's `source` that say where it came from in git: kept apart from the
/// item's row, as its provenance (`crate::provenance`).
pub const SOURCE_PROVENANCE_FIELDS: [&str; 2] = ["files", "commit"];

/// The schema of `source`: its names as strings, `files` as a list of paths.
pub(super) fn source_schema() -> Value {
    let mut properties: Map<String, Value> =
        SOURCE_FIELDS.iter().map(|f| (f.to_string(), serde_json::json!({ "type": "string" }))).collect();
    properties.insert("files".into(), serde_json::json!({ "type": "array", "items": { "type": "string" } }));
    properties.insert("commit".into(), serde_json::json!({ "type": "string" }));
    serde_json::json!({ "type": "object", "properties": properties, "additionalProperties": false })
}

pub(super) fn parse_source(
    value: Option<&Value>,
) -> Result<(Option<Value>, crate::provenance::ProvenanceClaim), ValidationError> {
    let mut claim = crate::provenance::ProvenanceClaim::default();
    let map = match value {
        None | Some(Value::Null) => return Ok((None, claim)),
        Some(Value::Object(map)) => map,
        Some(other) => {
            return Err(ValidationError::wrong_type(
                "source",
                "an object {actor?, tool?, session?, files?, commit?}",
                other,
            ));
        }
    };
    let mut out = Map::new();
    for (key, v) in map {
        let field = format!("source.{}", crate::error::shown(key));
        match key.as_str() {
            "files" => {
                claim.files = crate::provenance::ProvenanceClaim::parse_files(&field, v)?;
                continue;
            }
            "commit" => {
                claim.commit = Some(crate::provenance::ProvenanceClaim::parse_commit(&field, v)?);
                continue;
            }
            _ => {}
        }
        if !SOURCE_FIELDS.contains(&key.as_str()) {
            let key = crate::error::shown(key);
            return Err(ValidationError::new(
                ErrorCode::UnknownField,
                field,
                format!("`{key}` is not a source field"),
                format!("source has: {}, {}", SOURCE_FIELDS.join(", "), SOURCE_PROVENANCE_FIELDS.join(", ")),
            ));
        }
        let Value::String(text) = v else {
            return Err(ValidationError::wrong_type(field, "a string", v));
        };
        if text.chars().count() > MAX_SHORT_TEXT_CHARS || text.chars().any(char::is_control) {
            return Err(ValidationError::new(
                ErrorCode::InvalidValue,
                field,
                format!("`source.{key}` must be a short name without control characters"),
                "for example {\"actor\": \"claude-code\", \"tool\": \"memory_store\"}",
            ));
        }
        out.insert(key.clone(), Value::String(text.clone()));
    }
    Ok(((!out.is_empty() || claim.is_empty()).then_some(Value::Object(out)), claim))
}

pub(super) fn parse_idempotency_key(value: Option<&Value>) -> Result<Option<String>, ValidationError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(key)) => check_idempotency_key(key).map(Some),
        Some(other) => Err(ValidationError::wrong_type("idempotency_key", "a string", other)),
    }
}

/// An idempotency key: 1 to [`MAX_IDEMPOTENCY_KEY_CHARS`] characters without NUL.
pub(super) fn check_idempotency_key(key: &str) -> Result<String, ValidationError> {
    let count = key.chars().count();
    if count == 0 {
        return Err(ValidationError::new(
            ErrorCode::Empty,
            "idempotency_key",
            "`idempotency_key` is empty",
            "use a short unique string per logical write, such as a UUID, or leave the field out",
        ));
    }
    if count > MAX_IDEMPOTENCY_KEY_CHARS {
        return Err(ValidationError::new(
            ErrorCode::TooLong,
            "idempotency_key",
            format!("`idempotency_key` is {count} characters; it must be 1–{MAX_IDEMPOTENCY_KEY_CHARS}"),
            "use a short unique string per logical write, such as a UUID",
        ));
    }
    text::reject_nul("idempotency_key", key)?;
    Ok(key.to_string())
}
