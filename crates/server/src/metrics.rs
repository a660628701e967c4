//! The server's metrics in the Prometheus text format (`GET /metrics`). Hand-written rather
//! than the `metrics` crates: a handful of counters and two histograms, all recorded here,
//! need a map and a formatter, not a recorder framework and its exporter's HTTP stack.

use crate::problem_code::ProblemCode;
use cortex_mcp::CallOutcome;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds (seconds) of the latency histogram's buckets: 200 ms is where a call is
/// logged as slow.
const BUCKETS: [f64; 11] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1.0, 2.5, 5.0, 10.0];

/// `(name, type, help)` of every metric, in the order they are printed.
const FAMILIES: [(&str, &str, &str); 12] = [
    (
        "cortex_tool_calls_total",
        "counter",
        "MCP tool calls by tool, find mode and outcome (ok, refused, error, forbidden, timeout)",
    ),
    (
        "cortex_tool_call_duration_seconds",
        "histogram",
        "Time from a tool call's arrival to its answer, by tool and find mode",
    ),
    (
        "cortex_store_items_total",
        "counter",
        "Items of memory_store calls by outcome (inserted, updated, deleted, skipped_dedupe, business_rule_blocked, validation_error)",
    ),
    ("cortex_http_requests_total", "counter", "HTTP requests by path and status"),
    ("cortex_http_refused_total", "counter", "HTTP requests refused before reaching MCP, by reason"),
    ("cortex_http_calls_in_flight", "gauge", "MCP requests being answered now"),
    ("cortex_http_sessions_open", "gauge", "MCP sessions open, over all keys"),
    ("cortex_http_connections_open", "gauge", "Client connections open now"),
    (
        "cortex_http_connections_closed_total",
        "counter",
        "Client connections the server closed or refused, by reason (shed: closed for a new one at a cap; timeout: headers or next request late; full: refused, every connection busy)",
    ),
    (
        "cortex_db_pool_connections",
        "gauge",
        "PostgreSQL pool connections by pool (primary, replica) and state (in_use, idle)",
    ),
    ("cortex_process_resident_memory_bytes", "gauge", "Resident set size of this process"),
    (
        "cortex_vectors_indexed",
        "gauge",
        "Vectors in this process's in-process index (a SQLite memory; PostgreSQL searches its own HNSW index)",
    ),
];

