//! The gate in front of `/mcp` (and `/metrics`): who is asking — the holder of an API key
//! (`Authorization: Bearer <token>`) or of an OAuth access token (`oauth`), or the local user
//! on a loopback server no key was ever made for — and whether they may ask now: the browser
//! origin, the key's rate, the body's size, the key's calls at once. A refusal is a JSON
//! answer saying which rule refused it.

use super::App;
use super::body;
use super::limits::Refused;
use super::principal::{AccessNote, Principal};
use super::problem::{problem, too_many, unauthorized};
use super::problem_code::ProblemCode;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use cortex_domain::api_key::{self, MAX_RATE_PER_SECOND, Rate, Role};
use cortex_domain::principal::Principal as AuditPrincipal;
use cortex_service::Caller;
use cortex_service::keys::AuthFailure;
use futures::StreamExt;

/// The header that names an MCP session.
const SESSION_ID: &str = "mcp-session-id";

/// A refusal to answer with, boxed: a response is large for an `Err`.
type Refusal = Box<Response>;

/// Every route: a request from a web page whose origin the server was not told to admit is
/// refused (DNS rebinding and cross-site requests come from pages; MCP clients send no Origin).
pub async fn origin(State(app): State<App>, request: Request, next: Next) -> Response {
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let text = origin.to_str().unwrap_or("");
        let normalized = text.trim_end_matches('/').to_ascii_lowercase();
        if !app.options.allowed_origins.contains(&normalized)
            && !super::ui::same_origin(&app, request.headers(), request.uri().path(), &normalized)
        {
            app.metrics.refused(ProblemCode::ForbiddenOrigin);
            let mut response = problem(
                StatusCode::FORBIDDEN,
                ProblemCode::ForbiddenOrigin,
                format!("requests from web pages at {text:?} are not accepted by this server"),
                "MCP clients send no Origin header; for a browser page, start the server with --allow-origin <scheme://host:port> (or CORTEX_HTTP_ALLOW_ORIGIN)",
            );
            // The body was never read: the connection cannot carry the client's next request,
            // so it is drained and closed, and the client told so, not left to find it reset.
            drain(request).await;
            response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
            return response;
        }
    }
    next.run(request).await
}

/// `/mcp`: authentication, rate, body size and calls at once, then the MCP service with the
/// [`Principal`] in the request's extensions.
pub async fn mcp(State(app): State<App>, mut request: Request, next: Next) -> Response {
    let principal = match who(&app, request.headers()).await {
        Ok(p) => p,
        Err(mut refusal) => {
            // With OAuth, every 401 points at the resource's metadata (RFC 9728), so a client
            // without a (valid) token learns where to get one.
            if let Some(verifier) = &app.oauth
                && refusal.status() == StatusCode::UNAUTHORIZED
            {
                let carried = request.headers().contains_key(header::AUTHORIZATION);
                super::oauth::challenge(&mut refusal, verifier, carried);
            }
            return *refusal;
        }
    };
    if let Some(note) = request.extensions().get::<AccessNote>() {
        note.update(|n| n.key = Some(principal.key.clone()));
    }
    // Another key's session is answered as an unknown one: its id says nothing, and the
    // request neither ends nor touches it.
    let session = request.headers().get(SESSION_ID).and_then(|v| v.to_str().ok()).map(str::to_owned);
    if let Some(id) = &session
        && app.sessions.owner(id).is_some_and(|owner| owner != principal.id)
    {
        app.metrics.refused(ProblemCode::SessionNotFound);
        return problem(
            StatusCode::NOT_FOUND,
            ProblemCode::SessionNotFound,
            format!("no session {id:?} is open for the key `{}`", principal.key),
            "send initialize without Mcp-Session-Id to open a session of your own",
        );
    }
    // A call (POST) is admitted against the key's rate and its calls at once, below.
    if request.method() != Method::POST
        && let Err(refused) = app.limits.admit(&principal.id, principal.rate).await
    {
        return limited(&app, &principal, refused, request).await;
    }
    let length =
        request.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if length.is_some_and(|n| n > app.options.max_body_bytes as u64) {
        app.metrics.refused(ProblemCode::TooLarge);
        return problem(
            StatusCode::PAYLOAD_TOO_LARGE,
            ProblemCode::TooLarge,
            format!(
                "the request body is {} bytes, over this server's limit of {} bytes",
                length.unwrap_or(0),
                app.options.max_body_bytes
            ),
            "send fewer or smaller items per memory_store call (CORTEX_HTTP_MAX_BODY_BYTES sets the limit)",
        );
    }
    // A call holds its place until its answer has been sent, not only until the handler
    // returned: in a session, the answer streams after the response headers.
    let permit = if request.method() == Method::POST {
        match app.limits.call(&principal.id, principal.rate).await {
            Ok(permit) => Some(permit),
            Err(refused) => return limited(&app, &principal, refused, request).await,
        }
    } else {
        None
    };
    let owner = principal.id.clone();
    request.extensions_mut().insert(principal);
    let Some(permit) = permit else { return next.run(request).await };
    let (parts, body) = request.into_parts();
    let read = app.budget.read(body, length, app.options.max_body_bytes, app.options.body_timeout).await;
    let (bytes, held) = match read {
        Ok(read) => read,
        Err(refused) => return body_refused(&app, refused),
    };
    let request = Request::from_parts(parts, Body::from(bytes));
    app.metrics.call_started();
    let guard = InFlight { app: app.clone(), _permit: permit, _bytes: held };
    let response = next.run(request).await;
    // A session just opened belongs to the key that opened it.
    if session.is_none()
        && let Some(id) = response.headers().get(SESSION_ID).and_then(|v| v.to_str().ok())
    {
        app.sessions.bind(id, &owner);
    }
    hold_until_sent(response, guard)
}

