//! Who a UI request is shown to. A session's API key is checked on every request exactly as
//! `/mcp` checks it (the gate's `who`), so a revoked or expired key ends the session at once;
//! on a keyless loopback server the local user is shown the memory without signing in. Also
//! `POST /login`, `POST /logout`, and the CSRF check every other form passes.

use super::Ui;
use super::page::{self, Chrome, Problem};
use super::session::{self, Session};
use crate::gate::who;
use crate::limits::{CallPermit, Refused};
use crate::principal::Principal;
use crate::problem_code::ProblemCode;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use cortex_domain::api_key::Role;
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;

/// A request the UI answers: who it is for, and the session it belongs to.
pub struct Viewer {
    pub principal: Principal,
    pub session: Session,
    /// A session this request started (the keyless local user's): its cookie goes out with
    /// the answer.
    new_cookie: Option<String>,
    /// The request's place among its principal's calls at once, held while it is answered
    /// (a page is rendered whole before it is sent).
    _call: CallPermit,
}

impl Viewer {
    /// The 403 page when the viewer's role does not cover `needed` for `what`.
    pub fn lacks(&self, needed: Role, what: &str) -> Option<Response> {
        if self.principal.role.covers(needed) {
            return None;
        }
        Some(page::message(
            StatusCode::FORBIDDEN,
            "Refused",
            Problem::new(
                format!(
                    "{what} needs a key with role {}; the key `{}` has role {}",
                    needed.as_str(),
                    self.principal.key,
                    self.principal.role.as_str()
                ),
                format!("sign in with a key of role {} or higher", needed.as_str()),
            ),
            Some(self.chrome()),
        ))
    }

    pub fn chrome(&self) -> Chrome {
        Chrome {
            who: self.principal.key.clone(),
            role: self.principal.role.as_str(),
            csrf: self.session.csrf.clone(),
            signed_in: self.session.token.is_some(),
        }
    }

    /// The answer, with the session's cookie if this request started it.
    pub fn answer(&self, response: Response) -> Response {
        match &self.new_cookie {
            Some(cookie) => page::with_cookie(response, cookie),
            None => response,
        }
    }
}

/// The viewer of a page; otherwise the answer to give instead (the sign-in form, why).
pub async fn viewer(ui: &Ui, headers: &HeaderMap) -> Result<Viewer, Response> {
    let now = Instant::now();
    if let Some(session) = session::cookie_id(headers).and_then(|id| ui.sessions.touch(&id, now)) {
        return match principal_of(ui, session.token.as_deref()).await {
            Ok(principal) => {
                let call = admit_call(ui, &principal).await.map_err(|refused| *refused)?;
                Ok(Viewer { principal, session, new_cookie: None, _call: call })
            }
            Err((status, problem)) => Err(ended(ui, &session, status, problem)),
        };
    }
    match principal_of(ui, None).await {
        Ok(principal) => {
            let call = admit_call(ui, &principal).await.map_err(|refused| *refused)?;
            let session = ui.sessions.start(None, &principal.id, now).map_err(internal)?;
            let new_cookie = Some(session::set_cookie(&session.id, ui.secure()));
            Ok(Viewer { principal, session, new_cookie, _call: call })
        }
        Err((StatusCode::UNAUTHORIZED, _)) => Err(page::sign_in(ui, StatusCode::OK, None)),
        Err((status, problem)) => Err(page::message(status, "Not available", problem, None)),
    }
}

/// The principal for a session's token (or none: the local user), as the gate finds it; else
/// the status and words of the gate's refusal.
pub(super) async fn principal_of(ui: &Ui, token: Option<&str>) -> Result<Principal, (StatusCode, Problem)> {
    let mut headers = HeaderMap::new();
    if let Some(token) = token {
        let value = HeaderValue::from_str(&format!("Bearer {}", token.trim()))
            .map_err(|_| (StatusCode::UNAUTHORIZED, not_a_token()))?;
        headers.insert(header::AUTHORIZATION, value);
    }
    match who(&ui.app, &headers).await {
        Ok(principal) => Ok(principal),
        Err(refusal) => Err(refusal_words(*refusal).await),
    }
}

