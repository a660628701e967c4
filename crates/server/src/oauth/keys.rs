//! The issuer's signing keys: its JWKS (named by its metadata) fetched and kept by `kid`. A
//! token naming a `kid` not kept makes the set be fetched again, at most once a minute: the
//! issuer rotated its keys, or someone sends made-up `kid`s, and the second must not make this
//! server hammer the issuer.

use super::issuer::Issuer;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The least time between two fetches of the key set.
pub const REFETCH_INTERVAL: Duration = Duration::from_secs(60);
/// The least time between two tries after a fetch failed (the issuer was down): sooner, so a
/// server that started before its issuer is not refusing tokens for a minute.
const RETRY_INTERVAL: Duration = Duration::from_secs(5);

/// A key the issuer signs with, and the one algorithm it is accepted for.
#[derive(Clone)]
pub struct SigningKey {
    pub key: DecodingKey,
    pub algorithm: Algorithm,
}

/// Why no key could be had for a `kid`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyError {
    /// The issuer's current key set has no such key (or it was fetched less than a minute ago).
    Unknown,
    /// The issuer's metadata or key set could not be fetched or read, and no key is kept.
    Unavailable(String),
}

struct State {
    keys: HashMap<String, SigningKey>,
    fetched_at: Option<Instant>,
    /// Why the last fetch failed, if it did.
    failed: Option<String>,
}

pub struct IssuerKeys {
    issuer: Arc<Issuer>,
    state: Mutex<State>,
}

impl IssuerKeys {
    pub fn new(issuer: Arc<Issuer>) -> IssuerKeys {
        IssuerKeys {
            issuer,
            state: Mutex::new(State { keys: HashMap::new(), fetched_at: None, failed: None }),
        }
    }

    /// The key named `kid`, fetching the key set again if it is not kept and the last fetch
    /// is a minute old. Blocking (network I/O): call off the async workers.
    pub fn key(&self, kid: &str) -> Result<SigningKey, KeyError> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(key) = state.keys.get(kid) {
            return Ok(key.clone());
        }
        let interval = if state.failed.is_some() { RETRY_INTERVAL } else { REFETCH_INTERVAL };
        if state.fetched_at.is_none_or(|at| at.elapsed() >= interval) {
            // A failure is kept in `state.failed`.
            let _ = self.refresh(&mut state);
        }
        match (state.keys.get(kid), &state.failed) {
            (Some(key), _) => Ok(key.clone()),
            (None, Some(why)) if state.keys.is_empty() => Err(KeyError::Unavailable(why.clone())),
            (None, _) => Err(KeyError::Unknown),
        }
    }

    /// Fetches the key set now (at start, so the first token is not kept waiting).
    pub fn warm(&self) -> Result<usize, String> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.refresh(&mut state)?;
        Ok(state.keys.len())
    }

    /// Replaces the kept keys with the issuer's current set: a key it no longer publishes is
    /// no longer accepted. On failure the kept keys stay. Counts as a fetch either way.
    fn refresh(&self, state: &mut State) -> Result<(), String> {
        state.fetched_at = Some(Instant::now());
        let fetched = self.fetch(state);
        state.failed = fetched.as_ref().err().cloned();
        fetched
    }

    fn fetch(&self, state: &mut State) -> Result<(), String> {
        let uri = self.issuer.metadata()?.jwks_uri;
        let set = self.issuer.get_json(&uri)?;
        let keys = signing_keys(&set).map_err(|e| format!("{uri}: {e}"))?;
        tracing::info!(issuer = %self.issuer.url, keys = keys.len(), "fetched the issuer's signing keys");
        state.keys = keys;
        Ok(())
    }
}

/// The keys of a JWKS document that can sign access tokens here, by `kid`: RSA (RS256), P-256
/// (ES256) and Ed25519 (EdDSA) keys with a `kid`, not marked for encryption. Others are left
/// out one by one, not the set refused: issuers publish keys for other uses beside them.
pub fn signing_keys(set: &Value) -> Result<HashMap<String, SigningKey>, String> {
    let Some(items) = set.get("keys").and_then(Value::as_array) else {
        return Err("not a JWKS document (no `keys` list)".into());
    };
    let mut keys = HashMap::new();
    for item in items {
        let Ok(jwk) = serde_json::from_value::<Jwk>(item.clone()) else { continue };
        let Some(kid) = jwk.common.key_id.clone() else { continue };
        if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
            continue;
        }
        let Some(algorithm) = algorithm_of(&jwk) else { continue };
        if let Ok(key) = DecodingKey::from_jwk(&jwk) {
            keys.insert(kid, SigningKey { key, algorithm });
        }
    }
    Ok(keys)
}

/// The one algorithm a key is accepted for: its `alg` if it names one, which must agree with
/// its type; never an HMAC secret.
fn algorithm_of(jwk: &Jwk) -> Option<Algorithm> {
    let by_type = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => Algorithm::RS256,
        AlgorithmParameters::EllipticCurve(p) if p.curve == EllipticCurve::P256 => Algorithm::ES256,
        AlgorithmParameters::OctetKeyPair(p) if p.curve == EllipticCurve::Ed25519 => Algorithm::EdDSA,
        _ => return None,
    };
    let named = match jwk.common.key_algorithm {
        None => return Some(by_type),
        Some(KeyAlgorithm::RS256) => Algorithm::RS256,
        Some(KeyAlgorithm::ES256) => Algorithm::ES256,
        Some(KeyAlgorithm::EdDSA) => Algorithm::EdDSA,
        Some(_) => return None,
    };
    (named == by_type).then_some(by_type)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // A P-256 public key and an RSA modulus, as an issuer publishes them.
    const EC_X: &str = "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU";
    const EC_Y: &str = "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0";
    const RSA_N: &str = "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw";

    #[test]
    fn only_asymmetric_signing_keys_with_a_kid_are_kept() {
        let set = json!({"keys": [
            {"kty": "RSA", "kid": "r", "n": RSA_N, "e": "AQAB"},
            {"kty": "EC", "kid": "e", "crv": "P-256", "x": EC_X, "y": EC_Y, "alg": "ES256"},
            {"kty": "RSA", "n": RSA_N, "e": "AQAB"},
            {"kty": "RSA", "kid": "enc", "use": "enc", "n": RSA_N, "e": "AQAB"},
            {"kty": "RSA", "kid": "ps", "alg": "PS256", "n": RSA_N, "e": "AQAB"},
            {"kty": "EC", "kid": "lie", "crv": "P-256", "x": EC_X, "y": EC_Y, "alg": "RS256"},
            {"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"},
            {"kty": "weird", "kid": "w"}
        ]});
        let keys = signing_keys(&set).unwrap();
        let mut kids: Vec<_> = keys.iter().map(|(k, v)| (k.as_str(), v.algorithm)).collect();
        kids.sort_by_key(|(k, _)| *k);
        assert_eq!(kids, vec![("e", Algorithm::ES256), ("r", Algorithm::RS256)]);
        assert!(signing_keys(&json!({"no": []})).is_err());
    }
}
