//! The web UI's sign-in form offers the identity provider's sign-in exactly when the server
//! it belongs to has one: two servers in one process, one with an OAuth client at an issuer
//! and one with API keys only, each showing its own (what the form offers is the router's,
//! not the process's).

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode};
use cortex_server::{HttpOptions, router};
use cortex_service::keys::KeySpec;
use cortex_service::scope_inference::InferredScope;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Config, MemoryService};
use cortex_testdb::TestDb;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

const PROVIDER_LINK: &str = "/ui/oauth/start";

/// An issuer with a client for Cortex there (never contacted: the page needs no token).
fn with_provider(name: &str) -> Option<String> {
    let value = match name {
        "CORTEX_OAUTH_ISSUER" => "https://id.example.com",
        "CORTEX_PUBLIC_URL" => "https://memory.example.com",
        "CORTEX_OAUTH_CLIENT_ID" => "cortex",
        "CORTEX_OAUTH_CLIENT_SECRET" => "not-a-real-secret",
        _ => return None,
    };
    Some(value.to_string())
}

fn app(service: &Arc<MemoryService>, env: impl Fn(&str) -> Option<String>) -> axum::Router {
    let options = HttpOptions::resolve("127.0.0.1:0", &[], env).unwrap();
    router(
        service.clone(),
        options,
        CancellationToken::new(),
        service.administration().stats().unwrap().schema_version,
    )
    .0
}

/// The status and HTML of `path` asked from this machine.
async fn page(app: &axum::Router, path: &str) -> (StatusCode, String) {
    let mut request =
        Request::builder().uri(path).header("Host", "127.0.0.1:8787").body(Body::empty()).unwrap();
    request.extensions_mut().insert(ConnectInfo("127.0.0.1:40000".parse::<SocketAddr>().unwrap()));
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

#[test]
fn each_servers_sign_in_form_offers_its_own_identity_provider() {
    let db = TestDb::sqlite();
    let config =
        Config::new(db.target().clone(), InferredScope::fixed("acme", "api", "main"), EmbedderChoice::None);
    let service = Arc::new(MemoryService::open(&config).unwrap());
    // A key exists, so the keys-only server asks for a sign-in too.
    let spec = KeySpec { name: "ana".into(), org: "acme".into(), role: "read".into(), ..KeySpec::default() };
    service.keys().create(&spec).unwrap();
    // Made in this order, a flag kept for the whole process would hold the second server's.
    let provider = app(&service, with_provider);
    let keys_only = app(&service, |_| None);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let (status, html) = page(&provider, "/").await;
        assert_eq!(status, StatusCode::OK, "{html}");
        assert!(html.contains("<h1>Sign in</h1>") && html.contains(PROVIDER_LINK), "{html}");
        let (status, html) = page(&keys_only, "/").await;
        assert_eq!(status, StatusCode::OK, "{html}");
        assert!(html.contains("<h1>Sign in</h1>") && !html.contains(PROVIDER_LINK), "{html}");
        let (status, html) = page(&keys_only, PROVIDER_LINK).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{html}");
        assert!(html.contains("no sign-in through an identity provider"), "{html}");
    });
}
