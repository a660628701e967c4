//! `cortex-bench bench --flood`: no tenant starves another. A real `cortex serve --http`
//! with its default limits holds `size` corpus items of one org (acme) and a few hundred of
//! another (globex). The other org's read key asks for finds on a fixed schedule (open loop,
//! half `fast` and half `auto`): first alone, its baseline, then while a default-rate write key
//! of acme runs 16 parallel 100-item `memory_store` calls back to back. The bound the issue
//! sets: under the flood, the other tenant's find p95 stays within 10× its baseline and 1 s.

use super::flood_hints;
use super::http::{Server, create_key_for};
use super::http_load::{self, Plan, Target};
use super::{ms, percentile, store_corpus};
use crate::corpus::{self, Rng};
use crate::output;
use cortex_service::scope_inference::InferredScope;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Config, MemoryService};
use cortex_store::DbTarget;
use serde_json::{Value, json};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The flood of the probe: this many calls at once, of this many items each.
const WRITERS: usize = 16;
const ITEMS_PER_STORE: usize = 100;
/// The other tenant: its items, and its finds a second (from a few clients).
const OTHER_ITEMS: usize = 500;
const FIND_RATE: f64 = 10.0;
/// The bound: p95 under the flood at most this many times the baseline, and at most 1 s.
const MAX_RATIO: f64 = 10.0;
const MAX_P95: Duration = Duration::from_secs(1);

pub struct Load {
    pub duration: Duration,
    pub semantic: bool,
}

pub const HEADER: &str = "| backend | items | embedder | other tenant's finds | n | p50 | p95 | p99 | errors | flood stores done | flood items/s | flood errors |\n|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|";

/// What the flood did meanwhile.
#[derive(Default)]
struct Flood {
    stores: usize,
    items: usize,
    errors: usize,
    first_error: Option<String>,
}

/// One backend at one size (the acme org's corpus): the table's rows and the verdict.
pub fn bench_one(
    backend: &'static str,
    db: &str,
    size: usize,
    load: &Load,
) -> Result<(Vec<String>, String), String> {
    let embedder = match load.semantic {
        true => cortex_service::config::embedder_from_env().map_err(|e| e.to_string())?,
        false => EmbedderChoice::None,
    };
    let acme = MemoryService::open(&Config::new(DbTarget::parse(db), super::bench_scope(), embedder.clone()))
        .map_err(|e| e.to_string())?;
    store_corpus(&acme, size)?;
    drop(acme);
    let globex = InferredScope::fixed("globex", "web", "main");
    let other = MemoryService::open(&Config::new(DbTarget::parse(db), globex, embedder))
        .map_err(|e| e.to_string())?;
    // Items of its own (the corpus' first items again would be duplicates of acme's).
    let mut rng = Rng::new(7);
    for first in (0..OTHER_ITEMS).step_by(ITEMS_PER_STORE) {
        let items: Vec<Value> = (first..first + ITEMS_PER_STORE)
            .map(|i| {
                let mut item = corpus::item(5_000_000 + i, &mut rng);
                // The corpus names acme's scope on every item.
                item["scope"] = json!({"org": "globex", "project": "web", "branch": "main"});
                item
            })
            .collect();
        let stored = super::store_items(&other, &items)?;
        if stored.summary.inserted == 0 {
            return Err(format!("the other tenant's items were not stored: {:?}", stored.results.first()));
        }
    }
    drop(other);
    if backend == "postgres" {
        super::settle_postgres(db)?;
    }
    super::build_index(db)?;
    let writer = create_key_for(db, &["--role", "write", "--org", "acme", "--project", "api"])?;
    let reader = create_key_for(db, &["--role", "read", "--org", "globex", "--project", "web"])?;
    // The server's own limits, as a team installs it; the model when asked for.
    let server = Server::start(db, load.semantic, &[])?;
    let finds = Plan {
        name: "flood",
        clients: 4,
        per_second: FIND_RATE,
        duration: load.duration,
        store_percent: 0,
        auto_percent: 50,
    };
    let tenant = Target { url: server.url.clone(), key: Some(reader) };
    let alone = http_load::apply(&finds, &tenant);
    let hints_alone = flood_hints::mistyped_finds(&tenant);
    let flooder = Target { url: server.url.clone(), key: Some(writer) };
    let ((flooded, hints_flooded), flood) =
        under_flood(&flooder, || (http_load::apply(&finds, &tenant), flood_hints::mistyped_finds(&tenant)));
    for (phase, hints) in [("alone", &hints_alone), ("under the flood", &hints_flooded)] {
        output::line(&hints_line(backend, phase, hints));
    }

    let embedder = if load.semantic { "model" } else { "none" };
    let mut rows = Vec::new();
    let mut p95 = Vec::new();
    for (phase, outcome, flood) in [("alone", &alone, None), ("under the flood", &flooded, Some(&flood))] {
        let mut sorted: Vec<Duration> = outcome.latencies.iter().map(|(_, d)| *d).collect();
        sorted.sort();
        if sorted.is_empty() {
            return Err(format!("no find of the other tenant was answered {phase}"));
        }
        p95.push(percentile(&sorted, 95.0));
        let (done, per_second, errors) = match flood {
            Some(f) => (
                f.stores.to_string(),
                format!("{:.0}", f.items as f64 / outcome.elapsed.as_secs_f64()),
                f.errors.to_string(),
            ),
            None => (String::new(), String::new(), String::new()),
        };
        rows.push(format!(
            "| {backend} | {size} + {OTHER_ITEMS} | {embedder} | {phase} | {} | {:.1} ms | {:.1} ms | {:.1} ms | {} | {done} | {per_second} | {errors} |",
            sorted.len(),
            ms(percentile(&sorted, 50.0)),
            ms(percentile(&sorted, 95.0)),
            ms(percentile(&sorted, 99.0)),
            outcome.errors,
        ));
        if outcome.empty_finds > 0 {
            // Such finds also build suggestions: a path of its own, with its own costs.
            output::line(&format!("{backend}, {phase}: {} finds found nothing", outcome.empty_finds));
        }
        if !outcome.few_hits.is_empty() {
            let mut few = outcome.few_hits.clone();
            few.sort();
            output::line(&format!(
                "{backend}, {phase}: {} finds with fewer than 3 hits (suggestions built): p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms",
                few.len(),
                ms(percentile(&few, 50.0)),
                ms(percentile(&few, 95.0)),
                ms(few[few.len() - 1]),
            ));
        }
        if let Some(e) = &outcome.first_error {
            output::line(&format!("{backend}, {phase}: first error of the other tenant's finds: {e}"));
        }
    }
    if let Some(e) = &flood.first_error {
        output::line(&format!("{backend}: first error of the flood ({} in all): {e}", flood.errors));
    }
    let ratio = p95[1].as_secs_f64() / p95[0].as_secs_f64().max(1e-6);
    let within = ratio <= MAX_RATIO && p95[1] <= MAX_P95;
    let verdict = format!(
        "{backend}: the other tenant's find p95 under the flood is {:.1} ms, {ratio:.1}× its {:.1} ms alone: {}",
        ms(p95[1]),
        ms(p95[0]),
        if within {
            "within the bound (≤ 10× and ≤ 1 s)"
        } else {
            "OVER the bound (≤ 10× and ≤ 1 s)"
        }
    );
    Ok((rows, verdict))
}

