//! Opaque access tokens (not JWTs), checked by asking the issuer (RFC 7662 introspection) with
//! Cortex's own client credentials: active, issued by the issuer, for this server's audience,
//! current (a numeric `exp` required); then the same claims → identity as a JWT's.
//!
//! Answers are kept by the token's SHA-256 (never the token): a positive one until the token's
//! `exp`, at most [`TRUSTED_FOR`] (so a token revoked at the issuer is refused within that
//! time), a refusal for [`REFUSED_FOR`]; at most [`MAX_ANSWERS`] of them. An issuer that cannot
//! be reached is not remembered. At most [`MAX_CALLS`] introspections run at once; a token
//! finding them all busy waits at most [`CALL_WAIT`] and is then answered 503, so a flood of
//! made-up tokens neither floods the issuer nor holds every thread.

use super::claims::{self, ClaimNames, Identity};
use super::issuer::{ClientCredentials, Issuer};
use super::options::OAuthOptions;
use super::token::{LEEWAY_SECS, TokenError, invalid};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
#[cfg(test)]
use std::sync::Arc;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The longest a positive answer is trusted without asking the issuer again.
pub const TRUSTED_FOR: Duration = Duration::from_secs(60);
/// How long a refusal (inactive, another audience, no `exp`, …) is remembered.
pub const REFUSED_FOR: Duration = Duration::from_secs(60);
/// Answers kept at most; past it the expired go first, then those nearest their end.
pub const MAX_ANSWERS: usize = 10_000;
/// Introspection calls at once.
pub const MAX_CALLS: usize = 8;
/// How long a token waits for one of those calls to end.
pub const CALL_WAIT: Duration = Duration::from_secs(2);

struct Answer {
    until: Instant,
    verdict: Result<Identity, TokenError>,
}

#[derive(Default)]
pub struct Introspector {
    answers: Mutex<HashMap<[u8; 32], Answer>>,
    calls: Mutex<usize>,
    call_ended: Condvar,
    /// Introspection calls made (what a test counts).
    asked: std::sync::atomic::AtomicU64,
}

impl Introspector {
    /// Who holds `token`, as the issuer says (or said, within the answer's lifetime).
    pub fn identity(
        &self,
        issuer: &Issuer,
        client: &ClientCredentials,
        options: &OAuthOptions,
        token: &str,
    ) -> Result<Identity, TokenError> {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(verdict) = self.kept(&key) {
            return verdict;
        }
        let _call = self.call()?;
        // Asked meanwhile by a request that held the call before this one.
        if let Some(verdict) = self.kept(&key) {
            return verdict;
        }
        self.asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let now = epoch_seconds();
        let (verdict, exp) = ask(issuer, client, options, token, now);
        let lifetime = match (&verdict, exp) {
            (Ok(_), Some(exp)) => Duration::from_secs(u64::try_from(exp - now).unwrap_or(0)).min(TRUSTED_FOR),
            (Ok(_), None) => Duration::ZERO,
            (Err(TokenError::Unavailable(_)), _) => Duration::ZERO,
            (Err(_), _) => REFUSED_FOR,
        };
        if !lifetime.is_zero() {
            self.keep(key, Answer { until: Instant::now() + lifetime, verdict: verdict.clone() });
        }
        verdict
    }

    /// Introspection calls made so far (answers from the kept ones not counted).
    #[cfg(test)]
    pub fn asked(&self) -> u64 {
        self.asked.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn kept(&self, key: &[u8; 32]) -> Option<Result<Identity, TokenError>> {
        let answers = self.answers();
        answers.get(key).filter(|a| a.until > Instant::now()).map(|a| a.verdict.clone())
    }

    fn keep(&self, key: [u8; 32], answer: Answer) {
        let mut answers = self.answers();
        if answers.len() >= MAX_ANSWERS {
            let now = Instant::now();
            answers.retain(|_, a| a.until > now);
        }
        if answers.len() >= MAX_ANSWERS
            && let Some(nearest) = answers.iter().min_by_key(|(_, a)| a.until).map(|(k, _)| *k)
        {
            answers.remove(&nearest);
        }
        answers.insert(key, answer);
    }

    fn answers(&self) -> MutexGuard<'_, HashMap<[u8; 32], Answer>> {
        self.answers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A place among the calls at once, or 503 once [`CALL_WAIT`] has passed without one.
    fn call(&self) -> Result<Call<'_>, TokenError> {
        let calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        let (mut calls, _) = self
            .call_ended
            .wait_timeout_while(calls, CALL_WAIT, |n| *n >= MAX_CALLS)
            .unwrap_or_else(|e| e.into_inner());
        if *calls >= MAX_CALLS {
            return Err(TokenError::Unavailable(format!(
                "the issuer is being asked about {MAX_CALLS} other tokens already"
            )));
        }
        *calls += 1;
        Ok(Call(self))
    }
}

