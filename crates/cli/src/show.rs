//! `cortex show ID…`: items read by id, as `memory_find` reads them by `ids`, for a person —
//! the text once, the kind's fields by type, times relative and exact — or as JSON. An id that
//! is malformed, unknown or out of reach is named on stderr; the others are still shown.

use crate::error::CliError;
use crate::output;
use crate::report::when;
use cortex_domain::FindRequest;
use cortex_domain::find::Detail;
use cortex_domain::limits::MAX_HIT_CONTENT_CHARS;
use cortex_service::response::{Direction, Hit};
use cortex_service::{MemoryService, ServiceError};
use serde_json::{Value, json};
use std::process::ExitCode;
use uuid::Uuid;

/// Shows each of `ids`; exits 1 when any could not be shown (2 when one is no id at all).
pub fn run(service: &MemoryService, ids: &[String], json: bool) -> Result<ExitCode, CliError> {
    let now = cortex_service::now_ms();
    let mut shown = Vec::new();
    let mut problems = Vec::new();
    let mut malformed = false;
    for text in ids {
        let Ok(id) = Uuid::parse_str(text.trim()) else {
            malformed = true;
            problems
                .push((text.clone(), "is not an item id (a UUID, as `cortex find` prints them)".to_string()));
            continue;
        };
        match read(service, id) {
            Ok(Some(hit)) => shown.push(hit),
            Ok(None) => problems.push((
                text.clone(),
                "no such item: unknown, deleted, or outside what this memory lets you read".to_string(),
            )),
            Err(ServiceError::Invalid(e)) => problems.push((text.clone(), e.message.clone())),
            Err(e) => return Err(CliError::Service(e)),
        }
    }
    if json {
        let missing: Vec<Value> =
            problems.iter().map(|(id, error)| json!({ "id": id, "error": error })).collect();
        output::json(&json!({ "items": shown, "missing": missing }));
    } else {
        for (n, hit) in shown.iter().enumerate() {
            if n > 0 {
                output::line("");
            }
            item(hit, now);
        }
    }
    for (id, problem) in &problems {
        output::note(&format!("cortex show: `{id}` {problem}"));
    }
    Ok(match (malformed, problems.is_empty()) {
        (true, _) => ExitCode::from(2),
        (false, false) => ExitCode::FAILURE,
        (false, true) => ExitCode::SUCCESS,
    })
}

/// One item by id, in full, or `None` when the caller cannot read it.
fn read(service: &MemoryService, id: Uuid) -> Result<Option<Hit>, ServiceError> {
    let request =
        FindRequest::ids([id]).with_detail(Detail::Full).with_max_content_chars(MAX_HIT_CONTENT_CHARS);
    let response = service.memory_find().find(&request)?;
    Ok(response.hits.into_iter().find(|h| h.id == id))
}

/// One item for a person.
fn item(hit: &Hit, now: i64) {
    output::line(&hit.title);
    let mut head = vec![hit.kind.as_str().to_string()];
    head.extend(hit.status.clone());
    head.push(hit.id.to_string());
    output::line(&format!("  {}", head.join(" · ")));
    if let Some(scope) = &hit.scope {
        let levels: Vec<String> = cortex_domain::scope::SCOPE_FIELDS
            .iter()
            .filter_map(|f| scope.get(f).map(|v| format!("{f}={v}")))
            .collect();
        output::line(&format!(
            "  scope       {}",
            if levels.is_empty() { "global".into() } else { levels.join(" ") }
        ));
    }
    if let Some(created) = &hit.created_at {
        output::line(&format!("  created     {}", when(created, now)));
    }
    output::line(&format!("  updated     {}", when(&hit.updated_at, now)));
    if !hit.tags.is_empty() {
        output::line(&format!("  tags        {}", hit.tags.join(", ")));
    }
    if let Some(expires) = &hit.expires_at {
        output::line(&format!("  expires     {}", when(expires, now)));
    }
    if let Some(newer) = &hit.superseded_by {
        output::line(&format!("  superseded  by {newer} (cortex show {newer})"));
    }
    if let Some(stale) = &hit.stale {
        output::line(&format!("  stale       {}: check it before relying on it", stale.why));
    }
    let content = hit.content.as_deref().unwrap_or_default();
    // The header has the title and the status; a kind whose text is made of its fields shows
    // those fields (each under its name) instead of the text they were joined into.
    let fields: Vec<(&String, &Value)> = hit
        .data
        .as_ref()
        .and_then(Value::as_object)
        .map(|data| data.iter().filter(|(name, _)| !matches!(name.as_str(), "title" | "status")).collect())
        .unwrap_or_default();
    let from_fields = fields.iter().any(|(_, v)| v.as_str().is_some_and(|s| in_text(s, content)));
    if !from_fields && !content.trim().is_empty() {
        output::line("");
        output::line(content.trim_end());
        if hit.content_truncated {
            output::line(&format!("[cut at {MAX_HIT_CONTENT_CHARS} characters]"));
        }
    }
    let (texts, short): (Vec<_>, Vec<_>) = fields.into_iter().partition(|(_, v)| is_long_text(v));
    for (name, value) in texts {
        output::line("");
        output::line(&format!("{name}:"));
        output::line(value.as_str().unwrap_or_default().trim_end());
    }
    let short: Vec<_> = short.into_iter().filter(|(_, v)| !v.is_null()).collect();
    if !short.is_empty() {
        output::line("");
        output::line("Fields");
        for (name, value) in short {
            field(name, value);
        }
    }
    if !hit.relations.is_empty() {
        output::line("");
        output::line("Relations");
        for r in &hit.relations {
            let arrow = match r.direction {
                Direction::Outgoing => format!("{} →", r.relation_type),
                Direction::Incoming => format!("← {}", r.relation_type),
            };
            output::line(&format!("  {arrow} {} {} {}", r.other_kind, r.other_id, r.other_title));
        }
    }
    if !hit.observations.is_empty() {
        output::line("");
        output::line("Observations");
        for o in &hit.observations {
            output::line(&format!("  - {} ({})", o.text, when(&o.created_at, now)));
        }
    }
}

/// Whether `field` is part of the item's text (a text made of the kind's fields).
fn in_text(field: &str, content: &str) -> bool {
    let field = field.trim();
    !field.is_empty() && content.contains(field)
}

/// A text shown as a block of its own: more than a line.
fn is_long_text(value: &Value) -> bool {
    value.as_str().is_some_and(|s| s.trim().contains('\n') || s.chars().count() > 80)
}

/// A short field on its line, a list as a list.
fn field(name: &str, value: &Value) {
    match value {
        Value::Array(items) => {
            output::line(&format!("  {name}"));
            for item in items {
                output::line(&format!("    - {}", scalar(item)));
            }
        }
        other => output::line(&format!("  {name:<12}{}", scalar(other))),
    }
}

/// A value on one line: text as is, anything else as JSON.
fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
