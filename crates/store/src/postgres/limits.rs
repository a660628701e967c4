//! Each key's request budget and calls running in one row of `key_limits`,
//! decided by one statement per request: the row's lock orders the servers' requests of one
//! key, and the statement that takes a request's token re-reads the row it waited for. A call
//! takes a lease (when its place frees itself if its server dies) and gives it back when its
//! answer has been sent.

use super::conn::Sql;
use super::pool::Pool;
use crate::{Admission, Result, SharedLimits};
use cortex_domain::api_key::Rate;
use std::time::Duration;

/// The database's clock in epoch ms: one clock for every server.
const NOW: &str = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint";

/// The bucket's level now, at most one second's worth: `$2` the rate per second, `$3` the burst.
const LEVEL: &str = "least($3, k.tokens + greatest(0, excluded.at - k.at) * $2 / 1000.0)";

pub struct PgLimits {
    pool: Pool,
}

impl PgLimits {
    pub fn new(pool: Pool) -> PgLimits {
        PgLimits { pool }
    }

    /// Runs `statement` on a pooled connection, once more on another when the first turns out
    /// lost (a request's token taken twice, if the first answer was lost after its commit, is
    /// a limit's rounding, not a wrong answer).
    fn run<T>(&self, statement: impl Fn(&mut super::conn::Conn) -> Result<T>) -> Result<T> {
        let mut conn = self.pool.get()?;
        match statement(&mut conn) {
            Err(e) if conn.is_lost() => {
                tracing::debug!("a pooled connection was closed; asking the limits on another: {e}");
                drop(conn);
                statement(&mut *self.pool.get()?)
            }
            other => other,
        }
    }

    /// Why `key`'s request was not admitted: its calls are all running (a call's, with
    /// `max_calls`), or else its bucket was empty, with when a token is back. Read after the
    /// refusal, so the bucket may have refilled meanwhile: the wait is then none.
    fn refusal(&self, key: &str, rate: Rate, max_calls: Option<usize>) -> Result<Admission> {
        let row = self.run(|c| {
            Ok(c.query_opt(
                &format!(
                    "SELECT least($3, tokens + greatest(0, {NOW} - at) * $2 / 1000.0), \
                       (SELECT count(*) FROM unnest(calls) c WHERE c > {NOW}) \
                     FROM key_limits WHERE key = $1"
                ),
                &[&key, &rate.per_second, &rate.burst()],
            )?)
        })?;
        let (level, running): (f64, i64) = match row {
            Some(row) => (row.try_get(0)?, row.try_get(1)?),
            None => (rate.burst(), 0),
        };
        if max_calls.is_some_and(|max| running >= max as i64) {
            return Ok(Admission::TooManyCalls);
        }
        let wait = ((1.0 - level) / rate.per_second).max(0.0);
        Ok(Admission::RateLimited { wait: Duration::from_secs_f64(wait) })
    }
}

impl SharedLimits for PgLimits {
    fn take_request(&self, key: &str, rate: Rate) -> Result<Admission> {
        let sql = format!(
            "INSERT INTO key_limits AS k (key, tokens, at) SELECT $1, $3 - 1, {NOW} \
             ON CONFLICT (key) DO UPDATE SET tokens = {LEVEL} - 1, at = excluded.at \
             WHERE {LEVEL} >= 1 RETURNING 0::bigint"
        );
        let taken = self.run(|c| Ok(c.query_opt(&sql, &[&key, &rate.per_second, &rate.burst()])?))?;
        match taken {
            Some(_) => Ok(Admission::Admitted { lease: 0 }),
            None => self.refusal(key, rate, None),
        }
    }

    fn start_call(&self, key: &str, rate: Rate, max_calls: usize, lease: Duration) -> Result<Admission> {
        // Leases past their end are dropped as the row is written: a killed server's calls
        // hold their places no longer than that.
        let sql = format!(
            "INSERT INTO key_limits AS k (key, tokens, at, calls) \
             SELECT $1, $3 - 1, t.now, ARRAY[t.now + $5] FROM (SELECT {NOW} AS now) t \
             ON CONFLICT (key) DO UPDATE SET tokens = {LEVEL} - 1, at = excluded.at, \
               calls = ARRAY(SELECT c FROM unnest(k.calls) c WHERE c > excluded.at) || excluded.calls \
             WHERE {LEVEL} >= 1 AND (SELECT count(*) FROM unnest(k.calls) c WHERE c > excluded.at) < $4 \
             RETURNING k.calls[cardinality(k.calls)]"
        );
        let lease_ms = lease.as_millis().min(i64::MAX as u128) as i64;
        let taken = self.run(|c| {
            Ok(c.query_opt(&sql, &[&key, &rate.per_second, &rate.burst(), &(max_calls as i64), &lease_ms])?)
        })?;
        match taken {
            Some(row) => Ok(Admission::Admitted { lease: row.try_get(0)? }),
            None => self.refusal(key, rate, Some(max_calls)),
        }
    }

    fn end_call(&self, key: &str, lease: i64) -> Result<()> {
        self.run(|c| {
            c.execute(
                "UPDATE key_limits SET calls = calls[:array_position(calls, $2) - 1] || calls[array_position(calls, $2) + 1:] \
                 WHERE key = $1 AND $2 = ANY(calls)",
                &[&key, &lease],
            )?;
            Ok(())
        })
    }
}