/// The answer to a request its key's limits refused.
async fn limited(app: &App, principal: &Principal, refused: Refused, request: Request) -> Response {
    match refused {
        Refused::Rate(wait) => {
            app.metrics.refused(ProblemCode::RateLimited);
            drain(request).await;
            too_many(
                ProblemCode::RateLimited,
                format!("the key `{}` is over its rate of {}", principal.key, principal.rate),
                "wait for Retry-After seconds, then retry; the server's admin sets a key's rate with `cortex keys create --rate`",
                wait,
            )
        }
        Refused::Calls => {
            app.metrics.refused(ProblemCode::TooManyCalls);
            drain(request).await;
            too_many(
                ProblemCode::TooManyCalls,
                format!(
                    "the key `{}` has {} calls running already, the most one key may have",
                    principal.key, app.options.max_concurrent_per_key
                ),
                "wait for an answer before sending more (CORTEX_HTTP_MAX_CONCURRENT sets the limit)",
                std::time::Duration::from_secs(1),
            )
        }
        Refused::Unavailable(why) => *internal(why),
    }
}

/// The answer to a body that could not be read whole; the connection closes after it, as
/// the rest of the body may still be on its way.
fn body_refused(app: &App, refused: body::Refused) -> Response {
    let mut response = match refused {
        body::Refused::TimedOut => {
            app.metrics.refused(ProblemCode::BodyTimeout);
            problem(
                StatusCode::REQUEST_TIMEOUT,
                ProblemCode::BodyTimeout,
                format!("the request body did not arrive within {} ms", app.options.body_timeout.as_millis()),
                "send the whole body at once; CORTEX_HTTP_BODY_TIMEOUT_MS sets the limit",
            )
        }
        body::Refused::Busy => {
            app.metrics.refused(ProblemCode::Busy);
            return too_many_bytes(app);
        }
        body::Refused::TooLarge => {
            app.metrics.refused(ProblemCode::TooLarge);
            problem(
                StatusCode::PAYLOAD_TOO_LARGE,
                ProblemCode::TooLarge,
                format!(
                    "the request body is over this server's limit of {} bytes",
                    app.options.max_body_bytes
                ),
                "send fewer or smaller items per memory_store call (CORTEX_HTTP_MAX_BODY_BYTES sets the limit)",
            )
        }
        body::Refused::Broken(why) => problem(
            StatusCode::BAD_REQUEST,
            ProblemCode::BodyBroken,
            format!("the request body could not be read: {why}"),
            "send the body again, with a Content-Length that matches it",
        ),
    };
    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// 503 with `Retry-After`: the server holds as many request bytes as it may at once.
fn too_many_bytes(app: &App) -> Response {
    let mut response = problem(
        StatusCode::SERVICE_UNAVAILABLE,
        ProblemCode::Busy,
        format!(
            "the server is reading or working on {} bytes of requests already, the most it holds at once",
            app.options.max_bytes_in_flight
        ),
        "retry after Retry-After seconds, or send smaller calls; the admin sets the budget with CORTEX_HTTP_MAX_BYTES_IN_FLIGHT",
    );
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(1u64));
    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// Reads what the client already sent of a refused request's body (a little, briefly) before
/// the refusal is answered: closing a connection with unread bytes in it makes the system
/// reset it, and the client could lose the answer (and its `Retry-After`) with it.
async fn drain(request: Request) {
    const DRAINED: usize = 64 * 1024;
    let body = axum::body::to_bytes(request.into_body(), DRAINED);
    let _ = tokio::time::timeout(std::time::Duration::from_millis(500), body).await;
}

/// `/metrics`: from this machine without a key, from elsewhere with an `admin` key.
pub async fn metrics(State(app): State<App>, request: Request, next: Next) -> Response {
    let from_loopback = request
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .is_some_and(|peer| peer.0.ip().is_loopback());
    if !from_loopback || request.headers().contains_key(header::AUTHORIZATION) {
        match who(&app, request.headers()).await {
            Ok(p) if p.role.covers(Role::Admin) => {}
            Ok(p) => {
                app.metrics.refused(ProblemCode::ForbiddenRole);
                return problem(
                    StatusCode::FORBIDDEN,
                    ProblemCode::ForbiddenRole,
                    format!(
                        "/metrics needs a key with role admin; the key `{}` has role {}",
                        p.key,
                        p.role.as_str()
                    ),
                    "scrape from the server's own machine (no key needed), or with an admin key",
                );
            }
            Err(refusal) => return *refusal,
        }
    }
    next.run(request).await
}

/// A call being answered: counted in flight, holding its key's place, until dropped.
struct InFlight {
    app: App,
    _permit: super::limits::CallPermit,
    _bytes: body::Held,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.app.metrics.call_ended();
    }
}

