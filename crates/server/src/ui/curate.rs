//! Curation by write keys: `POST /items/<id>/edit`, `/supersede`, `/delete` and `/confirm`,
//! each a `memory_store` call through the same service path as the tool (governance applies:
//! what the tool refuses, the page shows refused, in its own words), recorded in the audit
//! trail with the signed-in key as actor. Every form passes the session's CSRF check first; a
//! read key's POST is refused (403) before anything is read. A refused edit comes back as the
//! edit form with what was typed; a delete is asked for on a page of its own
//! (`GET /items/<id>/delete`) and answered with a page offering to undo it.

use super::Ui;
use super::edit::{FieldProblem, edit_form};
use super::item::{find_one, free_text, not_found, read, show};
use super::page::{self, Chrome, Problem};
use super::signin::{Viewer, checked_form, field, split, viewer};
use askama::Template;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode};
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
pub(super) const TOOL: &str = "cortex-ui";

/// What a form does, for what its answer shows.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Action {
    Edit,
    Delete,
    Confirm,
}

pub async fn edit(State(ui): State<Ui>, Path(id): Path<String>, request: Request) -> Response {
    curate(ui, id, request, edited, Action::Edit, "Saved.").await
}

pub async fn delete(State(ui): State<Ui>, Path(id): Path<String>, request: Request) -> Response {
    curate(ui, id, request, |hit, _, _| Ok(Ok(ItemOp::delete(hit.id))), Action::Delete, "Deleted.").await
}

/// `POST /items/<id>/confirm`: the item still holds although its files changed since its
/// commit (`memory_store`'s `confirm`): its commit moves forward and the flag clears.
pub async fn confirm(State(ui): State<Ui>, Path(id): Path<String>, request: Request) -> Response {
    let confirmed = |hit: &Hit, _: &[(String, String)], _: &str| {
        Ok(Ok(ItemOp::Confirm { id: hit.id, kind: Some(hit.kind) }))
    };
    curate(ui, id, request, confirmed, Action::Confirm, "Confirmed: it still holds; no longer flagged.").await
}

/// `POST /items/<id>/supersede`: the edit form's values as a new version of the item, which
/// marks this one superseded (the way to change what governance keeps, such as an accepted
/// decision's rationale).
pub async fn supersede(State(ui): State<Ui>, Path(id): Path<String>, request: Request) -> Response {
    curate(ui, id, request, new_version, Action::Edit, "Superseded.").await
}

#[derive(Template)]
#[template(path = "ui/delete.html")]
struct DeletePage {
    chrome: Option<Chrome>,
    id: String,
    kind: String,
    title: String,
    csrf: String,
    /// Deleted already: the page offers the undo.
    done: bool,
}

/// `GET /items/<id>/delete`: asks before a delete.
pub async fn delete_page(State(ui): State<Ui>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    let viewer = match viewer(&ui, &headers).await {
        Ok(v) => v,
        Err(answer) => return answer,
    };
    if let Some(refused) = viewer.lacks(Role::Write, "deleting an item") {
        return viewer.answer(refused);
    }
    let Ok(uuid) = Uuid::parse_str(&id) else { return viewer.answer(not_found(&viewer)) };
    let service = ui.app.service.for_caller(&viewer.principal.caller);
    let hit = match tokio::task::spawn_blocking(move || find_one(&service, uuid)).await {
        Ok(Ok(Some(hit))) => hit,
        Ok(Ok(None)) => return viewer.answer(not_found(&viewer)),
        Ok(Err(e)) => return page::server_error("the delete page", e, Some(viewer.chrome())),
        Err(e) => return page::server_error("the delete page", e, Some(viewer.chrome())),
    };
    viewer.answer(page::html(StatusCode::OK, &deleted_page(&viewer, &hit, false)))
}

fn deleted_page(viewer: &Viewer, hit: &Hit, done: bool) -> DeletePage {
    DeletePage {
        chrome: Some(viewer.chrome()),
        id: hit.id.to_string(),
        kind: hit.kind.as_str().to_string(),
        title: hit.title.clone(),
        csrf: viewer.session.csrf.clone(),
        done,
    }
}

/// What a form changes: the `memory_store` item for the item as read, the form's fields and
/// the actor storing it. A field the item's rules refuse is that item's refusal, answered by
/// the store as the tool's would be.
type Change = fn(&Hit, &[(String, String)], &str) -> Result<Entry, ValidationError>;

type Outcome = Result<Result<Option<(Hit, StoreResponse)>, ServiceError>, tokio::task::JoinError>;

