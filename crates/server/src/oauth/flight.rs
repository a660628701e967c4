//! One fetch at a time from the issuer. Whoever finds a fetch due starts it; everyone else
//! who needs its result waits for it at most a short bound and then goes on with what is kept.
//! So an issuer that hangs costs one blocked fetch, not one per request, and no request waits
//! on it longer than the bound (the lock is never held across the network).

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long apart fetches may start, counted from the end of the last one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pace {
    /// After a fetch that succeeded.
    pub after_success: Duration,
    /// After one that failed: sooner, so a server that started before its issuer is not
    /// refusing tokens for long.
    pub after_failure: Duration,
    /// The longest a request waits for a fetch another started.
    pub wait: Duration,
}

#[derive(Default)]
struct State {
    running: bool,
    ended_at: Option<Instant>,
    failed: bool,
    /// Fetches started, ever (what a test counts).
    started: u64,
}

#[derive(Default)]
pub struct Flight {
    state: Mutex<State>,
    ended: Condvar,
}

impl Flight {
    /// Marks a fetch as started and returns `true` when none is running and the last ended long
    /// enough ago (`force`: whenever none is running); the caller fetches, then calls [`end`].
    ///
    /// [`end`]: Flight::end
    pub fn start(&self, pace: &Pace, force: bool) -> bool {
        let mut state = self.lock();
        if state.running {
            return false;
        }
        let interval = if state.failed { pace.after_failure } else { pace.after_success };
        if !force && state.ended_at.is_some_and(|at| at.elapsed() < interval) {
            return false;
        }
        state.running = true;
        state.started += 1;
        true
    }

    /// The fetch [`start`](Flight::start) allowed has ended.
    pub fn end(&self, ok: bool) {
        let mut state = self.lock();
        state.running = false;
        state.failed = !ok;
        state.ended_at = Some(Instant::now());
        drop(state);
        self.ended.notify_all();
    }

    /// Waits until no fetch is running, or `bound` has passed; `true` when none is running.
    pub fn wait(&self, bound: Duration) -> bool {
        let state = self.lock();
        let (state, _) =
            self.ended.wait_timeout_while(state, bound, |s| s.running).unwrap_or_else(|e| e.into_inner());
        !state.running
    }

    /// Fetches started so far.
    #[cfg(test)]
    pub fn started(&self) -> u64 {
        self.lock().started
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    const PACE: Pace = Pace {
        after_success: Duration::from_secs(3600),
        after_failure: Duration::ZERO,
        wait: Duration::from_millis(50),
    };

    #[test]
    fn one_fetch_at_a_time_and_none_again_before_its_interval() {
        let flight = Arc::new(Flight::default());
        assert!(flight.start(&PACE, false));
        assert!(!flight.start(&PACE, false) && !flight.start(&PACE, true), "one is running");
        assert!(!flight.wait(PACE.wait), "waited the bound, the fetch still running");
        let other = flight.clone();
        let waiter = std::thread::spawn(move || other.wait(Duration::from_secs(60)));
        flight.end(true);
        assert!(waiter.join().unwrap(), "a waiter is woken when the fetch ends");
        assert!(!flight.start(&PACE, false), "an hour between successful fetches");
        assert!(flight.start(&PACE, true), "unless forced");
        flight.end(false);
        assert!(flight.start(&PACE, false), "after a failure, at once (this pace)");
        assert_eq!(flight.started(), 3);
    }
}
