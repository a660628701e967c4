//! One access-log line per request on stderr, written when its answer has been sent:
//! request id (also sent back as `X-Request-Id`), method, path, key, tool, mode, outcome,
//! items, status and duration. A tool call over 200 ms is logged as a warning.

use super::App;
use super::gate::hold_until_sent;
use super::principal::AccessNote;
use axum::extract::{Request, State};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use std::time::{Duration, Instant};

/// A tool call slower than this is logged as a warning.
pub const SLOW_CALL: Duration = Duration::from_millis(200);

pub async fn log(State(app): State<App>, mut request: Request, next: Next) -> Response {
    let id = uuid::Uuid::now_v7().to_string();
    let note = AccessNote::default();
    request.extensions_mut().insert(note.clone());
    let mut line = Line {
        method: request.method().to_string(),
        path: path_label(request.uri().path()),
        started: Instant::now(),
        status: 0,
        id,
        note,
    };
    let mut response = next.run(request).await;
    if let Ok(value) = HeaderValue::from_str(&line.id) {
        response.headers_mut().insert("x-request-id", value);
    }
    line.status = response.status().as_u16();
    app.metrics.http_request(line.path, line.status);
    hold_until_sent(response, line)
}

/// The routes this server answers (an item's pages under their pattern, `{id}`), and `other`
/// for the rest: log lines and metric labels stay bounded whatever clients ask for.
fn path_label(path: &str) -> &'static str {
    const FIXED: [&str; 17] = [
        "/mcp",
        "/health",
        "/ready",
        "/metrics",
        "/",
        "/login",
        "/logout",
        "/activity",
        "/admin",
        "/admin/keys",
        "/admin/keys/revoke",
        "/admin/keys/restore",
        "/trash",
        "/new",
        "/ui/style.css",
        "/ui/oauth/start",
        "/ui/oauth/callback",
    ];
    if let Some(fixed) = FIXED.iter().find(|p| **p == path) {
        return fixed;
    }
    let Some(rest) = path.strip_prefix("/items/") else { return "other" };
    let (id, action) = rest.split_once('/').unwrap_or((rest, ""));
    if id.is_empty() || id.contains('/') {
        return "other";
    }
    match action {
        "" => "/items/{id}",
        "graph" => "/items/{id}/graph",
        "edit" => "/items/{id}/edit",
        "supersede" => "/items/{id}/supersede",
        "delete" => "/items/{id}/delete",
        "restore" => "/items/{id}/restore",
        "confirm" => "/items/{id}/confirm",
        _ => "other",
    }
}

struct Line {
    id: String,
    method: String,
    path: &'static str,
    status: u16,
    started: Instant,
    note: AccessNote,
}

impl Drop for Line {
    fn drop(&mut self) {
        let note = self.note.take();
        let ms = self.started.elapsed().as_millis() as u64;
        let key = note.key.as_deref().unwrap_or("-");
        let tool = note.tool.as_deref().unwrap_or("-");
        let outcome = note.outcome.map_or("-", |o| o.as_str());
        let mode = note.mode.unwrap_or("-");
        let items = note.items;
        if note.call_ms.is_some_and(|c| c > SLOW_CALL.as_millis()) {
            tracing::warn!(target: "cortex::access", request_id = %self.id, method = %self.method, path = self.path, key, tool, outcome, status = self.status, duration_ms = ms, mode, items, call_ms = note.call_ms.map(|c| c as u64), "slow call");
        } else {
            tracing::info!(target: "cortex::access", request_id = %self.id, method = %self.method, path = self.path, key, tool, outcome, status = self.status, duration_ms = ms, mode, items, "request");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::path_label;

    #[test]
    fn every_ui_route_has_a_label_of_its_own_and_the_rest_are_other() {
        for (path, label) in [
            ("/", "/"),
            ("/activity", "/activity"),
            ("/items/0190a1b2-0000-7000-8000-000000000000", "/items/{id}"),
            ("/items/x/graph", "/items/{id}/graph"),
            ("/items/x/edit", "/items/{id}/edit"),
            ("/items/x/restore", "/items/{id}/restore"),
            ("/items/x/confirm", "/items/{id}/confirm"),
            ("/new", "/new"),
            ("/items/x/y/z", "other"),
            ("/items/", "other"),
            ("/items", "other"),
            ("/wp-admin", "other"),
            ("/mcp", "/mcp"),
        ] {
            assert_eq!(path_label(path), label, "{path}");
        }
    }
}