/// The response, its body streamed as it comes, with `guard` dropped once the body has been
/// sent (or the client went away).
pub fn hold_until_sent<G: Send + 'static>(response: Response, guard: G) -> Response {
    let (parts, body) = response.into_parts();
    let stream = body.into_data_stream().map(move |chunk| {
        let _held = &guard;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(stream))
}

/// The principal of a request, or the refusal to answer with.
pub(super) async fn who(app: &App, headers: &HeaderMap) -> Result<Principal, Refusal> {
    let project = header_value(headers, "x-cortex-project", "project")?;
    let branch = header_value(headers, "x-cortex-branch", "branch")?;
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        if app.auth_required().await.map_err(internal)? {
            app.metrics.refused(ProblemCode::MissingKey);
            return Err(Box::new(match app.oauth {
                None => unauthorized(
                    ProblemCode::MissingKey,
                    "this server asks every request for an API key, and this request has none",
                    "send the header `Authorization: Bearer <token>` with a token from the server's admin (`cortex keys create`)",
                ),
                Some(_) => unauthorized(
                    ProblemCode::MissingKey,
                    "this server asks every request for an API key or an OAuth access token, and this request has neither",
                    "sign in through the authorization server this server's metadata names (/.well-known/oauth-protected-resource/mcp) and send `Authorization: Bearer <access token>`, or send an API key from the server's admin (`cortex keys create`)",
                ),
            }));
        }
        let mut caller = app.service.local_caller().as_principal(AuditPrincipal::Loopback);
        caller.scope.project = project.or(caller.scope.project);
        caller.scope.branch = branch.or(caller.scope.branch);
        // The machine's only user, on a server no one else can reach: a rate would protect
        // no one, and a client opening many sessions at once (the MCP conformance suite
        // opens dozens in a second) must not be turned away.
        return Ok(Principal {
            id: "local".into(),
            key: "local".into(),
            role: Role::Admin,
            caller,
            rate: Rate { per_second: MAX_RATE_PER_SECOND },
        });
    };
    let token = value
        .to_str()
        .ok()
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim().to_string());
    if let (Some(verifier), Some(token)) = (&app.oauth, &token)
        && !token.starts_with(api_key::TOKEN_PREFIX)
    {
        return token_holder(app, verifier, token.clone(), project, branch).await;
    }
    let holder = match token {
        None => Err(AuthFailure::Malformed),
        Some(token) => {
            let service = app.service.clone();
            let place = app.key_checks.clone().acquire_owned().await.map_err(internal)?;
            tokio::task::spawn_blocking(move || {
                let _place = place;
                service.keys().authenticate(&token)
            })
            .await
            .map_err(|e| internal(e.to_string()))?
            .map_err(|e| internal(e.to_string()))?
        }
    };
    let holder = holder.map_err(|failure| {
        let (code, message, hint) = match failure {
            AuthFailure::Malformed => (
                ProblemCode::MalformedKey,
                "the Authorization header is not `Bearer <token>` with a Cortex token",
                "send the whole token `cortex keys create` printed: `Authorization: Bearer cortex_<16 hex>_<64 hex>`",
            ),
            AuthFailure::Unknown => (
                ProblemCode::UnknownKey,
                "no key has this token",
                "check that the token was copied whole, or ask the server's admin for a key",
            ),
            AuthFailure::Revoked => (ProblemCode::RevokedKey, "this key was revoked", "ask the server's admin for a new key"),
            AuthFailure::Expired => (ProblemCode::ExpiredKey, "this key has expired", "ask the server's admin for a new key"),
        };
        app.metrics.refused(code);
        Box::new(unauthorized(code, message, hint))
    })?;
    let caller = holder.caller(project.as_deref(), branch.as_deref()).map_err(|why| {
        app.metrics.refused(ProblemCode::ForbiddenScope);
        problem(
            StatusCode::FORBIDDEN,
            ProblemCode::ForbiddenScope,
            why,
            "set X-Cortex-Project to a project this key may reach, or leave it out",
        )
    })?;
    Ok(Principal {
        id: format!("key:{}", holder.id),
        key: holder.name,
        role: holder.role,
        caller,
        rate: holder.rate.unwrap_or(app.options.default_rate),
    })
}

