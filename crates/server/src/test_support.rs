//! For the tests of this crate: a service over a fresh test database, the whole router as a
//! server serves it, keys and items to ask about, and requests sent straight into the router
//! (`oneshot`) from the peer address a connection would carry. Each call runs to its answer on
//! the server's own runtime, so a test reads as the steps a client takes; the store is only
//! touched between requests, never from inside the runtime (PostgreSQL's client runs its own).

use crate::{HttpOptions, router};
use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, HeaderValue, Request, StatusCode, header};
use cortex_domain::item::StoreRequest;
use cortex_service::keys::KeySpec;
use cortex_service::scope_inference::InferredScope;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Config, MemoryService};
use cortex_testdb::TestDb;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// A client on this machine.
pub const LOOPBACK: &str = "127.0.0.1:40000";
/// A client on another machine (TEST-NET-1: a documentation address, never contacted).
pub const ELSEWHERE: &str = "192.0.2.7:40000";
/// The Host a browser on this machine names a loopback server by.
pub const HOST: &str = "127.0.0.1:8787";

/// The service (standing at acme/api/main, no embedder) over `db`.
pub fn service(db: &TestDb) -> Arc<MemoryService> {
    let scope = InferredScope::fixed("acme", "api", "main");
    Arc::new(MemoryService::open(&Config::new(db.target().clone(), scope, EmbedderChoice::None)).unwrap())
}

/// One server's router over a service, with its own runtime.
pub struct TestServer {
    pub service: Arc<MemoryService>,
    router: Router,
    runtime: tokio::runtime::Runtime,
}

impl TestServer {
    /// A server listening on loopback with the default settings. `db` must outlive it: a
    /// SQLite database's folder removed under the server fails the next connection its pools
    /// open, so `TestServer::new(&TestDb::sqlite())`, which drops it at once, fails by chance.
    pub fn new(db: &TestDb) -> TestServer {
        TestServer::with(db, "127.0.0.1:0", &[])
    }

    /// A server listening at `addr` with `settings` as its environment (the settings tables'
    /// names and values).
    pub fn with(db: &TestDb, addr: &str, settings: &[(&str, &str)]) -> TestServer {
        TestServer::over(service(db), addr, settings)
    }

    /// A server over an open service (two servers may share one).
    pub fn over(service: Arc<MemoryService>, addr: &str, settings: &[(&str, &str)]) -> TestServer {
        let env = |name: &str| settings.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string());
        // `--allow-origin`, as the CLI hands it over from its flag or the variable.
        let allowed = env(crate::settings::HTTP_ALLOW_ORIGIN.name).unwrap_or_default();
        let origins: Vec<String> = allowed.split(',').filter(|o| !o.is_empty()).map(str::to_string).collect();
        let options = HttpOptions::resolve(addr, &origins, env).unwrap();
        let schema = service.administration().stats().unwrap().schema_version;
        let runtime =
            tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let router = {
            let _entered = runtime.enter();
            router(service.clone(), options, CancellationToken::new(), schema).0
        };
        TestServer { service, router, runtime }
    }

    /// A key of the org `acme` with `role` (`read`, `write`, `admin`): its token.
    pub fn key(&self, name: &str, role: &str) -> String {
        self.key_of(KeySpec {
            name: name.into(),
            org: "acme".into(),
            role: role.into(),
            ..KeySpec::default()
        })
    }

    pub fn key_of(&self, spec: KeySpec) -> String {
        self.service.keys().create(&spec).unwrap().token
    }

    /// A section stored by the local user in `org`'s project `api` (branch main): its id.
    pub fn item(&self, org: &str, title: &str, body: &str) -> String {
        let item = json!({"kind": "section", "scope": {"org": org, "project": "api", "branch": "main"},
            "data": {"title": title, "heading": title, "body": body}});
        let request = StoreRequest::from_json(&json!({ "items": [item] })).unwrap();
        let stored = self.service.memory_store().store(&request).unwrap();
        let result = stored.results.into_iter().next().unwrap();
        result.id.unwrap_or_else(|| panic!("not stored: {:?}", result.error))
    }

    /// Runs `future` (requests of the test's own making) on the server's runtime.
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    /// Sends `request` as coming from `peer` and reads the whole answer.
    pub async fn send_from(&self, peer: &str, mut request: Request<Body>) -> Answer {
        request.extensions_mut().insert(ConnectInfo(peer.parse::<SocketAddr>().unwrap()));
        let response = self.router.clone().oneshot(request).await.unwrap();
        let (parts, body) = response.into_parts();
        let bytes = axum::body::to_bytes(body, 8 << 20).await.unwrap();
        Answer {
            status: parts.status,
            headers: parts.headers,
            text: String::from_utf8_lossy(&bytes).into_owned(),
        }
    }

    /// [`TestServer::send_from`] on this machine, to its end.
    pub fn send(&self, request: Request<Body>) -> Answer {
        self.block_on(self.send_from(LOOPBACK, request))
    }

    /// `GET path` from a browser on this machine, signed in with `cookie` when given.
    pub fn get(&self, path: &str, cookie: Option<&str>) -> Answer {
        self.send(browser("GET", path, cookie).body(Body::empty()).unwrap())
    }

    /// A form POST from a browser on this machine (no Origin: as a same-origin form's may be).
    pub fn post_form(&self, path: &str, cookie: Option<&str>, fields: &[(&str, &str)]) -> Answer {
        let body = form_urlencoded::Serializer::new(String::new()).extend_pairs(fields).finish();
        let request = browser("POST", path, cookie)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(body))
            .unwrap();
        self.send(request)
    }

    /// Signs in through the sign-in form with `token`.
    pub fn sign_in(&self, token: &str) -> Signed {
        let answer = self.post_form("/login", None, &[("token", token)]);
        assert_eq!(answer.status, StatusCode::SEE_OTHER, "signed in: {}", answer.text);
        let cookie = answer.cookie().expect("a session cookie");
        let home = self.get("/", Some(&cookie));
        let csrf = home.csrf().unwrap_or_else(|| panic!("a CSRF token on the home page: {}", home.text));
        Signed { cookie, csrf }
    }

    /// An MCP call (`tools/call` of `tool` with `arguments`, a stateless request) with
    /// `token`: the tool's structured answer, or the refusal as JSON.
    pub fn call(&self, token: Option<&str>, tool: &str, arguments: Value) -> Value {
        let request = tool_call(token, tool, arguments);
        let answer = self.send(request);
        if answer.status != StatusCode::OK {
            return answer.json();
        }
        // An event stream or plain JSON: the JSON-RPC message is the JSON in it.
        let message = answer
            .text
            .lines()
            .map(|l| l.strip_prefix("data:").unwrap_or(l).trim())
            .find_map(|l| serde_json::from_str::<Value>(l).ok())
            .unwrap_or_else(|| panic!("no JSON-RPC answer in {}", answer.text));
        match message["result"].get("structuredContent") {
            Some(content) => content.clone(),
            None => message,
        }
    }
}

