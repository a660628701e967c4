//! The gate as a client meets it: which `Authorization` forms pass, what an unknown, revoked
//! or expired key is told, what the local user may do, and which header or origin is refused
//! with which code.

use crate::test_support::{ELSEWHERE, LOOPBACK, TestServer, find};
use axum::http::{StatusCode, header};
use cortex_service::keys::KeySpec;
use cortex_testdb::{TestDb, per_backend};
use serde_json::json;

per_backend!(a_revoked_key_is_refused_from_its_next_request_on, an_expired_key_is_refused_as_expired);

fn ping_with(server: &TestServer, authorization: &str) -> crate::test_support::Answer {
    let mut request = find(None);
    request.headers_mut().insert(header::AUTHORIZATION, authorization.parse().unwrap());
    server.send(request)
}

#[test]
fn a_loopback_server_without_keys_answers_the_local_user() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let answer = server.send(find(None));
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    assert!(answer.text.contains(r#""hits""#), "{}", answer.text);
}

#[test]
fn once_a_key_exists_a_request_without_one_is_refused_with_a_challenge() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    server.key("ci", "read");
    let answer = server.send(find(None));
    assert_eq!((answer.status, answer.code().as_deref()), (StatusCode::UNAUTHORIZED, Some("missing_key")));
    assert!(
        answer.header(header::WWW_AUTHENTICATE).is_some_and(|v| v.starts_with("Bearer")),
        "{:?}",
        answer.headers
    );
    let hint = answer.json()["error"]["human_hint"].as_str().unwrap().to_string();
    assert!(hint.contains("Authorization: Bearer"), "the hint says how: {hint}");
}

#[test]
fn the_bearer_scheme_is_matched_without_regard_to_case() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let token = server.key("ci", "read");
    for scheme in ["Bearer", "bearer", "BEARER"] {
        let answer = ping_with(&server, &format!("{scheme} {token}"));
        assert_eq!(answer.status, StatusCode::OK, "{scheme}: {}", answer.text);
    }
    // Spaces around the token are the header's, not the token's.
    let answer = ping_with(&server, &format!("Bearer  {token} "));
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
}

#[test]
fn other_schemes_and_bare_tokens_are_malformed_not_unknown() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let token = server.key("ci", "read");
    for value in [format!("Basic {token}"), token.clone(), format!("Token {token}"), "Bearer".to_string()] {
        let answer = ping_with(&server, &value);
        assert_eq!(
            (answer.status, answer.code().as_deref()),
            (StatusCode::UNAUTHORIZED, Some("malformed_key")),
            "{value}: {}",
            answer.text
        );
    }
}

#[test]
fn a_token_with_a_wrong_secret_is_unknown() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let token = server.key("ci", "read");
    // The same public part, another secret: the key is found and its secret does not match.
    let last = token.chars().last().unwrap();
    let wrong = format!("{}{}", &token[..token.len() - 1], if last == '0' { '1' } else { '0' });
    let answer = ping_with(&server, &format!("Bearer {wrong}"));
    assert_eq!((answer.status, answer.code().as_deref()), (StatusCode::UNAUTHORIZED, Some("unknown_key")));
    let answer = ping_with(&server, &format!("Bearer cortex_{}_{}", "0".repeat(16), "0".repeat(64)));
    assert_eq!((answer.status, answer.code().as_deref()), (StatusCode::UNAUTHORIZED, Some("unknown_key")));
}

fn a_revoked_key_is_refused_from_its_next_request_on(db: &TestDb) {
    let server = TestServer::new(db);
    let token = server.key("ci", "write");
    assert_eq!(ping_with(&server, &format!("Bearer {token}")).status, StatusCode::OK);
    server.service.keys().revoke(Some("acme"), "ci").unwrap();
    let answer = ping_with(&server, &format!("Bearer {token}"));
    assert_eq!((answer.status, answer.code().as_deref()), (StatusCode::UNAUTHORIZED, Some("revoked_key")));
    assert!(answer.text.contains("ask the server's admin for a new key"), "{}", answer.text);
}

fn an_expired_key_is_refused_as_expired(db: &TestDb) {
    let server = TestServer::new(db);
    let soon = chrono::Utc::now() + chrono::Duration::milliseconds(1200);
    let token = server.key_of(KeySpec {
        name: "short".into(),
        org: "acme".into(),
        role: "read".into(),
        expires: Some(soon.to_rfc3339()),
        ..KeySpec::default()
    });
    assert_eq!(ping_with(&server, &format!("Bearer {token}")).status, StatusCode::OK);
    // Waiting for the expiry itself: the key's end is the database's clock, not a test's.
    std::thread::sleep(std::time::Duration::from_millis(1300));
    let answer = ping_with(&server, &format!("Bearer {token}"));
    assert_eq!((answer.status, answer.code().as_deref()), (StatusCode::UNAUTHORIZED, Some("expired_key")));
}

