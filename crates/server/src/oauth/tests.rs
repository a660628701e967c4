//! OAuth access tokens as a client presents them at `/mcp`, checked against an issuer served
//! from a test task (its discovery document, a JWKS holding a key the test signs with, an
//! introspection endpoint): a token for this server passes; one from another issuer, for
//! another audience, expired, not yet valid, naming a key the issuer does not publish, signed
//! with `none` or HMAC, altered, or without a subject is refused 401 with the challenge that
//! points at the resource's metadata; a token granting no scope is 403; an opaque token whose
//! introspection has no numeric `exp` is refused.

use super::test_issuer::TestIssuer;
use crate::test_support::{TestServer, find, tool_call};
use axum::http::{StatusCode, header};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use cortex_testdb::TestDb;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};

const PUBLIC_URL: &str = "https://memory.example.com";
const AUDIENCE: &str = "https://memory.example.com/mcp";

/// The issuer, publishing the P-256 key `kid` the test signs with.
struct Signing {
    issuer: TestIssuer,
    pkcs8: Vec<u8>,
}

impl Signing {
    fn start() -> Signing {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
        // An uncompressed point: 0x04, then x and y.
        let point = pair.public_key().as_ref();
        let (x, y) = (URL_SAFE_NO_PAD.encode(&point[1..33]), URL_SAFE_NO_PAD.encode(&point[33..65]));
        let issuer = TestIssuer::start();
        issuer.publish(json!({"keys": [{"kty": "EC", "kid": "signing", "crv": "P-256", "alg": "ES256", "use": "sig", "x": x, "y": y}]}));
        Signing { issuer, pkcs8: pkcs8.as_ref().to_vec() }
    }

    /// Claims this server accepts, from now on for ten minutes.
    fn claims(&self) -> Value {
        let now = now();
        json!({"iss": self.issuer.url, "aud": AUDIENCE, "sub": "ana@example.com", "iat": now,
            "exp": now + 600, "scope": "openid memory:write", "org": "acme", "projects": ["api"]})
    }

    fn sign(&self, kid: &str, claims: &Value) -> String {
        let header = Header { kid: Some(kid.to_string()), ..Header::new(Algorithm::ES256) };
        jsonwebtoken::encode(&header, claims, &EncodingKey::from_ec_der(&self.pkcs8)).unwrap()
    }

    fn token_with(&self, change: impl FnOnce(&mut Value)) -> String {
        let mut claims = self.claims();
        change(&mut claims);
        self.sign("signing", &claims)
    }

    fn server(&self, db: &TestDb, more: &[(&str, &str)]) -> TestServer {
        let mut settings =
            vec![("CORTEX_OAUTH_ISSUER", self.issuer.url.as_str()), ("CORTEX_PUBLIC_URL", PUBLIC_URL)];
        settings.extend_from_slice(more);
        TestServer::with(db, "127.0.0.1:0", &settings)
    }
}

fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

/// The refusal of a find with `token`: status, code, message, and the challenge header.
fn refused(server: &TestServer, token: &str) -> (StatusCode, String, String, String) {
    let answer = server.send(find(Some(token)));
    let message = answer.json()["error"]["message"].as_str().unwrap_or_default().to_string();
    let challenge = answer.header(header::WWW_AUTHENTICATE).unwrap_or_default().to_string();
    (answer.status, answer.code().unwrap_or_default(), message, challenge)
}

fn assert_invalid(server: &TestServer, token: &str, says: &str) {
    let (status, code, message, challenge) = refused(server, token);
    assert_eq!((status, code.as_str()), (StatusCode::UNAUTHORIZED, "invalid_token"), "{message}");
    assert!(message.contains(says), "{message:?} should say {says:?}");
    assert!(
        challenge.contains("error=\"invalid_token\"") && challenge.contains("resource_metadata="),
        "{challenge}"
    );
}

