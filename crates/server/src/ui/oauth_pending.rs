//! Sign-ins through the identity provider under way: between the redirect to the provider and
//! its callback, the sign-in's `state` maps to its PKCE verifier. Kept in the server's memory,
//! or, over a database every server shares (PostgreSQL), in the database, so that the callback
//! may reach any server behind the balancer. There the row is found by the SHA-256 of the state
//! and holds the verifier sealed under a key derived from the state (`seal.rs`); the callback
//! deletes it as it reads it, so a replayed callback is refused by every server.
//!
//! Chosen over the verifier sealed in the browser's cookie under a key all servers share: no
//! secret to hand to every server, and a state is used once on all of them, not once per server.

use super::seal;
use super::session::blocking;
use cortex_store::{PendingLimits, PendingSignIn, SharedSessions};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A sign-in not finished within this is forgotten.
pub const PENDING_FOR: Duration = Duration::from_secs(10 * 60);
/// Sign-ins under way at most (bounds what anonymous visits can hold).
const MAX_PENDING: usize = 1_000;

const LIMITS: PendingLimits = PendingLimits { expire_after: PENDING_FOR, max: MAX_PENDING };

/// Why a sign-in could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum BeginError {
    #[error(transparent)]
    Seal(#[from] seal::SealError),
    #[error("cannot record the sign-in in the database: {0}")]
    Store(#[from] cortex_store::StoreError),
}

/// Sign-ins under way: `state` → the PKCE verifier.
pub struct Pending {
    memory: Mutex<HashMap<String, (String, Instant)>>,
    /// The database every server shares, when there is one: sign-ins are kept there instead.
    shared: Option<Arc<dyn SharedSessions>>,
}

impl Pending {
    pub fn new(shared: Option<Arc<dyn SharedSessions>>) -> Pending {
        Pending { memory: Mutex::default(), shared }
    }

    pub fn put(&self, state: &str, verifier: &str, now: Instant) -> Result<(), BeginError> {
        if let Some(shared) = &self.shared {
            let sealed = seal::seal_for(seal::Use::Verifier, state, verifier)?;
            let sign_in = PendingSignIn { state_hash: &seal::id_hash(state), sealed_verifier: &sealed };
            blocking(|| shared.begin_sign_in(&sign_in, LIMITS))?;
            return Ok(());
        }
        let mut pending = self.memory.lock().unwrap_or_else(|e| e.into_inner());
        pending.retain(|_, (_, at)| now.duration_since(*at) < PENDING_FOR);
        if pending.len() >= MAX_PENDING
            && let Some(oldest) = pending.iter().min_by_key(|(_, (_, at))| *at).map(|(s, _)| s.clone())
        {
            pending.remove(&oldest);
        }
        pending.insert(state.to_string(), (verifier.to_string(), now));
        Ok(())
    }

    /// The verifier of `state`, once; `None` when unknown, used, expired (or when the shared
    /// database cannot say: the person starts again).
    pub fn take(&self, state: &str, now: Instant) -> Option<String> {
        if let Some(shared) = &self.shared {
            let sealed = match blocking(|| shared.finish_sign_in(&seal::id_hash(state), LIMITS)) {
                Ok(sealed) => sealed?,
                Err(e) => {
                    tracing::warn!("cannot read the sign-ins under way: {e}");
                    return None;
                }
            };
            return seal::open_for(seal::Use::Verifier, state, &sealed);
        }
        let (verifier, at) = self.memory.lock().unwrap_or_else(|e| e.into_inner()).remove(state)?;
        (now.duration_since(at) < PENDING_FOR).then_some(verifier)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_memory_a_state_gives_its_verifier_once_and_not_after_its_time() {
        let pending = Pending::new(None);
        let t0 = Instant::now();
        pending.put("s", "v", t0).unwrap();
        assert_eq!(pending.take("forged", t0), None);
        assert_eq!(pending.take("s", t0).as_deref(), Some("v"));
        assert_eq!(pending.take("s", t0), None, "a replayed callback");
        pending.put("late", "v", t0).unwrap();
        assert_eq!(pending.take("late", t0 + PENDING_FOR + Duration::from_secs(1)), None);
    }

    #[test]
    fn in_memory_anonymous_visits_hold_a_bounded_number() {
        let pending = Pending::new(None);
        let t0 = Instant::now();
        for i in 0..MAX_PENDING + 5 {
            pending.put(&format!("s{i}"), "v", t0 + Duration::from_millis(i as u64)).unwrap();
        }
        let now = t0 + Duration::from_secs(1);
        assert_eq!(pending.take("s0", now), None, "the oldest went");
        assert!(pending.take(&format!("s{}", MAX_PENDING + 4), now).is_some());
    }
}