/// The holder of an OAuth access token: a principal exactly as a key's holder is, bound to the
/// token's org and projects, with the role its scopes grant and the default rate; its changes
/// recorded as the token's subject's at its issuer.
async fn token_holder(
    app: &App,
    verifier: &std::sync::Arc<super::oauth::Verifier>,
    token: String,
    project: Option<String>,
    branch: Option<String>,
) -> Result<Principal, Refusal> {
    let identity = super::oauth::authenticate(verifier, token).await.map_err(|(code, refusal)| {
        app.metrics.refused(code);
        Box::new(refusal)
    })?;
    let caller =
        Caller::for_key(identity.bound.clone(), project.as_deref(), branch.as_deref()).map_err(|why| {
            app.metrics.refused(ProblemCode::ForbiddenScope);
            problem(
                StatusCode::FORBIDDEN,
                ProblemCode::ForbiddenScope,
                why,
                "set X-Cortex-Project to a project this token may reach (its projects claim), or leave it out",
            )
        })?;
    let caller = caller.as_principal(AuditPrincipal::OAuth {
        issuer: verifier.options.issuer.clone(),
        subject: identity.subject.clone(),
        client: identity.client_id.clone(),
    });
    Ok(Principal {
        id: format!("oauth:{}", identity.subject),
        key: format!("oauth:{}", identity.subject),
        role: identity.role,
        caller,
        rate: app.options.default_rate,
    })
}

/// A scope header's value, checked as a scope value is; 400 naming the header otherwise.
fn header_value(headers: &HeaderMap, name: &str, field: &str) -> Result<Option<String>, Refusal> {
    let Some(value) = headers.get(name) else { return Ok(None) };
    let text = value.to_str().map_err(|_| {
        Box::new(problem(
            StatusCode::BAD_REQUEST,
            ProblemCode::InvalidHeader,
            format!("the header {name} is not text"),
            "send a plain ASCII name",
        ))
    })?;
    cortex_domain::scope::check_value(field, text).map(Some).map_err(|e| {
        Box::new(problem(
            StatusCode::BAD_REQUEST,
            ProblemCode::InvalidHeader,
            format!("the header {name}: {}", e.message),
            e.human_hint,
        ))
    })
}

fn internal(e: impl std::fmt::Display) -> Refusal {
    tracing::error!("cannot check the request's key: {e}");
    Box::new(problem(
        StatusCode::SERVICE_UNAVAILABLE,
        ProblemCode::Internal,
        format!("the server cannot check keys now: {e}"),
        "a server-side failure, not your request: retry; if it persists, the admin should run `cortex doctor`",
    ))
}

#[cfg(test)]
mod tests;
