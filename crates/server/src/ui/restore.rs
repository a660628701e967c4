//! Deleted items and their restore: `GET /trash` lists the viewer's items deleted in the last
//! [`DAYS`] days (from the audit trail, within the key's reach), with a Restore form for write
//! keys; `POST /items/<id>/restore` is `memory_store`'s `restore` operation as the signed-in
//! key, behind the same CSRF and role checks as every other curation form. An id out of reach
//! is the same 404 as an unknown one.

use super::Ui;
use super::curate::writer;
use super::item::not_found;
use super::page::{self, Chrome, Problem};
use super::search::scope_label;
use super::signin::{Viewer, viewer};
use askama::Template;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use cortex_domain::ErrorCode;
use cortex_domain::api_key::Role;
use cortex_domain::item::{ItemOp, StoreRequest};
use cortex_domain::time::{MILLIS_PER_DAY, format_instant};
use cortex_service::Caller;
use cortex_service::response::ItemStatus;
use uuid::Uuid;

/// Days of deletions the page lists.
pub const DAYS: i64 = 90;
/// Items listed at most.
const SHOWN: usize = 200;

/// The viewer as the caller of a change: the audit trail names the signed-in key (or the
/// token's subject) as who made it, through the web UI, whatever the item claims.
pub fn acting(viewer: &Viewer) -> Caller {
    Caller { via: Some("web UI"), ..viewer.principal.caller.clone() }
}

pub struct Line {
    pub id: String,
    pub kind: String,
    pub title: String,
    pub scope: String,
    pub deleted_at: String,
    pub deleted_by: String,
}

#[derive(Template)]
#[template(path = "ui/deleted.html")]
struct DeletedPage {
    chrome: Option<Chrome>,
    days: i64,
    lines: Vec<Line>,
    cut: bool,
    /// The CSRF token for the Restore forms; `None` for a key that may not write.
    csrf: Option<String>,
    problem: Option<Problem>,
}

pub async fn page(State(ui): State<Ui>, headers: HeaderMap) -> Response {
    let viewer = match viewer(&ui, &headers).await {
        Ok(v) => v,
        Err(answer) => return answer,
    };
    viewer.answer(list(&ui, &viewer, StatusCode::OK, None).await)
}

async fn list(ui: &Ui, viewer: &Viewer, status: StatusCode, problem: Option<Problem>) -> Response {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let since = now_ms - DAYS * MILLIS_PER_DAY;
    let service = ui.app.service.for_caller(&viewer.principal.caller);
    let read = tokio::task::spawn_blocking(move || service.lifecycle().recently_deleted(since, SHOWN)).await;
    let deleted = match read {
        Ok(Ok(deleted)) => deleted,
        Ok(Err(e)) => return failed(viewer, e.to_string()),
        Err(e) => return failed(viewer, e.to_string()),
    };
    let lines = deleted
        .items
        .into_iter()
        .map(|d| Line {
            id: d.id.to_string(),
            kind: d.kind.as_str().to_string(),
            title: d.title,
            scope: scope_label(&d.scope),
            deleted_at: format_instant(d.deleted_at),
            deleted_by: d.deleted_by.unwrap_or_default(),
        })
        .collect();
    let csrf = viewer.principal.role.covers(Role::Write).then(|| viewer.session.csrf.clone());
    let page =
        DeletedPage { chrome: Some(viewer.chrome()), days: DAYS, lines, cut: deleted.cut, csrf, problem };
    page::html(status, &page)
}

/// `POST /items/<id>/restore`: the item live again, then its page.
pub async fn restore(State(ui): State<Ui>, Path(id): Path<String>, request: Request) -> Response {
    let (viewer, _) = match writer(&ui, request).await {
        Ok(found) => found,
        Err(answer) => return answer,
    };
    let Ok(uuid) = Uuid::parse_str(&id) else { return not_found(&viewer) };
    let service = ui.app.service.for_caller(&acting(&viewer));
    let request = StoreRequest::of([ItemOp::restore(uuid)]);
    let stored = tokio::task::spawn_blocking(move || service.memory_store().store(&request)).await;
    let result = match stored {
        Ok(Ok(response)) => response.results.into_iter().next(),
        Ok(Err(e)) => return failed(&viewer, e.to_string()),
        Err(e) => return failed(&viewer, e.to_string()),
    };
    let Some(result) = result else { return failed(&viewer, "the store answered no result".into()) };
    match result.status {
        ItemStatus::Updated => page::see_other(&format!("/items/{uuid}")),
        ItemStatus::SkippedDedupe => {
            let holder = result.existing_id.unwrap_or_default();
            let problem = Problem::new(
                format!(
                    "not restored: {} (item {holder})",
                    result.reason.unwrap_or_else(|| "another live item holds its place".into())
                ),
                format!("open /items/{holder}, delete it first if the deleted one should take its place"),
            );
            list(&ui, &viewer, StatusCode::CONFLICT, Some(problem)).await
        }
        _ => match result.error {
            Some(e) if e.code == ErrorCode::NotFound.as_str() => not_found(&viewer),
            Some(e) => {
                list(
                    &ui,
                    &viewer,
                    StatusCode::UNPROCESSABLE_ENTITY,
                    Some(Problem::new(e.message, e.human_hint)),
                )
                .await
            }
            None => failed(&viewer, format!("unexpected store status {:?}", result.status)),
        },
    }
}

fn failed(viewer: &Viewer, e: String) -> Response {
    page::server_error("the deleted items", e, Some(viewer.chrome()))
}
