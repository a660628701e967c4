//! The admin page, `GET /admin`, for admin keys (and the local user): the server's status in
//! words (`status`: uptime, readiness as `/ready` answers it, the model, items per project and
//! kind, the database's size, requests per route, recent refusals), the metrics `/metrics`
//! exposes, the API keys within the admin's bound (never a
//! secret) with the forms that make and revoke them (`keys`), and a quick verification of the
//! audit trail. The trail's hash chain spans every tenant: a key's holder is told only whether
//! it holds, the local user also what it checked and any problem found.

use super::Ui;
use super::page::{self, Chrome};
use super::signin::{Viewer, viewer};
use super::status::{self, Status};
use crate::ops;
use askama::Template;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use cortex_domain::api_key::Role;
use cortex_service::audit::{AuditVerification, VerifyOptions};
use cortex_service::keys::KeyInfo;

pub struct Readiness {
    pub ready: bool,
    pub schema_version: String,
    pub problem: String,
    pub embedder: String,
}

/// A Prometheus sample line: its series and value.
pub struct Sample {
    pub series: String,
    pub value: String,
}

/// The samples of the `/metrics` text, comment lines left out.
pub fn samples(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.rsplit_once(' '))
        .map(|(series, value)| Sample { series: series.to_string(), value: value.to_string() })
        .collect()
}

#[derive(Template)]
#[template(path = "ui/admin.html")]
struct AdminPage {
    chrome: Option<Chrome>,
    readiness: Readiness,
    metrics: Vec<Sample>,
    keys: Vec<KeyInfo>,
    audit: AuditVerification,
    status: Status,
    /// The whole verification (the local user); otherwise only whether it holds.
    audit_detail: bool,
    csrf: String,
    /// The org a bound admin's new keys belong to; empty for the local user.
    org: String,
}

pub async fn page(State(ui): State<Ui>, headers: HeaderMap) -> Response {
    let viewer = match viewer(&ui, &headers).await {
        Ok(v) => v,
        Err(answer) => return answer,
    };
    if let Some(refused) = viewer.lacks(Role::Admin, "the admin page") {
        return viewer.answer(refused);
    }
    let readiness = readiness(&ui).await;
    let app = &ui.app;
    let metrics = samples(
        &app.metrics
            .render(&app.service.administration().pool_state(), app.service.indexes().vectors_in_process()),
    );
    let bound = viewer.principal.caller.bound.clone();
    let service = app.service.clone();
    let caller = viewer.principal.caller.clone();
    let read = tokio::task::spawn_blocking(move || {
        let keys = service.keys().list_within(bound.as_ref())?;
        let audit = service.audit().verify(&VerifyOptions::default())?;
        let status = status::read(&service, &caller, page::now_ms())?;
        Ok::<_, cortex_service::ServiceError>((keys, audit, status))
    })
    .await;
    let (keys, audit, mut status) = match read {
        Ok(Ok(read)) => read,
        Ok(Err(e)) => return failed(&viewer, e.to_string()),
        Err(e) => return failed(&viewer, e.to_string()),
    };
    status.requests = status::requests(&metrics);
    status.embedder = readiness.embedder.clone();
    let bound = viewer.principal.caller.bound.as_ref();
    let page = AdminPage {
        chrome: Some(viewer.chrome()),
        readiness,
        metrics,
        keys,
        audit,
        status,
        audit_detail: bound.is_none(),
        csrf: viewer.session.csrf.clone(),
        org: bound.map(|b| b.org.clone()).unwrap_or_default(),
    };
    viewer.answer(page::html(StatusCode::OK, &page))
}

/// `/ready`'s answer, read from the same handler.
async fn readiness(ui: &Ui) -> Readiness {
    let answer = ops::ready(State(ui.app.clone())).await;
    let body = axum::body::to_bytes(answer.into_body(), 64 * 1024).await.unwrap_or_default();
    let value: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let text = |v: &serde_json::Value| match v {
        serde_json::Value::Null => String::new(),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    Readiness {
        ready: value["ready"].as_bool().unwrap_or(false),
        schema_version: text(&value["schema_version"]),
        problem: text(&value["problem"]),
        embedder: [text(&value["embedder"]["state"]), text(&value["embedder"]["detail"])]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(": "),
    }
}

fn failed(viewer: &Viewer, e: String) -> Response {
    page::server_error("the admin page", e, Some(viewer.chrome()))
}

#[cfg(test)]
mod tests {
    use super::samples;

    #[test]
    fn samples_are_read_and_comments_left_out() {
        let text = "# HELP x y\n# TYPE x counter\nx_total{path=\"/mcp\",status=\"200\"} 3\nup 1\n\n";
        let f = samples(text);
        assert_eq!(f.len(), 2);
        assert_eq!(
            (f[0].series.as_str(), f[0].value.as_str()),
            ("x_total{path=\"/mcp\",status=\"200\"}", "3")
        );
    }
}
