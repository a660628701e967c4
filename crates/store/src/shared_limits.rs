//! Per-key limits kept in the database, so that every server over it enforces one budget per
//! key: N servers behind a balancer must not give a key N times its rate, nor N times its calls
//! at once. Only a shared database has them (PostgreSQL); a SQLite server, alone with its file,
//! keeps its limits in memory.

use crate::Result;
use cortex_domain::api_key::Rate;
use std::time::Duration;

/// What a request of a key was told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Go on; a call holds its place among the key's calls until [`SharedLimits::end_call`]
    /// with this lease (0 for a request that is not a call).
    Admitted { lease: i64 },
    /// Over the key's rate: a request's worth comes back after this long.
    RateLimited { wait: Duration },
    /// The key has as many calls running as it may.
    TooManyCalls,
}

/// Each key's request budget (a token bucket: `rate` per second, at most one second's worth
/// saved up) and its calls running, in the database.
pub trait SharedLimits: Send + Sync {
    /// One request of `key` against its rate.
    fn take_request(&self, key: &str, rate: Rate) -> Result<Admission>;
    /// One call of `key`: a request against its rate and a place among its calls running (at
    /// most `max_calls`). The place is held until [`SharedLimits::end_call`], or, if its server
    /// never ends it (killed), until `lease` has passed.
    fn start_call(&self, key: &str, rate: Rate, max_calls: usize, lease: Duration) -> Result<Admission>;
    /// Gives back the place a call took.
    fn end_call(&self, key: &str, lease: i64) -> Result<()>;
}
