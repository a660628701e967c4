//! An item's secrets: every text it stores — `content`, each string of `data`, `metadata` and
//! `source` — redacted ([`super::redact`]), and what the title, searchable body and content
//! hash are made of derived again from the redacted text, so no secret reaches the store, an
//! index, a vector or the audit trail. Object keys and tags are left as given: they name, they
//! do not hold values.

use super::{PRIVATE, redact};
use crate::item::{Derived, NewItem, derive};
use crate::kind::Kind;
use serde_json::Value;

/// A secret found in an item: the field it stood in, as a path inside the item
/// (`content`, `data.steps[0].command`), and the rule that found it ([`PRIVATE`] for a
/// `<private>` span, removed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemFinding {
    pub field: String,
    pub rule: &'static str,
}

impl ItemFinding {
    /// Whether it is a credential, not a private span the caller marked itself.
    pub fn is_secret(&self) -> bool {
        self.rule != PRIVATE
    }
}

/// Replaces every secret in `item`'s texts by its marker and removes its private spans; what
/// was found, one entry per field and rule, in the item's field order. An item with nothing
/// found is left as it was.
pub fn redact_item(item: &mut NewItem) -> Vec<ItemFinding> {
    let mut found = Vec::new();
    if let Some(content) = item.content.as_mut() {
        redact_text(content, "content", &mut found);
    }
    let ddl_before = item.data.get("ddl_text").cloned();
    for (key, value) in item.data.iter_mut() {
        redact_value(value, format!("data.{key}"), &mut found);
    }
    for (name, value) in [("metadata", item.metadata.as_mut()), ("source", item.source.as_mut())] {
        if let Some(value) = value {
            redact_value(value, name.to_string(), &mut found);
        }
    }
    if found.is_empty() {
        return found;
    }
    // A DDL's checksum is of the text stored: of the redacted text, now.
    if item.kind == Kind::Ddl && item.data.get("ddl_text") != ddl_before.as_ref() {
        item.data.remove("checksum");
        // Cannot fail: with no checksum given there is nothing to disagree with.
        let _ = crate::natural_key::apply_ddl_checksum(&mut item.data);
    }
    let Derived { title, body, content_hash } = derive(item.kind, item.content.as_deref(), &item.data);
    item.title = title;
    item.body = body;
    item.content_hash = content_hash;
    found
}

fn redact_value(value: &mut Value, path: String, found: &mut Vec<ItemFinding>) {
    match value {
        Value::String(text) => redact_text(text, &path, found),
        Value::Array(list) => {
            for (i, v) in list.iter_mut().enumerate() {
                redact_value(v, format!("{path}[{i}]"), found);
            }
        }
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                redact_value(v, format!("{path}.{key}"), found);
            }
        }
        Value::Number(_) | Value::Bool(_) | Value::Null => {}
    }
}

fn redact_text(text: &mut String, field: &str, found: &mut Vec<ItemFinding>) {
    let redaction = redact(text);
    if redaction.findings.is_empty() {
        return;
    }
    for f in &redaction.findings {
        if !found.iter().any(|seen| seen.field == field && seen.rule == f.rule) {
            found.push(ItemFinding { field: field.to_string(), rule: f.rule });
        }
    }
    *text = redaction.text.into_owned();
}