#[test]
fn a_read_key_finds_but_cannot_store() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let reader = server.key("reader", "read");
    let writer = server.key("writer", "write");
    let item = json!({"items": [{"kind": "section", "scope": {"project": "api"}, "data": {"title": "Deploys", "heading": "Deploys",
        "body": "Deploys go out on Tuesdays after the freeze lifts."}}]});
    let refused = server.call(Some(&reader), "memory_store", item.clone());
    assert!(refused.to_string().contains("role"), "a read key is told its role does not store: {refused}");
    let stored = server.call(Some(&writer), "memory_store", item);
    assert_eq!(stored["results"][0]["status"], "inserted", "{stored}");
    let found =
        server.call(Some(&reader), "memory_find", json!({"query": "deploys tuesdays", "mode": "fast"}));
    assert_eq!(found["hits"][0]["title"], "Deploys", "{found}");
}

#[test]
fn a_project_header_beyond_the_keys_projects_is_forbidden() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let token = server.key_of(KeySpec {
        name: "api-only".into(),
        org: "acme".into(),
        projects: vec!["api".into()],
        role: "read".into(),
        ..KeySpec::default()
    });
    let mut request = find(Some(&token));
    request.headers_mut().insert("x-cortex-project", "billing".parse().unwrap());
    let answer = server.send(request);
    assert_eq!((answer.status, answer.code().as_deref()), (StatusCode::FORBIDDEN, Some("forbidden_scope")));
    let mut request = find(Some(&token));
    request.headers_mut().insert("x-cortex-project", "api".parse().unwrap());
    assert_eq!(server.send(request).status, StatusCode::OK);
}

#[test]
fn a_scope_header_that_is_not_a_name_is_a_bad_request_naming_the_header() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let mut request = find(None);
    request.headers_mut().insert("x-cortex-branch", "a\tb".parse().unwrap());
    let answer = server.send(request);
    assert_eq!((answer.status, answer.code().as_deref()), (StatusCode::BAD_REQUEST, Some("invalid_header")));
    assert!(answer.text.contains("x-cortex-branch"), "{}", answer.text);
}

#[test]
fn a_web_page_of_another_origin_is_refused_and_an_admitted_one_passes() {
    let db = TestDb::sqlite();
    let server =
        TestServer::with(&db, "127.0.0.1:0", &[("CORTEX_HTTP_ALLOW_ORIGIN", "https://app.example.com")]);
    let mut request = find(None);
    request.headers_mut().insert(header::ORIGIN, "https://evil.example.net".parse().unwrap());
    let answer = server.send(request);
    assert_eq!((answer.status, answer.code().as_deref()), (StatusCode::FORBIDDEN, Some("forbidden_origin")));
    assert!(answer.text.contains("--allow-origin"), "{}", answer.text);
    assert_eq!(
        answer.headers.get(header::CONNECTION).map(|v| v.as_bytes()),
        Some(&b"close"[..]),
        "the refused body was never read: the client must not send its next request on this connection"
    );
    let mut request = find(None);
    request.headers_mut().insert(header::ORIGIN, "https://app.example.com".parse().unwrap());
    assert_eq!(server.send(request).status, StatusCode::OK);
}

#[test]
fn health_needs_no_key_even_beyond_loopback_and_ready_names_the_schema() {
    let db = TestDb::sqlite();
    let server = TestServer::with(&db, "0.0.0.0:0", &[]);
    let get = |path: &str| {
        let request = axum::http::Request::get(path).body(axum::body::Body::empty()).unwrap();
        server.block_on(server.send_from(ELSEWHERE, request))
    };
    let health = get("/health");
    assert_eq!((health.status, health.json()["status"].as_str()), (StatusCode::OK, Some("ok")));
    let ready = get("/ready");
    assert_eq!(ready.status, StatusCode::OK, "{}", ready.text);
    assert_eq!(ready.json()["ready"], true, "{}", ready.text);
    assert!(ready.json()["schema_version"].as_i64().is_some_and(|v| v > 0), "{}", ready.text);
}

#[test]
fn metrics_count_each_refusal_by_its_reason() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    server.key("ci", "read");
    ping_with(&server, "Basic x");
    ping_with(&server, "Basic y");
    server.send(find(None));
    let request = axum::http::Request::get("/metrics").body(axum::body::Body::empty()).unwrap();
    let metrics = server.block_on(server.send_from(LOOPBACK, request));
    assert_eq!(metrics.status, StatusCode::OK);
    assert!(
        metrics.text.contains("cortex_http_refused_total{reason=\"malformed_key\"} 2"),
        "{}",
        metrics.text
    );
    assert!(metrics.text.contains("cortex_http_refused_total{reason=\"missing_key\"} 1"), "{}", metrics.text);
}

mod limits;
