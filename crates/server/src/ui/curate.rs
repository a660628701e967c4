//! Curation by write keys: `POST /items/<id>/edit`, `/supersede` and `/delete`, each a
//! `memory_store` call through the same service path as the tool (governance applies: what
//! the tool refuses, the page shows refused with the same hint), recorded in the audit trail
//! with the signed-in key as actor. Every form passes the session's CSRF check first; a read
//! key's POST is refused (403) before anything is read.

use super::Ui;
use super::item::{free_text, not_found, read, show};
use super::page::{self, Problem};
use super::signin::{Viewer, checked_form, field, split};
use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use cortex_domain::api_key::Role;
use cortex_domain::item::{Entry, ItemBuilder, ItemOp, StoreRequest};
use cortex_domain::limits::MAX_HIT_CONTENT_CHARS;
use cortex_domain::time::parse_instant;
use cortex_domain::{ErrorCode, ValidationError};
use cortex_service::ServiceError;
use cortex_service::response::{Hit, ItemStatus, StoreResponse};
use serde_json::Value;
use uuid::Uuid;

/// Names the UI as the tool in the audit trail.
const TOOL: &str = "cortex-ui";

pub async fn edit(State(ui): State<Ui>, Path(id): Path<String>, request: Request) -> Response {
    curate(ui, id, request, edited, "Saved.").await
}

pub async fn delete(State(ui): State<Ui>, Path(id): Path<String>, request: Request) -> Response {
    curate(ui, id, request, |hit, _, _| Ok(Ok(ItemOp::delete(hit.id))), "Deleted.").await
}

/// `POST /items/<id>/supersede`: the edit form's values as a new version of the item, which
/// marks this one superseded (the way to change what governance keeps, such as an accepted
/// decision's rationale).
pub async fn supersede(State(ui): State<Ui>, Path(id): Path<String>, request: Request) -> Response {
    curate(ui, id, request, new_version, "Superseded.").await
}

/// What a form changes: the `memory_store` item for the item as read, the form's fields and
/// the actor storing it. A field the item's rules refuse is that item's refusal, answered by
/// the store as the tool's would be.
type Change = fn(&Hit, &[(String, String)], &str) -> Result<Entry, ValidationError>;

/// A write key's form on an item within its reach (out of reach is not found, before the
/// store is asked), stored through `memory_store` as the key.
async fn curate(ui: Ui, id: String, request: Request, change: Change, done: &str) -> Response {
    let (viewer, fields) = match writer(&ui, request).await {
        Ok(found) => found,
        Err(answer) => return answer,
    };
    let Ok(uuid) = Uuid::parse_str(&id) else { return not_found(&viewer) };
    let service = ui.app.service.for_caller(&super::restore::acting(&viewer));
    let actor = viewer.principal.key.clone();
    let outcome = tokio::task::spawn_blocking(move || {
        let Some((hit, _)) = read(&service, uuid)? else { return Ok(None) };
        let item = change(&hit, &fields, &actor)?;
        service.memory_store().store(&StoreRequest::new([item])).map(Some)
    })
    .await;
    finish(&ui, &viewer, &id, outcome, done).await
}

/// The item with the form's text fields in place of its own, as a new version of it.
fn edited(hit: &Hit, fields: &[(String, String)], actor: &str) -> Result<Entry, ValidationError> {
    let item = with_form(ItemOp::update(hit.id, hit.kind), hit, fields)?;
    let item = match &hit.expires_at {
        Some(at) => item.expires_at(parse_instant(at).map_err(|hint| {
            ValidationError::new(
                ErrorCode::InvalidValue,
                "expires_at",
                format!("`{at}` is not a time"),
                hint.to_string(),
            )
        })?),
        None => item,
    };
    Ok(item.source(actor, TOOL).build())
}

/// The edited item as a new item superseding the old one, with a lifetime of its own.
fn new_version(hit: &Hit, fields: &[(String, String)], actor: &str) -> Result<Entry, ValidationError> {
    let item = with_form(ItemOp::insert(hit.kind), hit, fields)?.supersedes(hit.id);
    // A new version reads much like the one it replaces: asked for by a person, it is stored
    // even when the near-duplicate check would skip it.
    Ok(item.dedupe(false).source(actor, TOOL).build())
}