type Labels = Vec<(&'static str, String)>;

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

#[derive(Default)]
struct Series {
    counters: BTreeMap<(&'static str, Labels), u64>,
    histograms: BTreeMap<(&'static str, Labels), Histogram>,
}

#[derive(Default)]
pub struct Metrics {
    series: Mutex<Series>,
    in_flight: std::sync::atomic::AtomicI64,
    sessions_open: std::sync::atomic::AtomicUsize,
    connections_open: std::sync::atomic::AtomicUsize,
}

impl Metrics {
    fn series(&self) -> std::sync::MutexGuard<'_, Series> {
        self.series.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn add(&self, name: &'static str, labels: Labels, by: u64) {
        *self.series().counters.entry((name, labels)).or_default() += by;
    }

    /// One tool call: its outcome and how long it took.
    pub fn tool_call(&self, tool: &str, mode: &str, outcome: CallOutcome, took: Duration) {
        let labels = vec![("tool", tool.to_string()), ("mode", mode.to_string())];
        let mut with_outcome = labels.clone();
        with_outcome.push(("outcome", outcome.as_str().to_string()));
        self.add("cortex_tool_calls_total", with_outcome, 1);
        let mut series = self.series();
        let h = series.histograms.entry(("cortex_tool_call_duration_seconds", labels)).or_default();
        let seconds = took.as_secs_f64();
        for (bound, count) in BUCKETS.iter().zip(h.counts.iter_mut()) {
            if seconds <= *bound {
                *count += 1;
            }
        }
        h.count += 1;
        h.sum += seconds;
    }

    pub fn store_items(&self, outcome: &str, n: u64) {
        if n > 0 {
            self.add("cortex_store_items_total", vec![("outcome", outcome.to_string())], n);
        }
    }

    pub fn http_request(&self, path: &str, status: u16) {
        self.add(
            "cortex_http_requests_total",
            vec![("path", path.to_string()), ("status", status.to_string())],
            1,
        );
    }

    /// A request the gate refused, counted under its code's reason (if it has one).
    pub fn refused(&self, code: ProblemCode) {
        if let Some(reason) = code.metric_reason() {
            self.add("cortex_http_refused_total", vec![("reason", reason.to_string())], 1);
        }
    }

    pub fn call_started(&self) {
        self.in_flight.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn call_ended(&self) {
        self.in_flight.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn set_connections_open(&self, n: usize) {
        self.connections_open.store(n, std::sync::atomic::Ordering::Relaxed);
    }

    /// A connection the server closed (or refused) on its own: `shed`, `timeout` or `full`.
    pub fn connection_closed(&self, reason: &'static str) {
        self.add("cortex_http_connections_closed_total", vec![("reason", reason.to_string())], 1);
    }

    pub fn set_sessions_open(&self, n: usize) {
        self.sessions_open.store(n, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn in_flight(&self) -> i64 {
        self.in_flight.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Everything, in the Prometheus text exposition format (version 0.0.4), with the
    /// database pools as `pools` says they are now and the in-process index's `vectors`.
    pub fn render(&self, pools: &[cortex_store::PoolState], vectors: usize) -> String {
        let series = self.series();
        let mut out = String::new();
        for (name, kind, help) in FAMILIES {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            match name {
                "cortex_http_calls_in_flight" => {
                    let _ = writeln!(out, "{name} {}", self.in_flight());
                }
                "cortex_http_connections_open" => {
                    let _ = writeln!(
                        out,
                        "{name} {}",
                        self.connections_open.load(std::sync::atomic::Ordering::Relaxed)
                    );
                }
                "cortex_http_sessions_open" => {
                    let _ = writeln!(
                        out,
                        "{name} {}",
                        self.sessions_open.load(std::sync::atomic::Ordering::Relaxed)
                    );
                }
                "cortex_db_pool_connections" => {
                    for p in pools {
                        let in_use = p.connections.saturating_sub(p.idle);
                        let _ = writeln!(out, "{name}{{pool=\"{}\",state=\"in_use\"}} {in_use}", p.pool);
                        let _ = writeln!(out, "{name}{{pool=\"{}\",state=\"idle\"}} {}", p.pool, p.idle);
                    }
                }
                "cortex_process_resident_memory_bytes" => {
                    let _ = writeln!(out, "{name} {}", resident_bytes().unwrap_or(0));
                }
                "cortex_vectors_indexed" => {
                    let _ = writeln!(out, "{name} {vectors}");
                }
                _ => {}
            }
            for ((n, labels), value) in series.counters.iter().filter(|((n, _), _)| *n == name) {
                let _ = writeln!(out, "{n}{} {value}", label_text(labels, None));
            }
            for ((n, labels), h) in series.histograms.iter().filter(|((n, _), _)| *n == name) {
                for (bound, count) in BUCKETS.iter().zip(h.counts) {
                    let _ =
                        writeln!(out, "{n}_bucket{} {count}", label_text(labels, Some(&bound.to_string())));
                }
                let _ = writeln!(out, "{n}_bucket{} {}", label_text(labels, Some("+Inf")), h.count);
                let _ = writeln!(out, "{n}_sum{} {}", label_text(labels, None), h.sum);
                let _ = writeln!(out, "{n}_count{} {}", label_text(labels, None), h.count);
            }
        }
        out
    }
}

/// The MCP adapter counts its tool calls here (inherent methods: the metrics' tests use them).
impl cortex_mcp::CallMetrics for Metrics {
    fn tool_call(&self, tool: &str, mode: &str, outcome: CallOutcome, took: Duration) {
        Metrics::tool_call(self, tool, mode, outcome, took);
    }

    fn store_items(&self, outcome: &str, n: u64) {
        Metrics::store_items(self, outcome, n);
    }
}

/// `{a="x",b="y"}` with values escaped as the format asks (backslash, quote, newline).
fn label_text(labels: &Labels, le: Option<&str>) -> String {
    let mut parts: Vec<String> = labels
        .iter()
        .map(|(k, v)| {
            format!("{k}=\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n"))
        })
        .collect();
    if let Some(le) = le {
        parts.push(format!("le=\"{le}\""));
    }
    if parts.is_empty() { String::new() } else { format!("{{{}}}", parts.join(",")) }
}

/// This process's resident set size, from `/proc/self/status` (Linux); `None` elsewhere.
fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_render_as_counters_and_cumulative_histograms() {
        let m = Metrics::default();
        m.tool_call("memory_find", "fast", CallOutcome::Ok, Duration::from_millis(3));
        m.tool_call("memory_find", "fast", CallOutcome::Ok, Duration::from_millis(300));
        m.store_items("inserted", 2);
        m.store_items("skipped_dedupe", 0);
        m.refused(ProblemCode::RateLimited);
        m.http_request("/mcp", 200);
        let pools = [cortex_store::PoolState { pool: "primary", connections: 3, idle: 1 }];
        let text = m.render(&pools, 42);
        assert!(text.contains("\ncortex_vectors_indexed 42\n"), "{text}");
        assert!(text.contains("cortex_db_pool_connections{pool=\"primary\",state=\"in_use\"} 2\n"), "{text}");
        assert!(text.contains("cortex_db_pool_connections{pool=\"primary\",state=\"idle\"} 1\n"));
        assert!(
            text.contains("cortex_tool_calls_total{tool=\"memory_find\",mode=\"fast\",outcome=\"ok\"} 2\n"),
            "{text}"
        );
        assert!(text.contains(
            "cortex_tool_call_duration_seconds_bucket{tool=\"memory_find\",mode=\"fast\",le=\"0.005\"} 1\n"
        ));
        assert!(text.contains(
            "cortex_tool_call_duration_seconds_bucket{tool=\"memory_find\",mode=\"fast\",le=\"0.5\"} 2\n"
        ));
        assert!(text.contains(
            "cortex_tool_call_duration_seconds_bucket{tool=\"memory_find\",mode=\"fast\",le=\"+Inf\"} 2\n"
        ));
        assert!(
            text.contains("cortex_tool_call_duration_seconds_count{tool=\"memory_find\",mode=\"fast\"} 2\n")
        );
        assert!(text.contains("cortex_store_items_total{outcome=\"inserted\"} 2\n"));
        assert!(!text.contains("skipped_dedupe\"}"), "zero counts are not made up");
        assert!(text.contains("cortex_http_refused_total{reason=\"rate_limited\"} 1\n"));
        assert!(text.contains("# TYPE cortex_tool_call_duration_seconds histogram\n"));
        let rss: u64 = text
            .lines()
            .find_map(|l| l.strip_prefix("cortex_process_resident_memory_bytes "))
            .unwrap()
            .parse()
            .unwrap();
        assert!(rss > 1_000_000, "{rss}");
    }

    #[test]
    fn the_help_text_names_every_call_outcome() {
        let help = FAMILIES[0].2;
        for outcome in CallOutcome::ALL {
            assert!(help.contains(outcome.as_str()), "{outcome} is not in {help:?}");
        }
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(label_text(&vec![("path", "a\"b\\c\nd".into())], None), "{path=\"a\\\"b\\\\c\\nd\"}");
    }
}