#[test]
fn a_token_issued_for_this_server_finds_as_its_holder() {
    let signing = Signing::start();
    let db = TestDb::sqlite();
    let server = signing.server(&db, &[]);
    let token = signing.token_with(|_| {});
    let answer = server.send(find(Some(&token)));
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    assert!(answer.text.contains("\"hits\""), "{}", answer.text);
}

#[test]
fn a_token_from_another_issuer_is_refused() {
    let signing = Signing::start();
    let db = TestDb::sqlite();
    let server = signing.server(&db, &[]);
    let token = signing.token_with(|c| c["iss"] = json!("https://login.example.net"));
    assert_invalid(&server, &token, "was not issued by");
}

#[test]
fn a_token_for_another_audience_is_refused() {
    let signing = Signing::start();
    let db = TestDb::sqlite();
    let server = signing.server(&db, &[]);
    let token = signing.token_with(|c| c["aud"] = json!("https://other.example.com/mcp"));
    assert_invalid(&server, &token, "not issued for this server");
}

#[test]
fn an_expired_token_is_refused_beyond_the_clock_leeway() {
    let signing = Signing::start();
    let db = TestDb::sqlite();
    let server = signing.server(&db, &[]);
    let token = signing.token_with(|c| c["exp"] = json!(now() - 300));
    assert_invalid(&server, &token, "has expired");
    // Within the leeway a token just past its end still passes (clocks differ).
    let token = signing.token_with(|c| c["exp"] = json!(now() - 5));
    assert_eq!(server.send(find(Some(&token))).status, StatusCode::OK);
}

#[test]
fn a_token_not_valid_yet_is_refused() {
    let signing = Signing::start();
    let db = TestDb::sqlite();
    let server = signing.server(&db, &[]);
    let token = signing.token_with(|c| c["nbf"] = json!(now() + 600));
    assert_invalid(&server, &token, "not valid yet");
}

#[test]
fn a_token_naming_a_key_the_issuer_does_not_publish_is_refused() {
    let signing = Signing::start();
    let db = TestDb::sqlite();
    let server = signing.server(&db, &[]);
    let token = signing.sign("rotated-away", &signing.claims());
    assert_invalid(&server, &token, "which the issuer does not publish");
}

#[test]
fn an_unsigned_token_with_alg_none_is_refused() {
    let signing = Signing::start();
    let db = TestDb::sqlite();
    let server = signing.server(&db, &[]);
    let encode = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
    let token =
        format!("{}.{}.", encode(&json!({"alg": "none", "kid": "signing"})), encode(&signing.claims()));
    assert_invalid(&server, &token, "not a JWT signed with RS256, ES256 or EdDSA");
}

#[test]
fn a_token_signed_with_a_shared_secret_is_refused() {
    let signing = Signing::start();
    let db = TestDb::sqlite();
    let server = signing.server(&db, &[]);
    let header = Header { kid: Some("signing".into()), ..Header::new(Algorithm::HS256) };
    let token =
        jsonwebtoken::encode(&header, &signing.claims(), &EncodingKey::from_secret(b"guessable")).unwrap();
    assert_invalid(&server, &token, "signed with HS256");
}

#[test]
fn an_altered_token_does_not_verify() {
    let signing = Signing::start();
    let db = TestDb::sqlite();
    let server = signing.server(&db, &[]);
    let token = signing.token_with(|_| {});
    let parts: Vec<&str> = token.split('.').collect();
    let mut claims = signing.claims();
    claims["scope"] = json!("memory:admin");
    let forged = format!("{}.{}.{}", parts[0], URL_SAFE_NO_PAD.encode(claims.to_string()), parts[2]);
    assert_invalid(&server, &forged, "signature does not verify");
}

#[test]
fn a_token_without_a_subject_is_refused() {
    let signing = Signing::start();
    let db = TestDb::sqlite();
    let server = signing.server(&db, &[]);
    let token = signing.token_with(|c| {
        c.as_object_mut().unwrap().remove("sub");
    });
    assert_invalid(&server, &token, "no `sub` claim");
}

