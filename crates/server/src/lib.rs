//! The team application (`cortex serve --http ADDR`): everything a shared server needs around
//! the MCP adapter (`cortex-mcp`), which changes for other reasons — who may ask (API keys,
//! OAuth), how much (limits), the ops endpoints and the web UI.
//!
//! MCP at `/mcp` through rmcp's Streamable HTTP service (both eras: `initialize` sessions with
//! `Mcp-Session-Id`, ended by `DELETE`, and stateless 2026-07-28 requests), mounted in axum
//! behind the gate, plus `/health`, `/ready` and `/metrics`.
//!
//! - `options`: where it listens and the limits (flags and environment)
//! - `gate`: origin, API key, rate, body size, calls at once, sessions of other keys;
//!   `limits`: their state per key; `body`: reading bodies in time and within the byte budget
//! - `sessions`: MCP sessions bound to their key, capped per key
//! - `principal` (the adapter's): who a request comes from, as the MCP server reads it
//! - `access`: one log line per request; `metrics`: the Prometheus metrics
//! - `ops`: health, readiness, metrics; `problem`: refusals as JSON
//! - `listen`: accepting and serving connections, with their timeouts; `conns`: their caps
//! - `tls`: HTTPS (`--tls-cert` / `--tls-key`)
//! - `oauth`: OAuth access tokens beside API keys, and the resource's metadata
//! - `ui`: the web UI (`/`, `/items/<id>`; see docs/UI.md)

mod access;
mod body;
mod conns;
mod error;
mod gate;
mod limits;
mod listen;
mod metrics;
mod oauth;
mod ops;
mod options;
mod problem;
mod problem_code;
mod sessions;
pub mod settings;
#[cfg(test)]
mod test_support;
mod tls;
mod ui;

pub use error::ServeError;
pub use limits::Limits;
pub use metrics::Metrics;
pub use options::{HttpOptions, parse_addr};
pub use tls::TlsFiles;

use axum::Router;
use axum::middleware::from_fn_with_state;
use axum::routing::get;
use cortex_mcp::CortexServer;
/// Who a request comes from: the gate writes it, the MCP adapter reads it.
pub(crate) use cortex_mcp::principal;
use cortex_service::MemoryService;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Key checks that run at once, per core; the others wait their turn, first come first
/// served. A check is a lookup by the key's id (a few microseconds on SQLite, a round trip on
/// PostgreSQL): a hundred requests at once each started a blocking thread of their own for
/// it, threads the cores then switched between.
const KEY_CHECKS_PER_CORE: usize = 4;

/// How long, past the longest a call may take to arrive and be answered, its place among its
/// key's calls in the shared limits outlives a server that died holding it.
const CALL_LEASE_MARGIN: Duration = Duration::from_secs(30);

/// What every request handler shares.
#[derive(Clone)]
pub(crate) struct App {
    service: Arc<MemoryService>,
    options: Arc<HttpOptions>,
    limits: Arc<limits::KeyLimits>,
    metrics: Arc<Metrics>,
    /// Who owns each MCP session.
    sessions: Arc<sessions::KeyedSessions>,
    /// Request bytes in flight, over all keys.
    budget: Arc<body::Budget>,
    /// Set once any key exists (keys are never deleted): then every request needs one.
    keys_exist: Arc<AtomicBool>,
    /// Key checks running at once, each on a blocking thread (see [`KEY_CHECKS_PER_CORE`]).
    key_checks: Arc<tokio::sync::Semaphore>,
    /// The schema version the store was opened at: `/ready` compares against it.
    schema_version: i64,
    /// Checks OAuth access tokens, when an authorization server is configured.
    oauth: Option<Arc<oauth::Verifier>>,
}

impl App {
    /// Whether a request must carry a key: always beyond loopback or with OAuth, and once any
    /// key exists.
    async fn auth_required(&self) -> Result<bool, error::Failure> {
        if !self.options.is_loopback() || self.oauth.is_some() || self.keys_exist.load(Ordering::Relaxed) {
            return Ok(true);
        }
        let service = self.service.clone();
        let exists = tokio::task::spawn_blocking(move || service.keys().any()).await??;
        if exists {
            self.keys_exist.store(true, Ordering::Relaxed);
        }
        Ok(exists)
    }
}

