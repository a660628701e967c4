//! OAuth 2.1 resource server (the MCP authorization spec): beside API keys, `/mcp` accepts
//! access tokens from the configured authorization server, and tells a client without one
//! where to get one.
//!
//! - `options`: the settings (`CORTEX_OAUTH_ISSUER`, `CORTEX_PUBLIC_URL` and the claims' names)
//! - `metadata`: the Protected Resource Metadata document and the `WWW-Authenticate` challenges
//! - `issuer`: the authorization server's metadata, documents and introspection endpoint
//! - `keys`: the issuer's signing keys (JWKS), kept by `kid`; `flight`: one fetch from the
//!   issuer at a time, others waiting a short bound
//! - `token`: checking a JWT access token; `introspect`: an opaque one (RFC 7662);
//!   `claims`: what a token's claims grant (role, tenant bound)
//! - `code_flow`: the web UI's sign-in through the issuer (authorization code + PKCE)
//!
//! A token is read from the `Authorization` header only, and is passed on to nothing.

mod claims;
mod code_flow;
mod flight;
mod introspect;
mod issuer;
mod keys;
mod metadata;
mod options;
#[cfg(test)]
mod test_issuer;
#[cfg(test)]
mod tests;
mod token;

pub use claims::Identity;
pub use options::OAuthOptions;
pub use token::Verifier;

use super::App;
use super::problem::problem;
use super::problem_code::ProblemCode;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use std::sync::Arc;
use token::TokenError;

/// `GET /.well-known/oauth-protected-resource[/mcp]`: the resource's metadata, or 404 on a
/// server without OAuth.
pub async fn metadata_document(State(app): State<App>) -> Response {
    let Some(verifier) = &app.oauth else {
        return problem(
            StatusCode::NOT_FOUND,
            ProblemCode::NotFound,
            "this server accepts API keys only: no OAuth authorization server is configured",
            "the server's admin sets CORTEX_OAUTH_ISSUER and CORTEX_PUBLIC_URL to accept OAuth tokens",
        );
    };
    let mut response =
        Response::new(axum::body::Body::from(metadata::document(&verifier.options).to_string()));
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// Fetches the issuer's keys as the server starts, so the first token is not kept waiting and
/// a wrong issuer shows in the log at once; the server serves meanwhile (and API keys work
/// whether or not the issuer can be reached).
pub fn warm_in_background(verifier: Arc<Verifier>) {
    if tokio::runtime::Handle::try_current().is_err() {
        return;
    }
    tokio::task::spawn_blocking(move || match verifier.warm() {
        Ok(n) => {
            tracing::info!(issuer = %verifier.options.issuer, keys = n, "OAuth: accepting access tokens from this issuer")
        }
        Err(e) => {
            tracing::warn!("OAuth: cannot fetch the issuer's keys yet ({e}); trying again on the first token")
        }
    });
}

/// Points a 401 at the metadata document, so the client can find the authorization server.
pub fn challenge(response: &mut Response, verifier: &Verifier, carried_credentials: bool) {
    let error = carried_credentials.then_some("invalid_token");
    if let Ok(value) = HeaderValue::from_str(&metadata::challenge(&verifier.options, error)) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
}

/// The token's holder, or the refusal to answer with (and the code to count it under).
/// The check may fetch the issuer's keys: it runs on a blocking thread.
pub async fn authenticate(
    verifier: &Arc<Verifier>,
    token: String,
) -> Result<Identity, (ProblemCode, Response)> {
    let checker = verifier.clone();
    let checked = tokio::task::spawn_blocking(move || checker.verify(&token)).await;
    let refused = match checked {
        Ok(Ok(identity)) => return Ok(identity),
        Ok(Err(e)) => e,
        Err(e) => TokenError::Unavailable(e.to_string()),
    };
    Err(match refused {
        TokenError::Invalid { message } => {
            let code = ProblemCode::InvalidToken;
            let mut response = problem(
                StatusCode::UNAUTHORIZED,
                code,
                message,
                "get a new access token from the authorization server named in this server's metadata (/.well-known/oauth-protected-resource/mcp), issued for this server's resource",
            );
            challenge(&mut response, verifier, true);
            (code, response)
        }
        TokenError::Forbidden(why) => {
            let no_scope = why == claims::ClaimError::NoScope;
            let code = if no_scope { ProblemCode::InsufficientScope } else { ProblemCode::ForbiddenToken };
            let mut response = problem(StatusCode::FORBIDDEN, code, why.message(), why.hint());
            if no_scope
                && let Ok(value) = HeaderValue::from_str(&metadata::insufficient_scope(&verifier.options))
            {
                response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
            }
            (code, response)
        }
        TokenError::Unavailable(why) => {
            tracing::error!("cannot check an OAuth token: {why}");
            let code = ProblemCode::IssuerUnavailable;
            (
                code,
                problem(
                    StatusCode::SERVICE_UNAVAILABLE,
                    code,
                    format!("the server cannot check OAuth tokens now: {why}"),
                    "a server-side failure, not your token: retry; if it persists, the admin should check that CORTEX_OAUTH_ISSUER is reachable from the server",
                ),
            )
        }
    })
}
