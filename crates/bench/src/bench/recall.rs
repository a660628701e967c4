//! `cortex-bench bench --recall DATASET`: `cortex recall` timed as an agent's prompt-submit hook
//! runs it — a fresh process per prompt, from spawn to exit, with the embedding model (set
//! `CORTEX_MODEL_DIR`), opening the store, the lexical index and (SQLite) the vector index file
//! each time. The store holds `size` items of 3 sentences recombined from the dataset's
//! abstracts, half in the caller's project, each with the mean of its sentences' vectors
//! (`prose_corpus.rs`, as `--prose --semantic`); the prompts are the dataset's test claims
//! (natural language, 10–20 words) and the everyday coding asks of `data/coding-asks`. On
//! SQLite and, with `--postgres`, on the scratch PostgreSQL database (whose HNSW index answers
//! the dense route). Besides the wall time, each process's CPU time (user + system, from
//! `/proc/self/stat`'s children's times): on a shared machine it holds where waiting does not.

use super::prose_corpus::{self, Prose};
use super::{bench_scope, ms, on_each_backend, percentile, settle_postgres};
use crate::eval::recall_hook::coding_asks;
use crate::output;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Config, MemoryService};
use cortex_store::DbTarget;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Untimed runs first: the first writes the vector index file (SQLite) and the model's pack
/// in the run's cache folder; then the page cache holds the indexes and the binary, as on a
/// machine in use.
const WARM_UP: usize = 10;

struct Row {
    backend: &'static str,
    size: usize,
    set: &'static str,
    times: Vec<Duration>,
    cpu: Vec<Duration>,
    injected: usize,
}

pub fn run(
    dataset: &Path,
    sizes: &[usize],
    queries: usize,
    dir: &Path,
    postgres: Option<&str>,
) -> Result<(), String> {
    let EmbedderChoice::Local { model_dir, .. } =
        cortex_service::config::embedder_from_env().map_err(|e| e.to_string())?
    else {
        return Err(
            "--recall times the hook with the local model (CORTEX_EMBEDDER=local, CORTEX_MODEL_DIR)".into()
        );
    };
    let prose = Prose::read(dataset)?;
    let claims = prose_corpus::claims(dataset, queries)?;
    let unrelated: Vec<String> = coding_asks().into_iter().take(queries).collect();
    let vectors = prose_corpus::sentence_vectors(&prose, &model_dir, dir)?;
    let max = sizes.iter().copied().max().unwrap_or(0);
    let picks = prose.picks(max);
    // The hooks' own cache folder: the lexical index of a PostgreSQL database, the model's
    // pack and the recall counts live there, not in the user's.
    let cache = dir.join("recall-cache");
    std::fs::create_dir_all(&cache).map_err(|e| e.to_string())?;
    let rows = on_each_backend("recall", sizes, dir, postgres, |backend, db, size| {
        tracing::info!(backend, size, "recall benchmark: storing");
        let target = DbTarget::parse(db);
        let store = cortex_store::open(&target).map_err(|e| e.to_string())?;
        let lexical = MemoryService::with_store(
            store.clone(),
            &Config::new(target, bench_scope(), EmbedderChoice::None),
        );
        prose_corpus::fill(&lexical, store.as_ref(), &prose, &picks[..size], Some(&vectors))?;
        drop(lexical);
        drop(store);
        if backend == "postgres" {
            settle_postgres(db)?;
        }
        let hook = Hook { db, cache: &cache };
        hook.build_lexical_index()?;
        tracing::info!(backend, size, "recall benchmark: timing fresh `cortex recall` processes");
        for prompt in claims.iter().take(WARM_UP) {
            hook.recall(prompt)?;
        }
        let mut rows = Vec::new();
        for (set, prompts) in [("claims", &claims), ("coding asks", &unrelated)] {
            let mut row = Row { backend, size, set, times: Vec::new(), cpu: Vec::new(), injected: 0 };
            for prompt in prompts {
                let (time, cpu, printed) = hook.recall(prompt)?;
                row.times.push(time);
                row.cpu.push(cpu);
                row.injected += usize::from(!printed.is_empty());
            }
            row.times.sort();
            row.cpu.sort();
            rows.push(row);
        }
        Ok(rows)
    })?;
    output::line(
        "| backend | items | prompts | spawn to exit p50 | p95 | p99 | max | CPU per process p50 | p95 | prompts with memories injected |",
    );
    output::line("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows.iter().flatten() {
        output::line(&format!(
            "| {} | {} | {} ({}) | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms | {} |",
            r.backend,
            r.size,
            r.set,
            r.times.len(),
            ms(percentile(&r.times, 50.0)),
            ms(percentile(&r.times, 95.0)),
            ms(percentile(&r.times, 99.0)),
            ms(r.times.last().copied().unwrap_or_default()),
            ms(percentile(&r.cpu, 50.0)),
            ms(percentile(&r.cpu, 95.0)),
            r.injected,
        ));
    }
    Ok(())
}

/// `cortex` as the hook runs it on one database.
struct Hook<'a> {
    db: &'a str,
    cache: &'a Path,
}

impl Hook<'_> {
    fn command(&self) -> Result<Command, String> {
        let mut command = Command::new(super::cortex::exe()?);
        command
            .env("CORTEX_DB", self.db)
            .env("CORTEX_ORG", "acme")
            .env("CORTEX_PROJECT", "api")
            .env("CORTEX_BRANCH", "main")
            .env("CORTEX_LOG", "error")
            .env("XDG_CACHE_HOME", self.cache);
        Ok(command)
    }

    /// `cortex reindex --lexical`, so no timed process meets a build.
    fn build_lexical_index(&self) -> Result<(), String> {
        let out = self.command()?.args(["reindex", "--lexical"]).env("CORTEX_EMBEDDER", "none").output();
        let out = out.map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!("cortex reindex --lexical failed: {}", String::from_utf8_lossy(&out.stderr)));
        }
        Ok(())
    }

    /// One `cortex recall --prompt` process: its time from spawn to exit, its CPU time, and
    /// its stdout.
    fn recall(&self, prompt: &str) -> Result<(Duration, Duration, String), String> {
        let mut command = self.command()?;
        command.args(["recall", "--prompt", prompt]);
        let cpu_before = super::cpu::children_cpu().unwrap_or_default();
        let started = Instant::now();
        let out = command.output().map_err(|e| e.to_string())?;
        let time = started.elapsed();
        let cpu = super::cpu::children_cpu().unwrap_or_default().saturating_sub(cpu_before);
        if !out.stderr.is_empty() {
            return Err(format!("cortex recall wrote on stderr: {}", String::from_utf8_lossy(&out.stderr)));
        }
        Ok((time, cpu, String::from_utf8_lossy(&out.stdout).into_owned()))
    }
}
