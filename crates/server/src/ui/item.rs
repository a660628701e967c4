//! The item page, `GET /items/<id>`: the item as `memory_find` returns it by id (content,
//! data, tags, relations both ways, observations), read as the viewer — an id outside the
//! viewer's reach is the same 404 as an unknown one — and its history from the audit trail,
//! as the MCP resource `cortex://items/{id}/history` gives it. Write keys also get the
//! curation forms.

use super::Ui;
use super::page::{self, Chrome, Problem};
use super::search::scope_label;
use super::signin::{Viewer, viewer};
use askama::Template;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use cortex_domain::FindRequest;
use cortex_domain::api_key::Role;
use cortex_domain::limits::MAX_HIT_CONTENT_CHARS;
use cortex_service::MemoryService;
use cortex_service::response::{Direction, Hit};
use cortex_store::AuditRecord;
use serde_json::Value;
use uuid::Uuid;

pub struct Field {
    pub name: String,
    pub value: String,
    /// Shown as a text area when editing.
    pub long: bool,
}

pub struct RelationLine {
    pub outgoing: bool,
    pub relation_type: String,
    pub other_id: String,
    pub other_kind: String,
    pub other_title: String,
}

pub struct ObservationLine {
    pub text: String,
    pub created_at: String,
}

pub struct ItemView {
    pub id: String,
    pub kind: String,
    pub title: String,
    pub status: String,
    pub scope: String,
    pub created_at: String,
    pub updated_at: String,
    pub expires_at: String,
    pub superseded_by: String,
    pub tags: Vec<String>,
    pub data: Vec<Field>,
    pub relations: Vec<RelationLine>,
    pub observations: Vec<ObservationLine>,
}

pub struct HistoryLine {
    pub at: String,
    pub operation: String,
    pub who: String,
    pub summary: String,
}

/// The curation forms' contents (write keys only).
pub struct Edit {
    pub csrf: String,
    /// The data fields that are text, editable one by one; the others are kept as they are.
    pub fields: Vec<Field>,
    pub has_content: bool,
    pub content: String,
}

#[derive(Template)]
#[template(path = "ui/item.html")]
pub struct ItemPage {
    pub max_chars: usize,
    pub chrome: Option<Chrome>,
    pub item: ItemView,
    pub content_html: String,
    /// The content shown was cut at the find's limit.
    pub content_cut: bool,
    pub history: Vec<HistoryLine>,
    pub edit: Option<Edit>,
    pub problem: Option<Problem>,
    pub notice: Option<String>,
    pub chunks: Option<cortex_service::memory_find::ItemChunks>,
}

/// An item and its history as `service` (the viewer's) sees them; `None` when out of reach.
pub fn read(
    service: &MemoryService,
    id: Uuid,
) -> Result<Option<(Hit, Vec<AuditRecord>)>, cortex_service::ServiceError> {
    let request = FindRequest::ids([id]).with_max_content_chars(MAX_HIT_CONTENT_CHARS);
    let Some(hit) = service.memory_find().find(&request)?.hits.into_iter().find(|h| h.id == id) else {
        return Ok(None);
    };
    let history = service.audit().records(Some(id), None, cortex_service::audit::MAX_AUDIT_RECORDS)?;
    Ok(Some((hit, history)))
}

pub async fn page(State(ui): State<Ui>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    let viewer = match viewer(&ui, &headers).await {
        Ok(v) => v,
        Err(answer) => return answer,
    };
    viewer.answer(show(&ui, &viewer, &id, StatusCode::OK, None, None).await)
}

