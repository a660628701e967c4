//! The web UI's sign-in sessions kept in the database, so that a person signed in through one
//! server is signed in on every server over it, and the sign-ins through an identity provider
//! under way, so that the provider's callback may reach any server. Only a shared database has
//! them (PostgreSQL); a SQLite server keeps both in memory.

use crate::Result;
use std::time::Duration;

/// A session to record.
#[derive(Debug, Clone, Copy)]
pub struct NewUiSession<'a> {
    /// Where the row is found: a hash of the cookie's id, never the id.
    pub id_hash: &'a str,
    /// The principal it was started for (its id).
    pub owner: &'a str,
    /// The API key's token, sealed by the server; `None` for the keyless local user.
    pub sealed: Option<&'a [u8]>,
    pub csrf: &'a str,
}

/// A live session as the database keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UiSessionRow {
    pub owner: String,
    /// The API key's token, sealed by the server; `None` for the keyless local user.
    pub sealed: Option<Vec<u8>>,
    pub csrf: String,
}

/// Sessions by the hash of their cookie's id; expiry by the database's clock.
pub trait SharedSessions: Send + Sync {
    /// Records a new session, forgets the expired ones, and past `limits.max_per_owner` ends
    /// the owner's own oldest (never another's).
    fn start_session(&self, session: &NewUiSession<'_>, limits: SessionLimits) -> Result<()>;
    /// The live session, marked as used now; `None` when unknown or expired.
    fn touch_session(&self, id_hash: &str, limits: SessionLimits) -> Result<Option<UiSessionRow>>;
    /// Ends a session (signing out).
    fn end_session(&self, id_hash: &str) -> Result<()>;
    /// Records a sign-in through the identity provider under way, forgets those older than
    /// `limits.expire_after`, and past `limits.max` forgets the oldest.
    fn begin_sign_in(&self, sign_in: &PendingSignIn<'_>, limits: PendingLimits) -> Result<()>;
    /// The sealed verifier of a sign-in under way, once: the row is gone after this call,
    /// whatever it answers. `None` when unknown, already taken, or older than
    /// `limits.expire_after`.
    fn finish_sign_in(&self, state_hash: &str, limits: PendingLimits) -> Result<Option<Vec<u8>>>;
}

/// A sign-in through the identity provider under way (between the redirect to the provider and
/// its callback).
#[derive(Debug, Clone, Copy)]
pub struct PendingSignIn<'a> {
    /// Where the row is found: a hash of the sign-in's `state`, never the state.
    pub state_hash: &'a str,
    /// Its PKCE verifier, sealed by the server.
    pub sealed_verifier: &'a [u8],
}

/// How long a sign-in under way is kept, and how many are kept at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingLimits {
    pub expire_after: Duration,
    pub max: usize,
}

/// How long a session lives (unused, and in all), and how many one principal holds at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    pub idle: Duration,
    pub lifetime: Duration,
    pub max_per_owner: usize,
}