#[test]
fn a_token_granting_no_memory_scope_is_forbidden_and_says_which_scope() {
    let signing = Signing::start();
    let db = TestDb::sqlite();
    let server = signing.server(&db, &[]);
    let token = signing.token_with(|c| c["scope"] = json!("openid profile"));
    let (status, code, _, challenge) = refused(&server, &token);
    assert_eq!((status, code.as_str()), (StatusCode::FORBIDDEN, "insufficient_scope"));
    assert!(challenge.contains("insufficient_scope") && challenge.contains("memory:read"), "{challenge}");
}

#[test]
fn a_request_without_a_token_is_pointed_at_the_resource_metadata() {
    let signing = Signing::start();
    let db = TestDb::sqlite();
    let server = signing.server(&db, &[]);
    let answer = server.send(find(None));
    assert_eq!((answer.status, answer.code().as_deref()), (StatusCode::UNAUTHORIZED, Some("missing_key")));
    let challenge = answer.header(header::WWW_AUTHENTICATE).unwrap();
    assert!(
        challenge.contains(&format!("{PUBLIC_URL}/.well-known/oauth-protected-resource/mcp")),
        "{challenge}"
    );
    assert!(!challenge.contains("error="), "no token, no error: {challenge}");
    let metadata = server.get("/.well-known/oauth-protected-resource/mcp", None).json();
    assert_eq!(metadata["resource"], AUDIENCE);
    assert_eq!(metadata["authorization_servers"][0], signing.issuer.url.as_str());
}

#[test]
fn a_keys_only_server_has_no_resource_metadata() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let answer = server.get("/.well-known/oauth-protected-resource", None);
    assert_eq!((answer.status, answer.code().as_deref()), (StatusCode::NOT_FOUND, Some("not_found")));
}

#[test]
fn a_read_scope_token_finds_but_cannot_store_and_sees_only_its_org() {
    let signing = Signing::start();
    let db = TestDb::sqlite();
    let server = signing.server(&db, &[]);
    let theirs = server.item("globex", "Globex rollout plan", "Roll out by region.");
    let token = signing.token_with(|c| c["scope"] = json!("memory:read"));
    let stored = server.call(
        Some(&token),
        "memory_store",
        json!({"items": [{"kind": "section", "data": {"title": "T", "heading": "T", "body": "Some text to keep."}}]}),
    );
    assert!(stored.to_string().contains("role"), "{stored}");
    let found = server.call(Some(&token), "memory_find", json!({"ids": [theirs]}));
    assert_eq!(found["hits"].as_array().map(Vec::len), Some(0), "another org's item is not there: {found}");
    let request = tool_call(Some(&token), "memory_find", json!({"query": "rollout"}));
    assert_eq!(server.send(request).status, StatusCode::OK);
}

#[test]
fn an_opaque_token_is_admitted_only_with_a_numeric_expiry_from_introspection() {
    let signing = Signing::start();
    let client = [("CORTEX_OAUTH_CLIENT_ID", "cortex"), ("CORTEX_OAUTH_CLIENT_SECRET", "s3cret")];
    let db = TestDb::sqlite();
    let server = signing.server(&db, &client);
    let answer = |exp: Value| {
        json!({"active": true, "iss": signing.issuer.url, "aud": AUDIENCE, "sub": "bot", "exp": exp,
            "scope": "memory:read", "org": "acme"})
    };
    signing.issuer.answer("opaque-good", answer(json!(now() + 600)));
    signing.issuer.answer("opaque-no-exp", answer(Value::Null));
    signing.issuer.answer("opaque-text-exp", answer(json!("tomorrow")));
    assert_eq!(server.send(find(Some("opaque-good"))).status, StatusCode::OK);
    for token in ["opaque-no-exp", "opaque-text-exp", "opaque-never-issued"] {
        let (status, code, message, _) = refused(&server, token);
        assert_eq!(
            (status, code.as_str()),
            (StatusCode::UNAUTHORIZED, "invalid_token"),
            "{token}: {message}"
        );
    }
}
