//! An item's secrets: every text it stores — `content`, each string of `data`, `metadata` and
//! `source`, the keys of their objects, each tag — redacted ([`super::redact`]), and what the
//! title, searchable body and content hash are made of derived again from the redacted text,
//! so no secret reaches the store, an index, a vector or the audit trail. [`redact_item`] is
//! for an item on its way in ([`NewItem`]); [`redact_texts`] for the parts of an item already
//! written elsewhere (an import's line, a stored row), whose title and body the caller derives
//! again when something was found.

use super::{PRIVATE, marker, redact};
use crate::item::{Derived, NewItem, derive};
use crate::kind::Kind;
use serde_json::{Map, Value};

/// A secret found in an item: the field it stood in, as a path inside the item
/// (`content`, `data.steps[0].command`, `tags[2]`; a key of an object is named by its
/// redacted form, `data.[redacted:github-pat]`), and the rule that found it ([`PRIVATE`] for a
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

/// The texts of an item, wherever it is kept: what [`redact_texts`] redacts in place.
pub struct ItemTexts<'a> {
    pub content: Option<&'a mut String>,
    pub data: Option<&'a mut Map<String, Value>>,
    pub metadata: Option<&'a mut Value>,
    pub source: Option<&'a mut Value>,
    pub tags: &'a mut Vec<String>,
}

/// Replaces every secret in `item`'s texts by its marker and removes its private spans; what
/// was found, one entry per field and rule, in the item's field order. An item with nothing
/// found is left as it was.
pub fn redact_item(item: &mut NewItem) -> Vec<ItemFinding> {
    let ddl_before = item.data.get("ddl_text").cloned();
    let found = redact_texts(ItemTexts {
        content: item.content.as_mut(),
        data: Some(&mut item.data),
        metadata: item.metadata.as_mut(),
        source: item.source.as_mut(),
        tags: &mut item.tags,
    });
    if found.is_empty() {
        return found;
    }
    rederive(item.kind, &mut item.data, ddl_before.as_ref());
    let Derived { title, body, content_hash } = derive(item.kind, item.content.as_deref(), &item.data);
    item.title = title;
    item.body = body;
    item.content_hash = content_hash;
    found
}

/// Replaces every secret in `texts` by its marker (an object key too, a tag too) and removes
/// private spans; what was found, one entry per field and rule, in field order.
pub fn redact_texts(texts: ItemTexts<'_>) -> Vec<ItemFinding> {
    let mut found = Vec::new();
    if let Some(content) = texts.content {
        redact_text(content, "content", &mut found);
    }
    if let Some(data) = texts.data {
        redact_map(data, "data", &mut found);
    }
    for (name, value) in [("metadata", texts.metadata), ("source", texts.source)] {
        if let Some(value) = value {
            redact_value(value, name.to_string(), &mut found);
        }
    }
    let before = std::mem::take(texts.tags);
    for (i, mut tag) in before.into_iter().enumerate() {
        redact_text(&mut tag, &format!("tags[{i}]"), &mut found);
        // A tag that was only a private span is gone; two redacted alike are one.
        let tag = tag.trim().to_string();
        if !tag.is_empty() && !texts.tags.contains(&tag) {
            texts.tags.push(tag);
        }
    }
    found
}

/// What the redaction of `data` changes beyond its texts: a DDL's checksum is of the text
/// stored, the redacted one now (`ddl_before`: the DDL text before the redaction).
pub fn rederive(kind: Kind, data: &mut Map<String, Value>, ddl_before: Option<&Value>) {
    if kind == Kind::Ddl && data.get("ddl_text") != ddl_before {
        data.remove("checksum");
        // Cannot fail: with no checksum given there is nothing to disagree with.
        let _ = crate::natural_key::apply_ddl_checksum(data);
    }
}

fn redact_value(value: &mut Value, path: String, found: &mut Vec<ItemFinding>) {
    match value {
        Value::String(text) => redact_text(text, &path, found),
        Value::Array(list) => {
            for (i, v) in list.iter_mut().enumerate() {
                redact_value(v, format!("{path}[{i}]"), found);
            }
        }
        Value::Object(map) => redact_map(map, &path, found),
        Value::Number(_) | Value::Bool(_) | Value::Null => {}
    }
}

/// An object's values, and its keys: a key holding a secret is replaced by its redacted form
/// (numbered when two keys would become one, so no value is lost).
fn redact_map(map: &mut Map<String, Value>, path: &str, found: &mut Vec<ItemFinding>) {
    if map.keys().any(|k| !super::scan(k).is_empty()) {
        let before = std::mem::take(map);
        for (key, value) in before {
            let redaction = redact(&key);
            let mut key = redaction.text.into_owned();
            if !redaction.findings.is_empty() {
                if key.trim().is_empty() {
                    key = marker(PRIVATE);
                }
                let base = key.clone();
                let mut n = 2;
                while map.contains_key(&key) {
                    key = format!("{base} ({n})");
                    n += 1;
                }
                for f in &redaction.findings {
                    note(found, format!("{path}.{key}"), f.rule);
                }
            }
            map.insert(key, value);
        }
    }
    for (key, v) in map.iter_mut() {
        redact_value(v, format!("{path}.{key}"), found);
    }
}

fn redact_text(text: &mut String, field: &str, found: &mut Vec<ItemFinding>) {
    let redaction = redact(text);
    if redaction.findings.is_empty() {
        return;
    }
    for f in &redaction.findings {
        note(found, field.to_string(), f.rule);
    }
    *text = redaction.text.into_owned();
}

fn note(found: &mut Vec<ItemFinding>, field: String, rule: &'static str) {
    if !found.iter().any(|seen| seen.field == field && seen.rule == rule) {
        found.push(ItemFinding { field, rule });
    }
}
