//! The UI's sign-in sessions, in server memory only: a random 256-bit id (the cookie's value)
//! maps to the API key's token — never sent back to the browser, never in a URL or a log —
//! and the CSRF token every form of the session carries. A session ends when signed out,
//! after [`IDLE`] without a request, after [`LIFETIME`] in all, or when its key no longer
//! passes the gate (checked on every request, so revoking the key ends it).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A session unused this long is over.
pub const IDLE: Duration = Duration::from_secs(30 * 60);
/// No session lives longer than this, used or not.
pub const LIFETIME: Duration = Duration::from_secs(12 * 60 * 60);
/// Sessions held at most: past it, the one idle longest is dropped (bounds the memory an
/// anonymous flood of sign-ins could take).
const MAX_SESSIONS: usize = 10_000;

pub const COOKIE: &str = "cortex_session";

/// What a session carries.
#[derive(Clone)]
pub struct Session {
    pub id: String,
    /// The API key's token; `None` for the local user of a keyless loopback server.
    pub token: Option<String>,
    pub csrf: String,
    started: Instant,
    last_seen: Instant,
}

impl Session {
    fn expired(&self, now: Instant) -> bool {
        now.duration_since(self.last_seen) > IDLE || now.duration_since(self.started) > LIFETIME
    }
}

#[derive(Default)]
pub struct Sessions {
    live: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    /// A new session for `token`; the `Err` is the system's random source failing.
    pub fn start(&self, token: Option<String>, now: Instant) -> Result<Session, String> {
        let session = Session { id: random_hex()?, token, csrf: random_hex()?, started: now, last_seen: now };
        let mut live = self.lock();
        live.retain(|_, s| !s.expired(now));
        if live.len() >= MAX_SESSIONS
            && let Some(oldest) = live.values().min_by_key(|s| s.last_seen).map(|s| s.id.clone())
        {
            live.remove(&oldest);
        }
        live.insert(session.id.clone(), session.clone());
        Ok(session)
    }

    /// The live session with this id, marked as used now; `None` when unknown or expired.
    pub fn touch(&self, id: &str, now: Instant) -> Option<Session> {
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
        self.lock().remove(id);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// 256 random bits as 64 hex digits.
pub fn random_hex() -> Result<String, String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("the system's random source failed: {e}"))?;
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
    fn sessions_expire_when_idle_and_at_the_end_of_their_life() {
        let sessions = Sessions::default();
        let t0 = Instant::now();
        let s = sessions.start(Some("tok".into()), t0).unwrap();
        assert_eq!(s.id.len(), 64);
        assert_ne!(s.id, s.csrf);
        assert!(sessions.touch(&s.id, t0 + IDLE / 2).is_some());
        assert!(sessions.touch(&s.id, t0 + IDLE / 2 + IDLE + Duration::from_secs(1)).is_none());
        let s = sessions.start(None, t0).unwrap();
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