/// A request as a browser on this machine sends it to a loopback server.
pub fn browser(method: &str, path: &str, cookie: Option<&str>) -> axum::http::request::Builder {
    let request = Request::builder().method(method).uri(path).header(header::HOST, HOST);
    match cookie {
        Some(cookie) => request.header(header::COOKIE, cookie),
        None => request,
    }
}

/// A POST to `/mcp` with `body`, carrying `token` when given.
pub fn mcp(token: Option<&str>, body: &str) -> Request<Body> {
    let mut request = Request::builder()
        .method("POST")
        .uri("/mcp")
        .header(header::HOST, HOST)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2025-06-18");
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    request.body(Body::from(body.to_string())).unwrap()
}

/// A stateless `tools/call` (the 2026-07-28 era: one POST carrying what a session's handshake
/// would have said) with `token`.
pub fn tool_call(token: Option<&str>, tool: &str, arguments: Value) -> Request<Body> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
    "params": {"name": tool, "arguments": arguments, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "cortex-server-tests", "version": "0"},
    }}});
    let mut request = mcp(token, &body.to_string());
    let headers = request.headers_mut();
    headers.insert("MCP-Protocol-Version", HeaderValue::from_static("2026-07-28"));
    headers.insert("Mcp-Method", HeaderValue::from_static("tools/call"));
    headers.insert("Mcp-Name", HeaderValue::from_str(tool).unwrap());
    request
}

/// The smallest call a key of any role may make: a find.
pub fn find(token: Option<&str>) -> Request<Body> {
    tool_call(token, "memory_find", json!({"query": "anything", "mode": "fast"}))
}

/// A browser's session: its cookie (`cortex_session=<id>`) and the token its forms carry.
pub struct Signed {
    pub cookie: String,
    pub csrf: String,
}

/// One whole answer.
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub text: String,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text))
    }

    /// The refusal's `error.code`.
    pub fn code(&self) -> Option<String> {
        let value: Value = serde_json::from_str(&self.text).ok()?;
        value["error"]["code"].as_str().map(str::to_string)
    }

    pub fn header(&self, name: impl header::AsHeaderName) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The cookie the answer sets, as a browser sends it back (`name=value`).
    pub fn cookie(&self) -> Option<String> {
        let set = self.header(header::SET_COOKIE)?;
        Some(set.split(';').next()?.to_string())
    }

    /// The CSRF token of the page's forms.
    pub fn csrf(&self) -> Option<String> {
        let (_, rest) = self.text.split_once(r#"name="csrf" value=""#)?;
        Some(rest.split('"').next()?.to_string())
    }
}
