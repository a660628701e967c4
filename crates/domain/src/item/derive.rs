//! What an item's text fields are made of its content and data: the title, the searchable
//! body and the content hash that duplicate checks compare.

use crate::kind::{self, Kind};
use crate::limits::MAX_TITLE_CHARS;
use crate::text::{self, content_hash};
use serde_json::{Map, Value};

/// What an item's text fields are made of its content and data.
pub struct Derived {
    pub title: String,
    /// Searchable text other than the title.
    pub body: String,
    /// SHA-256 of the normalized title and body.
    pub content_hash: String,
}

/// The title, searchable body and content hash of an item (for a merge that changes `data`
/// after parsing, too).
pub fn derive(kind: Kind, content: Option<&str>, data: &Map<String, Value>) -> Derived {
    let title = kind::title_from_data(kind, data)
        .map(|t| text::first_line(&t, MAX_TITLE_CHARS))
        .or_else(|| content.map(|c| text::first_line(c, MAX_TITLE_CHARS)))
        .unwrap_or_default();
    let body = searchable_body(kind, content, data);
    let content_hash = content_hash(&format!("{title}\n{body}"));
    Derived { title, body, content_hash }
}

/// `content` followed by the text of every `data` field except the title's own, in the
/// kind's field order; runbook steps contribute each description, command and outcome.
/// References by id (a relation's ends, an observation's entity) are left out.
fn searchable_body(kind: Kind, content: Option<&str>, data: &Map<String, Value>) -> String {
    let mut parts: Vec<String> = content.map(str::to_string).into_iter().collect();
    for field in kind.spec().fields {
        parts.extend(field_texts(kind, data, field.name));
    }
    parts.join("\n")
}

/// The texts one `data` field adds to the searchable body: none for a title field (the title
/// holds it), a label kept as structured data (a commit's author and hash), or a reference by
/// id (an id says nothing to a reader or a search; a named entity does).
pub fn field_texts(kind: Kind, data: &Map<String, Value>, field: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let Some(spec) = kind.spec().fields.iter().find(|f| f.name == field) else {
        return parts;
    };
    if kind.spec().title.uses(field) || !spec.searchable {
        return parts;
    }
    match (data.get(field), &spec.ty) {
        (Some(Value::String(_)), kind::FieldType::ItemRef) | (None, _) => {}
        (Some(value), _) => collect_text(value, &mut parts),
    }
    parts
}

fn collect_text(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Number(n) => out.push(n.to_string()),
        Value::Array(list) => list.iter().for_each(|v| collect_text(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_text(v, out)),
        Value::Bool(_) | Value::Null => {}
    }
}
