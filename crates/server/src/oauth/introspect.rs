//! Opaque access tokens (not JWTs), checked by asking the issuer (RFC 7662 introspection) with
//! Cortex's own client credentials: active, issued by the issuer, for this server's audience,
//! current; then the same claims → identity as a JWT's.

use super::claims::{self, ClaimNames, Identity};
use super::issuer::{ClientCredentials, Issuer};
use super::options::OAuthOptions;
use super::token::{LEEWAY_SECS, TokenError, invalid};
use serde_json::{Map, Value};

pub fn identity(
    issuer: &Issuer,
    client: &ClientCredentials,
    options: &OAuthOptions,
    token: &str,
    now: i64,
) -> Result<Identity, TokenError> {
    let metadata = issuer.metadata().map_err(TokenError::Unavailable)?;
    let Some(endpoint) = metadata.introspection_endpoint else {
        return Err(invalid(
            "the token is not a JWT, and the issuer's metadata names no introspection endpoint to check it at",
        ));
    };
    let answer = issuer.introspect(&endpoint, client, token).map_err(TokenError::Unavailable)?;
    let claims = answer.as_object().cloned().unwrap_or_default();
    check(&claims, options, now)?;
    let names = ClaimNames {
        org: &options.org_claim,
        projects: &options.projects_claim,
        fixed_org: options.fixed_org.as_deref(),
    };
    claims::identity(&claims, &names).map_err(TokenError::Forbidden)
}

/// What the issuer said of the token, checked as a JWT's claims are.
fn check(claims: &Map<String, Value>, options: &OAuthOptions, now: i64) -> Result<(), TokenError> {
    if claims.get("active") != Some(&Value::Bool(true)) {
        return Err(invalid("the issuer says the token is not active (expired, revoked or unknown)"));
    }
    if let Some(iss) = claims.get("iss").and_then(Value::as_str)
        && iss != options.issuer
    {
        return Err(invalid(format!("the token was not issued by {:?}", options.issuer)));
    }
    let audiences: Vec<&str> = match claims.get("aud") {
        Some(Value::String(aud)) => vec![aud.as_str()],
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !audiences.contains(&options.audience.as_str()) {
        return Err(invalid(format!(
            "the token is not issued for this server (audience {:?})",
            options.audience
        )));
    }
    let leeway = LEEWAY_SECS as i64;
    if claims.get("exp").and_then(Value::as_i64).is_some_and(|exp| exp + leeway < now) {
        return Err(invalid("the token has expired"));
    }
    if claims.get("nbf").and_then(Value::as_i64).is_some_and(|nbf| nbf - leeway > now) {
        return Err(invalid("the token is not valid yet (`nbf`)"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn options() -> OAuthOptions {
        OAuthOptions::resolve(|k| match k {
            "CORTEX_OAUTH_ISSUER" => Some("https://id.example.com".into()),
            "CORTEX_PUBLIC_URL" => Some("https://m.example.com".into()),
            _ => None,
        })
        .unwrap()
        .unwrap()
    }

    fn checked(v: Value) -> Result<(), TokenError> {
        check(v.as_object().unwrap(), &options(), 1_000_000)
    }

    #[test]
    fn an_introspected_token_must_be_active_ours_and_current() {
        let aud = "https://m.example.com/mcp";
        assert_eq!(checked(json!({"active": true, "aud": aud, "exp": 1_000_100})), Ok(()));
        assert_eq!(
            checked(json!({"active": true, "aud": ["other", aud], "iss": "https://id.example.com"})),
            Ok(())
        );
        for bad in [
            json!({"active": false}),
            json!({"active": "true", "aud": aud}),
            json!({"active": true}),
            json!({"active": true, "aud": "https://other.example.com/mcp"}),
            json!({"active": true, "aud": aud, "iss": "https://evil.example.com"}),
            json!({"active": true, "aud": aud, "exp": 999_000}),
            json!({"active": true, "aud": aud, "nbf": 1_001_000}),
        ] {
            assert!(matches!(checked(bad.clone()), Err(TokenError::Invalid { .. })), "{bad}");
        }
    }
}
