//! The database's clock, read once a second rather than by every request: between readings,
//! the last reading advanced by this machine's monotonic clock. Every find and store asks for
//! the time (recency, expiry, `updated_at`), and asking the server was one statement of the
//! five a find sends.
//!
//! A reading is kept only when its round trip took at most [`TRUSTED_ROUND_TRIP`]: the server
//! read its clock somewhere within that round trip, so the estimate is off by no more than it
//! (plus the monotonic clock's drift over a second, microseconds). A slower reading is used
//! for its own call only. Times handed out never go backwards, even when a new reading lands
//! a little behind the estimate it replaces.

use crate::Result;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long a reading stands in for the server's clock.
const READ_AGAIN_AFTER: Duration = Duration::from_secs(1);

/// The slowest round trip whose reading is kept.
pub const TRUSTED_ROUND_TRIP: Duration = Duration::from_millis(5);

#[derive(Default)]
pub struct Clock(Mutex<State>);

#[derive(Default)]
struct State {
    /// The server's time (epoch ms) and when, on this machine, it was read.
    reading: Option<(i64, Instant)>,
    /// The latest time handed out.
    last: i64,
}

impl Clock {
    /// The server's time in epoch ms; `read` asks the server.
    pub fn now(&self, read: impl FnOnce() -> Result<i64>) -> Result<i64> {
        {
            let mut state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some((at, when)) = state.reading
                && when.elapsed() < READ_AGAIN_AFTER
            {
                let now = (at + when.elapsed().as_millis() as i64).max(state.last);
                state.last = now;
                return Ok(now);
            }
        }
        let sent = Instant::now();
        let at = read()?;
        let answered = Instant::now();
        let mut state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if answered - sent <= TRUSTED_ROUND_TRIP {
            state.reading = Some((at, answered));
        }
        let now = at.max(state.last);
        state.last = now;
        Ok(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn a_reading_stands_in_for_the_server_then_times_never_go_back() {
        let clock = Clock::default();
        let reads = Cell::new(0);
        let read = |at: i64| {
            reads.set(reads.get() + 1);
            Ok(at)
        };
        *clock.0.lock().unwrap() = State { reading: Some((1_000, Instant::now())), last: 1_000 };
        let next = clock.now(|| read(5)).unwrap();
        assert_eq!(reads.get(), 0, "the reading stood in for the server");
        assert!(next >= 1_000, "{next}");
        // A new reading behind the time already handed out does not move time back.
        *clock.0.lock().unwrap() =
            State { reading: Some((1_000, Instant::now() - READ_AGAIN_AFTER)), last: 2_000 };
        assert_eq!(clock.now(|| read(1_500)).unwrap(), 2_000);
        assert_eq!(reads.get(), 1, "an old reading is replaced");
    }

    #[test]
    fn a_slow_reading_serves_its_own_call_only() {
        let clock = Clock::default();
        let slow = || {
            std::thread::sleep(TRUSTED_ROUND_TRIP * 2);
            Ok(7)
        };
        assert_eq!(clock.now(slow).unwrap(), 7);
        assert_eq!(clock.now(|| Ok(9)).unwrap(), 9, "asked again: the slow reading was not kept");
    }

    #[test]
    fn a_failed_reading_is_an_error_and_keeps_nothing() {
        let clock = Clock::default();
        assert!(clock.now(|| Err(crate::StoreError::Corrupt("down".into()))).is_err());
        assert_eq!(clock.now(|| Ok(3)).unwrap(), 3);
    }
}
