//! The web UI's curation pages and forms under its security model: the edit form, the new-item
//! form, the delete confirmation and its undo, and "Still true" answer only a live session's
//! write key within its tenant (a read key: 403; another org's key: the same 404 as an unknown
//! id; no CSRF token: 403, nothing changed), every page under the UI's Content-Security-Policy;
//! and a refused edit comes back with what was typed.

use super::http_gate::{runtime, service};
use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode, header};
use cortex_domain::item::StoreRequest;
use cortex_server::{HttpOptions, router};
use cortex_service::keys::KeySpec;
use cortex_service::scope_inference::InferredScope;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Config, MemoryService};
use cortex_testdb::git::git;
use cortex_testdb::{TestDb, per_backend};
use serde_json::json;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

per_backend!(
    curation_pages_answer_only_a_write_key_of_the_items_tenant,
    a_refused_edit_keeps_what_was_typed_and_offers_a_new_version,
    a_new_item_is_checked_as_memory_store_checks_it,
    a_delete_is_confirmed_first_and_undone_after,
    still_true_clears_the_stale_flag_as_the_write_key,
);

fn app(service: &Arc<MemoryService>) -> Router {
    let options = HttpOptions::resolve("127.0.0.1:0", &[], |_| None).unwrap();
    let schema = service.administration().stats().unwrap().schema_version;
    router(service.clone(), options, CancellationToken::new(), schema).0
}

fn key(service: &MemoryService, name: &str, org: &str, role: &str) -> String {
    let spec = KeySpec { name: name.into(), org: org.into(), role: role.into(), ..KeySpec::default() };
    service.keys().create(&spec).unwrap().token
}

/// Stores one item (as the local user) and answers its id.
fn store(service: &MemoryService, item: serde_json::Value) -> String {
    let request = StoreRequest::from_json(&json!({ "items": [item] })).unwrap();
    let stored = service.memory_store().store(&request).unwrap();
    stored.results[0].id.clone().unwrap_or_else(|| panic!("{:?}", stored.results[0]))
}

struct Answer {
    status: StatusCode,
    location: String,
    csp: String,
    html: String,
}

/// A browser session of one key: its cookie and CSRF token.
struct Session {
    app: Router,
    cookie: String,
    csrf: String,
}

impl Session {
    async fn start(app: &Router, token: &str) -> Session {
        let mut session = Session { app: app.clone(), cookie: String::new(), csrf: String::new() };
        let form = format!("token={token}");
        let answer = session.send("POST", "/login", form).await;
        assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.html);
        let home = session.send("GET", "/", String::new()).await;
        let at = home.html.find("name=\"csrf\" value=\"").expect("a CSRF field") + 19;
        session.csrf = home.html[at..at + 64].to_string();
        session
    }

    async fn send(&mut self, method: &str, path: &str, body: String) -> Answer {
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, "127.0.0.1:8787")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
        if !self.cookie.is_empty() {
            request = request.header(header::COOKIE, &self.cookie);
        }
        let mut request = request.body(Body::from(body)).unwrap();
        request.extensions_mut().insert(ConnectInfo("127.0.0.1:40000".parse::<SocketAddr>().unwrap()));
        let response = self.app.clone().oneshot(request).await.unwrap();
        let header_text =
            |name| response.headers().get(name).map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
        let (location, csp) = (header_text(header::LOCATION), header_text(header::CONTENT_SECURITY_POLICY));
        if let Some(set) = response.headers().get(header::SET_COOKIE) {
            self.cookie = set.to_str().unwrap().split(';').next().unwrap().to_string();
        }
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 22).await.unwrap();
        Answer { status, location, csp, html: String::from_utf8_lossy(&bytes).into_owned() }
    }

    async fn get(&mut self, path: &str) -> Answer {
        self.send("GET", path, String::new()).await
    }

    /// A form post carrying this session's CSRF token and `fields`.
    async fn post(&mut self, path: &str, fields: &[(&str, &str)]) -> Answer {
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("csrf", &self.csrf.clone());
        for (name, value) in fields {
            form.append_pair(name, value);
        }
        self.send("POST", path, form.finish()).await
    }
}

fn decision(org: &str, title: &str) -> serde_json::Value {
    json!({"kind": "decision", "scope": {"org": org, "project": "api", "branch": "main"}, "data": {
        "component": "auth", "status": "accepted", "title": title,
        "rationale": "Stateless tokens let every server check a session without a shared store.",
        "alternatives_considered": ["opaque session ids", "sticky sessions"]}})
}

/// A server holding one accepted decision of acme's, and a write key of acme's.
fn one_decision(db: &TestDb) -> (Router, String, String) {
    let service = service(db);
    let id = store(&service, decision("acme", "Use JWT for sessions"));
    let writer = key(&service, "ana", "acme", "write");
    (app(&service), writer, id)
}

