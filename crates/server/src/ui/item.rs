//! The item page, `GET /items/<id>`: the item as `memory_find` returns it by id (content,
//! data, tags, relations both ways, observations), read as the viewer — an id outside the
//! viewer's reach is the same 404 as an unknown one — and its history from the audit trail,
//! as the MCP resource `cortex://items/{id}/history` gives it, where it came from and its
//! supersede chain. Structured items show their fields by type (the searchable text derived
//! from them stays collapsed); free text shows its content once. Write keys also get the
//! Edit, Delete and (when files changed since) "Still true" buttons.

use super::Ui;
use super::fields::{self, FieldView, Shown};
use super::history::{self, Chain, HistoryLine, Origin};
use super::page::{self, Chrome, Problem, When};
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
use cortex_service::memory_find::ItemChunks;
use cortex_service::response::{Direction, Hit};
use cortex_store::AuditRecord;
use serde_json::Value;
use uuid::Uuid;

pub struct RelationLine {
    pub outgoing: bool,
    pub relation_type: String,
    pub other_id: String,
    pub other_kind: String,
    pub other_title: String,
}

pub struct ObservationLine {
    pub text: String,
    pub created_at: Option<When>,
}

/// "May be out of date": files the item concerns changed after its commit.
pub struct StaleLine {
    pub why: String,
    pub files: Vec<String>,
    pub commits: Option<i64>,
    pub newest: Option<When>,
    /// The flag a confirm clears (files changed), rather than a runbook's age.
    pub confirmable: bool,
}

pub struct ItemView {
    pub id: String,
    pub kind: String,
    pub title: String,
    pub status: String,
    pub scope: String,
    pub created_at: Option<When>,
    pub updated_at: Option<When>,
    pub expires_at: Option<When>,
    pub tags: Vec<String>,
    pub fields: Vec<FieldView>,
    pub relations: Vec<RelationLine>,
    pub observations: Vec<ObservationLine>,
    pub stale: Option<StaleLine>,
}

#[derive(Template)]
#[template(path = "ui/item.html")]
pub struct ItemPage {
    pub max_chars: usize,
    pub chrome: Option<Chrome>,
    pub item: ItemView,
    /// A free-text item's content, rendered once; empty for a structured item (its fields
    /// are shown instead).
    pub content_html: String,
    /// A structured item's derived search text (collapsed on the page).
    pub search_text: String,
    /// The content shown was cut at the find's limit.
    pub content_cut: bool,
    pub origin: Origin,
    pub chain: Chain,
    pub history: Vec<HistoryLine>,
    /// The CSRF token of a write key's forms (Edit, Delete, Still true); `None` for read keys.
    pub csrf: Option<String>,
    pub problem: Option<Problem>,
    pub notice: Option<String>,
    pub chunks: Option<cortex_service::memory_find::ItemChunks>,
}

/// An item and its history as `service` (the viewer's) sees them; `None` when out of reach.
pub fn read(
    service: &MemoryService,
    id: Uuid,
) -> Result<Option<(Hit, Vec<AuditRecord>)>, cortex_service::ServiceError> {
    let Some(hit) = find_one(service, id)? else { return Ok(None) };
    let history = service.audit().records(Some(id), None, cortex_service::audit::MAX_AUDIT_RECORDS)?;
    Ok(Some((hit, history)))
}

/// The live item `id` within the caller's reach.
pub fn find_one(service: &MemoryService, id: Uuid) -> Result<Option<Hit>, cortex_service::ServiceError> {
    let request = FindRequest::ids([id]).with_max_content_chars(MAX_HIT_CONTENT_CHARS);
    Ok(service.memory_find().find(&request)?.hits.into_iter().find(|h| h.id == id))
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
        let Some((hit, history)) = read(&service, id)? else { return Ok(None) };
        let chunks = service.memory_find().item_chunks(id)?;
        let chain = history::chain(&service, &hit, &history)?;
        Ok::<_, cortex_service::ServiceError>(Some((hit, history, chunks, chain)))
    })
    .await;
    let (hit, history, chunks, chain) = match read {
        Ok(Ok(Some(found))) => found,
        Ok(Ok(None)) => return not_found(viewer),
        Ok(Err(e)) => return failed(viewer, e.to_string()),
        Err(e) => return failed(viewer, e.to_string()),
    };
    let writer = viewer.principal.role.covers(Role::Write);
    let structured = !free_text(&hit);
    let content = hit.content.as_deref().unwrap_or_default();
    let page = ItemPage {
        max_chars: MAX_HIT_CONTENT_CHARS,
        chrome: Some(viewer.chrome()),
        content_html: if structured { String::new() } else { super::markdown::to_html(content) },
        search_text: if structured { content.to_string() } else { String::new() },
        content_cut: hit.content_truncated && !structured,
        csrf: writer.then(|| viewer.session.csrf.clone()),
        origin: history::origin(&hit, &history),
        chain,
        item: view(&hit),
        history: history.iter().map(history::line).collect(),
        problem,
        notice,
        chunks: chunks.map(whole_words),
    };
    page::html(status, &page)
}

fn view(hit: &Hit) -> ItemView {
    let data = hit.data.as_ref().and_then(Value::as_object);
    ItemView {
        id: hit.id.to_string(),
        kind: hit.kind.as_str().to_string(),
        title: hit.title.clone(),
        status: hit.status.clone().unwrap_or_default(),
        scope: hit.scope.as_ref().map(scope_label).unwrap_or_default(),
        created_at: hit.created_at.as_deref().and_then(When::parse),
        updated_at: When::parse(&hit.updated_at),
        expires_at: hit.expires_at.as_deref().and_then(When::parse),
        tags: hit.tags.clone(),
        fields: data.map(|d| fields::shown(hit.kind, d)).unwrap_or_default(),
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
            .map(|o| ObservationLine { text: o.text.clone(), created_at: When::parse(&o.created_at) })
            .collect(),
        stale: hit.stale.as_ref().map(|s| StaleLine {
            why: s.why.clone(),
            files: s.files.clone(),
            commits: s.commits,
            newest: s.newest.as_deref().and_then(When::parse),
            confirmable: !s.files.is_empty(),
        }),
    }
}

/// Chunk previews end at a word: a preview cut inside a word is cut back to the space before.
fn whole_words(mut chunks: ItemChunks) -> ItemChunks {
    for chunk in chunks.chunks.iter_mut().filter(|c| c.cut) {
        if let Some(space) = chunk.text.trim_end().rfind(char::is_whitespace) {
            chunk.text.truncate(space);
        }
        let kept = chunk.text.trim_end().len();
        chunk.text.truncate(kept);
    }
    chunks
}

/// An item stored as free text (no `data`): its content is what an edit changes.
pub fn free_text(hit: &Hit) -> bool {
    hit.data.as_ref().is_none_or(|d| d.as_object().is_none_or(|m| m.is_empty()))
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

#[cfg(test)]
mod tests {
    use super::whole_words;
    use cortex_service::memory_find::{ChunkView, ItemChunks};

    #[test]
    fn a_cut_chunk_preview_ends_at_a_word() {
        let chunk = |text: &str, cut| ChunkView {
            start: 0,
            end: 99,
            heading_path: Vec::new(),
            text: text.into(),
            cut,
        };
        let chunks = ItemChunks {
            chunks: vec![chunk("drains its queue before the ne", true), chunk("whole text", false)],
            stored: true,
        };
        let shown: Vec<String> = whole_words(chunks).chunks.into_iter().map(|c| c.text).collect();
        assert_eq!(shown, ["drains its queue before the", "whole text"]);
    }
}