/// What the mistyped finds of one phase measured, as a line.
fn hints_line(backend: &str, phase: &str, hints: &flood_hints::Hints) -> String {
    let mut few = hints.few.clone();
    few.sort();
    let timing = match few.last() {
        Some(max) => format!(
            "p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms",
            ms(percentile(&few, 50.0)),
            ms(percentile(&few, 95.0)),
            ms(*max)
        ),
        None => "none".to_string(),
    };
    let error = hints.first_error.as_ref().map(|e| format!("; first error: {e}")).unwrap_or_default();
    format!(
        "{backend}, {phase}: {} mistyped finds with fewer than 3 hits (suggestions built): {timing} ({} had 3 hits or more, {} errors{error})",
        few.len(),
        hints.more,
        hints.errors,
    )
}

/// Runs `measure` while `WRITERS` threads send 100-item stores of `flooder` back to back; what
/// it measured and what the flood did.
fn under_flood<T>(flooder: &Target, measure: impl FnOnce() -> T) -> (T, Flood) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .into();
    let stop = AtomicBool::new(false);
    let flood = Mutex::new(Flood::default());
    let measured = std::thread::scope(|scope| {
        for writer in 0..WRITERS {
            let (agent, stop, flood) = (agent.clone(), &stop, &flood);
            scope.spawn(move || {
                let mut rng = Rng::new(1_000 + writer as u64);
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    // Items no other store made: each one is inserted, never a duplicate.
                    let first = 10_000_000 + (writer * 100_000 + n) * ITEMS_PER_STORE;
                    let items: Vec<Value> =
                        (first..first + ITEMS_PER_STORE).map(|i| corpus::item(i, &mut rng)).collect();
                    let answer = http_load::call_tool(
                        &agent,
                        flooder,
                        "memory_store",
                        json!({"items": items}),
                        n as u64,
                    );
                    let Ok(mut f) = flood.lock() else { return };
                    match answer {
                        Ok(_) => {
                            f.stores += 1;
                            f.items += ITEMS_PER_STORE;
                        }
                        Err(e) => {
                            f.errors += 1;
                            f.first_error.get_or_insert(e);
                            drop(f);
                            // A refusal says when to come back; a flood of retries measures nothing.
                            std::thread::sleep(Duration::from_millis(200));
                        }
                    }
                    n += 1;
                }
            });
        }
        // The flood is under way before the finds are measured.
        std::thread::sleep(Duration::from_secs(2));
        let measured = measure();
        stop.store(true, Ordering::Relaxed);
        measured
    });
    (measured, flood.into_inner().unwrap_or_default())
}
