//! What every UI page shares: the frame (who is signed in, the sign-out form), the sign-in
//! and message pages, rendering a template into a response, the stylesheet, and the headers
//! every UI response carries (no script from anywhere, nothing loaded from elsewhere, not
//! framed, not cached, no referrer to other sites).

use askama::Template;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;

pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; \
                       form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const STYLE: &str = include_str!("style.css");

/// The top bar: who the pages are shown to, and (for a signed-in key) the sign-out form.
pub struct Chrome {
    pub who: String,
    pub role: &'static str,
    pub csrf: String,
    pub signed_in: bool,
}

/// A moment as a page shows it: how long ago, with the exact time on hover
/// (`<time datetime=… title=…>`).
pub struct When {
    pub iso: String,
    pub ago: String,
}

impl When {
    pub fn at(millis: i64, now: i64) -> When {
        When {
            iso: cortex_domain::time::format_instant(millis),
            ago: cortex_domain::time::describe_age(millis, now),
        }
    }

    /// A stored time's text (RFC 3339 or a date); `None` for a blank one, and the text as
    /// it is when it is not a time.
    pub fn parse(text: &str) -> Option<When> {
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        Some(match cortex_domain::time::parse_instant(text) {
            Ok(millis) => When::at(millis, now_ms()),
            Err(_) => When { iso: text.to_string(), ago: text.to_string() },
        })
    }
}

/// Now, in epoch milliseconds.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Something to tell the user, with what to do about it.
pub struct Problem {
    pub message: String,
    pub hint: String,
}

impl Problem {
    pub fn new(message: impl Into<String>, hint: impl Into<String>) -> Problem {
        Problem { message: message.into(), hint: hint.into() }
    }
}

impl From<&cortex_domain::ValidationError> for Problem {
    fn from(e: &cortex_domain::ValidationError) -> Problem {
        let message =
            if e.field.is_empty() { e.message.clone() } else { format!("{}: {}", e.field, e.message) };
        Problem { message, hint: e.human_hint.clone() }
    }
}

#[derive(Template)]
#[template(path = "ui/login.html")]
pub struct Login {
    pub chrome: Option<Chrome>,
    pub problem: Option<Problem>,
    /// The identity provider's sign-in is offered too.
    pub oauth: bool,
}

#[derive(Template)]
#[template(path = "ui/message.html")]
pub struct Message {
    pub chrome: Option<Chrome>,
    pub heading: String,
    pub problem: Problem,
}

/// The sign-in form, with why it is shown again when something went wrong, and the identity
/// provider's sign-in when this server offers it.
pub fn sign_in(ui: &super::Ui, status: StatusCode, problem: Option<Problem>) -> Response {
    html(status, &Login { chrome: None, problem, oauth: ui.offers_oauth() })
}

/// A page that only says what went wrong and what to do.
pub fn message(status: StatusCode, heading: &str, problem: Problem, chrome: Option<Chrome>) -> Response {
    html(status, &Message { chrome, heading: heading.to_string(), problem })
}

/// A failure of the server, not of the request: logged, and said so on the page.
pub fn server_error(what: &str, e: impl std::fmt::Display, chrome: Option<Chrome>) -> Response {
    tracing::error!(error = %e, "web UI: {what} failed");
    message(
        StatusCode::INTERNAL_SERVER_ERROR,
        "Server error",
        Problem::new(
            e.to_string(),
            "a server-side failure, not your request: retry; if it persists, run `cortex doctor`",
        ),
        chrome,
    )
}

pub fn html(status: StatusCode, page: &impl Template) -> Response {
    match page.render() {
        Ok(text) => {
            let mut response = Response::new(Body::from(text));
            *response.status_mut() = status;
            response
                .headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
            response
        }
        Err(e) => {
            tracing::error!("cannot render a UI page: {e}");
            let mut response =
                Response::new(Body::from("the page could not be rendered; see the server's log"));
            *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            response
        }
    }
}

/// `303 See Other` to `to`: after a form, the browser loads the next page with GET.
pub fn see_other(to: &str) -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::SEE_OTHER;
    if let Ok(value) = HeaderValue::from_str(to) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

pub fn with_cookie(mut response: Response, cookie: &str) -> Response {
    if let Ok(value) = HeaderValue::from_str(cookie) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    response
}

pub async fn style() -> Response {
    let mut response = Response::new(Body::from(STYLE));
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/css; charset=utf-8"));
    response
}

/// Every UI response: the security headers.
pub async fn secure(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, CSP),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        // Not `no-referrer`: under it a browser sends `Origin: null` with the UI's own form
        // posts, which the server's Origin check then refuses. `same-origin` still sends
        // nothing to other sites (links in rendered Markdown).
        (header::REFERRER_POLICY, "same-origin"),
        (header::CACHE_CONTROL, "no-store"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}
