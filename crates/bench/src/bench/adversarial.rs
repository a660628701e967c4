//! `cortex-bench bench --adversarial`: worst-case finds over the synthetic corpus at each
//! size, through one real `cortex serve` session: one word repeated 50,000 times in an item,
//! items of 256 KiB, a page of 100 × 30 KB hits, and 1,000-tag queries. Each adversarial find
//! is sent, then a light probe find on the same session; the table shows the adversarial
//! find's latency (max, p95), the probe's worst latency, and how often the probe was answered
//! before the adversarial find: a session that serialized its calls would never answer first.

use super::session::Session;
use super::{bench_scope, ms, on_each_backend, percentile, store_corpus};
use crate::output;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Config, MemoryService};
use cortex_store::DbTarget;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Words no corpus item holds, one per adversarial case.
const REPEATED: &str = "zeta";
const LARGE: &str = "omicron";
const WIDE: &str = "lambda";

struct Case {
    name: &'static str,
    arguments: Value,
}

struct Row {
    backend: &'static str,
    size: usize,
    case: &'static str,
    find_max: Duration,
    find_p95: Duration,
    probe_max: Duration,
    probe_first: usize,
    runs: usize,
    refused: bool,
}

pub fn run(
    sizes: &[usize],
    queries: usize,
    dir: &std::path::Path,
    postgres: Option<&str>,
) -> Result<(), String> {
    let runs = (queries / 25).clamp(5, 50);
    let rows = on_each_backend("adversarial", sizes, dir, postgres, |backend, db, size| {
        bench_one(backend, db, size, runs)
    })?;
    output::line(
        "| backend | items | case | find max | find p95 | probe find max | probe answered first | refused |",
    );
    output::line("|---|---:|---|---:|---:|---:|---:|---|");
    for r in rows.into_iter().flatten() {
        output::line(&format!(
            "| {} | {} | {} | {:.1} ms | {:.1} ms | {:.1} ms | {}/{} | {} |",
            r.backend,
            r.size,
            r.case,
            ms(r.find_max),
            ms(r.find_p95),
            ms(r.probe_max),
            r.probe_first,
            r.runs,
            if r.refused { "yes (clear error)" } else { "no" },
        ));
    }
    Ok(())
}

/// The adversarial items, in batches a client may send (at most 100 items, 64 MiB).
fn adversarial_batches() -> Vec<Vec<Value>> {
    let mut batches = Vec::new();
    // One word 50,000 times (250 KB, under the 256 KiB item limit): five such items.
    let repeated: Vec<Value> = (0..5)
        .map(|i| json!({"kind": "section", "content": format!("repeat {i} {}", format!("{REPEATED} ").repeat(50_000))}))
        .collect();
    batches.push(repeated);
    // Items of 256 KiB of varied text holding the query word a few times.
    let large: Vec<Value> = (0..20)
        .map(|i| {
            let mut text = format!("large {i} {LARGE} ");
            let mut n = i as u64 + 1;
            while text.len() < cortex_domain::limits::MAX_CONTENT_BYTES - 64 {
                n = n.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                text.push_str(&format!("w{} ", n % 50_000));
                if n.is_multiple_of(997) {
                    text.push_str(LARGE);
                    text.push(' ');
                }
            }
            json!({"kind": "section", "content": text})
        })
        .collect();
    batches.push(large);
    // 100 items of 30 KB that all match: a full page of large hits.
    let wide: Vec<Value> = (0..100)
        .map(|i| json!({"kind": "section", "content": format!("wide {i} {WIDE} {}", format!("filler{i} text ").repeat(2_000))}))
        .collect();
    batches.push(wide);
    batches
}

fn cases() -> Vec<Case> {
    let tags: Vec<String> = (0..1_000).map(|i| format!("tag{i}")).collect();
    vec![
        Case { name: "one word 50,000 times", arguments: json!({"query": REPEATED, "mode": "fast"}) },
        Case { name: "256 KiB items", arguments: json!({"query": LARGE, "mode": "fast"}) },
        Case {
            name: "100 × 30 KB hits, 20,000 chars each",
            arguments: json!({"query": WIDE, "mode": "fast", "limit": 100, "max_content_chars": 20_000}),
        },
        Case { name: "1,000 tags", arguments: json!({"query": "deploy", "mode": "fast", "tags": tags}) },
        Case {
            name: "32 tags",
            arguments: json!({"query": "deploy", "mode": "fast", "tags": tags[..32].to_vec()}),
        },
    ]
}

fn bench_one(backend: &'static str, db: &str, size: usize, runs: usize) -> Result<Vec<Row>, String> {
    tracing::info!(backend, size, "adversarial benchmark: storing");
    let config = Config::new(DbTarget::parse(db), bench_scope(), EmbedderChoice::None);
    let service = MemoryService::open(&config).map_err(|e| e.to_string())?;
    store_corpus(&service, size)?;
    for batch in adversarial_batches() {
        let out = super::store_items(&service, &batch)?;
        if out.summary.validation_error > 0 {
            return Err(format!(
                "an adversarial item was refused: {:?}",
                out.results.iter().find(|r| r.error.is_some())
            ));
        }
    }
    drop(service);
    tracing::info!(backend, size, "adversarial benchmark: finding");
    let mut session = Session::start(db, false)?;
    let mut rows = Vec::new();
    for case in cases() {
        let (mut finds, mut probes, mut probe_first, mut refused) = (Vec::new(), Vec::new(), 0, false);
        for _ in 0..runs {
            let sent = Instant::now();
            let find = session.send_find(&case.arguments)?;
            let probe = session.send_find(&json!({"query": "deploy", "mode": "fast", "limit": 1}))?;
            let answers = session.wait_for(&[find, probe])?;
            let (find_at, find_answer) = &answers[0];
            let (probe_at, _) = &answers[1];
            finds.push(find_at.duration_since(sent));
            probes.push(probe_at.duration_since(sent));
            probe_first += usize::from(probe_at < find_at);
            refused |= find_answer["result"]["isError"] == json!(true);
        }
        finds.sort();
        probes.sort();
        rows.push(Row {
            backend,
            size,
            case: case.name,
            find_max: finds.last().copied().unwrap_or_default(),
            find_p95: percentile(&finds, 95.0),
            probe_max: probes.last().copied().unwrap_or_default(),
            probe_first,
            runs,
            refused,
        });
    }
    session.close()?;
    Ok(rows)
}
