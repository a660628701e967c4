//! Talking to the authorization server: its metadata, discovered once (OpenID Connect
//! discovery, else RFC 8414 authorization server metadata) and checked to name the configured
//! issuer; JSON documents fetched from it; token introspection (RFC 7662). Blocking (ureq):
//! called off the async workers.

use super::flight::{Flight, Pace};
use serde_json::Value;
use std::sync::Mutex;
use std::time::Duration;

/// Discovery is tried again at most every 5 s after a failure, one at a time; a request needing
/// the metadata waits at most 2 s for a discovery under way.
const DISCOVERY: Pace = Pace {
    after_success: Duration::MAX,
    after_failure: Duration::from_secs(5),
    wait: Duration::from_secs(2),
};

const TIMEOUT: Duration = Duration::from_secs(10);
/// An issuer's answers are small; a larger one is not read whole.
const MAX_DOCUMENT_BYTES: u64 = 1024 * 1024;

/// What Cortex uses of the issuer's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata {
    pub jwks_uri: String,
    pub introspection_endpoint: Option<String>,
    /// Where the web UI sends a person to sign in, and exchanges the code it gets back.
    pub authorization_endpoint: Option<String>,
    pub token_endpoint: Option<String>,
}

/// Why the issuer's metadata, documents or keys could not be had. The HTTP client's and the
/// JSON reader's own errors are kept as their text: they are only ever shown, in logs and
/// refusals.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IssuerError {
    #[error("the issuer's metadata has not been read yet")]
    NotDiscovered,
    /// Another request is reading the metadata and it did not arrive within the wait.
    #[error("the issuer's metadata is being read from {issuer} and has not arrived yet")]
    Discovering { issuer: String },
    #[error("cannot reach {url}: {detail}")]
    Unreachable { url: String, detail: String },
    #[error("{url} answered {status}")]
    Status { url: String, status: http::StatusCode },
    #[error("{url} answered something that is not JSON: {detail}")]
    NotJson { url: String, detail: String },
    #[error(
        "{url} names the issuer {named:?}, not {configured:?}: set CORTEX_OAUTH_ISSUER to exactly the issuer the metadata names"
    )]
    OtherIssuer { url: String, named: String, configured: String },
    #[error("{url} has no jwks_uri")]
    NoJwksUri { url: String },
    /// Neither metadata document could be read: why, for each.
    #[error("cannot read the issuer's metadata: {}", join(.0))]
    NoMetadata(Vec<IssuerError>),
    #[error("{uri}: {reason}")]
    Jwks { uri: String, reason: super::keys::NotJwks },
    /// The thread that fetches the key set could not be started.
    #[error("cannot start fetching the issuer's keys: {detail}")]
    NoFetchThread { detail: String },
    /// A fetch of the key set is under way and none is kept yet.
    #[error("the issuer's keys are being fetched and have not arrived yet")]
    KeysPending,
}

fn join(errors: &[IssuerError]) -> String {
    errors.iter().map(IssuerError::to_string).collect::<Vec<_>>().join("; ")
}

/// How Cortex authenticates itself at the introspection endpoint (`client_secret_basic`).
#[derive(Clone, PartialEq, Eq)]
pub struct ClientCredentials {
    pub id: String,
    pub secret: String,
}

/// Options are printed in logs and errors: the secret never is.
impl std::fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCredentials").field("id", &self.id).field("secret", &"***").finish()
    }
}

pub struct Issuer {
    pub url: String,
    agent: ureq::Agent,
    /// The metadata once discovered, else why the last discovery failed.
    metadata: Mutex<Result<Metadata, IssuerError>>,
    discovery: Flight,
}

