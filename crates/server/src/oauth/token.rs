//! Checking an access token: a JWT signed by one of the issuer's keys (chosen by its `kid`,
//! with an algorithm from an allow-list that the key itself must agree with), issued by the
//! configured issuer for this server's audience, current; then what its claims grant.

use super::claims::{self, ClaimError, ClaimNames, Identity};
use super::introspect::Introspector;
use super::issuer::{Issuer, IssuerError};
use super::keys::{IssuerKeys, KeyError};
use super::options::OAuthOptions;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde_json::{Map, Value};
use std::sync::Arc;

/// Asymmetric algorithms only: `none` never parses, and HMAC would let anyone holding the
/// issuer's public key sign tokens with it.
pub const ALLOWED: [Algorithm; 3] = [Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA];
/// Clock difference tolerated between the issuer and this server, for `exp` and `nbf`.
pub const LEEWAY_SECS: u64 = 60;

/// Why a token is refused: `Invalid` answers 401 (get a new token), `Forbidden` 403 (a valid
/// token that grants nothing here), `Unavailable` 503 (the issuer's keys cannot be had).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenError {
    Invalid { message: String },
    Forbidden(ClaimError),
    Unavailable(String),
}

pub fn invalid(message: impl Into<String>) -> TokenError {
    TokenError::Invalid { message: message.into() }
}

pub struct Verifier {
    pub options: OAuthOptions,
    pub(super) issuer: Arc<Issuer>,
    keys: IssuerKeys,
    introspector: Introspector,
}

impl Verifier {
    pub fn new(options: OAuthOptions) -> Verifier {
        let issuer = Arc::new(Issuer::new(&options.issuer));
        Verifier {
            keys: IssuerKeys::new(issuer.clone()),
            issuer,
            options,
            introspector: Introspector::default(),
        }
    }

    /// Fetches the issuer's keys now; `Err` says why not (the server starts anyway and tries
    /// again on the first token).
    pub fn warm(&self) -> Result<usize, IssuerError> {
        self.keys.warm()
    }

    /// Who the token's holder is. Blocking (it may fetch the issuer's keys).
    pub fn verify(&self, token: &str) -> Result<Identity, TokenError> {
        // A JWT is three dot-separated parts; anything else is opaque, for the issuer to say.
        if token.split('.').count() != 3
            && let Some(client) = &self.options.introspection
        {
            return self.introspector.identity(&self.issuer, client, &self.options, token);
        }
        let header = jsonwebtoken::decode_header(token).map_err(|e| {
            invalid(format!("the token is not a JWT signed with RS256, ES256 or EdDSA ({e})"))
        })?;
        if !ALLOWED.contains(&header.alg) {
            return Err(invalid(format!(
                "the token is signed with {:?}; this server accepts RS256, ES256 and EdDSA",
                header.alg
            )));
        }
        let kid = header.kid.ok_or_else(|| invalid("the token's header names no key (`kid`)"))?;
        let key = self.keys.key(&kid).map_err(|e| match e {
            KeyError::Unknown => {
                invalid(format!("the token names the key {kid:?}, which the issuer does not publish"))
            }
            KeyError::Unavailable(why) => TokenError::Unavailable(why.to_string()),
        })?;
        if key.algorithm != header.alg {
            return Err(invalid(format!(
                "the token says {:?}, but the key {kid:?} signs with {:?}",
                header.alg, key.algorithm
            )));
        }
        let mut validation = Validation::new(key.algorithm);
        validation.leeway = LEEWAY_SECS;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.options.issuer]);
        validation.set_audience(&[&self.options.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation)
            .map_err(|e| self.refusal(e.kind()))?;
        let names = ClaimNames {
            org: &self.options.org_claim,
            projects: &self.options.projects_claim,
            fixed_org: self.options.fixed_org.as_deref(),
        };
        claims::identity(&data.claims, &names).map_err(TokenError::Forbidden)
    }

    fn refusal(&self, kind: &ErrorKind) -> TokenError {
        let o = &self.options;
        match kind {
            ErrorKind::ExpiredSignature => invalid("the token has expired"),
            ErrorKind::ImmatureSignature => invalid("the token is not valid yet (`nbf`)"),
            ErrorKind::InvalidIssuer => invalid(format!("the token was not issued by {:?}", o.issuer)),
            ErrorKind::InvalidAudience => {
                invalid(format!("the token is not issued for this server (audience {:?})", o.audience))
            }
            ErrorKind::MissingRequiredClaim(claim) => invalid(format!("the token has no `{claim}` claim")),
            ErrorKind::InvalidSignature | ErrorKind::Crypto(_) => {
                invalid("the token's signature does not verify")
            }
            other => invalid(format!("the token cannot be read ({other:?})")),
        }
    }
}
