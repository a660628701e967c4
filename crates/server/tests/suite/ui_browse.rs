//! The web UI's browsing pages as a key bound to one org sees them: the activity feed names
//! the items, who changed them and the agent and session the client claimed, filters by them,
//! and never shows another org's changes; the project picker lists only what the key may see
//! and refuses a place beyond it, while a keyless local user searches every project.

use super::http_gate::{runtime, service};
use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode, header};
use cortex_domain::item::StoreRequest;
use cortex_server::{HttpOptions, router};
use cortex_service::MemoryService;
use cortex_service::keys::KeySpec;
use cortex_testdb::{TestDb, per_backend};
use serde_json::json;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

per_backend!(
    the_activity_feed_names_items_and_who_and_stays_in_the_keys_org,
    the_project_picker_offers_only_the_keys_reach_and_a_local_user_every_project,
);

fn app(service: &Arc<MemoryService>) -> Router {
    let options = HttpOptions::resolve("127.0.0.1:0", &[], |_| None).unwrap();
    let schema = service.administration().stats().unwrap().schema_version;
    router(service.clone(), options, CancellationToken::new(), schema).0
}

async fn send(
    app: &Router,
    method: &str,
    path: &str,
    cookie: Option<&str>,
    body: String,
) -> (StatusCode, String, String) {
    let mut request = Request::builder().method(method).uri(path).header(header::HOST, "127.0.0.1:8787");
    if let Some(cookie) = cookie {
        request = request.header(header::COOKIE, cookie);
    }
    if method == "POST" {
        request = request.header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    }
    let mut request = request.body(Body::from(body)).unwrap();
    request.extensions_mut().insert(ConnectInfo("127.0.0.1:40000".parse::<SocketAddr>().unwrap()));
    let answer = app.clone().oneshot(request).await.unwrap();
    let status = answer.status();
    let set_cookie = answer
        .headers()
        .get(header::SET_COOKIE)
        .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_string())
        .unwrap_or_default();
    let body = axum::body::to_bytes(answer.into_body(), 1 << 22).await.unwrap();
    (status, String::from_utf8_lossy(&body).into_owned(), set_cookie)
}

/// A read key of `org`'s token.
fn key(service: &MemoryService, org: &str, name: &str) -> String {
    let spec = KeySpec { name: name.into(), org: org.into(), role: "read".into(), ..KeySpec::default() };
    service.keys().create(&spec).unwrap().token
}

/// Signed in with `token`: the session cookie.
async fn signed_in(app: &Router, token: &str) -> String {
    let (status, html, cookie) = send(app, "POST", "/login", None, format!("token={token}")).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{html}");
    cookie
}

fn store(service: &MemoryService, items: serde_json::Value) {
    let request = StoreRequest::from_json(&json!({ "items": items })).unwrap();
    let answer = service.memory_store().store(&request).unwrap();
    assert!(answer.results.iter().all(|r| r.error.is_none()), "{:?}", answer.results);
}

fn decision_in(org: &str, project: &str, branch: &str, title: &str) -> serde_json::Value {
    json!({"kind": "decision", "scope": {"org": org, "project": project, "branch": branch},
        "data": {"title": title, "component": "auth", "status": "proposed", "rationale": "tokens"}})
}

fn decision(org: &str, title: &str, agent: &str, session: &str) -> serde_json::Value {
    json!({"kind": "decision", "scope": {"org": org, "project": "api"},
        "source": {"actor": agent, "session": session},
        "data": {"title": title, "component": "auth", "status": "proposed", "rationale": "because"}})
}

