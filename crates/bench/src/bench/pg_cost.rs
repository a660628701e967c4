//! What PostgreSQL spends on a run's requests: the CPU time of the backends serving the
//! benchmark's database (their `/proc/<pid>/stat`, so only for a server on this machine) and
//! the statements they ran (`pg_stat_statements`, when the server loads it and the database has
//! the extension). Like the server's own CPU time (`cpu.rs`), it holds on a busy machine where
//! latencies do not.

use super::cpu;
use std::collections::HashMap;
use std::time::Duration;

/// One reading of the server's side.
pub struct Reading {
    /// CPU time (user + system) of each backend serving the database, by pid.
    backends: HashMap<i32, Duration>,
    /// Statements run in the database so far; `None` without `pg_stat_statements`.
    statements: Option<i64>,
}

/// The backends of the database `url` names (all but this reading's own connection) and the
/// statements run in it; `None` when the database cannot be reached without TLS.
pub fn read(url: &str) -> Option<Reading> {
    let mut client = postgres::Client::connect(url, postgres::NoTls).ok()?;
    let pids: Vec<i32> = client
        .query(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() \
             AND backend_type = 'client backend' AND pid <> pg_backend_pid()",
            &[],
        )
        .ok()?
        .iter()
        .filter_map(|row| row.try_get(0).ok())
        .collect();
    let backends = pids
        .into_iter()
        .filter_map(|pid| {
            let (user, system) = cpu::process_cpu(u32::try_from(pid).ok()?)?;
            Some((pid, user + system))
        })
        .collect();
    let statements = client
        .query_one(
            "SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements \
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())",
            &[],
        )
        .ok()
        .and_then(|row| row.try_get(0).ok());
    Some(Reading { backends, statements })
}

/// Per request between two readings: the backends' CPU microseconds (a backend that opened
/// meanwhile counts from zero; one that closed is lost, so it is a floor) and statements.
pub fn per_request(before: &Reading, after: &Reading, requests: usize) -> (f64, Option<f64>) {
    let n = requests.max(1) as f64;
    let cpu: Duration = after
        .backends
        .iter()
        .map(|(pid, now)| now.saturating_sub(before.backends.get(pid).copied().unwrap_or_default()))
        .sum();
    let statements = before.statements.zip(after.statements).map(|(b, a)| (a - b) as f64 / n);
    (cpu.as_secs_f64() * 1e6 / n, statements)
}

/// The line a run prints: `what` (the profile and key), its backends' CPU and statements per
/// request.
pub fn line(what: &str, before: Option<Reading>, after: Option<Reading>, requests: usize) -> Option<String> {
    let (before, after) = (before?, after?);
    let (cpu, statements) = per_request(&before, &after, requests);
    let statements = statements.map_or_else(
        || "statements not counted (no pg_stat_statements in the database)".to_string(),
        |s| format!("{s:.1} statements"),
    );
    Some(format!("postgres, {what}: per request {cpu:.0} µs of PostgreSQL backends' CPU, {statements}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_request_counts_new_backends_from_zero_and_divides_by_requests() {
        let ms = Duration::from_millis;
        let before = Reading { backends: HashMap::from([(1, ms(100))]), statements: Some(10) };
        let after = Reading { backends: HashMap::from([(1, ms(150)), (2, ms(30))]), statements: Some(50) };
        let (cpu, statements) = per_request(&before, &after, 10);
        assert!((cpu - 8_000.0).abs() < 1e-6, "{cpu}");
        assert_eq!(statements, Some(4.0));
        let unknown = Reading { backends: HashMap::new(), statements: None };
        assert_eq!(per_request(&before, &unknown, 10).1, None);
    }
}
