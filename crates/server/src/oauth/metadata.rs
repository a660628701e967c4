//! What this server tells clients about its OAuth: the Protected Resource Metadata document
//! (RFC 9728), and the `WWW-Authenticate` challenges (RFC 6750) that point at it, so a client
//! holding no token learns where to get one.

use super::claims::{SCOPE_READ, SCOPE_WRITE, SCOPES};
use super::options::OAuthOptions;
use serde_json::{Value, json};

pub fn document(options: &OAuthOptions) -> Value {
    json!({
        "resource": options.resource,
        "authorization_servers": [options.issuer],
        "scopes_supported": SCOPES,
        "bearer_methods_supported": ["header"],
        "resource_name": "Cortex Memory",
    })
}

/// The challenge of a 401: `error` is `None` for a request that carried no token.
pub fn challenge(options: &OAuthOptions, error: Option<&str>) -> String {
    let error = error.map(|e| format!("error=\"{e}\", ")).unwrap_or_default();
    format!(
        "Bearer {error}resource_metadata=\"{}\", scope=\"{SCOPE_READ} {SCOPE_WRITE}\"",
        options.metadata_url()
    )
}

/// The challenge of a 403 for a token that grants none of this server's scopes.
pub fn insufficient_scope(options: &OAuthOptions) -> String {
    format!(
        "Bearer error=\"insufficient_scope\", resource_metadata=\"{}\", scope=\"{SCOPE_READ} {SCOPE_WRITE}\"",
        options.metadata_url()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_names_the_issuer_exactly_and_header_tokens_only() {
        let o = OAuthOptions::resolve(|k| match k {
            "CORTEX_OAUTH_ISSUER" => Some("https://id.example.com/".into()),
            "CORTEX_PUBLIC_URL" => Some("https://m.example.com".into()),
            _ => None,
        })
        .unwrap()
        .unwrap();
        let d = document(&o);
        assert_eq!(d["resource"], "https://m.example.com/mcp");
        assert_eq!(d["authorization_servers"], json!(["https://id.example.com/"]));
        assert_eq!(d["bearer_methods_supported"], json!(["header"]));
        assert_eq!(
            challenge(&o, None),
            "Bearer resource_metadata=\"https://m.example.com/.well-known/oauth-protected-resource/mcp\", scope=\"memory:read memory:write\""
        );
        assert!(
            challenge(&o, Some("invalid_token"))
                .starts_with("Bearer error=\"invalid_token\", resource_metadata=")
        );
    }
}