/// A call's place, given back when dropped.
struct Call<'a>(&'a Introspector);

impl Drop for Call<'_> {
    fn drop(&mut self) {
        *self.0.calls.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
        self.0.call_ended.notify_one();
    }
}

fn epoch_seconds() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// The issuer's verdict on `token`, and the token's `exp` when it is accepted.
fn ask(
    issuer: &Issuer,
    client: &ClientCredentials,
    options: &OAuthOptions,
    token: &str,
    now: i64,
) -> (Result<Identity, TokenError>, Option<i64>) {
    let metadata = match issuer.metadata() {
        Ok(metadata) => metadata,
        Err(why) => return (Err(TokenError::Unavailable(why.to_string())), None),
    };
    let Some(endpoint) = metadata.introspection_endpoint else {
        return (
            Err(invalid(
                "the token is not a JWT, and the issuer's metadata names no introspection endpoint to check it at",
            )),
            None,
        );
    };
    let answer = match issuer.introspect(&endpoint, client, token) {
        Ok(answer) => answer,
        Err(why) => return (Err(TokenError::Unavailable(why.to_string())), None),
    };
    let claims = answer.as_object().cloned().unwrap_or_default();
    let exp = match check(&claims, options, now) {
        Ok(exp) => exp,
        Err(e) => return (Err(e), None),
    };
    let names = ClaimNames {
        org: &options.org_claim,
        projects: &options.projects_claim,
        fixed_org: options.fixed_org.as_deref(),
    };
    (claims::identity(&claims, &names).map_err(TokenError::Forbidden), Some(exp))
}

/// What the issuer said of the token, checked as a JWT's claims are; its `exp`.
fn check(claims: &Map<String, Value>, options: &OAuthOptions, now: i64) -> Result<i64, TokenError> {
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
    let exp = seconds(claims.get("exp")).ok_or_else(|| {
        invalid("the issuer's answer gives the token no expiry (a numeric `exp`), so it cannot be trusted")
    })?;
    let leeway = LEEWAY_SECS as i64;
    if exp + leeway < now {
        return Err(invalid("the token has expired"));
    }
    if claims.get("nbf").is_some_and(|nbf| seconds(Some(nbf)).is_none_or(|nbf| nbf - leeway > now)) {
        return Err(invalid("the token is not valid yet (`nbf`)"));
    }
    Ok(exp)
}

/// A NumericDate (RFC 7519 §2): seconds since the epoch as a JSON number, whole or not.
fn seconds(value: Option<&Value>) -> Option<i64> {
    let number = value?.as_number()?;
    number
        .as_i64()
        .or_else(|| number.as_f64().filter(|f| f.is_finite() && f.abs() < 1e15).map(|f| f.floor() as i64))
}

#[cfg(test)]
mod tests {
    use super::super::test_issuer::TestIssuer;
    use super::*;
    use serde_json::json;

    fn options(issuer: &str) -> OAuthOptions {
        OAuthOptions::resolve(|k| match k {
            "CORTEX_OAUTH_ISSUER" => Some(issuer.into()),
            "CORTEX_PUBLIC_URL" => Some("http://127.0.0.1:9/m".into()),
            _ => None,
        })
        .unwrap()
        .unwrap()
    }

    fn checked(v: Value) -> Result<i64, TokenError> {
        check(v.as_object().unwrap(), &options("https://id.example.com"), 1_000_000)
    }

