//! The UI's sign-in sessions: a random 256-bit id (the cookie's value) maps to the API key's
//! token — never sent back to the browser, never in a URL or a log — and the CSRF token every
//! form of the session carries. A session ends when signed out, after [`IDLE`] without a
//! request, after [`LIFETIME`] in all, or when its key no longer passes the gate (checked on
//! every request, so revoking the key ends it). Kept in the server's memory, or, over a
//! database every server shares (PostgreSQL), in the database, so that a person signed in
//! through one server is signed in on all of them (`seal.rs`: how the token is kept there).
//!
//! Each principal (a key, a token's subject, the local user) holds at most a set number of
//! sessions: a new one past it ends that principal's own oldest, never anyone else's. So the
//! memory sessions take is bounded by the principals the server knows, and no one can sign
//! others out by signing in many times. The database keeps the same cap.

use super::seal;
use cortex_store::{NewUiSession, SessionLimits, SharedSessions};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A session unused this long is over.
pub const IDLE: Duration = Duration::from_secs(30 * 60);
/// No session lives longer than this, used or not.
pub const LIFETIME: Duration = Duration::from_secs(12 * 60 * 60);

pub const COOKIE: &str = "cortex_session";

/// What a session carries.
#[derive(Clone)]
pub struct Session {
    pub id: String,
    /// The API key's token; `None` for the local user of a keyless loopback server.
    pub token: Option<String>,
    pub csrf: String,
    /// The principal it was started for (`Principal::id`).
    owner: String,
    started: Instant,
    last_seen: Instant,
}

impl Session {
    fn expired(&self, now: Instant) -> bool {
        now.duration_since(self.last_seen) > IDLE || now.duration_since(self.started) > LIFETIME
    }
}

pub struct Sessions {
    live: Mutex<HashMap<String, Session>>,
    /// Sessions one principal holds at most.
    max_per_owner: usize,
    /// The database every server shares, when there is one: sessions are kept there instead.
    shared: Option<Arc<dyn SharedSessions>>,
}

impl Sessions {
    /// Sessions in the database `shared` names, else in memory.
    pub fn new(max_per_owner: usize, shared: Option<Arc<dyn SharedSessions>>) -> Sessions {
        Sessions { live: Mutex::default(), max_per_owner: max_per_owner.max(1), shared }
    }

    fn limits(&self) -> SessionLimits {
        SessionLimits { idle: IDLE, lifetime: LIFETIME, max_per_owner: self.max_per_owner }
    }

    /// A new session for `token`, held by the principal `owner` (past its cap, the owner's
    /// oldest session ends); the `Err` is the system's random source, or the shared database,
    /// failing.
    pub fn start(&self, token: Option<String>, owner: &str, now: Instant) -> Result<Session, StartError> {
        let session = Session {
            id: random_hex()?,
            token,
            csrf: random_hex()?,
            owner: owner.to_string(),
            started: now,
            last_seen: now,
        };
        if let Some(shared) = &self.shared {
            let sealed = session.token.as_deref().map(|t| seal::seal(&session.id, t)).transpose()?;
            let new = NewUiSession {
                id_hash: &seal::id_hash(&session.id),
                owner,
                sealed: sealed.as_deref(),
                csrf: &session.csrf,
            };
            blocking(|| shared.start_session(&new, self.limits()))?;
            return Ok(session);
        }
        let mut live = self.lock();
        live.retain(|_, s| !s.expired(now));
        let mut own: Vec<(Instant, String)> =
            live.values().filter(|s| s.owner == owner).map(|s| (s.started, s.id.clone())).collect();
        if own.len() >= self.max_per_owner {
            own.sort();
            for (_, oldest) in own.iter().take(own.len() + 1 - self.max_per_owner) {
                live.remove(oldest);
            }
        }
        live.insert(session.id.clone(), session.clone());
        Ok(session)
    }

    /// The live session with this id, marked as used now; `None` when unknown or expired (or
    /// when the shared database cannot say: the person is asked to sign in).
    pub fn touch(&self, id: &str, now: Instant) -> Option<Session> {
        if let Some(shared) = &self.shared {
            let row = match blocking(|| shared.touch_session(&seal::id_hash(id), self.limits())) {
                Ok(row) => row?,
                Err(e) => {
                    tracing::warn!("cannot read the UI's sessions: {e}");
                    return None;
                }
            };
            let token = match &row.sealed {
                Some(sealed) => Some(seal::open(id, sealed)?),
                None => None,
            };
            let (id, owner) = (id.to_string(), row.owner);
            return Some(Session { id, token, csrf: row.csrf, owner, started: now, last_seen: now });
        }
        let mut live = self.lock();
        let session = live.get_mut(id)?;
        if session.expired(now) {
            live.remove(id);
            return None;
        }
        session.last_seen = now;
        Some(session.clone())
    }

