//! Per-key limits: a token bucket for the request rate (→ 429 with `Retry-After`) and a cap
//! on calls running at once (→ 429), by the principal's id (`Principal::id`: a key's lookup
//! id, never reused, so a bucket never changes hands; a key's name is unique only within its
//! org). Kept where every server answering for the key sees them: in the database when it is
//! shared (PostgreSQL: `cortex_store::SharedLimits`, one statement per request and one per
//! call's end), else in this process's memory (SQLite: one server per file).

use cortex_domain::api_key::{MAX_RATE_PER_SECOND, Rate};
use cortex_store::{Admission, SharedLimits};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Why a request of a key is not let through.
#[derive(Debug)]
pub(crate) enum Refused {
    /// Over its rate; a request's worth is back after this long.
    Rate(Duration),
    /// As many calls running as it may have.
    Calls,
    /// The shared limits could not be asked (the database failed).
    Unavailable(String),
}

/// The limits of every key, where this server keeps them.
pub(crate) enum KeyLimits {
    Local(Limits),
    Shared {
        limits: Arc<dyn SharedLimits>,
        max_calls: usize,
        /// How long a call's place outlives a server that died holding it.
        lease: Duration,
        /// For the unlimited rate (the keyless local user's): there is no rate to share, and
        /// asking the database would only cost a statement per request.
        unlimited: Limits,
    },
}

impl KeyLimits {
    pub fn shared(limits: Arc<dyn SharedLimits>, max_calls: usize, lease: Duration) -> KeyLimits {
        KeyLimits::Shared { limits, max_calls, lease, unlimited: Limits::new(max_calls) }
    }

    /// Where a key of `rate` is limited.
    fn place(&self, rate: Rate) -> Place<'_> {
        match self {
            KeyLimits::Local(limits) => Place::Process(limits),
            KeyLimits::Shared { unlimited, .. } if rate.per_second >= MAX_RATE_PER_SECOND => {
                Place::Process(unlimited)
            }
            KeyLimits::Shared { limits, max_calls, lease, .. } => {
                Place::Database { limits, max_calls: *max_calls, lease: *lease }
            }
        }
    }

    /// One request of `key` against its rate.
    pub async fn admit(&self, key: &str, rate: Rate) -> Result<(), Refused> {
        match self.place(rate) {
            Place::Process(limits) => limits.admit(key, rate, Instant::now()).map_err(Refused::Rate),
            Place::Database { limits, .. } => {
                let (limits, key) = (limits.clone(), key.to_string());
                match blocking(move || limits.take_request(&key, rate)).await? {
                    Admission::Admitted { .. } => Ok(()),
                    refused => Err(refusal(refused)),
                }
            }
        }
    }

    /// A call of `key`: against its rate, then a place among its calls (one statement for both
    /// in the database), held until the permit is dropped.
    pub async fn call(&self, key: &str, rate: Rate) -> Result<CallPermit, Refused> {
        match self.place(rate) {
            Place::Process(limits) => {
                limits.admit(key, rate, Instant::now()).map_err(Refused::Rate)?;
                limits.call_permit(key, rate).map(CallPermit::Local).ok_or(Refused::Calls)
            }
            Place::Database { limits, max_calls, lease } => {
                let (shared, owner) = (limits.clone(), key.to_string());
                match blocking(move || shared.start_call(&owner, rate, max_calls, lease)).await? {
                    Admission::Admitted { lease } => {
                        Ok(CallPermit::Shared { limits: limits.clone(), key: key.to_string(), lease })
                    }
                    refused => Err(refusal(refused)),
                }
            }
        }
    }
}

/// Where one key's limits are kept.
enum Place<'a> {
    Process(&'a Limits),
    Database { limits: &'a Arc<dyn SharedLimits>, max_calls: usize, lease: Duration },
}

fn refusal(admission: Admission) -> Refused {
    match admission {
        Admission::RateLimited { wait } => Refused::Rate(wait),
        Admission::TooManyCalls | Admission::Admitted { .. } => Refused::Calls,
    }
}

/// The store's blocking I/O, off the async workers.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> cortex_store::Result<T> + Send + 'static,
) -> Result<T, Refused> {
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(e)) => Err(Refused::Unavailable(e.to_string())),
        Err(e) => Err(Refused::Unavailable(e.to_string())),
    }
}

