//! The authorization code flow with PKCE (S256) for the web UI's "Sign in with <provider>":
//! the URL to send a person to, and the code they come back with exchanged for an access
//! token at the issuer's token endpoint, Cortex authenticating as its client
//! (`CORTEX_OAUTH_CLIENT_ID` / `_SECRET`). The token is then checked as `/mcp` checks one.
//! Blocking (the issuer's metadata may be fetched): called off the async workers.

use super::Verifier;
use super::issuer::IssuerError;
use serde_json::Value;

/// Why a sign-in through the issuer cannot begin or finish.
#[derive(Debug, thiserror::Error)]
pub enum CodeFlowError {
    #[error("no OAuth client is configured")]
    NoClient,
    #[error(transparent)]
    Issuer(#[from] IssuerError),
    /// The issuer's metadata lacks an endpoint the flow needs (its field's name).
    #[error("the issuer's metadata names no {0}")]
    NoEndpoint(&'static str),
    #[error("the token endpoint answered no access_token")]
    NoAccessToken,
}

/// What the UI asks for: the memory scopes, which the claims turn into a role.
const SCOPE: &str = "openid memory:read memory:write";

impl Verifier {
    /// Whether people can sign in through the issuer: Cortex has a client there.
    pub fn signs_in_people(&self) -> bool {
        self.options.introspection.is_some()
    }

    /// The issuer's authorization URL for this sign-in.
    pub fn sign_in_url(
        &self,
        state: &str,
        challenge: &str,
        redirect_uri: &str,
    ) -> Result<String, CodeFlowError> {
        let client = self.options.introspection.as_ref().ok_or(CodeFlowError::NoClient)?;
        let endpoint = self
            .issuer
            .metadata()?
            .authorization_endpoint
            .ok_or(CodeFlowError::NoEndpoint("authorization_endpoint"))?;
        let query = form_urlencoded::Serializer::new(String::new())
            .append_pair("response_type", "code")
            .append_pair("client_id", &client.id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("scope", SCOPE)
            .append_pair("state", state)
            .append_pair("code_challenge", challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("resource", &self.options.resource)
            .finish();
        let joiner = if endpoint.contains('?') { '&' } else { '?' };
        Ok(format!("{endpoint}{joiner}{query}"))
    }

    /// The access token the issuer gives for `code`; `Err` says why not (a wrong or used code,
    /// a verifier that does not match, the issuer unreachable).
    pub fn redeem(
        &self,
        code: &str,
        code_verifier: &str,
        redirect_uri: &str,
    ) -> Result<String, CodeFlowError> {
        let client = self.options.introspection.as_ref().ok_or(CodeFlowError::NoClient)?;
        let endpoint =
            self.issuer.metadata()?.token_endpoint.ok_or(CodeFlowError::NoEndpoint("token_endpoint"))?;
        let answer = self.issuer.exchange_code(
            &endpoint,
            client,
            &[
                ("grant_type", "authorization_code"),
                ("code", code),
                ("redirect_uri", redirect_uri),
                ("code_verifier", code_verifier),
                ("resource", &self.options.resource),
            ],
        )?;
        answer
            .get("access_token")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or(CodeFlowError::NoAccessToken)
    }
}
