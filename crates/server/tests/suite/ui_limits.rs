//! The web UI under the limits `/mcp` applies: its requests count in the key's rate and
//! calls at once (an MCP call and a page share them), and its sessions are capped per key,
//! a key past its cap losing its own oldest session, never another key's.

use super::http_gate::{runtime, service};
use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, Request, StatusCode, header};
use axum::response::Response;
use cortex_server::{HttpOptions, router};
use cortex_service::MemoryService;
use cortex_service::keys::KeySpec;
use cortex_testdb::{TestDb, per_backend};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

per_backend!(
    ui_pages_count_in_the_keys_rate_with_its_mcp_calls,
    a_ui_page_waits_for_no_place_the_keys_mcp_calls_hold,
    a_key_signing_in_past_its_cap_ends_only_its_own_oldest_session,
);

const PEER: &str = "127.0.0.1:40000";

fn app(service: &Arc<MemoryService>, settings: &[(&str, &str)]) -> Router {
    let env = |name: &str| settings.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string());
    let options = HttpOptions::resolve("127.0.0.1:0", &[], env).unwrap();
    let schema = service.administration().stats().unwrap().schema_version;
    router(service.clone(), options, CancellationToken::new(), schema).0
}

fn key(service: &MemoryService, name: &str, rate: Option<&str>) -> String {
    let spec = KeySpec {
        name: name.into(),
        org: "acme".into(),
        role: "read".into(),
        rate: rate.map(str::to_string),
        ..KeySpec::default()
    };
    service.keys().create(&spec).unwrap().token
}

async fn request(
    app: &Router,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: String,
) -> Response {
    let mut request = Request::builder().method(method).uri(path).header(header::HOST, "127.0.0.1:8787");
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let mut request = request.body(Body::from(body)).unwrap();
    request.extensions_mut().insert(ConnectInfo(PEER.parse::<SocketAddr>().unwrap()));
    app.clone().oneshot(request).await.unwrap()
}

/// `POST /login` with `token`: the session cookie (`cortex_session=<id>`).
async fn sign_in(app: &Router, token: &str) -> String {
    let form = [("Content-Type", "application/x-www-form-urlencoded".to_string())];
    let answer = request(app, "POST", "/login", &form, format!("token={token}")).await;
    assert_eq!(answer.status(), StatusCode::SEE_OTHER, "signed in");
    cookie(answer.headers())
}

fn cookie(headers: &HeaderMap) -> String {
    let set = headers.get(header::SET_COOKIE).unwrap().to_str().unwrap();
    set.split(';').next().unwrap().to_string()
}

async fn page(app: &Router, cookie: &str) -> (StatusCode, String) {
    let answer = request(app, "GET", "/?q=anything", &[("Cookie", cookie.to_string())], String::new()).await;
    let status = answer.status();
    let retry = answer.headers().get(header::RETRY_AFTER).map(|v| v.to_str().unwrap().to_string());
    let body = axum::body::to_bytes(answer.into_body(), 1 << 20).await.unwrap();
    let text = String::from_utf8_lossy(&body).to_string();
    if status == StatusCode::TOO_MANY_REQUESTS {
        assert!(retry.is_some(), "a 429 says when to come back");
    }
    (status, text)
}

async fn mcp(app: &Router, token: &str) -> Response {
    let headers = [
        ("Authorization", format!("Bearer {token}")),
        ("Content-Type", "application/json".to_string()),
        ("Accept", "application/json, text/event-stream".to_string()),
    ];
    request(app, "POST", "/mcp", &headers, r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.into()).await
}