/// The whole application (routes, the gate, the access log) and its metrics. `stop` ends MCP
/// sessions and their streams when cancelled; `schema_version` is the store's as opened.
pub fn router(
    service: Arc<MemoryService>,
    options: HttpOptions,
    stop: CancellationToken,
    schema_version: i64,
) -> (Router, Arc<Metrics>) {
    let metrics = Arc::new(Metrics::default());
    let oauth = options.oauth.clone().map(|o| Arc::new(oauth::Verifier::new(o)));
    if let Some(verifier) = &oauth {
        oauth::warm_in_background(verifier.clone());
    }
    let app = App {
        limits: Arc::new(match service.keys().shared_limits() {
            Some(shared) => limits::KeyLimits::shared(
                shared,
                options.max_concurrent_per_key,
                options.body_timeout + options.call_timeout + CALL_LEASE_MARGIN,
            ),
            None => limits::KeyLimits::Local(limits::Limits::new(options.max_concurrent_per_key)),
        }),
        sessions: Arc::new(sessions::KeyedSessions::new(
            options.max_sessions_per_key,
            options.session_idle_timeout,
            metrics.clone(),
        )),
        budget: Arc::new(body::Budget::new(options.max_bytes_in_flight)),
        options: Arc::new(options),
        keys_exist: Arc::new(AtomicBool::new(false)),
        key_checks: Arc::new(tokio::sync::Semaphore::new(
            KEY_CHECKS_PER_CORE * std::thread::available_parallelism().map_or(1, |n| n.get()),
        )),
        metrics: metrics.clone(),
        service: service.clone(),
        schema_version,
        oauth,
    };
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(stop)
        .with_max_request_body_bytes(app.options.max_body_bytes)
        .with_allowed_origins(app.options.allowed_origins.clone())
        .enforce_origin_validation();
    // rmcp's Host check guards a loopback server against DNS rebinding; beyond loopback, the
    // server's own names are unknown here and every request carries a key instead.
    if !app.options.is_loopback() {
        config = config.disable_allowed_hosts();
    } else if let Some(oauth) = &app.options.oauth {
        // Behind a proxy on this machine, clients name the public host (a connector must).
        let mut hosts = config.allowed_hosts.clone();
        hosts.push(oauth.public_authority().to_string());
        config = config.with_allowed_hosts(hosts);
    }
    let server = CortexServer::for_http(service, metrics.clone(), app.options.call_timeout);
    let mcp = StreamableHttpService::new(move || Ok(server.clone()), app.sessions.clone(), config);
    let router = Router::new()
        .route_service("/mcp", mcp)
        .route_layer(from_fn_with_state(app.clone(), gate::mcp))
        .merge(
            Router::new()
                .route("/metrics", get(ops::metrics))
                .route_layer(from_fn_with_state(app.clone(), gate::metrics)),
        )
        .route("/.well-known/oauth-protected-resource", get(oauth::metadata_document))
        .route("/.well-known/oauth-protected-resource/mcp", get(oauth::metadata_document))
        .route("/health", get(ops::health))
        .route("/ready", get(ops::ready))
        .merge(ui::routes(app.clone()))
        .layer(from_fn_with_state(app.clone(), gate::origin))
        .layer(from_fn_with_state(app.clone(), access::log))
        .with_state(app);
    (router, metrics)
}

/// Serves until SIGTERM or SIGINT; then stops accepting, lets calls in flight finish (for at
/// most [`options::SHUTDOWN_GRACE`]), ends sessions and returns. Connections are capped and
/// timed (`conns`, `listen`).
pub async fn serve(service: Arc<MemoryService>, options: HttpOptions) -> error::Result<()> {
    serve_announced(service, options, |_| {}).await
}

