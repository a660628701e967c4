//! Per-key limits: a token bucket for the request rate (→ 429 with `Retry-After`) and a cap
//! on calls running at once (→ 429). Kept in memory, per server process, by the principal's
//! id (`Principal::id`: a key's lookup id, never reused, so a bucket never changes hands; a
//! key's name is unique only within its org).

use cortex_domain::api_key::Rate;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

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