/// The item page for `viewer`, with a problem or notice from a curation form.
pub async fn show(
    ui: &Ui,
    viewer: &Viewer,
    id: &str,
    status: StatusCode,
    problem: Option<Problem>,
    notice: Option<String>,
) -> Response {
    let Ok(id) = Uuid::parse_str(id) else { return not_found(viewer) };
    let service = ui.app.service.for_caller(&viewer.principal.caller);
    let read = tokio::task::spawn_blocking(move || {
        let found = read(&service, id)?;
        Ok::<_, cortex_service::ServiceError>(match found {
            Some(found) => Some((found, service.memory_find().item_chunks(id)?)),
            None => None,
        })
    })
    .await;
    let ((hit, history), chunks) = match read {
        Ok(Ok(Some(found))) => found,
        Ok(Ok(None)) => return not_found(viewer),
        Ok(Err(e)) => return failed(viewer, e.to_string()),
        Err(e) => return failed(viewer, e.to_string()),
    };
    let writer = viewer.principal.role.covers(Role::Write);
    let page = ItemPage {
        max_chars: MAX_HIT_CONTENT_CHARS,
        chrome: Some(viewer.chrome()),
        content_html: hit.content.as_deref().map(super::markdown::to_html).unwrap_or_default(),
        content_cut: hit.content_truncated,
        edit: writer.then(|| Edit {
            csrf: viewer.session.csrf.clone(),
            fields: data_fields(hit.data.as_ref())
                .into_iter()
                .filter(|f| is_text(hit.data.as_ref(), &f.name))
                .collect(),
            // Content cut to the find's limit is never written back.
            has_content: free_text(&hit) && !hit.content_truncated,
            content: hit.content.clone().unwrap_or_default(),
        }),
        item: view(&hit),
        history: history.iter().map(history_line).collect(),
        problem,
        notice,
        chunks,
    };
    page::html(status, &page)
}

fn view(hit: &Hit) -> ItemView {
    ItemView {
        id: hit.id.to_string(),
        kind: hit.kind.as_str().to_string(),
        title: hit.title.clone(),
        status: hit.status.clone().unwrap_or_default(),
        scope: hit.scope.as_ref().map(scope_label).unwrap_or_default(),
        created_at: hit.created_at.clone().unwrap_or_default(),
        updated_at: hit.updated_at.clone(),
        expires_at: hit.expires_at.clone().unwrap_or_default(),
        superseded_by: hit.superseded_by.clone().unwrap_or_default(),
        tags: hit.tags.clone(),
        data: data_fields(hit.data.as_ref()),
        relations: hit
            .relations
            .iter()
            .map(|r| RelationLine {
                outgoing: matches!(r.direction, Direction::Outgoing),
                relation_type: r.relation_type.clone(),
                other_id: r.other_id.clone(),
                other_kind: r.other_kind.clone(),
                other_title: r.other_title.clone(),
            })
            .collect(),
        observations: hit
            .observations
            .iter()
            .map(|o| ObservationLine { text: o.text.clone(), created_at: o.created_at.clone() })
            .collect(),
    }
}

/// An item's data as name/text pairs; values that are not text are shown as JSON.
fn data_fields(data: Option<&Value>) -> Vec<Field> {
    let Some(Value::Object(map)) = data else { return Vec::new() };
    map.iter()
        .map(|(name, value)| {
            let value = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            Field { name: name.clone(), long: value.len() > 80 || value.contains('\n'), value }
        })
        .collect()
}

/// An item stored as free text (no `data`): its content is what an edit changes.
pub fn free_text(hit: &Hit) -> bool {
    hit.data.as_ref().is_none_or(|d| d.as_object().is_none_or(|m| m.is_empty()))
}

fn is_text(data: Option<&Value>, name: &str) -> bool {
    data.and_then(|d| d.get(name)).is_some_and(Value::is_string)
}

/// Who a record names: the principal the server established (and what it came through),
/// then what the client said of itself, labelled as its claim.
fn history_line(r: &AuditRecord) -> HistoryLine {
    let mut who: Vec<String> = Vec::new();
    if let Some(principal) = &r.principal {
        who.push(match &r.via {
            Some(via) => format!("{principal} via {via}"),
            None => principal.clone(),
        });
    }
    let c = &r.claimed;
    let claimed: Vec<String> = [("actor", &c.actor), ("tool", &c.tool), ("session", &c.session)]
        .into_iter()
        .filter_map(|(label, v)| v.as_ref().map(|v| format!("{label} {v}")))
        .collect();
    if !claimed.is_empty() {
        who.push(format!("claims {}", claimed.join(", ")));
    }
    HistoryLine {
        at: cortex_domain::time::format_instant(r.at),
        operation: r.operation.clone(),
        who: if who.is_empty() { "-".to_string() } else { who.join("; ") },
        summary: r.summary.clone(),
    }
}

pub fn not_found(viewer: &Viewer) -> Response {
    page::message(
        StatusCode::NOT_FOUND,
        "Not found",
        Problem::new(
            "no item with this id is within your reach",
            "check the id, or search for the item; items of other tenants and deleted items are not shown",
        ),
        Some(viewer.chrome()),
    )
}

fn failed(viewer: &Viewer, e: String) -> Response {
    page::server_error("the item page", e, Some(viewer.chrome()))
}
