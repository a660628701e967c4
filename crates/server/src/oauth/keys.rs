//! The issuer's signing keys: its JWKS (named by its metadata) fetched and kept by `kid`. A
//! token naming a `kid` not kept makes the set be fetched again, at most once a minute (every
//! 5 s while the issuer cannot be reached), counted from the end of the last fetch: the issuer
//! rotated its keys, or someone sends made-up `kid`s, and the second must not make this server
//! hammer the issuer. The fetch runs on a thread of its own, one at a time ([`Flight`]); a
//! token with a kept `kid` never waits for it, and one with an unknown `kid` waits at most
//! [`Pace::wait`], then is answered from the keys kept — so an issuer whose key endpoint hangs
//! delays no valid token.

use super::flight::{Flight, Pace};
use super::issuer::{Issuer, IssuerError};
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often the key set may be fetched, and how long a token waits for a fetch under way.
pub const PACE: Pace = Pace {
    after_success: Duration::from_secs(60),
    after_failure: Duration::from_secs(5),
    wait: Duration::from_secs(2),
};

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
    Unavailable(IssuerError),
}

/// A document that is not a JWKS key set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a JWKS document (no `keys` list)")]
pub struct NotJwks;

#[derive(Default)]
struct Kept {
    keys: HashMap<String, SigningKey>,
    /// Why the last fetch failed, if it did.
    failed: Option<IssuerError>,
}

struct Shared {
    issuer: Arc<Issuer>,
    kept: Mutex<Kept>,
    flight: Flight,
    pace: Pace,
}

pub struct IssuerKeys {
    shared: Arc<Shared>,
}

impl IssuerKeys {
    pub fn new(issuer: Arc<Issuer>) -> IssuerKeys {
        IssuerKeys::paced(issuer, PACE)
    }

    pub(super) fn paced(issuer: Arc<Issuer>, pace: Pace) -> IssuerKeys {
        IssuerKeys {
            shared: Arc::new(Shared { issuer, kept: Mutex::default(), flight: Flight::default(), pace }),
        }
    }

    /// The key named `kid`. One not kept starts a fetch of the key set when one is due, and
    /// waits at most [`Pace::wait`] for a fetch under way. Blocking (it may wait): call off the
    /// async workers.
    pub fn key(&self, kid: &str) -> Result<SigningKey, KeyError> {
        if let Some(key) = self.shared.kept().keys.get(kid) {
            return Ok(key.clone());
        }
        if self.shared.flight.start(&self.shared.pace, false) {
            let shared = self.shared.clone();
            let spawned =
                std::thread::Builder::new().name("oauth-jwks".into()).spawn(move || shared.refresh());
            if let Err(e) = spawned {
                self.shared.kept().failed = Some(IssuerError::NoFetchThread { detail: e.to_string() });
                self.shared.flight.end(false);
            }
        }
        let settled = self.shared.flight.wait(self.shared.pace.wait);
        let kept = self.shared.kept();
        match (kept.keys.get(kid), &kept.failed) {
            (Some(key), _) => Ok(key.clone()),
            (None, Some(why)) if kept.keys.is_empty() => Err(KeyError::Unavailable(why.clone())),
            (None, _) if kept.keys.is_empty() && !settled => {
                Err(KeyError::Unavailable(IssuerError::KeysPending))
            }
            (None, _) => Err(KeyError::Unknown),
        }
    }

    /// Fetches the key set now (at start, so the first token is not kept waiting), and waits
    /// for it whatever it takes; a fetch already under way is waited for instead.
    pub fn warm(&self) -> Result<usize, IssuerError> {
        if self.shared.flight.start(&self.shared.pace, true) {
            self.shared.refresh()?;
        } else {
            while !self.shared.flight.wait(self.shared.pace.wait) {}
        }
        let kept = self.shared.kept();
        match &kept.failed {
            Some(why) => Err(why.clone()),
            None => Ok(kept.keys.len()),
        }
    }

    /// Fetches of the key set started so far.
    #[cfg(test)]
    pub fn fetches(&self) -> u64 {
        self.shared.flight.started()
    }
}

