//! The OAuth settings of the HTTP server: which authorization server issues the tokens it
//! accepts, the audience they must be issued for, and where a token says who its holder is
//! (org and projects). Read once at start; a bad value stops start-up naming it.

use super::issuer::ClientCredentials;
use crate::settings;
use cortex_service::config::ConfigError;
use std::net::IpAddr;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthOptions {
    /// The authorization server, exactly as configured: tokens' `iss` must equal it, and the
    /// metadata document names it unchanged.
    pub issuer: String,
    /// This server's MCP endpoint as clients reach it (`<public url>/mcp`): the resource of
    /// the metadata document and the `resource` clients ask tokens for.
    pub resource: String,
    /// The base URL clients reach this server at, without a trailing slash.
    pub public_url: String,
    /// What a token's `aud` must hold: the resource unless configured otherwise.
    pub audience: String,
    pub org_claim: String,
    pub projects_claim: String,
    /// Every token's org, for a single-tenant server: the org claim is then not read.
    pub fixed_org: Option<String>,
    /// Cortex's own client at the issuer, to introspect opaque tokens with (RFC 7662).
    pub introspection: Option<ClientCredentials>,
}

impl OAuthOptions {
    /// `None` when no issuer is configured (API keys only).
    pub fn resolve(env: impl Fn(&str) -> Option<String>) -> Result<Option<OAuthOptions>, ConfigError> {
        let Some(issuer) = settings::OAUTH_ISSUER.get(&env)? else { return Ok(None) };
        check_issuer(&issuer)?;
        let Some(public) = settings::PUBLIC_URL.get(&env)? else {
            return Err(ConfigError::new(
                "CORTEX_PUBLIC_URL",
                "",
                "is not set, and CORTEX_OAUTH_ISSUER is",
                "set it to the base URL clients reach this server at, e.g. https://memory.example.com: tokens must be issued for <that URL>/mcp",
            ));
        };
        let public_url = check_public_url(&public)?;
        let resource = format!("{public_url}/mcp");
        let fixed_org = settings::OAUTH_ORG.get(&env)?;
        let introspection = match (
            settings::OAUTH_CLIENT_ID.get(&env)?,
            settings::OAUTH_CLIENT_SECRET.get(&env)?,
        ) {
            (Some(id), Some(secret)) => Some(ClientCredentials { id, secret }),
            (None, None) => None,
            (Some(_), None) | (None, Some(_)) => {
                return Err(ConfigError::new(
                    "CORTEX_OAUTH_CLIENT_ID / CORTEX_OAUTH_CLIENT_SECRET",
                    "",
                    "only one of the two is set",
                    "set both (Cortex's client at the issuer, for introspecting opaque tokens), or neither (JWT access tokens only)",
                ));
            }
        };
        Ok(Some(OAuthOptions {
            introspection,
            audience: settings::OAUTH_AUDIENCE.get(&env)?.unwrap_or_else(|| resource.clone()),
            issuer,
            resource,
            public_url,
            org_claim: settings::OAUTH_ORG_CLAIM.get(&env)?,
            projects_claim: settings::OAUTH_PROJECTS_CLAIM.get(&env)?,
            fixed_org,
        }))
    }

    /// The public URL's `host[:port]`, as a client behind it sends it in `Host`.
    pub fn public_authority(&self) -> &str {
        let rest = self.public_url.split_once("://").map_or(self.public_url.as_str(), |(_, r)| r);
        rest.split('/').next().unwrap_or(rest)
    }

    /// Where the Protected Resource Metadata of `/mcp` is served (RFC 9728 §3.1: the
    /// well-known path inserted before the resource's path).
    pub fn metadata_url(&self) -> String {
        format!("{}/.well-known/oauth-protected-resource/mcp", self.public_url)
    }
}

/// An `https://` issuer, or `http://` on this machine only: keys fetched over plain HTTP
/// from elsewhere could be swapped on the way, and every token with them.
fn check_issuer(issuer: &str) -> Result<(), ConfigError> {
    let bad = |problem: &str| {
        ConfigError::new(
            "CORTEX_OAUTH_ISSUER",
            issuer,
            problem,
            "give the authorization server's issuer URL exactly as its metadata names it, e.g. https://login.example.com/realms/team (http:// only for an issuer on this machine: localhost, 127.0.0.1, [::1])",
        )
    };
    let Some((scheme, rest)) = issuer.split_once("://") else { return Err(bad("is not a URL")) };
    let host = host_of(rest);
    if host.is_empty() || issuer.contains(['?', '#']) || issuer.chars().any(char::is_whitespace) {
        return Err(bad("is not an issuer URL (no host, or a query or fragment)"));
    }
    match scheme.to_ascii_lowercase().as_str() {
        "https" => Ok(()),
        "http" if is_loopback_host(host) => Ok(()),
        "http" => Err(bad("is plain http:// on a host other than this machine")),
        _ => Err(bad("is neither https:// nor http://")),
    }
}

