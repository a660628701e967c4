//! A session's API key token as the database keeps it: sealed (AES-256-GCM) under a key derived
//! (HKDF-SHA256) from the session's cookie id, which only the browser holds. The table alone
//! gives no token, and a cookie alone finds no row once the session has ended. The row is found
//! by the SHA-256 of the cookie id, so the table does not hold the cookie either.
//!
//! A sign-in through the identity provider under way keeps its PKCE verifier the same way,
//! sealed under a key derived from its `state` (a key for that use only: [`Use`]).

use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::hkdf::{HKDF_SHA256, Salt};
use sha2::{Digest, Sha256};

/// Binds the derived key to its use: a cookie id derives no other key of Cortex's.
const SALT: &[u8] = b"cortex web UI session token";

/// What is sealed: each derives its own key from the same id.
#[derive(Debug, Clone, Copy)]
pub enum Use {
    /// A session's API key token, under its cookie id.
    Token,
    /// A sign-in's PKCE verifier, under its `state`.
    Verifier,
}

impl Use {
    fn info(self) -> &'static [u8] {
        match self {
            Use::Token => b"token",
            Use::Verifier => b"pkce verifier",
        }
    }
}

fn key_for(id: &str, what: Use) -> Option<LessSafeKey> {
    let prk = Salt::new(HKDF_SHA256, SALT).extract(id.as_bytes());
    let info = [what.info()];
    let okm = prk.expand(&info, &AES_256_GCM).ok()?;
    Some(LessSafeKey::new(UnboundKey::from(okm)))
}

/// Where a session's row is found: the SHA-256 of its cookie id, in hex.
pub fn id_hash(id: &str) -> String {
    Sha256::digest(id.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// Why a token could not be sealed.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    #[error("the system's random source failed: {0}")]
    NoRandomness(getrandom::Error),
    #[error("cannot seal the session's token (the cipher refused it)")]
    Cipher,
}

/// `token` sealed for the session `id`: a random nonce, then the sealed bytes and their tag.
pub fn seal(id: &str, token: &str) -> Result<Vec<u8>, SealError> {
    seal_for(Use::Token, id, token)
}

/// `text` sealed for `what` under `id`: a random nonce, then the sealed bytes and their tag.
pub fn seal_for(what: Use, id: &str, text: &str) -> Result<Vec<u8>, SealError> {
    let key = key_for(id, what).ok_or(SealError::Cipher)?;
    let mut nonce = [0u8; NONCE_LEN];
    getrandom::fill(&mut nonce).map_err(SealError::NoRandomness)?;
    let mut sealed = text.as_bytes().to_vec();
    key.seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::empty(), &mut sealed)
        .map_err(|_| SealError::Cipher)?;
    let mut out = nonce.to_vec();
    out.extend_from_slice(&sealed);
    Ok(out)
}

/// The token sealed for the session `id`; `None` when `sealed` was not sealed for it (or was
/// changed).
pub fn open(id: &str, sealed: &[u8]) -> Option<String> {
    open_for(Use::Token, id, sealed)
}

/// The text sealed for `what` under `id`; `None` when `sealed` was not sealed so (or was changed).
pub fn open_for(what: Use, id: &str, sealed: &[u8]) -> Option<String> {
    if sealed.len() < NONCE_LEN {
        return None;
    }
    let (nonce, body) = sealed.split_at(NONCE_LEN);
    let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
    let mut body = body.to_vec();
    let plain = key_for(id, what)?.open_in_place(nonce, Aad::empty(), &mut body).ok()?;
    String::from_utf8(plain.to_vec()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_token_opens_with_its_session_id_only() {
        let sealed = seal("a".repeat(64).as_str(), "cortex_0123456789abcdef_secret").unwrap();
        assert!(!String::from_utf8_lossy(&sealed).contains("secret"), "the token is not in the clear");
        assert_eq!(open(&"a".repeat(64), &sealed).as_deref(), Some("cortex_0123456789abcdef_secret"));
        assert_eq!(open(&"b".repeat(64), &sealed), None, "another session's id opens nothing");
        let mut changed = sealed.clone();
        *changed.last_mut().unwrap() ^= 1;
        assert_eq!(open(&"a".repeat(64), &changed), None, "a changed row opens nothing");
        assert_eq!(open(&"a".repeat(64), &sealed[..5]), None);
        assert_ne!(seal("a", "t").unwrap(), seal("a", "t").unwrap(), "a fresh nonce each time");
    }

    #[test]
    fn a_sealed_verifier_opens_as_a_verifier_only() {
        let state = "d".repeat(64);
        let sealed = seal_for(Use::Verifier, &state, "verifier").unwrap();
        assert_eq!(open_for(Use::Verifier, &state, &sealed).as_deref(), Some("verifier"));
        assert_eq!(open(&state, &sealed), None, "the same id's token key opens nothing");
        assert_eq!(open_for(Use::Token, &state, &seal(&state, "t").unwrap()).as_deref(), Some("t"));
    }

    #[test]
    fn the_row_key_is_a_hash_of_the_id_not_the_id() {
        let id = "c".repeat(64);
        assert_eq!(id_hash(&id).len(), 64);
        assert_ne!(id_hash(&id), id);
    }
}
