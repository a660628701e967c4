//! `cortex-bench bench --http`: the team server under load. A real `cortex serve --http` on `size`
//! corpus items; many clients send MCP tool calls over HTTP (stateless requests of the
//! 2026-07-28 era, each one POST) on a fixed schedule — open loop: a request's latency counts
//! from when it was due, so a server that falls behind shows its queueing instead of hiding it
//! by slowing the clients down. Mixes:
//! - the team profile: 90% finds (`fast` and `auto` alike) and 10% stores of 1–10 items,
//!   with and without API keys (auth and rate limiting measured as the difference);
//! - the design's acceptance profile: 100 clients asking for 1,000 `fast` finds per second.
//!
//! Reports what was sustained, latency percentiles, errors and the server's peak RSS.

use super::{ms, peak_rss_kib, percentile};
use crate::corpus::{self, Rng};
use crate::output;
use serde_json::{Value, json};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One request the schedule asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    FindFast,
    FindAuto,
    Store,
}

impl Call {
    fn label(self) -> &'static str {
        match self {
            Call::FindFast => "find fast",
            Call::FindAuto => "find auto",
            Call::Store => "store",
        }
    }
}

/// A load to apply: how many clients, how many requests a second, for how long, in what mix.
#[derive(Clone, Debug)]
pub struct Plan {
    pub name: &'static str,
    pub clients: usize,
    pub per_second: f64,
    pub duration: Duration,
    /// Percent of stores; the rest are finds, `auto_share` percent of them `auto`.
    pub store_percent: u32,
    pub auto_percent: u32,
}

/// What one run measured.
pub struct Outcome {
    pub sent: usize,
    pub elapsed: Duration,
    pub errors: usize,
    /// The first error seen, to say what went wrong.
    pub first_error: Option<String>,
    /// Finds that found nothing: a benchmark whose queries miss its corpus measures the
    /// suggestions path instead of finds.
    pub empty_finds: usize,
    /// Latencies of the finds answered with fewer than 3 hits: those also build suggestions.
    pub few_hits: Vec<Duration>,
    pub latencies: Vec<(Call, Duration)>,
}

impl Outcome {
    pub fn per_second(&self) -> f64 {
        self.sent as f64 / self.elapsed.as_secs_f64()
    }

    fn sorted(&self, call: Option<Call>) -> Vec<Duration> {
        let mut all: Vec<Duration> =
            self.latencies.iter().filter(|(c, _)| call.is_none_or(|k| *c == k)).map(|(_, d)| *d).collect();
        all.sort();
        all
    }
}

/// The design's bound on an acceptance run's latency.
pub const ACCEPTANCE_P95: Duration = Duration::from_millis(100);

/// Whether a run held its asked rate: every request answered without error, at least 98% of
/// the asked rate sustained (a server that falls behind stretches the run, which lowers it) and
/// p95 under `bound`.
pub fn held(plan: &Plan, outcome: &Outcome, bound: Duration) -> bool {
    let sorted = outcome.sorted(None);
    !sorted.is_empty()
        && outcome.errors == 0
        && outcome.per_second() >= 0.98 * plan.per_second
        && percentile(&sorted, 95.0) < bound
}

/// Where and as whom the clients call.
pub struct Target {
    pub url: String,
    pub key: Option<String>,
}