/// A write key's form on an item within its reach (out of reach is not found, before the
/// store is asked), stored through `memory_store` as the key.
async fn curate(
    ui: Ui,
    id: String,
    request: Request,
    change: Change,
    action: Action,
    done: &str,
) -> Response {
    let (viewer, fields) = match writer(&ui, request).await {
        Ok(found) => found,
        Err(answer) => return answer,
    };
    let Ok(uuid) = Uuid::parse_str(&id) else { return not_found(&viewer) };
    let service = ui.app.service.for_caller(&super::restore::acting(&viewer));
    let actor = viewer.principal.key.clone();
    let typed = fields.clone();
    let outcome = tokio::task::spawn_blocking(move || {
        let Some((hit, _)) = read(&service, uuid)? else { return Ok(None) };
        let item = change(&hit, &typed, &actor)?;
        service.memory_store().store(&StoreRequest::new([item])).map(|stored| Some((hit, stored)))
    })
    .await;
    finish(&ui, &viewer, &id, outcome, action, &fields, done).await
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
/// `data.<name>` field replaces that field of `data`, read by its type (the others are kept),
/// `content` the text of a free-text item, `tags` (one per line) the tags; scope and metadata
/// stay as they are.
fn with_form(
    item: ItemBuilder,
    hit: &Hit,
    fields: &[(String, String)],
) -> Result<ItemBuilder, ValidationError> {
    let mut item = item;
    if let Some(Value::Object(data)) = &hit.data {
        item = item.data(super::fields::data_from_form(hit.kind, data, fields));
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
    item = match fields.iter().any(|(n, _)| n == "tags") {
        true => item.tags(&super::fields::lines(field(fields, "tags"))),
        false => item.tags(&hit.tags),
    };
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

/// After a store: to the item (a new version: to it) when it was done, a delete's page with
/// its undo; when refused, the edit form again with what was typed (an edit), or the item page
/// saying why.
async fn finish(
    ui: &Ui,
    viewer: &Viewer,
    id: &str,
    outcome: Outcome,
    action: Action,
    typed: &[(String, String)],
    done: &str,
) -> Response {
    let failed = |problem| show(ui, viewer, id, StatusCode::INTERNAL_SERVER_ERROR, Some(problem), None);
    let refused = |problem: FieldProblem| async move {
        match action {
            Action::Edit => {
                edit_form(ui, viewer, id, Some(typed), StatusCode::UNPROCESSABLE_ENTITY, Some(problem)).await
            }
            Action::Delete | Action::Confirm => {
                let message = match problem.field.as_str() {
                    "" => problem.problem.message,
                    f => format!("{f}: {}", problem.problem.message),
                };
                let problem = Problem::new(message, problem.problem.hint);
                show(ui, viewer, id, StatusCode::UNPROCESSABLE_ENTITY, Some(problem), None).await
            }
        }
    };
    let (hit, response) = match outcome {
        Ok(Ok(Some(found))) => found,
        Ok(Ok(None)) => return not_found(viewer),
        Ok(Err(ServiceError::Invalid(e))) => return refused(FieldProblem::from_validation(&e)).await,
        Ok(Err(e)) => return failed(internal(e.to_string())).await,
        Err(e) => return failed(internal(e.to_string())).await,
    };
    let Some(result) = response.results.first() else {
        return failed(internal("the store answered no result".into())).await;
    };
    match result.status {
        ItemStatus::Deleted => page::html(StatusCode::OK, &deleted_page(viewer, &hit, true)),
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
        ItemStatus::BusinessRuleBlocked => {
            let problem = match &result.error {
                Some(e) => in_page_words(&hit, e),
                None => blocked(result.reason.clone()),
            };
            refused(problem).await
        }
        ItemStatus::ValidationError => {
            let problem = match &result.error {
                Some(e) => FieldProblem::from_body(e),
                None => blocked(result.reason.clone()),
            };
            refused(problem).await
        }
    }
}

fn blocked(reason: Option<String>) -> FieldProblem {
    FieldProblem::of("", &reason.unwrap_or_else(|| "refused".into()), "change the values and save again")
}

/// A governance refusal as the page says it: "this decision" rather than its id, and, when it
/// keeps the item's data from changing in place, what to press rather than the tool's JSON.
fn in_page_words(hit: &Hit, e: &cortex_service::response::ErrorBody) -> FieldProblem {
    let mut problem = FieldProblem::from_body(e);
    let kind = hit.kind.as_str();
    let message = e.message.replace(&format!("{kind} {} ", hit.id), &format!("this {kind} "));
    problem.locked = problem.field == "data" || problem.field.starts_with("data.");
    let hint = match problem.locked {
        true => format!(
            "save what you typed as a new version of this {kind}: it supersedes this one, which stays in the history"
        ),
        false => e.human_hint.clone(),
    };
    problem.problem = Problem::new(message, hint);
    problem
}

fn internal(e: String) -> Problem {
    tracing::error!(error = %e, "web UI curation failed");
    Problem::new(e, "a server-side failure, not your input: retry; if it persists, run `cortex doctor`")
}