/// A call's place among its key's calls, given back when dropped.
pub(crate) enum CallPermit {
    Local(#[allow(dead_code)] OwnedSemaphorePermit),
    Shared { limits: Arc<dyn SharedLimits>, key: String, lease: i64 },
}

impl Drop for CallPermit {
    fn drop(&mut self) {
        let CallPermit::Shared { limits, key, lease } = self else { return };
        let (limits, key, lease) = (limits.clone(), std::mem::take(key), *lease);
        let end = move || {
            if let Err(e) = limits.end_call(&key, lease) {
                tracing::warn!(
                    key,
                    "cannot give back a call's place in the shared limits (it frees itself when its lease ends): {e}"
                );
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(end)),
            Err(_) => end(),
        }
    }
}

/// Requests a key may make: refilled at `rate` per second up to one second's worth.
#[derive(Debug)]
pub struct TokenBucket {
    per_second: f64,
    burst: f64,
    tokens: f64,
    at: Instant,
}

impl TokenBucket {
    pub fn new(rate: Rate, now: Instant) -> TokenBucket {
        TokenBucket { per_second: rate.per_second, burst: rate.burst(), tokens: rate.burst(), at: now }
    }

    /// Takes one request's token, or says how long until one is there.
    pub fn take(&mut self, now: Instant) -> Result<(), Duration> {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.per_second).min(self.burst);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - self.tokens) / self.per_second))
        }
    }
}

struct KeyState {
    bucket: TokenBucket,
    calls: Arc<Semaphore>,
}

pub struct Limits {
    keys: Mutex<HashMap<String, KeyState>>,
    max_concurrent: usize,
}

impl Limits {
    pub fn new(max_concurrent: usize) -> Limits {
        Limits { keys: Mutex::new(HashMap::new()), max_concurrent }
    }

    fn with_key<T>(&self, key: &str, rate: Rate, now: Instant, f: impl FnOnce(&mut KeyState) -> T) -> T {
        // A panic elsewhere while holding the lock leaves the map as it was: keep using it.
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        let state = keys.entry(key.to_string()).or_insert_with(|| KeyState {
            bucket: TokenBucket::new(rate, now),
            calls: Arc::new(Semaphore::new(self.max_concurrent)),
        });
        f(state)
    }

    /// One request of `key` against its rate: `Err` is how long to wait.
    pub fn admit(&self, key: &str, rate: Rate, now: Instant) -> Result<(), Duration> {
        self.with_key(key, rate, now, |s| s.bucket.take(now))
    }

    /// A place among the key's running calls, held until the answer has been sent; `None`
    /// when all are taken.
    pub fn call_permit(&self, key: &str, rate: Rate) -> Option<OwnedSemaphorePermit> {
        self.with_key(key, rate, Instant::now(), |s| s.calls.clone().try_acquire_owned().ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_allows_its_burst_then_refills_at_its_rate() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(Rate { per_second: 2.0 }, t0);
        assert!(b.take(t0).is_ok() && b.take(t0).is_ok());
        let wait = b.take(t0).unwrap_err();
        assert_eq!(wait, Duration::from_millis(500));
        assert!(b.take(t0 + Duration::from_millis(499)).is_err());
        assert!(b.take(t0 + Duration::from_millis(1000)).is_ok());
        // Idle for long: never more than the burst.
        let later = t0 + Duration::from_secs(60);
        assert!(b.take(later).is_ok() && b.take(later).is_ok() && b.take(later).is_err());
    }

    #[test]
    fn slow_rates_hold_one_request_and_name_the_wait() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(Rate { per_second: 0.1 }, t0);
        assert!(b.take(t0).is_ok());
        assert_eq!(b.take(t0).unwrap_err(), Duration::from_secs(10));
    }

    #[test]
    fn keys_have_their_own_buckets_and_call_caps() {
        let limits = Limits::new(1);
        let rate = Rate { per_second: 1.0 };
        let t0 = Instant::now();
        assert!(limits.admit("a", rate, t0).is_ok());
        assert!(limits.admit("a", rate, t0).is_err());
        assert!(limits.admit("b", rate, t0).is_ok());
        let held = limits.call_permit("a", rate).unwrap();
        assert!(limits.call_permit("a", rate).is_none());
        assert!(limits.call_permit("b", rate).is_some());
        drop(held);
        assert!(limits.call_permit("a", rate).is_some());
    }
}