impl Issuer {
    pub fn new(url: &str) -> Issuer {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(TIMEOUT))
            .http_status_as_error(false)
            .build()
            .new_agent();
        let pending = Err(IssuerError::NotDiscovered);
        Issuer { url: url.to_string(), agent, metadata: Mutex::new(pending), discovery: Flight::default() }
    }

    /// The issuer's metadata, read on first use and kept. One discovery at a time, never under
    /// the lock: a caller finding one under way waits for it at most [`DISCOVERY`]'s bound.
    pub fn metadata(&self) -> Result<Metadata, IssuerError> {
        let kept = || self.metadata.lock().unwrap_or_else(|e| e.into_inner());
        if let Ok(metadata) = &*kept() {
            return Ok(metadata.clone());
        }
        if self.discovery.start(&DISCOVERY, false) {
            let found = self.discover();
            *kept() = found.clone();
            self.discovery.end(found.is_ok());
            return found;
        }
        if !self.discovery.wait(DISCOVERY.wait) {
            return Err(IssuerError::Discovering { issuer: self.url.clone() });
        }
        kept().clone()
    }

    /// Its metadata, whose `issuer` must be the one configured (OpenID Connect Discovery §4.3,
    /// RFC 8414 §3.3): a document naming another is someone else's.
    fn discover(&self) -> Result<Metadata, IssuerError> {
        let mut tried = Vec::new();
        for url in metadata_urls(&self.url) {
            let doc = match self.get_json(&url) {
                Ok(doc) => doc,
                Err(e) => {
                    tried.push(e);
                    continue;
                }
            };
            let named = doc.get("issuer").and_then(Value::as_str).unwrap_or("");
            if named != self.url {
                return Err(IssuerError::OtherIssuer {
                    url,
                    named: named.to_string(),
                    configured: self.url.clone(),
                });
            }
            let text = |field: &str| doc.get(field).and_then(Value::as_str).map(str::to_string);
            return Ok(Metadata {
                jwks_uri: text("jwks_uri").ok_or_else(|| IssuerError::NoJwksUri { url: url.clone() })?,
                introspection_endpoint: text("introspection_endpoint"),
                authorization_endpoint: text("authorization_endpoint"),
                token_endpoint: text("token_endpoint"),
            });
        }
        Err(IssuerError::NoMetadata(tried))
    }

    pub fn get_json(&self, url: &str) -> Result<Value, IssuerError> {
        let response = self.agent.get(url).call().map_err(|e| unreachable(url, &e))?;
        read_json(url, response)
    }

    /// RFC 7662: what the issuer says of `token` (`active`, and its claims when active).
    pub fn introspect(
        &self,
        endpoint: &str,
        client: &ClientCredentials,
        token: &str,
    ) -> Result<Value, IssuerError> {
        self.post_form(endpoint, client, &[("token", token), ("token_type_hint", "access_token")])
    }

    /// A form POST to one of the issuer's endpoints as Cortex's client (`client_secret_basic`).
    fn post_form(
        &self,
        endpoint: &str,
        client: &ClientCredentials,
        form: &[(&str, &str)],
    ) -> Result<Value, IssuerError> {
        let response = self
            .agent
            .post(endpoint)
            .header("Authorization", &basic(client))
            .header("Accept", "application/json")
            .send_form(form.iter().copied())
            .map_err(|e| unreachable(endpoint, &e))?;
        read_json(endpoint, response)
    }
}

impl Issuer {
    /// RFC 6749 §4.1.3: the token endpoint's answer to an authorization code, Cortex
    /// authenticating as its client (`client_secret_basic`).
    pub fn exchange_code(
        &self,
        endpoint: &str,
        client: &ClientCredentials,
        form: &[(&str, &str)],
    ) -> Result<Value, IssuerError> {
        self.post_form(endpoint, client, form)
    }
}

fn unreachable(url: &str, e: &ureq::Error) -> IssuerError {
    IssuerError::Unreachable { url: url.to_string(), detail: e.to_string() }
}

fn read_json(url: &str, mut response: http::Response<ureq::Body>) -> Result<Value, IssuerError> {
    if !response.status().is_success() {
        return Err(IssuerError::Status { url: url.to_string(), status: response.status() });
    }
    response
        .body_mut()
        .with_config()
        .limit(MAX_DOCUMENT_BYTES)
        .read_json()
        .map_err(|e| IssuerError::NotJson { url: url.to_string(), detail: e.to_string() })
}

/// `client_secret_basic` (RFC 6749 §2.3.1): id and secret form-encoded, then Base64.
fn basic(client: &ClientCredentials) -> String {
    use base64::Engine;
    let pair = format!("{}:{}", form_encode(&client.id), form_encode(&client.secret));
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair))
}

fn form_encode(text: &str) -> String {
    let mut out = String::new();
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => out.push(byte as char),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// OpenID Connect discovery, then RFC 8414 (the well-known path before the issuer's path).
fn metadata_urls(issuer: &str) -> [String; 2] {
    let trimmed = issuer.trim_end_matches('/');
    let oidc = format!("{trimmed}/.well-known/openid-configuration");
    let (scheme, rest) = trimmed.split_once("://").unwrap_or(("https", trimmed));
    let (host, path) = rest.split_once('/').map_or((rest, ""), |(h, p)| (h, p));
    let path = if path.is_empty() { String::new() } else { format!("/{path}") };
    [oidc, format!("{scheme}://{host}/.well-known/oauth-authorization-server{path}")]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_looked_for_where_both_specs_put_it() {
        assert_eq!(
            metadata_urls("https://id.example.com/realms/team"),
            [
                "https://id.example.com/realms/team/.well-known/openid-configuration".to_string(),
                "https://id.example.com/.well-known/oauth-authorization-server/realms/team".to_string()
            ]
        );
        assert_eq!(
            metadata_urls("https://tenant.auth0.com/")[1],
            "https://tenant.auth0.com/.well-known/oauth-authorization-server"
        );
    }

    #[test]
    fn client_credentials_are_form_encoded_before_base64() {
        let client = ClientCredentials { id: "cortex".into(), secret: "a b:c/é".into() };
        // base64("cortex:a+b%3Ac%2F%C3%A9")
        assert_eq!(basic(&client), "Basic Y29ydGV4OmErYiUzQWMlMkYlQzMlQTk=");
    }
}