/// The gate's JSON refusal as words for a page: a token the form cannot have sent as a
/// header is named as what was pasted, not as an `Authorization` header.
async fn refusal_words(refusal: Response) -> (StatusCode, Problem) {
    let status = refusal.status();
    let body = axum::body::to_bytes(refusal.into_body(), 64 * 1024).await.unwrap_or_default();
    let error = serde_json::from_slice::<serde_json::Value>(&body).ok().and_then(|v| v.get("error").cloned());
    let text = |field: &str| {
        error.as_ref().and_then(|e| e.get(field)).and_then(|v| v.as_str()).unwrap_or_default().to_string()
    };
    if text("code") == ProblemCode::MalformedKey.as_str() {
        return (status, not_a_token());
    }
    (status, Problem::new(text("message"), text("human_hint")))
}

fn not_a_token() -> Problem {
    Problem::new(
        "this is not a Cortex token",
        "paste the whole token `cortex keys create` printed: it starts with cortex_ and has no spaces",
    )
}

/// `POST /login` with the form field `token`: a session for the key, or the sign-in form again
/// saying why not.
pub async fn login(State(ui): State<Ui>, request: Request) -> Response {
    let fields = match form(&ui, request.into_body()).await {
        Ok(fields) => fields,
        Err(response) => return response,
    };
    let token = field(&fields, "token").trim().to_string();
    if token.is_empty() {
        return page::sign_in(
            &ui,
            StatusCode::UNAUTHORIZED,
            Some(Problem::new("no token was given", "paste the token of your API key into the field")),
        );
    }
    match principal_of(&ui, Some(&token)).await {
        Ok(principal) => match over_rate(&ui, &principal).await {
            Some(refused) => refused,
            None => match ui.sessions.start(Some(token), &principal.id, Instant::now()) {
                Ok(session) => {
                    tracing::info!(target: "cortex::access", key = %principal.key, "signed in to the web UI");
                    audit_admin_sign_in(&ui, &principal, "with an API key").await;
                    page::with_cookie(page::see_other("/"), &session::set_cookie(&session.id, ui.secure()))
                }
                Err(e) => internal(e),
            },
        },
        Err((status, problem)) => page::sign_in(&ui, status, Some(problem)),
    }
}

/// An admin's sign-in, recorded in the audit trail (a `sign_in` record in the admin's org,
/// naming the principal and how); the other roles' sign-ins change nothing and are only
/// logged. A failure to record is logged, never the sign-in's answer.
pub(super) async fn audit_admin_sign_in(ui: &Ui, principal: &Principal, how: &'static str) {
    if principal.role != Role::Admin {
        return;
    }
    let org = principal.caller.bound.as_ref().map(|b| b.org.clone()).unwrap_or_default();
    let service = super::keys::as_admin(ui, principal);
    match tokio::task::spawn_blocking(move || service.keys().record_admin_sign_in(&org, how)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!("an admin's sign-in was not recorded in the audit trail: {e}"),
        Err(e) => tracing::warn!("an admin's sign-in was not recorded in the audit trail: {e}"),
    }
}

/// 429 with `Retry-After` when `principal` is over its rate: a UI request is counted as an
/// MCP call is, against the same limits `/mcp` applies, so the UI is no way around them.
pub(super) async fn over_rate(ui: &Ui, principal: &Principal) -> Option<Response> {
    let refused = ui.app.limits.admit(&principal.id, principal.rate).await.err()?;
    Some(refusal(ui, principal, refused))
}

/// A place among the principal's calls at once (after its rate), held until the page is
/// answered; 429 when over its rate or when they are all taken.
async fn admit_call(ui: &Ui, principal: &Principal) -> Result<CallPermit, Box<Response>> {
    ui.app
        .limits
        .call(&principal.id, principal.rate)
        .await
        .map_err(|refused| Box::new(refusal(ui, principal, refused)))
}

/// The page for a request its principal's limits refused.
fn refusal(ui: &Ui, principal: &Principal, refused: Refused) -> Response {
    match refused {
        Refused::Rate(wait) => too_many(
            ui,
            ProblemCode::RateLimited,
            format!("the key `{}` is over its rate of {}", principal.key, principal.rate),
            "wait a moment and reload; the server's admin sets a key's rate with `cortex keys create --rate`",
            wait,
        ),
        Refused::Calls => too_many(
            ui,
            ProblemCode::TooManyCalls,
            format!(
                "the key `{}` has {} calls running already, the most one key may have",
                principal.key, ui.app.options.max_concurrent_per_key
            ),
            "wait for a page to load before asking for more (CORTEX_HTTP_MAX_CONCURRENT sets the limit)",
            Duration::from_secs(1),
        ),
        Refused::Unavailable(why) => internal(why),
    }
}

