//! The web UI's sign-in sessions kept in the database, so that a person signed in through one
//! server is signed in on every server over it. Only a shared database has them (PostgreSQL);
//! a SQLite server keeps its sessions in memory.

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
}

/// How long a session lives (unused, and in all), and how many one principal holds at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    pub idle: Duration,
    pub lifetime: Duration,
    pub max_per_owner: usize,
}