    #[test]
    fn an_introspected_token_must_be_active_ours_current_and_expiring() {
        let aud = "http://127.0.0.1:9/m/mcp";
        assert_eq!(checked(json!({"active": true, "aud": aud, "exp": 1_000_100})), Ok(1_000_100));
        assert_eq!(
            checked(
                json!({"active": true, "aud": ["other", aud], "iss": "https://id.example.com", "exp": 1_000_100.7})
            ),
            Ok(1_000_100)
        );
        for bad in [
            json!({"active": false}),
            json!({"active": "true", "aud": aud, "exp": 1_000_100}),
            json!({"active": true, "exp": 1_000_100}),
            json!({"active": true, "aud": "https://other.example.com/mcp", "exp": 1_000_100}),
            json!({"active": true, "aud": aud, "iss": "https://evil.example.com", "exp": 1_000_100}),
            json!({"active": true, "aud": aud, "exp": 999_000}),
            json!({"active": true, "aud": aud, "exp": 1_000_100, "nbf": 1_001_000}),
            json!({"active": true, "aud": aud, "exp": 1_000_100, "nbf": "soon"}),
            json!({"active": true, "aud": aud}),
            json!({"active": true, "aud": aud, "exp": "1000100"}),
            json!({"active": true, "aud": aud, "exp": null}),
            json!({"active": true, "aud": aud, "exp": [1_000_100]}),
        ] {
            assert!(matches!(checked(bad.clone()), Err(TokenError::Invalid { .. })), "{bad}");
        }
        let Err(TokenError::Invalid { message }) = checked(json!({"active": true, "aud": aud})) else {
            panic!()
        };
        assert!(message.contains("`exp`"), "{message}");
    }

    #[test]
    fn answers_are_kept_for_their_lifetime_and_refusals_too() {
        let issuer = TestIssuer::start();
        let options = options(&issuer.url);
        let client = ClientCredentials { id: "cortex".into(), secret: "s".into() };
        let exp = epoch_seconds() + 600;
        issuer.answer(
            "good",
            json!({"active": true, "aud": options.audience, "exp": exp, "sub": "alice",
            "scope": "memory:read", "org": "acme"}),
        );
        issuer.answer(
            "no-exp",
            json!({"active": true, "aud": options.audience, "sub": "bob",
            "scope": "memory:read", "org": "acme"}),
        );
        let site = Issuer::new(&issuer.url);
        let introspector = Introspector::default();
        for _ in 0..5 {
            let who = introspector.identity(&site, &client, &options, "good").unwrap();
            assert_eq!(who.subject, "alice");
            assert!(matches!(
                introspector.identity(&site, &client, &options, "junk"),
                Err(TokenError::Invalid { .. })
            ));
            assert!(matches!(
                introspector.identity(&site, &client, &options, "no-exp"),
                Err(TokenError::Invalid { .. })
            ));
        }
        assert_eq!((issuer.seen("/introspect"), introspector.asked()), (3, 3), "once per token");
    }

    #[test]
    fn a_hanging_introspection_endpoint_holds_at_most_its_calls_and_is_not_remembered() {
        let issuer = TestIssuer::start();
        issuer.hang("/introspect");
        let options = Arc::new(options(&issuer.url));
        let client = Arc::new(ClientCredentials { id: "cortex".into(), secret: "s".into() });
        let site = Arc::new(Issuer::new(&issuer.url));
        assert!(site.metadata().is_ok());
        let introspector = Arc::new(Introspector::default());
        let asking: Vec<_> = (0..MAX_CALLS)
            .map(|i| {
                let (o, c, s, n) = (options.clone(), client.clone(), site.clone(), introspector.clone());
                std::thread::spawn(move || n.identity(&s, &c, &o, &format!("junk-{i}")))
            })
            .collect();
        while issuer.held() < MAX_CALLS {
            std::thread::sleep(Duration::from_millis(10));
        }
        let refused = introspector.identity(&site, &client, &options, "one-more");
        assert!(
            matches!(refused, Err(TokenError::Unavailable(ref why)) if why.contains("other tokens")),
            "{refused:?}"
        );
        assert_eq!(issuer.seen("/introspect"), MAX_CALLS, "the one more was never sent");
        issuer.release();
        for asked in asking {
            assert!(matches!(asked.join().unwrap(), Err(TokenError::Unavailable(_))));
        }
        issuer.answer("junk-0", json!({"active": false}));
        assert!(
            matches!(
                introspector.identity(&site, &client, &options, "junk-0"),
                Err(TokenError::Invalid { .. })
            ),
            "an issuer that could not be reached is asked again"
        );
    }
}