/// [`serve`], calling `listening` with the bound address once the port is this server's and
/// before the first connection is accepted (`cortex ui` opens the browser from there).
pub async fn serve_announced(
    service: Arc<MemoryService>,
    options: HttpOptions,
    listening: impl FnOnce(std::net::SocketAddr) + Send,
) -> error::Result<()> {
    let addr = options.addr;
    let loopback = options.is_loopback();
    let stop = CancellationToken::new();
    let tls = options.tls.as_ref().map(TlsFiles::server_config).transpose()?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    // The store does blocking I/O (PostgreSQL's client runs its own runtime): off the workers.
    let (keys, schema_version) = {
        let service = service.clone();
        tokio::task::spawn_blocking(move || (service.keys().any(), service.administration().ready())).await?
    };
    let keys = keys.map_err(ServeError::Keys)?;
    let schema_version = schema_version.map_err(ServeError::Database)?.schema_version;
    let shutdown = shutdown_signal();
    let tcp =
        tokio::net::TcpListener::bind(addr).await.map_err(|source| ServeError::Listen { addr, source })?;
    let local = tcp.local_addr().map_err(ServeError::Socket)?;
    listening(local);
    let options = options.with_own_origins(scheme, local);
    let oauth = options.oauth.is_some();
    let descriptors = listen::descriptor_limit();
    let policy = conns::Policy {
        max_total: conns::cap_for_descriptors(options.max_connections, descriptors),
        max_per_ip: options.max_connections_per_ip,
        header_timeout: options.header_timeout,
        idle_timeout: options.idle_timeout,
    };
    let (router, in_flight) = router(service.clone(), options, stop.clone(), schema_version);
    let open = loopback && !keys && !oauth;
    if open {
        tracing::warn!(
            "no API keys exist: serving without authentication, as the local user, to this machine only. Make keys with `cortex keys create` to require them"
        );
    }
    tracing::info!(
        connections = policy.max_total,
        per_address = policy.max_per_ip,
        descriptor_limit = descriptors.map_or_else(|| "unknown".to_string(), |n| n.to_string()),
        "connections open at once: at most {} ({} per client address)",
        policy.max_total,
        policy.max_per_ip
    );
    // The address goes to stderr as the line a script can wait for.
    tracing::info!(addr = %local, auth = match (open, oauth) {
        (true, _) => "none (loopback, no keys)",
        (false, true) => "API keys and OAuth access tokens",
        (false, false) => "API keys",
    }, "cortex serving MCP over HTTP at {scheme}://{local}/mcp");
    let registry = Arc::new(conns::Connections::new(policy, in_flight.clone()));
    let signalled = CancellationToken::new();
    let server = {
        let (registry, signalled) = (registry.clone(), signalled.clone());
        async move {
            let accepting = listen::accept_loop(
                tcp,
                tls.map(tokio_rustls::TlsAcceptor::from),
                router,
                registry.clone(),
                signalled.clone(),
            );
            let watching = async {
                shutdown.await;
                tracing::info!("stopping: no new connections; finishing the calls in flight");
                signalled.cancel();
            };
            tokio::join!(accepting, watching);
            while registry.open() > 0 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    // Once signalled: wait for the calls in flight (bounded), then end sessions and their
    // streams, which lets the connections that carry them close.
    let drain = {
        let stop = stop.clone();
        async move {
            signalled.cancelled().await;
            let deadline = Instant::now() + options::SHUTDOWN_GRACE;
            while in_flight.in_flight() > 0 && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            if in_flight.in_flight() > 0 {
                tracing::warn!(
                    calls = in_flight.in_flight(),
                    "calls still running at the end of the grace period: leaving them"
                );
            }
            stop.cancel();
            // Connections the server cannot close by itself get a last moment, then are left.
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    };
    tokio::select! {
        () = server => Ok(()),
        () = drain => Ok(()),
    }
}

/// SIGINT (Ctrl-C) or SIGTERM (a service manager stopping the server), watched from this call
/// on: a signal that comes before the server first polls the future still stops it cleanly
/// instead of killing the process (an `async fn` would register only at that first poll, and
/// the server polls it on a task of its own, after the first requests may have been answered).
fn shutdown_signal() -> Pin<Box<dyn Future<Output = ()> + Send>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
            (Ok(mut term), Ok(mut interrupt)) => {
                return Box::pin(async move {
                    tokio::select! {
                        _ = term.recv() => {}
                        _ = interrupt.recv() => {}
                    }
                });
            }
            (Err(e), _) | (_, Err(e)) => {
                tracing::warn!("cannot watch for SIGTERM and SIGINT ({e}): stop the server with Ctrl-C")
            }
        }
    }
    Box::pin(async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!("cannot watch for SIGINT ({e}): the server stops only when killed");
            std::future::pending::<()>().await;
        }
    })
}