fn the_activity_feed_names_items_and_who_and_stays_in_the_keys_org(db: &TestDb) {
    let service = service(db);
    store(
        &service,
        json!([
            decision("acme", "Rotate signing keys monthly", "claude-code", "sess-acme-1"),
            decision("acme", "Sign webhooks with HMAC", "claude-code", "sess-acme-1"),
        ]),
    );
    store(&service, json!([decision("acme", "Cache tokens for five minutes", "codex", "sess-acme-2")]));
    store(&service, json!([decision("globex", "Globex secret plan", "globex-agent", "sess-globex")]));
    let (acme, globex) = (key(&service, "acme", "viewer"), key(&service, "globex", "viewer"));
    let app = app(&service);
    runtime().block_on(async {
        let cookie = signed_in(&app, &acme).await;
        let (status, html, _) = send(&app, "GET", "/activity", Some(&cookie), String::new()).await;
        assert_eq!(status, StatusCode::OK, "{html}");
        for seen in
            ["Rotate signing keys monthly", "Cache tokens for five minutes", "claude-code", "sess-acme-2"]
        {
            assert!(html.contains(seen), "{seen} in {html}");
        }
        assert!(html.contains("2 changes in one batch"), "the two-item batch is one line: {html}");
        assert!(html.contains("<time datetime="), "{html}");
        for unseen in ["Globex secret plan", "globex-agent", "sess-globex"] {
            assert!(!html.contains(unseen), "another org's {unseen} shown: {html}");
        }
        // Filters narrow the feed, kept in the URL; naming another org's agent finds nothing.
        let (_, html, _) = send(&app, "GET", "/activity?agent=codex", Some(&cookie), String::new()).await;
        assert!(
            html.contains("Cache tokens for five minutes") && !html.contains("Rotate signing keys"),
            "{html}"
        );
        let (_, html, _) =
            send(&app, "GET", "/activity?agent=globex-agent", Some(&cookie), String::new()).await;
        assert!(!html.contains("Globex secret plan") && html.contains("No change matches"), "{html}");
        let (status, html, _) = send(&app, "GET", "/activity?day=soon", Some(&cookie), String::new()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{html}");
        assert!(html.contains("day: “soon” is not a date"), "{html}");

        // The project picker: acme's project narrows the feed; another org's is refused.
        let (status, html, _) =
            send(&app, "GET", "/activity?in=acme%2Fapi", Some(&cookie), String::new()).await;
        assert_eq!(status, StatusCode::OK, "{html}");
        assert!(html.contains("Rotate signing keys monthly") && !html.contains("created API key"), "{html}");
        let (status, html, _) =
            send(&app, "GET", "/activity?in=globex%2Fapi", Some(&cookie), String::new()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{html}");
        assert!(!html.contains("Globex secret plan") && !html.contains(r#"<option value="globex"#), "{html}");

        let other = signed_in(&app, &globex).await;
        let (_, html, _) = send(&app, "GET", "/activity", Some(&other), String::new()).await;
        assert!(html.contains("Globex secret plan") && !html.contains("Rotate signing keys"), "{html}");
    });
}

fn the_project_picker_offers_only_the_keys_reach_and_a_local_user_every_project(db: &TestDb) {
    let service = service(db);
    store(
        &service,
        json!([
            decision_in("acme", "api", "main", "Api rotates webhook tokens"),
            decision_in("acme", "web", "main", "Web rotates webhook tokens"),
            decision_in("globex", "api", "main", "Globex rotates webhook tokens"),
        ]),
    );
    let app = app(&service);
    // The keyless local user (no key exists yet): every project, by default.
    runtime().block_on(async {
        let (status, html, _) = send(&app, "GET", "/?q=webhook+tokens", None, String::new()).await;
        assert_eq!(status, StatusCode::OK, "{html}");
        for title in ["Api rotates", "Web rotates", "Globex rotates"] {
            assert!(html.contains(title), "the local user finds {title}: {html}");
        }
        let (_, html, _) = send(&app, "GET", "/?q=webhook+tokens&in=acme%2Fweb", None, String::new()).await;
        assert!(html.contains("Web rotates") && !html.contains("Api rotates"), "{html}");
        assert!(html.contains(r#"<option value="globex/api/main""#), "{html}");
        // The local user's status page: the whole store's search indexes, sizes and health.
        let (status, html, _) = send(&app, "GET", "/admin", None, String::new()).await;
        assert_eq!(status, StatusCode::OK, "{html}");
        assert!(html.contains("<h2>Search indexes</h2>"), "{html}");
        assert!(html.contains(r#"<dt>lexical index</dt><dd class="status">sound</dd>"#), "{html}");
        assert!(html.contains("<dt>lexical items</dt><dd>") && html.contains(" on disk "), "{html}");
        assert!(
            html.contains("<dt>vectors</dt><dd>0 vectors (whole texts and chunks), 0 bytes <span"),
            "{html}"
        );
        assert!(html.contains("<dt>vector model</dt><dd>none: lexical search only</dd>"), "{html}");
        assert!(html.contains(r#"<dt>embedded</dt><dd class="bad">0 of 3 items</dd>"#), "{html}");
        assert!(html.contains("3 items have no vectors") && html.contains("cortex reindex"), "{html}");
    });
    let spec = KeySpec {
        name: "api-only".into(),
        org: "acme".into(),
        role: "read".into(),
        projects: vec!["api".into()],
        ..KeySpec::default()
    };
    let token = service.keys().create(&spec).unwrap().token;
    let admin =
        KeySpec { name: "boss".into(), org: "acme".into(), role: "admin".into(), ..KeySpec::default() };
    let admin = service.keys().create(&admin).unwrap().token;
    runtime().block_on(async {
        // The status page of an admin bound to acme counts acme's items only.
        let cookie = signed_in(&app, &admin).await;
        let (status, html, _) = send(&app, "GET", "/admin", Some(&cookie), String::new()).await;
        assert_eq!(status, StatusCode::OK, "{html}");
        assert!(html.contains("<h1>Status</h1>") && html.contains("<h2>Recent refusals</h2>"), "{html}");
        assert!(html.contains("org=acme project=web branch=main"), "{html}");
        assert!(html.contains("<dt>items in reach</dt><dd>2</dd>"), "{html}");
        assert!(!html.contains("org=globex") && !html.contains("<dt>database</dt>"), "{html}");
        // Nor the whole store's index figures.
        for whole in ["Search indexes", "lexical index", "<dt>vectors</dt>", "have no vectors"] {
            assert!(!html.contains(whole), "a bound admin shown {whole}: {html}");
        }
        // A pasted token that is no token at all is named in the form's words.
        for pasted in ["not a token", "Bearer%20cortex_x"] {
            let (status, html, _) = send(&app, "POST", "/login", None, format!("token={pasted}")).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{html}");
            assert!(html.contains("this is not a Cortex token") && !html.contains("Authorization"), "{html}");
        }
        let cookie = signed_in(&app, &token).await;
        let (status, html, _) =
            send(&app, "GET", "/?q=webhook+tokens&in=all", Some(&cookie), String::new()).await;
        assert_eq!(status, StatusCode::OK, "{html}");
        assert!(html.contains("Api rotates"), "{html}");
        for unseen in ["Web rotates", "Globex rotates", "acme/web", "globex"] {
            assert!(!html.contains(unseen), "a key bound to acme/api shown {unseen}: {html}");
        }
        for beyond in ["globex%2Fapi%2Fmain", "globex%2Fapi", "acme%2Fweb", "acme%2Fweb%2Fmain"] {
            let (status, html, _) =
                send(&app, "GET", &format!("/?q=webhook+tokens&in={beyond}"), Some(&cookie), String::new())
                    .await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{beyond}: {html}");
            assert!(html.contains("is no project or branch holding items you can see"), "{html}");
            assert!(!html.contains("Globex rotates") && !html.contains("Web rotates"), "{html}");
        }
    });
}