/// `item` with the read item's fields and the form's text fields in place of its own: each
/// `data.<name>` field replaces that text field of `data` (the others are kept), `content`
/// the text of a free-text item; tags, scope and metadata stay as they are.
fn with_form(
    item: ItemBuilder,
    hit: &Hit,
    fields: &[(String, String)],
) -> Result<ItemBuilder, ValidationError> {
    let mut item = item;
    if let Some(Value::Object(mut data)) = hit.data.clone() {
        for (name, value) in data.iter_mut() {
            if value.is_string()
                && let Some((_, new)) =
                    fields.iter().find(|(n, _)| n.strip_prefix("data.") == Some(name.as_str()))
            {
                *value = Value::String(new.replace("\r\n", "\n"));
            }
        }
        item = item.data(data);
    }
    // A structured item's content is derived from its data; free text is edited as such.
    if free_text(hit) {
        if hit.content_truncated {
            return Err(ValidationError::new(
                ErrorCode::TooLarge,
                "content",
                format!(
                    "this item's text is longer than the {MAX_HIT_CONTENT_CHARS} characters the page reads"
                ),
                "change it with memory_store (the whole text with the item's id); the page never writes back a cut text",
            ));
        }
        let content = match fields.iter().any(|(n, _)| n == "content") {
            true => field(fields, "content").replace("\r\n", "\n"),
            false => hit.content.clone().unwrap_or_default(),
        };
        item = item.content(&content);
    }
    if let Some(scope) = &hit.scope {
        item = item.scope(scope.clone());
    }
    item = item.tags(&hit.tags);
    if let Some(metadata) = &hit.metadata {
        item = item.metadata(metadata.clone());
    }
    Ok(item)
}

/// A live session's form with the right CSRF token, from a key that may write.
pub(super) async fn writer(ui: &Ui, request: Request) -> Result<(Viewer, Vec<(String, String)>), Response> {
    let (headers, body) = split(request);
    let (viewer, fields) = checked_form(ui, &headers, body).await?;
    if let Some(refused) = viewer.lacks(Role::Write, "changing an item") {
        return Err(refused);
    }
    Ok((viewer, fields))
}

/// After a store: to the item (or, once deleted, to search) when it was done; the item page
/// saying why when it was refused.
async fn finish(
    ui: &Ui,
    viewer: &Viewer,
    id: &str,
    outcome: Result<Result<Option<StoreResponse>, ServiceError>, tokio::task::JoinError>,
    done: &str,
) -> Response {
    let failed = |problem| show(ui, viewer, id, StatusCode::INTERNAL_SERVER_ERROR, Some(problem), None);
    let response = match outcome {
        Ok(Ok(Some(response))) => response,
        Ok(Ok(None)) => return not_found(viewer),
        Ok(Err(ServiceError::Invalid(e))) => {
            return show(ui, viewer, id, StatusCode::UNPROCESSABLE_ENTITY, Some(Problem::from(&e)), None)
                .await;
        }
        Ok(Err(e)) => return failed(internal(e.to_string())).await,
        Err(e) => return failed(internal(e.to_string())).await,
    };
    let Some(result) = response.results.first() else {
        return failed(internal("the store answered no result".into())).await;
    };
    match result.status {
        ItemStatus::Deleted => page::see_other("/"),
        // A new version: its own page, which links back through the history of the old one.
        ItemStatus::Inserted if result.id.as_deref().is_some_and(|new| new != id) => {
            page::see_other(&format!("/items/{}", result.id.as_deref().unwrap_or(id)))
        }
        ItemStatus::Updated | ItemStatus::Inserted => {
            show(ui, viewer, id, StatusCode::OK, None, Some(done.to_string())).await
        }
        ItemStatus::SkippedDedupe => {
            let reason =
                result.reason.clone().unwrap_or_else(|| "the same knowledge is stored already".into());
            show(ui, viewer, id, StatusCode::OK, None, Some(format!("Nothing was stored: {reason}."))).await
        }
        ItemStatus::BusinessRuleBlocked | ItemStatus::ValidationError => {
            let problem = match &result.error {
                Some(e) => Problem::new(
                    if e.field.is_empty() {
                        e.message.clone()
                    } else {
                        format!("{}: {}", e.field, e.message)
                    },
                    e.human_hint.clone(),
                ),
                None => Problem::new(
                    result.reason.clone().unwrap_or_else(|| "refused".into()),
                    "change the values and save again",
                ),
            };
            show(ui, viewer, id, StatusCode::UNPROCESSABLE_ENTITY, Some(problem), None).await
        }
    }
}

fn internal(e: String) -> Problem {
    tracing::error!(error = %e, "web UI curation failed");
    Problem::new(e, "a server-side failure, not your input: retry; if it persists, run `cortex doctor`")
}
