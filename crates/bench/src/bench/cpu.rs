//! The CPU time a server spends per request: its process's user and system time (from
//! `/proc/<pid>/stat`) before and after a run, divided by the requests answered. Unlike a
//! latency, it holds on a machine shared with other work: what other processes do changes how
//! long a request waits, not how much CPU it takes.

use std::time::Duration;

/// A process's user and system CPU time so far; `None` where `/proc` cannot tell.
pub fn process_cpu(pid: u32) -> Option<(Duration, Duration)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces; the fields after its closing parenthesis
    // start with the state (field 3): utime and stime are fields 14 and 15.
    let after = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<u64>().ok();
    let (user, system) = (ticks(11)?, ticks(12)?);
    let hz = clock_ticks_per_second();
    let of = |t: u64| Duration::from_secs_f64(t as f64 / hz);
    Some((of(user), of(system)))
}

/// This process's children's user and system CPU time so far, added (children that have
/// exited and been waited for: a benchmark's `cortex` processes); `None` where `/proc` cannot
/// tell.
pub fn children_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // cutime and cstime are fields 16 and 17.
    let ticks = |i: usize| fields.get(i)?.parse::<u64>().ok();
    let total = ticks(13)? + ticks(14)?;
    Some(Duration::from_secs_f64(total as f64 / clock_ticks_per_second()))
}

/// `sysconf(_SC_CLK_TCK)`: 100 on every Linux this runs on (the kernel's USER_HZ).
fn clock_ticks_per_second() -> f64 {
    100.0
}

/// CPU microseconds per request between two readings of [`process_cpu`]: user, system.
pub fn per_request(before: (Duration, Duration), after: (Duration, Duration), requests: usize) -> (f64, f64) {
    let n = requests.max(1) as f64;
    let micros = |a: Duration, b: Duration| a.saturating_sub(b).as_secs_f64() * 1e6 / n;
    (micros(after.0, before.0), micros(after.1, before.1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_reads_its_own_cpu_time_and_it_grows_with_work() {
        let pid = std::process::id();
        let before = process_cpu(pid).expect("/proc/self/stat is readable");
        // Work until the kernel has counted some of it (a tick is 10 ms of CPU).
        let mut x = 0u64;
        let mut after = before;
        for _ in 0..10_000 {
            for _ in 0..1_000_000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
            std::hint::black_box(x);
            after = process_cpu(pid).unwrap();
            if after.0 + after.1 > before.0 + before.1 {
                break;
            }
        }
        assert!(after.0 + after.1 > before.0 + before.1, "{before:?} → {after:?}");
        let (user, system) = per_request(before, after, 2);
        assert!(user + system > 0.0 && user >= 0.0 && system >= 0.0);
    }
}
