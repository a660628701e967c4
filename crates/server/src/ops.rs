//! The operator's endpoints: `GET /health` (the process answers), `GET /ready` (the database
//! answers, its schema is this build's, and the embedder's state) and `GET /metrics`
//! (Prometheus text; who may read it is the gate's business).

use super::App;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::{Value, json};

fn json_response(status: StatusCode, body: Value) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

pub async fn health() -> Response {
    json_response(StatusCode::OK, json!({ "status": "ok" }))
}

/// 200 when requests can be served; 503 naming what is wrong otherwise. The embedder's state
/// is reported but never makes the server unready: without it, finds run lexical only.
pub async fn ready(State(app): State<App>) -> Response {
    let service = app.service.clone();
    let stats = tokio::task::spawn_blocking(move || service.administration().ready()).await;
    let (embedder, embedder_detail) = app.service.indexes().embedder_state();
    let database = match stats {
        Ok(Ok(s)) if s.schema_version == app.schema_version => Ok(s.schema_version),
        Ok(Ok(s)) => Err(format!(
            "the schema is at version {}, this server runs version {}: another cortex migrated the database; restart this server with that version",
            s.schema_version, app.schema_version
        )),
        Ok(Err(e)) => Err(format!("the database does not answer: {e}")),
        Err(e) => Err(format!("the check failed: {e}")),
    };
    let (status, ready, problem, schema) = match database {
        Ok(version) => (StatusCode::OK, true, None, Some(version)),
        Err(problem) => (StatusCode::SERVICE_UNAVAILABLE, false, Some(problem), None),
    };
    json_response(
        status,
        json!({
            "ready": ready,
            "problem": problem,
            "schema_version": schema,
            "embedder": { "state": embedder, "detail": embedder_detail },
        }),
    )
}

pub async fn metrics(State(app): State<App>) -> Response {
    let mut response = Response::new(Body::from(
        app.metrics
            .render(&app.service.administration().pool_state(), app.service.indexes().vectors_in_process()),
    ));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
    response
}