fn check_public_url(text: &str) -> Result<String, ConfigError> {
    let url = text.trim_end_matches('/');
    let ok = url
        .split_once("://")
        .is_some_and(|(scheme, rest)| matches!(scheme, "http" | "https") && !host_of(rest).is_empty())
        && !url.contains(['?', '#'])
        && !url.chars().any(char::is_whitespace);
    if !ok {
        return Err(ConfigError::new(
            "CORTEX_PUBLIC_URL",
            text,
            "is not an http(s) base URL",
            "give the URL clients reach this server at, without /mcp, e.g. https://memory.example.com",
        ));
    }
    Ok(url.to_string())
}

/// The host of `host[:port][/path]`, brackets of an IPv6 address removed.
fn host_of(rest: &str) -> &str {
    let authority = rest.split('/').next().unwrap_or("");
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if let Some(v6) = authority.strip_prefix('[') {
        return v6.split(']').next().unwrap_or("");
    }
    authority.split(':').next().unwrap_or("")
}

fn is_loopback_host(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost") || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(vars: &[(&str, &str)]) -> Result<Option<OAuthOptions>, ConfigError> {
        OAuthOptions::resolve(|k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string()))
    }

    #[test]
    fn unset_issuer_means_keys_only_and_defaults_follow_the_public_url() {
        assert_eq!(resolve(&[("CORTEX_PUBLIC_URL", "https://m.example.com")]).unwrap(), None);
        let o = resolve(&[
            ("CORTEX_OAUTH_ISSUER", "https://login.example.com/"),
            ("CORTEX_PUBLIC_URL", "https://m.example.com/"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(o.issuer, "https://login.example.com/", "kept exactly as configured");
        assert_eq!(
            (o.resource.as_str(), o.audience.as_str()),
            ("https://m.example.com/mcp", "https://m.example.com/mcp")
        );
        assert_eq!(o.metadata_url(), "https://m.example.com/.well-known/oauth-protected-resource/mcp");
        assert_eq!(o.public_authority(), "m.example.com");
        assert_eq!((o.org_claim.as_str(), o.projects_claim.as_str(), o.fixed_org), ("org", "projects", None));
    }

    #[test]
    fn plain_http_issuers_only_on_this_machine() {
        for ok in ["http://127.0.0.1:9000", "http://localhost/realms/x", "http://[::1]:80"] {
            let o = resolve(&[("CORTEX_OAUTH_ISSUER", ok), ("CORTEX_PUBLIC_URL", "http://127.0.0.1:1")]);
            assert!(o.unwrap().is_some(), "{ok}");
        }
        for bad in [
            "http://login.example.com",
            "http://127.0.0.1.evil.com",
            "ftp://x",
            "login.example.com",
            "https://",
        ] {
            let e = resolve(&[("CORTEX_OAUTH_ISSUER", bad), ("CORTEX_PUBLIC_URL", "http://127.0.0.1:1")]);
            assert_eq!(e.unwrap_err().name, "CORTEX_OAUTH_ISSUER", "{bad}");
        }
    }

    #[test]
    fn missing_or_bad_companions_name_their_setting() {
        let issuer = ("CORTEX_OAUTH_ISSUER", "https://login.example.com");
        assert_eq!(resolve(&[issuer]).unwrap_err().name, "CORTEX_PUBLIC_URL");
        assert_eq!(
            resolve(&[issuer, ("CORTEX_PUBLIC_URL", "memory.example.com")]).unwrap_err().name,
            "CORTEX_PUBLIC_URL"
        );
        let e =
            resolve(&[issuer, ("CORTEX_PUBLIC_URL", "https://m.example.com"), ("CORTEX_OAUTH_ORG", "a\tb")]);
        assert_eq!(e.unwrap_err().name, "CORTEX_OAUTH_ORG");
        let o = resolve(&[
            issuer,
            ("CORTEX_PUBLIC_URL", "https://m.example.com"),
            ("CORTEX_OAUTH_AUDIENCE", "api://cortex"),
            ("CORTEX_OAUTH_ORG", "acme"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!((o.audience.as_str(), o.fixed_org.as_deref()), ("api://cortex", Some("acme")));
        let half = resolve(&[
            issuer,
            ("CORTEX_PUBLIC_URL", "https://m.example.com"),
            ("CORTEX_OAUTH_CLIENT_ID", "cortex"),
        ]);
        assert_eq!(half.unwrap_err().name, "CORTEX_OAUTH_CLIENT_ID / CORTEX_OAUTH_CLIENT_SECRET");
        let both = resolve(&[
            issuer,
            ("CORTEX_PUBLIC_URL", "https://m.example.com"),
            ("CORTEX_OAUTH_CLIENT_ID", "cortex"),
            ("CORTEX_OAUTH_CLIENT_SECRET", "s3cret"),
        ]);
        let client = both.unwrap().unwrap().introspection.unwrap();
        assert!(!format!("{client:?}").contains("s3cret"), "the secret is never printed");
    }
}
