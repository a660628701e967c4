//! The answers of requests refused before they reach MCP: a status and a JSON body
//! `{"error": {"code", "message", "human_hint"}}` that says what was wrong and how to fix it.

use crate::problem_code::ProblemCode;
use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::json;
use std::time::Duration;

pub fn problem(
    status: StatusCode,
    code: ProblemCode,
    message: impl Into<String>,
    hint: impl Into<String>,
) -> Response {
    let body =
        json!({ "error": { "code": code.as_str(), "message": message.into(), "human_hint": hint.into() } });
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// 401, with the challenge RFC 6750 asks for.
pub fn unauthorized(code: ProblemCode, message: &str, hint: &str) -> Response {
    let mut response = problem(StatusCode::UNAUTHORIZED, code, message, hint);
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"cortex\", error=\"invalid_token\""),
    );
    response
}

/// 429, with `Retry-After` in whole seconds (at least 1), and `Connection: close`: the
/// request's body may not have been read, so the connection cannot carry another request.
pub fn too_many(code: ProblemCode, message: String, hint: &str, retry_after: Duration) -> Response {
    let mut response = problem(StatusCode::TOO_MANY_REQUESTS, code, message, hint);
    let seconds = retry_after.as_secs_f64().ceil().max(1.0) as u64;
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}