    pub fn end(&self, id: &str) {
        if let Some(shared) = &self.shared
            && let Err(e) = blocking(|| shared.end_session(&seal::id_hash(id)))
        {
            tracing::warn!("cannot end a UI session in the database: {e}");
        }
        self.lock().remove(id);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The database's blocking I/O, from a request's task: the worker hands its other tasks to
/// another worker meanwhile (a multi-threaded runtime, as the server's is).
pub(super) fn blocking<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(work),
        _ => work(),
    }
}

/// The system's random source failed: no unguessable id can be made.
#[derive(Debug, thiserror::Error)]
#[error("the system's random source failed: {0}")]
pub struct NoRandomness(getrandom::Error);

/// Why a session could not be started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    NoRandomness(#[from] NoRandomness),
    #[error(transparent)]
    Seal(#[from] seal::SealError),
    #[error("cannot record the session in the database: {0}")]
    Store(#[from] cortex_store::StoreError),
}

/// 256 random bits as 64 hex digits.
pub fn random_hex() -> Result<String, NoRandomness> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(NoRandomness)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The session id the request's `Cookie` header carries, if any.
pub fn cookie_id(headers: &axum::http::HeaderMap) -> Option<String> {
    cookie(headers, COOKIE)
}

/// The value of the cookie `name` the request carries, if any.
pub fn cookie(headers: &axum::http::HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, value)| value.to_string())
}

/// The `Set-Cookie` value that hands `id` to the browser: script cannot read it, other sites'
/// requests do not carry it, and over TLS it never travels in clear.
pub fn set_cookie(id: &str, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict{secure}")
}

/// The `Set-Cookie` value that makes the browser forget the session.
pub fn clear_cookie(secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0{secure}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_principal_past_its_cap_loses_its_own_oldest_session_never_anothers() {
        let sessions = Sessions::new(3, None);
        let t0 = Instant::now();
        let at = |i: u64| t0 + Duration::from_millis(i);
        let victim: Vec<Session> =
            (0..3).map(|i| sessions.start(Some("v".into()), "key:victim", at(i)).unwrap()).collect();
        let flood: Vec<Session> =
            (0..50).map(|i| sessions.start(Some("f".into()), "key:flooder", at(10 + i)).unwrap()).collect();
        for s in &victim {
            assert!(sessions.touch(&s.id, at(100)).is_some(), "another principal's sessions stay");
        }
        let kept: Vec<bool> = flood.iter().map(|s| sessions.touch(&s.id, at(100)).is_some()).collect();
        assert_eq!(kept.iter().filter(|k| **k).count(), 3, "the flooder holds its cap");
        assert!(kept[47] && kept[48] && kept[49], "its newest three");
        let fourth = sessions.start(Some("v".into()), "key:victim", at(200)).unwrap();
        assert!(sessions.touch(&victim[0].id, at(201)).is_none(), "the victim's own oldest ends");
        assert!(
            sessions.touch(&victim[1].id, at(201)).is_some() && sessions.touch(&fourth.id, at(201)).is_some()
        );
    }

    #[test]
    fn sessions_expire_when_idle_and_at_the_end_of_their_life() {
        let sessions = Sessions::new(100, None);
        let t0 = Instant::now();
        let s = sessions.start(Some("tok".into()), "key:k", t0).unwrap();
        assert_eq!(s.id.len(), 64);
        assert_ne!(s.id, s.csrf);
        assert!(sessions.touch(&s.id, t0 + IDLE / 2).is_some());
        assert!(sessions.touch(&s.id, t0 + IDLE / 2 + IDLE + Duration::from_secs(1)).is_none());
        let s = sessions.start(None, "local", t0).unwrap();
        let mut now = t0;
        while now.duration_since(t0) < LIFETIME {
            assert!(sessions.touch(&s.id, now).is_some(), "used within the idle time, still live");
            now += IDLE / 2;
        }
        assert!(sessions.touch(&s.id, now + Duration::from_secs(1)).is_none());
        assert!(sessions.touch("unknown", t0).is_none());
    }

    #[test]
    fn the_cookie_is_found_among_others_and_set_safely() {
        let mut headers = axum::http::HeaderMap::new();
        headers.insert(axum::http::header::COOKIE, "a=1; cortex_session=abc; b=2".parse().unwrap());
        assert_eq!(cookie_id(&headers).as_deref(), Some("abc"));
        let set = set_cookie("abc", true);
        assert!(set.contains("HttpOnly") && set.contains("SameSite=Strict") && set.contains("Secure"));
        assert!(!set_cookie("abc", false).contains("Secure"));
    }
}