fn too_many(ui: &Ui, code: ProblemCode, message: String, hint: &str, wait: Duration) -> Response {
    ui.app.metrics.refused(code);
    let problem = Problem::new(message, hint);
    let mut answer = page::message(StatusCode::TOO_MANY_REQUESTS, "Too many requests", problem, None);
    let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
    answer.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    answer
}

/// `POST /logout` (with the session's CSRF token): the session ends.
pub async fn logout(State(ui): State<Ui>, request: Request) -> Response {
    let (headers, body) = split(request);
    match checked_form(&ui, &headers, body).await {
        Ok((viewer, _)) => {
            ui.sessions.end(&viewer.session.id);
            page::with_cookie(page::see_other("/"), &ui.clear_cookie())
        }
        Err(response) => response,
    }
}

pub fn split(request: Request) -> (HeaderMap, Body) {
    let (parts, body) = request.into_parts();
    (parts.headers, body)
}

/// A form POST of a live session: its fields, once its `csrf` field matches the session's
/// token; 403 (changing nothing) otherwise.
pub async fn checked_form(
    ui: &Ui,
    headers: &HeaderMap,
    body: Body,
) -> Result<(Viewer, Vec<(String, String)>), Response> {
    let forbidden = |why: &str| {
        page::message(
            StatusCode::FORBIDDEN,
            "Refused",
            Problem::new(why, "reload the page from this server and submit its form again"),
            None,
        )
    };
    let Some(session) = session::cookie_id(headers).and_then(|id| ui.sessions.touch(&id, Instant::now()))
    else {
        return Err(forbidden("this form was not sent from a live session of this server"));
    };
    let fields = form(ui, body).await?;
    let sent = field(&fields, "csrf");
    if sent.is_empty() || !bool::from(sent.as_bytes().ct_eq(session.csrf.as_bytes())) {
        return Err(forbidden("this form does not carry this session's CSRF token"));
    }
    let viewer = match principal_of(ui, session.token.as_deref()).await {
        Ok(principal) => {
            let call = admit_call(ui, &principal).await.map_err(|refused| *refused)?;
            Viewer { principal, session, new_cookie: None, _call: call }
        }
        Err((status, problem)) => return Err(ended(ui, &session, status, problem)),
    };
    Ok((viewer, fields))
}

/// The answer when a session's key no longer passes the gate: the session ends (a revoked or
/// expired key) and the sign-in form says why; a server-side failure ends nothing.
fn ended(ui: &Ui, session: &Session, status: StatusCode, problem: Problem) -> Response {
    if status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN {
        return page::message(status, "Not available", problem, None);
    }
    ui.sessions.end(&session.id);
    let problem = Problem::new(format!("Your session ended: {}", problem.message), problem.hint);
    page::with_cookie(page::sign_in(ui, StatusCode::UNAUTHORIZED, Some(problem)), &ui.clear_cookie())
}

/// A form-encoded body, within the server's body limit.
async fn form(ui: &Ui, body: Body) -> Result<Vec<(String, String)>, Response> {
    let bytes = axum::body::to_bytes(body, ui.app.options.max_body_bytes).await.map_err(|_| {
        page::message(
            StatusCode::PAYLOAD_TOO_LARGE,
            "Too large",
            Problem::new(
                format!("the form is over this server's limit of {} bytes", ui.app.options.max_body_bytes),
                "send less text (CORTEX_HTTP_MAX_BODY_BYTES sets the limit)",
            ),
            None,
        )
    })?;
    Ok(form_urlencoded::parse(&bytes).into_owned().collect())
}

/// The first value of a form field; empty when absent.
pub fn field<'a>(fields: &'a [(String, String)], name: &str) -> &'a str {
    fields.iter().find(|(n, _)| n == name).map_or("", |(_, v)| v.as_str())
}

fn internal(e: impl std::fmt::Display) -> Response {
    page::server_error("signing in", e, None)
}