fn curation_pages_answer_only_a_write_key_of_the_items_tenant(db: &TestDb) {
    let service = service(db);
    let ours = store(&service, decision("acme", "Use JWT for sessions"));
    let writer = key(&service, "ana", "acme", "write");
    let reader = key(&service, "rob", "acme", "read");
    let stranger = key(&service, "eve", "globex", "write");
    let app = app(&service);
    runtime().block_on(async {
        let mut ana = Session::start(&app, &writer).await;
        for path in [format!("/items/{ours}/edit"), format!("/items/{ours}/delete"), "/new".to_string()] {
            let page = ana.get(&path).await;
            assert_eq!(page.status, StatusCode::OK, "{path}: {}", page.html);
            assert!(
                page.csp.contains("script-src 'self'") && page.csp.contains("form-action 'self'"),
                "{path}"
            );
        }
        let mut rob = Session::start(&app, &reader).await;
        for path in [format!("/items/{ours}/edit"), format!("/items/{ours}/delete"), "/new".to_string()] {
            assert_eq!(rob.get(&path).await.status, StatusCode::FORBIDDEN, "{path} for a read key");
        }
        let item = rob.get(&format!("/items/{ours}")).await;
        assert!(!item.html.contains("/edit\"") && !item.html.contains("/delete\""), "{}", item.html);
        for (path, fields) in [
            (format!("/items/{ours}/confirm"), vec![]),
            (format!("/items/{ours}/delete"), vec![]),
            ("/new".to_string(), vec![("kind", "todo"), ("data.title", "x"), ("data.status", "open")]),
        ] {
            assert_eq!(rob.post(&path, &fields).await.status, StatusCode::FORBIDDEN, "{path} for a read key");
        }
        let mut eve = Session::start(&app, &stranger).await;
        for path in [format!("/items/{ours}/edit"), format!("/items/{ours}/delete")] {
            assert_eq!(eve.get(&path).await.status, StatusCode::NOT_FOUND, "{path} for another org");
        }
        for path in [format!("/items/{ours}/confirm"), format!("/items/{ours}/delete")] {
            assert_eq!(eve.post(&path, &[]).await.status, StatusCode::NOT_FOUND, "{path} for another org");
        }
        // Without the session's CSRF token nothing changes.
        let forged = ana.send("POST", &format!("/items/{ours}/delete"), String::new()).await;
        assert_eq!(forged.status, StatusCode::FORBIDDEN);
        let forged = ana.send("POST", "/new", "kind=todo&data.title=x&data.status=open".into()).await;
        assert_eq!(forged.status, StatusCode::FORBIDDEN);
        assert_eq!(ana.get(&format!("/items/{ours}")).await.status, StatusCode::OK, "still there");
    });
}

fn a_refused_edit_keeps_what_was_typed_and_offers_a_new_version(db: &TestDb) {
    let (app, writer, id) = one_decision(db);
    runtime().block_on(async {
        let mut ana = Session::start(&app, &writer).await;
        let form = ana.get(&format!("/items/{id}/edit")).await;
        assert!(form.html.contains("<select id=\"f-status\" name=\"data.status\">"), "{}", form.html);
        assert!(form.html.contains("<option value=\"accepted\" selected>"), "{}", form.html);
        assert!(form.html.contains("opaque session ids\nsticky sessions"), "a list one entry per line");
        let typed = "Opaque ids can be revoked at once; JWTs cannot.";
        let refused = ana.post(&format!("/items/{id}/edit"), &[("data.rationale", typed)]).await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.html);
        assert!(refused.html.contains(typed), "what was typed is kept: {}", refused.html);
        assert!(refused.html.contains("this decision is accepted"), "{}", refused.html);
        assert!(!refused.html.contains(&format!("decision {id}")), "in the page's words: {}", refused.html);
        assert!(
            refused.html.contains(&format!("formaction=\"/items/{id}/supersede\">Save as a new version"))
        );
        assert!(refused.html.contains("class=\"field refused\""), "the field is marked");
        assert!(refused.html.contains("name=\"data.rationale\" rows=\"6\" autofocus>"), "and has the cursor");
        assert_eq!(refused.html.matches(" autofocus").count(), 1);
        let newer = ana.post(&format!("/items/{id}/supersede"), &[("data.rationale", typed)]).await;
        assert_eq!(newer.status, StatusCode::SEE_OTHER, "{}", newer.html);
        let page = ana.get(&newer.location).await;
        assert!(
            page.html.contains(typed) && page.html.contains(&format!("href=\"/items/{id}\"")),
            "{}",
            page.html
        );
        let old = ana.get(&format!("/items/{id}")).await;
        assert!(old.html.contains(&format!("href=\"{}\"", newer.location)), "the chain links forward");
    });
}