/// Runs `plan` against the server at `target`; `pid` is the server's, for its RSS.
pub fn apply(plan: &Plan, target: &Target) -> Outcome {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_idle_connections(plan.clients * 2)
        .max_idle_connections_per_host(plan.clients * 2)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into();
    let interval = Duration::from_secs_f64(1.0 / plan.per_second);
    let total = (plan.duration.as_secs_f64() * plan.per_second) as usize;
    let (jobs, queue) = mpsc::channel::<(Instant, Call, u64)>();
    let queue = Arc::new(Mutex::new(queue));
    let results = Arc::new(Mutex::new(Outcome {
        sent: 0,
        elapsed: Duration::ZERO,
        errors: 0,
        first_error: None,
        empty_finds: 0,
        few_hits: Vec::new(),
        latencies: Vec::with_capacity(total),
    }));
    let start = Instant::now() + Duration::from_millis(50);
    std::thread::scope(|scope| {
        for _ in 0..plan.clients {
            let (queue, results, agent) = (queue.clone(), results.clone(), agent.clone());
            scope.spawn(move || {
                loop {
                    let next = queue.lock().map(|q| q.recv()).ok().and_then(Result::ok);
                    let Some((due, call, seed)) = next else { break };
                    if let Some(wait) = due.checked_duration_since(Instant::now()) {
                        std::thread::sleep(wait);
                    }
                    let outcome = send(&agent, target, call, seed);
                    let latency = due.elapsed();
                    let Ok(mut r) = results.lock() else { break };
                    r.sent += 1;
                    r.latencies.push((call, latency));
                    if let Ok(Some(hits)) = &outcome
                        && *hits < 3
                    {
                        r.few_hits.push(latency);
                    }
                    match outcome {
                        Ok(Some(0)) => r.empty_finds += 1,
                        Ok(_) => {}
                        Err(e) => {
                            r.errors += 1;
                            r.first_error.get_or_insert(e);
                        }
                    }
                }
            });
        }
        // The schedule: request n is due at start + n × interval, whatever came back.
        let mut rng = Rng::new(11);
        for n in 0..total {
            let call = if rng.below(100) < plan.store_percent as usize {
                Call::Store
            } else if rng.below(100) < plan.auto_percent as usize {
                Call::FindAuto
            } else {
                Call::FindFast
            };
            let due = start + interval.mul_f64(n as f64);
            if jobs.send((due, call, n as u64)).is_err() {
                break;
            }
        }
        drop(jobs);
    });
    let mut outcome = match Arc::try_unwrap(results).map(Mutex::into_inner) {
        Ok(Ok(outcome)) => outcome,
        _ => unreachable!("every client thread has ended"),
    };
    outcome.elapsed = start.elapsed();
    outcome
}

/// One tool call as a stateless POST: a find's number of hits; `Err` says what failed
/// (transport, HTTP status, a JSON-RPC error or a tool error).
fn send(agent: &ureq::Agent, target: &Target, call: Call, seed: u64) -> Result<Option<usize>, String> {
    let mut rng = Rng::new(seed.wrapping_mul(2_654_435_761).wrapping_add(7));
    let (tool, arguments) = match call {
        Call::FindFast => ("memory_find", json!({"query": corpus::query(&mut rng), "mode": "fast"})),
        Call::FindAuto => ("memory_find", json!({"query": corpus::query(&mut rng), "mode": "auto"})),
        Call::Store => {
            let n = 1 + rng.below(10);
            let items: Vec<Value> =
                (0..n).map(|i| corpus::item(1_000_000 + seed as usize * 10 + i, &mut rng)).collect();
            ("memory_store", json!({ "items": items }))
        }
    };
    let answer = call_tool(agent, target, tool, arguments, seed)?;
    Ok(answer["hits"].as_array().map(Vec::len))
}

/// One `tools/call` of `tool` as a stateless POST: the tool's structured answer; `Err` says
/// what failed (transport, HTTP status, a JSON-RPC error or a tool error).
pub fn call_tool(
    agent: &ureq::Agent,
    target: &Target,
    tool: &str,
    arguments: Value,
    id: u64,
) -> Result<Value, String> {
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        // A stateless request carries what a session's handshake would have said.
        "params": {"name": tool, "arguments": arguments, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "cortex-bench", "version": env!("CARGO_PKG_VERSION")},
        }},
    });
    let mut request = agent
        .post(&target.url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        // The method and tool name as headers too (SEP-2243), which the server checks.
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", tool);
    if let Some(key) = &target.key {
        request = request.header("Authorization", &format!("Bearer {key}"));
    }
    let mut response = request.send(body.to_string()).map_err(|e| format!("transport: {e}"))?;
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().map_err(|e| format!("reading the answer: {e}"))?;
    if status != 200 {
        return Err(format!("HTTP {status}: {}", text.chars().take(300).collect::<String>()));
    }
    let message = json_rpc_message(&text).ok_or_else(|| format!("no JSON-RPC answer in: {text:.300}"))?;
    if let Some(error) = message.get("error") {
        return Err(format!("JSON-RPC error: {error}"));
    }
    if message["result"]["isError"] == json!(true) {
        return Err(format!("tool error: {}", message["result"]["structuredContent"]));
    }
    Ok(message["result"]["structuredContent"].clone())
}

