//! "Sign in with <provider>" when the server accepts the issuer's tokens and has a client
//! there (`CORTEX_OAUTH_ISSUER`, `CORTEX_PUBLIC_URL`, `CORTEX_OAUTH_CLIENT_ID` / `_SECRET`):
//! `GET /ui/oauth/start` sends the browser to the issuer with a fresh `state` and a PKCE
//! challenge (S256); `GET /ui/oauth/callback` takes the code back — only with the `state` this
//! browser was given (kept by the server, `oauth_pending.rs`, and in a cookie), once — exchanges it for an
//! access token, checks that token exactly as `/mcp` would, and starts a session with it as
//! with an API key (answered by a page that moves on to `/`) (every request checks it again, so an expired token ends the session).

use super::Ui;
use super::page::{self, Problem};
use super::signin::principal_of;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use base64::Engine;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::time::Instant;

const STATE_COOKIE: &str = "cortex_oauth_state";

#[derive(askama::Template)]
#[template(path = "ui/signed_in.html")]
struct SignedIn {
    chrome: Option<super::page::Chrome>,
    who: String,
}

fn redirect_uri(ui: &Ui) -> Option<String> {
    let verifier = ui.app.oauth.as_ref()?;
    Some(format!("{}/ui/oauth/callback", verifier.options.public_url))
}

fn unavailable() -> Response {
    page::message(
        StatusCode::NOT_FOUND,
        "Not available",
        Problem::new(
            "this server offers no sign-in through an identity provider",
            "sign in with an API key; the server's admin sets CORTEX_OAUTH_ISSUER, CORTEX_PUBLIC_URL and CORTEX_OAUTH_CLIENT_ID / _SECRET to offer it",
        ),
        None,
    )
}

/// `GET /ui/oauth/start`: to the issuer's sign-in.
pub async fn start(State(ui): State<Ui>) -> Response {
    let (Some(verifier), Some(redirect)) = (ui.app.oauth.clone(), redirect_uri(&ui)) else {
        return unavailable();
    };
    if !verifier.signs_in_people() {
        return unavailable();
    }
    // 256 random bits as 64 hex digits: an unguessable state, and a valid PKCE verifier.
    let (state, code_verifier) = match (super::session::random_hex(), super::session::random_hex()) {
        (Ok(state), Ok(code_verifier)) => (state, code_verifier),
        (Err(e), _) | (_, Err(e)) => return page::server_error("signing in", e, None),
    };
    let challenge =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(code_verifier.as_bytes()));
    let for_url = state.clone();
    let url =
        tokio::task::spawn_blocking(move || verifier.sign_in_url(&for_url, &challenge, &redirect)).await;
    match url {
        Ok(Ok(url)) => {
            if let Err(e) = ui.oauth_pending.put(&state, &code_verifier, Instant::now()) {
                return page::server_error("signing in", e, None);
            }
            // Lax: the browser must send it back on the issuer's redirect, a cross-site
            // navigation; it names only the sign-in under way.
            let secure = if ui.secure() { "; Secure" } else { "" };
            let cookie = format!(
                "{STATE_COOKIE}={state}; Path=/ui/oauth; HttpOnly; SameSite=Lax; Max-Age=600{secure}"
            );
            page::with_cookie(page::see_other(&url), &cookie)
        }
        Ok(Err(e)) => page::server_error("reaching the identity provider", e, None),
        Err(e) => page::server_error("signing in", e, None),
    }
}

/// `GET /ui/oauth/callback?code=…&state=…`: a session for the token the code buys.
pub async fn callback(State(ui): State<Ui>, headers: HeaderMap, uri: Uri) -> Response {
    let query: HashMap<String, String> =
        form_urlencoded::parse(uri.query().unwrap_or_default().as_bytes()).into_owned().collect();
    let (Some(verifier), Some(redirect)) = (ui.app.oauth.clone(), redirect_uri(&ui)) else {
        return unavailable();
    };
    let refused =
        |status, message: String, hint: &str| page::sign_in(&ui, status, Some(Problem::new(message, hint)));
    if let Some(error) = query.get("error") {
        return refused(
            StatusCode::UNAUTHORIZED,
            format!("the identity provider did not sign you in: {error}"),
            "try again, or sign in with an API key",
        );
    }
    let state = query.get("state").map(String::as_str).unwrap_or_default();
    let cookie = super::session::cookie(&headers, STATE_COOKIE);
    let code_verifier = match cookie.as_deref() == Some(state) {
        true => ui.oauth_pending.take(state, Instant::now()),
        false => None,
    };
    let Some(code_verifier) = code_verifier else {
        return refused(
            StatusCode::BAD_REQUEST,
            "this sign-in's state is not one this browser started here (or it is used or expired)".into(),
            "start again from the sign-in page's provider link",
        );
    };
    let code = query.get("code").cloned().unwrap_or_default();
    let redeemed =
        tokio::task::spawn_blocking(move || verifier.redeem(&code, &code_verifier, &redirect)).await;
    let token = match redeemed {
        Ok(Ok(token)) => token,
        Ok(Err(e)) => {
            tracing::warn!("OAuth sign-in: the code was not exchanged: {e}");
            return refused(
                StatusCode::UNAUTHORIZED,
                "the identity provider did not give a token for this sign-in".into(),
                "start again from the sign-in page's provider link",
            );
        }
        Err(e) => return page::server_error("signing in", e, None),
    };
    let principal = match principal_of(&ui, Some(&token)).await {
        Ok(principal) => principal,
        Err((status, problem)) => return page::sign_in(&ui, status, Some(problem)),
    };
    if let Some(refused) = super::signin::over_rate(&ui, &principal).await {
        return refused;
    }
    match ui.sessions.start(Some(token), &principal.id, Instant::now()) {
        Ok(session) => {
            tracing::info!(target: "cortex::access", key = %principal.key, "signed in to the web UI through the identity provider");
            super::signin::audit_admin_sign_in(&ui, &principal, "through the identity provider").await;
            let cleared = format!("{STATE_COOKIE}=; Path=/ui/oauth; HttpOnly; SameSite=Lax; Max-Age=0");
            // A page of this site that moves on, not a redirect: the session cookie is
            // SameSite=Strict, and a browser leaves it off every step of a redirect chain
            // the provider's site started.
            let page = SignedIn { chrome: None, who: principal.key.clone() };
            let answer = page::with_cookie(
                page::html(StatusCode::OK, &page),
                &super::session::set_cookie(&session.id, ui.secure()),
            );
            page::with_cookie(answer, &cleared)
        }
        Err(e) => page::server_error("signing in", e, None),
    }
}
