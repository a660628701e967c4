//! The only place that writes to stdout: the tables a run prints for BENCHMARKS.md.
use std::io::Write;

/// One line on stdout; a reader that stops early (`cortex-bench … | head`) is no error of ours.
pub fn line(text: &str) {
    let _ = writeln!(std::io::stdout().lock(), "{text}");
}