fn a_new_item_is_checked_as_memory_store_checks_it(db: &TestDb) {
    let service = service(db);
    let writer = key(&service, "ana", "acme", "write");
    let app = app(&service);
    runtime().block_on(async {
        let mut ana = Session::start(&app, &writer).await;
        let form = ana.get("/new?kind=todo").await;
        assert!(form.html.contains("name=\"data.priority\""), "{}", form.html);
        assert!(
            form.html.contains("name=\"data.title\" value=\"\" autofocus>"),
            "the cursor in the first field"
        );
        let missing = ana.post("/new", &[("kind", "todo"), ("data.title", "Rotate the signing key")]).await;
        assert_eq!(missing.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", missing.html);
        assert!(missing.html.contains("value=\"Rotate the signing key\""), "typed text kept");
        assert!(missing.html.contains("data.status"), "the field named: {}", missing.html);
        let unscoped = ana
            .post(
                "/new",
                &[("kind", "todo"), ("data.title", "Rotate the signing key"), ("data.status", "open")],
            )
            .await;
        assert_eq!(unscoped.status, StatusCode::UNPROCESSABLE_ENTITY, "an org-wide key names a project");
        assert!(
            unscoped.html.contains("<div class=\"field refused\">\n    <label for=\"f-project\">"),
            "{}",
            unscoped.html
        );
        let bad = ana.post("/new", &[("kind", "nonsense")]).await;
        assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
        let stored = ana
            .post(
                "/new",
                &[
                    ("kind", "todo"),
                    ("data.title", "Rotate the signing key"),
                    ("data.status", "open"),
                    ("data.priority", "high"),
                    ("tags", "security\r\n\r\nkeys"),
                    ("scope.project", "api"),
                ],
            )
            .await;
        assert_eq!(stored.status, StatusCode::SEE_OTHER, "{}", stored.html);
        let page = ana.get(&stored.location).await;
        assert!(page.html.contains("<h1>Rotate the signing key</h1>"), "{}", page.html);
        assert!(page.html.contains("<span class=\"tag\">keys</span>"), "{}", page.html);
        assert!(page.html.contains("key:acme/ana via web UI") || page.html.contains("ana"), "{}", page.html);
    });
}

fn a_delete_is_confirmed_first_and_undone_after(db: &TestDb) {
    let (app, writer, id) = one_decision(db);
    runtime().block_on(async {
        let mut ana = Session::start(&app, &writer).await;
        let ask = ana.get(&format!("/items/{id}/delete")).await;
        assert!(ask.html.contains("Delete this decision?"), "{}", ask.html);
        assert_eq!(ana.get(&format!("/items/{id}")).await.status, StatusCode::OK, "asking deletes nothing");
        let done = ana.post(&format!("/items/{id}/delete"), &[]).await;
        assert_eq!(done.status, StatusCode::OK, "{}", done.html);
        assert!(done.html.contains(&format!("action=\"/items/{id}/restore\"")) && done.html.contains("Undo"));
        assert_eq!(ana.get(&format!("/items/{id}")).await.status, StatusCode::NOT_FOUND, "deleted");
        let undone = ana.post(&format!("/items/{id}/restore"), &[]).await;
        assert_eq!(
            (undone.status, undone.location.as_str()),
            (StatusCode::SEE_OTHER, &*format!("/items/{id}"))
        );
        assert_eq!(ana.get(&format!("/items/{id}")).await.status, StatusCode::OK, "restored");
    });
}

fn still_true_clears_the_stale_flag_as_the_write_key(db: &TestDb) {
    let repo = std::env::temp_dir().join(format!("cortex-ui-stale-{}", uuid::Uuid::now_v7()));
    std::fs::create_dir_all(repo.join("src")).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("src/auth.rs"), "fn check() {}\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "auth"]);
    let scope = InferredScope::fixed("acme", "api", "main").in_checkout(&repo);
    let service = Arc::new(
        MemoryService::open(&Config::new(db.target().clone(), scope, EmbedderChoice::None)).unwrap(),
    );
    let id = store(
        &service,
        json!({"kind": "section", "scope": {"org": "acme", "project": "api", "branch": "main"},
               "data": {"title": "Tokens", "body": "Tokens are checked by check()."},
               "source": {"files": ["src/auth.rs"]}}),
    );
    std::fs::write(repo.join("src/auth.rs"), "fn check() { /* v2 */ }\n").unwrap();
    git(&repo, &["commit", "-q", "-am", "auth v2"]);
    service.git().sync(&repo).unwrap();
    let (writer, reader) = (key(&service, "ana", "acme", "write"), key(&service, "rob", "acme", "read"));
    let app = app(&service);
    runtime().block_on(async {
        let page = format!("/items/{id}");
        let mut rob = Session::start(&app, &reader).await;
        let seen = rob.get(&page).await;
        assert!(seen.html.contains("May be out of date") && seen.html.contains("<code>src/auth.rs</code>"));
        assert!(!seen.html.contains("/confirm\""), "no Still true for a read key");
        assert_eq!(rob.post(&format!("{page}/confirm"), &[]).await.status, StatusCode::FORBIDDEN);
        let mut ana = Session::start(&app, &writer).await;
        assert!(ana.get(&page).await.html.contains(&format!("action=\"{page}/confirm\"")));
        let confirmed = ana.post(&format!("{page}/confirm"), &[]).await;
        assert_eq!(confirmed.status, StatusCode::OK, "{}", confirmed.html);
        assert!(confirmed.html.contains("Confirmed") && !confirmed.html.contains("May be out of date"));
        assert!(
            confirmed.html.contains("<span class=\"op\">confirm</span> by key:acme/ana via web UI"),
            "audited as the key: {}",
            confirmed.html
        );
    });
    std::fs::remove_dir_all(&repo).unwrap();
}
