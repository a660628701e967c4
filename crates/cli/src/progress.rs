//! Progress of a long run on stderr: on a terminal, a bar with the count and an estimate of
//! the time left; otherwise (a pipe, a CI log) a line with the counts every few seconds and
//! at the end. Log lines go through [`LogWriter`], which lifts the bar while a line is
//! written, so a log line never lands in the middle of the bar.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The bar on screen, if any: what log lines lift while they are written.
static ACTIVE: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// How often counts are printed when stderr is not a terminal.
const EVERY: Duration = Duration::from_secs(5);

/// One run's progress.
pub struct Progress {
    what: String,
    bar: Option<ProgressBar>,
    last: Mutex<Option<(Instant, u64)>>,
}

impl Progress {
    /// Progress of `what` (`writing`, `commits`), drawn on a terminal or printed as counts.
    pub fn start(what: &str) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} items, {eta} left")
                .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar.set_message(what.to_string());
            *ACTIVE.lock().unwrap_or_else(|e| e.into_inner()) = Some(bar.clone());
            bar
        });
        Progress { what: what.to_string(), bar, last: Mutex::new(None) }
    }

    /// `done` of `total` items.
    pub fn set(&self, done: u64, total: u64) {
        if let Some(bar) = &self.bar {
            bar.set_length(total);
            bar.set_position(done);
            return;
        }
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let due = match *last {
            None => done > 0,
            Some((at, shown)) => done != shown && (at.elapsed() >= EVERY || done == total),
        };
        if due {
            *last = Some((Instant::now(), done));
            let _ = writeln!(std::io::stderr(), "{}: {done}/{total} items", self.what);
        }
    }

    /// Clears the bar (the counts printed stay).
    pub fn finish(self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
            *ACTIVE.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
    }
}

/// stderr, with the bar lifted while a log line is written.
pub struct LogWriter;

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let active = ACTIVE.lock().unwrap_or_else(|e| e.into_inner()).clone();
        match active {
            Some(bar) => bar.suspend(|| std::io::stderr().write_all(buf)).map(|()| buf.len()),
            None => std::io::stderr().write_all(buf).map(|()| buf.len()),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// For `tracing_subscriber::fmt().with_writer(…)`.
pub fn log_writer() -> LogWriter {
    LogWriter
}