/// The JSON-RPC message of an answer sent as JSON, or as a server-sent event stream (the last
/// `data:` line that parses).
fn json_rpc_message(text: &str) -> Option<Value> {
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        return Some(value);
    }
    text.lines()
        .rev()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v.get("result").is_some() || v.get("error").is_some())
}

/// One Markdown row per call kind and one for all, of a run.
pub fn rows(
    backend: &str,
    items: usize,
    plan: &Plan,
    outcome: &Outcome,
    server_pid: u32,
    auth: &str,
) -> Vec<String> {
    let mut out = Vec::new();
    let rss = peak_rss_kib(server_pid) as f64 / 1024.0;
    for call in [None, Some(Call::FindFast), Some(Call::FindAuto), Some(Call::Store)] {
        let sorted = outcome.sorted(call);
        if sorted.is_empty() {
            continue;
        }
        out.push(format!(
            "| {backend} | {items} | {} | {auth} | {} | {:.0}/s | {:.0}/s | {} | {:.2} ms | {:.2} ms | {:.2} ms | {} | {:.1} MiB |",
            plan.name,
            call.map_or("all", Call::label),
            plan.per_second,
            if call.is_none() { outcome.per_second() } else { sorted.len() as f64 / outcome.elapsed.as_secs_f64() },
            sorted.len(),
            ms(percentile(&sorted, 50.0)),
            ms(percentile(&sorted, 95.0)),
            ms(percentile(&sorted, 99.0)),
            if call.is_none() { outcome.errors.to_string() } else { String::new() },
            rss,
        ));
    }
    if let Some(e) = &outcome.first_error {
        output::line(&format!("first error ({} in all): {e}", outcome.errors));
    }
    if outcome.empty_finds > 0 {
        output::line(&format!("{} finds of {} found nothing", outcome.empty_finds, plan.name));
    }
    out
}

pub const HEADER: &str = "| backend | items | profile | auth | calls | asked | sustained | n | p50 | p95 | p99 | errors | server peak RSS |\n|---|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|";

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(sent: usize, seconds: u64, errors: usize, latency_ms: u64) -> Outcome {
        Outcome {
            sent,
            elapsed: Duration::from_secs(seconds),
            errors,
            first_error: None,
            empty_finds: 0,
            few_hits: Vec::new(),
            latencies: vec![(Call::FindFast, Duration::from_millis(latency_ms)); sent],
        }
    }

    #[test]
    fn a_run_holds_its_rate_only_at_that_rate_without_errors_and_under_the_bound() {
        let plan = Plan {
            name: "acceptance",
            clients: 100,
            per_second: 1_000.0,
            duration: Duration::from_secs(10),
            store_percent: 0,
            auto_percent: 0,
        };
        assert!(held(&plan, &outcome(10_000, 10, 0, 20), ACCEPTANCE_P95));
        assert!(!held(&plan, &outcome(10_000, 10, 0, 100), ACCEPTANCE_P95), "p95 at the bound");
        assert!(!held(&plan, &outcome(10_000, 10, 1, 20), ACCEPTANCE_P95), "an error");
        assert!(!held(&plan, &outcome(10_000, 12, 0, 20), ACCEPTANCE_P95), "833/s of 1,000 asked");
        assert!(!held(&plan, &outcome(0, 10, 0, 20), ACCEPTANCE_P95), "nothing answered");
    }

    #[test]
    fn an_answer_is_read_from_json_or_from_an_event_stream() {
        let plain = r#"{"jsonrpc":"2.0","id":1,"result":{"isError":false}}"#;
        assert_eq!(json_rpc_message(plain).unwrap()["id"], 1);
        let stream = "id: 0\nretry: 3000\ndata:\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n";
        assert_eq!(json_rpc_message(stream).unwrap()["id"], 2);
        assert!(json_rpc_message("event: ping\n\n").is_none());
    }
}