impl Shared {
    fn kept(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Replaces the kept keys with the issuer's current set: a key it no longer publishes is
    /// no longer accepted. On failure the kept keys stay. Ends the flight [`start`] began; the
    /// network is used without any lock held.
    ///
    /// [`start`]: Flight::start
    fn refresh(&self) -> Result<(), IssuerError> {
        let refreshed = match self.fetch() {
            Ok(keys) => {
                *self.kept() = Kept { keys, failed: None };
                Ok(())
            }
            Err(why) => {
                self.kept().failed = Some(why.clone());
                Err(why)
            }
        };
        self.flight.end(refreshed.is_ok());
        refreshed
    }

    fn fetch(&self) -> Result<HashMap<String, SigningKey>, IssuerError> {
        let uri = self.issuer.metadata()?.jwks_uri;
        let set = self.issuer.get_json(&uri)?;
        let keys = signing_keys(&set).map_err(|reason| IssuerError::Jwks { uri, reason })?;
        tracing::info!(issuer = %self.issuer.url, keys = keys.len(), "fetched the issuer's signing keys");
        Ok(keys)
    }
}

/// The keys of a JWKS document that can sign access tokens here, by `kid`: RSA (RS256), P-256
/// (ES256) and Ed25519 (EdDSA) keys with a `kid`, not marked for encryption. Others are left
/// out one by one, not the set refused: issuers publish keys for other uses beside them.
pub fn signing_keys(set: &Value) -> Result<HashMap<String, SigningKey>, NotJwks> {
    let Some(items) = set.get("keys").and_then(Value::as_array) else {
        return Err(NotJwks);
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
    use super::super::test_issuer::TestIssuer;
    use super::*;
    use serde_json::json;

    /// Fetches as soon as one is asked for (none running), a short wait.
    const EAGER: Pace = Pace {
        after_success: Duration::ZERO,
        after_failure: Duration::ZERO,
        wait: Duration::from_millis(200),
    };

    #[test]
    fn a_hanging_key_endpoint_costs_one_fetch_and_delays_no_kept_key() {
        let issuer = TestIssuer::start();
        let keys = Arc::new(IssuerKeys::paced(Arc::new(Issuer::new(&issuer.url)), EAGER));
        assert_eq!(keys.warm(), Ok(1));
        issuer.hang("/jwks");
        let askers: Vec<_> = (0..6)
            .map(|i| {
                let keys = keys.clone();
                std::thread::spawn(move || keys.key(&format!("made-up-{i}")))
            })
            .collect();
        for asker in askers {
            assert_eq!(asker.join().unwrap().err(), Some(KeyError::Unknown), "answered from the keys kept");
        }
        assert!(keys.key("k1").is_ok(), "a kept key, while the endpoint hangs");
        assert_eq!(keys.key("another").err(), Some(KeyError::Unknown));
        // One fetch at a time: six unknown kids and one more made one request, still held.
        assert_eq!((issuer.seen("/jwks"), issuer.held(), keys.fetches()), (2, 1, 2));
        issuer.release();
    }

    #[test]
    fn an_unknown_kid_fetches_at_most_once_per_interval() {
        let issuer = TestIssuer::start();
        let pace = Pace { after_success: Duration::from_secs(3600), ..EAGER };
        let keys = IssuerKeys::paced(Arc::new(Issuer::new(&issuer.url)), pace);
        assert_eq!(keys.warm(), Ok(1));
        for i in 0..5 {
            assert_eq!(keys.key(&format!("made-up-{i}")).err(), Some(KeyError::Unknown));
        }
        assert_eq!((issuer.seen("/jwks"), keys.fetches()), (1, 1));
    }

    #[test]
    fn no_keys_yet_and_a_hanging_issuer_answer_unavailable_within_the_wait() {
        let issuer = TestIssuer::start();
        issuer.hang("/.well-known/openid-configuration");
        let keys = IssuerKeys::paced(Arc::new(Issuer::new(&issuer.url)), EAGER);
        for _ in 0..3 {
            assert!(matches!(keys.key("k1"), Err(KeyError::Unavailable(_))));
        }
        assert_eq!((issuer.seen("/.well-known/openid-configuration"), keys.fetches()), (1, 1));
        issuer.release();
    }

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
        assert_eq!(signing_keys(&json!({"no": []})).err(), Some(NotJwks));
    }
}
