//! Secrets in items that did not come through `memory_store`'s first stage: the lines of an
//! import file (redacted or refused as `CORTEX_SECRETS` says before they are written) and the
//! items already stored (`cortex secrets scan [--redact]`, [`Secrets`]). Both redact with the
//! one scanner (`cortex_domain::secrets`) through [`redact_record`].

mod stored;

pub use stored::{Secrets, StoredFinding, StoredScan};

use crate::response::Redacted;
use cortex_domain::item::derive;
use cortex_domain::secrets::{self, ItemFinding, ItemTexts};
use cortex_store::Record;
use serde_json::Value;

/// Replaces every secret in `record`'s texts by its marker (the texts `memory_store` screens,
/// and the title and body too, which a file may carry apart from its content); when anything
/// was found, the title, body and content hash are derived again from the redacted texts and
/// the vectors dropped (they were made of the secret). What was found, field by field.
pub fn redact_record(record: &mut Record) -> Vec<ItemFinding> {
    let ddl_before = record.data.get("ddl_text").cloned();
    let mut found = secrets::redact_texts(ItemTexts {
        content: record.content.as_mut(),
        data: record.data.as_object_mut(),
        metadata: record.metadata.as_mut(),
        source: record.source.as_mut(),
        tags: &mut record.tags,
    });
    if !found.is_empty()
        && let Value::Object(data) = &mut record.data
    {
        secrets::rederive(record.kind, data, ddl_before.as_ref());
        let derived = derive(record.kind, record.content.as_deref(), data);
        record.title = derived.title;
        record.body = derived.body;
        record.content_hash = derived.content_hash;
    }
    // Left only when the file's title or body did not come from its content and data.
    for (name, text) in [("title", &mut record.title), ("body", &mut record.body)] {
        let redaction = secrets::redact(text);
        if redaction.findings.is_empty() {
            continue;
        }
        for f in &redaction.findings {
            found.push(ItemFinding { field: name.to_string(), rule: f.rule });
        }
        *text = redaction.text.into_owned();
    }
    if !found.is_empty() {
        record.vector = None;
        record.chunks.clear();
    }
    found
}

/// Findings as an item's result names them.
pub fn named(found: Vec<ItemFinding>) -> Vec<Redacted> {
    found.into_iter().map(|f| Redacted { field: f.field, rule: f.rule.to_string() }).collect()
}
