//! The HTTP server's gate for what a test over loopback cannot show (tests/e2e/test_http.py
//! drives the rest through the real binary): a server bound beyond loopback asks every request
//! for a key even before any key exists, and `/metrics` from another machine needs an admin
//! key (with the PostgreSQL pool's state among the metrics). Requests go straight into the
//! router, with the peer address a connection would carry.

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode};
use cortex_server::{HttpOptions, router};
use cortex_service::keys::KeySpec;
use cortex_service::scope_inference::InferredScope;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Config, MemoryService};
use cortex_testdb::{Backend, TestDb, per_backend};
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

per_backend!(
    beyond_loopback_every_request_needs_a_key_even_before_any_exists,
    metrics_from_another_machine_need_an_admin_key,
    two_orgs_keys_of_one_name_have_their_own_rates,
);

/// A peer on another machine (TEST-NET-1: a documentation address, never contacted).
const ELSEWHERE: &str = "192.0.2.7:40000";
const LOOPBACK: &str = "127.0.0.1:40000";

pub fn service(db: &TestDb) -> Arc<MemoryService> {
    let config =
        Config::new(db.target().clone(), InferredScope::fixed("acme", "api", "main"), EmbedderChoice::None);
    Arc::new(MemoryService::open(&config).unwrap())
}

fn app(service: &Arc<MemoryService>, addr: &str) -> Router {
    let options = HttpOptions::resolve(addr, &[], |_| None).unwrap();
    let schema = service.administration().stats().unwrap().schema_version;
    router(service.clone(), options, CancellationToken::new(), schema).0
}

fn key(service: &MemoryService, name: &str, role: &str) -> String {
    let spec = KeySpec { name: name.into(), org: "acme".into(), role: role.into(), ..KeySpec::default() };
    service.keys().create(&spec).unwrap().token
}

/// Status and body (JSON, else text) of one request from `peer`.
async fn send(
    app: &Router,
    method: &str,
    path: &str,
    peer: &str,
    token: Option<&str>,
) -> (StatusCode, Value) {
    let mut request = Request::builder().method(method).uri(path);
    if let Some(token) = token {
        request = request.header("Authorization", format!("Bearer {token}"));
    }
    let mut request = request
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(Body::from(if method == "POST" { r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"# } else { "" }))
        .unwrap();
    request.extensions_mut().insert(ConnectInfo(peer.parse::<SocketAddr>().unwrap()));
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap();
    let text = String::from_utf8_lossy(&bytes).to_string();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn beyond_loopback_every_request_needs_a_key_even_before_any_exists(db: &TestDb) {
    let service = service(db);
    assert!(!service.keys().any().unwrap());
    let app = app(&service, "0.0.0.0:0");
    runtime().block_on(async {
        let (status, body) = send(&app, "POST", "/mcp", ELSEWHERE, None).await;
        assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::UNAUTHORIZED, Some("missing_key")));
        // The same from this machine: the server listens beyond loopback, so no one is trusted.
        let (status, _) = send(&app, "POST", "/mcp", LOOPBACK, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        let (status, body) = send(&app, "GET", "/health", ELSEWHERE, None).await;
        assert_eq!((status, body["status"].as_str()), (StatusCode::OK, Some("ok")));
    });
}

fn metrics_from_another_machine_need_an_admin_key(db: &TestDb) {
    let service = service(db);
    let writer = key(&service, "writer", "write");
    let admin = key(&service, "ops", "admin");
    let app = app(&service, "0.0.0.0:0");
    runtime().block_on(async {
        let (status, body) = send(&app, "GET", "/metrics", ELSEWHERE, None).await;
        assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::UNAUTHORIZED, Some("missing_key")));
        let (status, body) = send(&app, "GET", "/metrics", ELSEWHERE, Some(&writer)).await;
        assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::FORBIDDEN, Some("forbidden_role")));
        let (status, body) = send(&app, "GET", "/metrics", ELSEWHERE, Some(&admin)).await;
        assert_eq!(status, StatusCode::OK);
        let text = body.as_str().unwrap();
        assert!(text.contains("cortex_http_refused_total{reason=\"missing_key\"} 1"), "{text}");
        assert!(text.contains("cortex_http_refused_total{reason=\"forbidden_role\"} 1"), "{text}");
        let pooled = text.contains("cortex_db_pool_connections{pool=\"primary\",state=\"idle\"}");
        assert_eq!(pooled, db.backend() == Backend::Postgres, "PostgreSQL's pool is in the metrics: {text}");
        // From the server's own machine no key is needed.
        let (status, _) = send(&app, "GET", "/metrics", LOOPBACK, None).await;
        assert_eq!(status, StatusCode::OK);
    });
}

/// Key names are unique per org, so two orgs may each have a key `ci`: each has its own rate
/// (and calls at once, and sessions), one org's use never refusing the other's.
fn two_orgs_keys_of_one_name_have_their_own_rates(db: &TestDb) {
    let service = service(db);
    let spec = |org: &str| KeySpec {
        name: "ci".into(),
        org: org.into(),
        role: "read".into(),
        rate: Some("1/min".into()),
        ..KeySpec::default()
    };
    let acme = service.keys().create(&spec("acme")).unwrap().token;
    let globex = service.keys().create(&spec("globex")).unwrap().token;
    let app = app(&service, "127.0.0.1:0");
    runtime().block_on(async {
        let (status, _) = send(&app, "POST", "/mcp", LOOPBACK, Some(&acme)).await;
        assert_ne!(status, StatusCode::TOO_MANY_REQUESTS);
        let (status, body) = send(&app, "POST", "/mcp", LOOPBACK, Some(&globex)).await;
        assert_ne!(status, StatusCode::TOO_MANY_REQUESTS, "globex's ci has a bucket of its own: {body}");
        let (status, body) = send(&app, "POST", "/mcp", LOOPBACK, Some(&acme)).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (StatusCode::TOO_MANY_REQUESTS, Some("rate_limited"))
        );
    });
}
