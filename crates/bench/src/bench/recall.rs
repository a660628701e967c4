//! `cortex-bench bench --recall DATASET`: `cortex recall` timed as an agent's prompt-submit hook runs
//! it — a fresh process per prompt, from spawn to exit, opening the store and the lexical index
//! each time. The store holds `size` items of 3 sentences recombined from the dataset's
//! abstracts (`prose_corpus.rs`, as `--prose`), stored in the caller's project; the prompts are
//! the dataset's test claims (natural language, 10–20 words) and [`UNRELATED`] prompts.

use super::prose_corpus::{self, Prose};
use super::{bench_scope, ms, percentile};
use crate::eval::recall_hook::UNRELATED;
use crate::output;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Config, MemoryService};
use cortex_store::DbTarget;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Untimed runs first: the page cache holds the index and the binary, as on a machine in use.
const WARM_UP: usize = 10;

struct Row {
    size: usize,
    set: &'static str,
    times: Vec<Duration>,
    injected: usize,
}

pub fn run(dataset: &Path, sizes: &[usize], queries: usize, dir: &Path) -> Result<(), String> {
    let prose = Prose::read(dataset)?;
    let claims = prose_corpus::claims(dataset, queries)?;
    let unrelated: Vec<String> = UNRELATED.iter().map(|p| p.to_string()).collect();
    let max = sizes.iter().copied().max().unwrap_or(0);
    let picks = prose.picks(max);
    let mut rows = Vec::new();
    for &size in sizes {
        let file = dir.join(format!("bench-recall-{size}.db"));
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
        }
        let db = file.display().to_string();
        tracing::info!(size, "recall benchmark: storing");
        let target = DbTarget::parse(&db);
        let service = MemoryService::open(&Config::new(target, bench_scope(), EmbedderChoice::None))
            .map_err(|e| e.to_string())?;
        for (batch, chunk) in picks[..size].chunks(100).enumerate() {
            let items: Vec<_> =
                chunk.iter().enumerate().map(|(i, p)| prose.item(batch * 100 + i, p)).collect();
            super::store_items(&service, &items)?;
        }
        drop(service);
        super::build_index(&db)?;
        tracing::info!(size, "recall benchmark: timing fresh `cortex recall` processes");
        for prompt in claims.iter().take(WARM_UP) {
            recall(&db, prompt)?;
        }
        for (set, prompts) in [("claims", &claims), ("unrelated", &unrelated)] {
            let (mut times, mut injected) = (Vec::new(), 0);
            for prompt in prompts {
                let (time, printed) = recall(&db, prompt)?;
                times.push(time);
                injected += usize::from(!printed.is_empty());
            }
            times.sort();
            rows.push(Row { size, set, times, injected });
        }
    }
    output::line(
        "| items | prompts | process start to exit p50 | p95 | p99 | max | prompts with memories injected |",
    );
    output::line("|---:|---|---:|---:|---:|---:|---:|");
    for r in rows {
        output::line(&format!(
            "| {} | {} ({}) | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms | {} |",
            r.size,
            r.set,
            r.times.len(),
            ms(percentile(&r.times, 50.0)),
            ms(percentile(&r.times, 95.0)),
            ms(percentile(&r.times, 99.0)),
            ms(r.times.last().copied().unwrap_or_default()),
            r.injected,
        ));
    }
    Ok(())
}

/// One `cortex recall --prompt` process on `db`: its time from spawn to exit, and its stdout.
fn recall(db: &str, prompt: &str) -> Result<(Duration, String), String> {
    let exe = super::cortex::exe()?;
    let started = Instant::now();
    let out = Command::new(exe)
        .args(["recall", "--prompt", prompt])
        .env("CORTEX_DB", db)
        .env("CORTEX_ORG", "acme")
        .env("CORTEX_PROJECT", "api")
        .env("CORTEX_BRANCH", "main")
        .env("CORTEX_LOG", "error")
        .output()
        .map_err(|e| e.to_string())?;
    let time = started.elapsed();
    if !out.stderr.is_empty() {
        return Err(format!("cortex recall wrote on stderr: {}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok((time, String::from_utf8_lossy(&out.stdout).into_owned()))
}