fn ui_pages_count_in_the_keys_rate_with_its_mcp_calls(db: &TestDb) {
    let service = service(db);
    // One request a minute: a burst of one.
    let ui_first = key(&service, "ui-first", Some("1/min"));
    let mcp_first = key(&service, "mcp-first", Some("1/min"));
    let other = key(&service, "other", None);
    let app = app(&service, &[]);
    runtime().block_on(async {
        // The sign-in spends the key's request: the page and the MCP call after it wait.
        let session = sign_in(&app, &ui_first).await;
        let (status, text) = page(&app, &session).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{text}");
        assert!(text.contains("over its rate"), "{text}");
        assert_eq!(mcp(&app, &ui_first).await.status(), StatusCode::TOO_MANY_REQUESTS);
        // An MCP call spends it: the sign-in waits.
        assert_ne!(mcp(&app, &mcp_first).await.status(), StatusCode::TOO_MANY_REQUESTS);
        let form = [("Content-Type", "application/x-www-form-urlencoded".to_string())];
        let login = request(&app, "POST", "/login", &form, format!("token={mcp_first}")).await;
        assert_eq!(login.status(), StatusCode::TOO_MANY_REQUESTS);
        let theirs = sign_in(&app, &other).await;
        for _ in 0..3 {
            assert_eq!(page(&app, &theirs).await.0, StatusCode::OK, "another key's rate is its own");
        }
    });
}

fn a_ui_page_waits_for_no_place_the_keys_mcp_calls_hold(db: &TestDb) {
    let service = service(db);
    let token = key(&service, "busy", None);
    let app = app(&service, &[("CORTEX_HTTP_MAX_CONCURRENT", "1")]);
    runtime().block_on(async {
        let session = sign_in(&app, &token).await;
        // Shared limits (PostgreSQL) give a place back from a blocking task once the answer
        // holding it is dropped: the next request may come before that task has run, and be
        // refused for a moment. Each step that needs the place free asks again a while.
        assert_eq!(page_once_free(&app, &session).await, StatusCode::OK);
        // An MCP call whose answer has not been read holds the key's one place.
        let mut held = mcp(&app, &token).await;
        for _ in 0..200 {
            if held.status() != StatusCode::TOO_MANY_REQUESTS {
                break;
            }
            drop(held);
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            held = mcp(&app, &token).await;
        }
        // Admitted (what it answers, a ping outside a session, does not matter): its unread
        // answer holds the place.
        assert_ne!(held.status(), StatusCode::TOO_MANY_REQUESTS, "the call was admitted");
        let (status, text) = page(&app, &session).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{text}");
        assert!(text.contains("calls running already"), "{text}");
        drop(held);
        assert_eq!(page_once_free(&app, &session).await, StatusCode::OK, "the place is back");
    });
}

/// A page's status, asked again for up to two seconds while it is refused for calls running:
/// what a place given back from a blocking task takes to be free.
async fn page_once_free(app: &Router, session: &str) -> StatusCode {
    let mut status = page(app, session).await.0;
    for _ in 0..200 {
        if status != StatusCode::TOO_MANY_REQUESTS {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        status = page(app, session).await.0;
    }
    status
}

fn a_key_signing_in_past_its_cap_ends_only_its_own_oldest_session(db: &TestDb) {
    let service = service(db);
    let victim = key(&service, "victim", None);
    let flooder = key(&service, "flooder", None);
    let app = app(&service, &[("CORTEX_HTTP_MAX_SESSIONS_PER_KEY", "3")]);
    runtime().block_on(async {
        let victims = [sign_in(&app, &victim).await, sign_in(&app, &victim).await];
        let mut floods = Vec::new();
        for _ in 0..20 {
            floods.push(sign_in(&app, &flooder).await);
        }
        for session in &victims {
            assert_eq!(page(&app, session).await.0, StatusCode::OK, "another key's flood ends none of mine");
        }
        let live = |text: &str| !text.contains("name=\"token\"");
        let mut still = Vec::new();
        for session in &floods {
            let (status, text) = page(&app, session).await;
            still.push(status == StatusCode::OK && live(&text));
        }
        assert_eq!(still.iter().filter(|s| **s).count(), 3, "the flooder holds its cap: {still:?}");
        assert!(still[17] && still[18] && still[19], "its newest sessions");
    });
}
