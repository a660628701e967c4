//! The store and find benchmark, `cortex-bench bench` with no other benchmark asked for: store
//! throughput, `fast` (or with `--semantic`, `auto`) find latency and CPU time per find (in
//! this process, and in a `cortex serve` answering the same queries over stdio, where the
//! answer's encoding counts too), cold start of `cortex serve` to a `tools/list` answer, and the
//! server's memory, at each size on SQLite and, given one, on the scratch PostgreSQL database;
//! one Markdown table row per backend and size.

use super::{
    BenchArgs, bench_scope, cortex, cpu, empty_postgres, ms, peak_rss_kib, percentile, serve_command,
    store_corpus,
};
use crate::corpus::{self, Rng};
use crate::output;
use cortex_domain::Mode;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Config, MemoryService};
use cortex_store::DbTarget;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::time::{Duration, Instant};

/// How a benchmark database gets its corpus.
enum Fill {
    /// `memory_store` batches of 100, embedding when semantic.
    Store,
    /// Imported (items and vectors) from the SQLite benchmark database at this path.
    ImportFrom(String),
    /// Already there from an earlier run.
    Reuse,
}

struct Row {
    backend: &'static str,
    imported: bool,
    reused: bool,
    size: usize,
    store_per_sec: f64,
    find_p50: Duration,
    find_p95: Duration,
    find_p99: Duration,
    mean_hits: f64,
    /// CPU µs per find, this process (every thread), user + system.
    find_cpu_us: f64,
    /// CPU µs per find of `cortex serve` answering the same queries over stdio.
    served_cpu_us: Option<f64>,
    start_p50: Duration,
    start_p95: Duration,
    server_rss_kib: u64,
    db_mib: f64,
}
/// Every size on SQLite, then (given) on PostgreSQL; the table on stdout.
pub(super) fn run(args: &BenchArgs, dir: &Path) -> Result<(), String> {
    let mut rows = Vec::new();
    for &size in &args.sizes {
        tracing::info!(size, "benchmarking on SQLite");
        let mode = if args.semantic { "semantic" } else { "lexical" };
        let file = dir.join(format!("bench-{mode}-{size}.db"));
        // Written once the corpus is stored whole, so an interrupted run is never reused.
        let complete = dir.join(format!("bench-{mode}-{size}.complete"));
        let reuse = args.reuse && complete.exists();
        if !reuse {
            let _ = std::fs::remove_file(&complete);
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
            }
        }
        let fill = if reuse { Fill::Reuse } else { Fill::Store };
        rows.push(bench_size("sqlite", size, args, &file.display().to_string(), fill)?);
        std::fs::write(&complete, b"").map_err(|e| e.to_string())?;
        if let Some(url) = &args.postgres {
            tracing::info!(size, "benchmarking on PostgreSQL");
            empty_postgres(url)?;
            // With embeddings, storing is the embedder's time, already measured on SQLite:
            // PostgreSQL is filled by importing SQLite's items and vectors instead.
            let fill = if args.semantic { Fill::ImportFrom(file.display().to_string()) } else { Fill::Store };
            rows.push(bench_size("postgres", size, args, url, fill)?);
        }
    }
    let mode = if args.semantic { "auto" } else { "fast" };
    output::line(&format!(
        "| backend | items | store items/s (batches of 100) | {mode} find p50 | p95 | p99 | mean hits | CPU per find in-process | through MCP (server) | cold start to tools/list p50 | p95 | server RSS after finds | db size |"
    ));
    output::line("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        output::line(&format!(
            "| {} | {} | {} | {:.2} ms | {:.2} ms | {:.2} ms | {:.1} | {:.0} µs | {} | {:.0} ms | {:.0} ms | {:.1} MiB | {:.1} MiB |",
            r.backend,
            r.size,
            if r.reused {
                "reused".to_string()
            } else if r.imported {
                format!("{:.0} (import)", r.store_per_sec)
            } else {
                format!("{:.0}", r.store_per_sec)
            },
            ms(r.find_p50),
            ms(r.find_p95),
            ms(r.find_p99),
            r.mean_hits,
            r.find_cpu_us,
            r.served_cpu_us.map_or_else(|| "–".to_string(), |us| format!("{us:.0} µs")),
            ms(r.start_p50),
            ms(r.start_p95),
            r.server_rss_kib as f64 / 1024.0,
            r.db_mib,
        ));
    }
    Ok(())
}

/// One backend at one size; `db` is what `--db` would be given (the database is empty).
fn bench_size(
    backend: &'static str,
    size: usize,
    args: &BenchArgs,
    db: &str,
    fill: Fill,
) -> Result<Row, String> {
    // Without --semantic, no embedder: the lexical path alone, its figures free of embedding.
    let embedder = if args.semantic {
        cortex_service::config::embedder_from_env().map_err(|e| e.to_string())?
    } else {
        EmbedderChoice::None
    };
    let mode = if args.semantic { Mode::Auto } else { Mode::Fast };
    let mut config = Config::new(DbTarget::parse(db), bench_scope(), embedder);
    // `CORTEX_LEXICAL_INDEX=off` times the database's own search, for a before and after.
    config.lexical = cortex_service::config::lexical_from_env(&config.db).map_err(|e| e.to_string())?;
    let service = MemoryService::open(&config).map_err(|e| e.to_string())?;

    let imported = matches!(fill, Fill::ImportFrom(_));
    let reused = matches!(fill, Fill::Reuse);
    let stored_time = match fill {
        Fill::Store => store_corpus(&service, size)?,
        Fill::ImportFrom(source) => import_corpus(&service, &source)?,
        Fill::Reuse => Duration::ZERO,
    };

    // Find: fast mode, default (branch) scope, default limit.
    let mut rng = Rng::new(7);
    let queries: Vec<String> = (0..args.queries).map(|_| corpus::query(&mut rng)).collect();
    for q in queries.iter().take(20) {
        super::find(&service, q, mode)?;
    }
    let mut times = Vec::with_capacity(queries.len());
    let mut hits = 0usize;
    let cpu_before = cpu::process_cpu(std::process::id());
    for q in &queries {
        let t = Instant::now();
        // The corpus repeats queries; every timed find pays for its query embedding.
        service.lab().forget_query_embeddings();
        let response = super::find(&service, q, mode)?;
        times.push(t.elapsed());
        hits += response.hits.len();
    }
    let find_cpu_us = match (cpu_before, cpu::process_cpu(std::process::id())) {
        (Some(before), Some(after)) => {
            let (user, system) = cpu::per_request(before, after, queries.len());
            user + system
        }
        _ => f64::NAN,
    };
    times.sort();
    let db_mib =
        service.administration().stats().map_err(|e| e.to_string())?.bytes as f64 / (1024.0 * 1024.0);
    drop(service);

    let Served { starts, rss_kib: server_rss_kib, cpu_us: served_cpu_us } =
        cold_starts(db, args.starts, &queries, mode.as_str())?;
    Ok(Row {
        backend,
        imported,
        reused,
        size,
        store_per_sec: size as f64 / stored_time.as_secs_f64(),
        find_p50: percentile(&times, 50.0),
        find_p95: percentile(&times, 95.0),
        find_p99: percentile(&times, 99.0),
        mean_hits: hits as f64 / queries.len().max(1) as f64,
        find_cpu_us,
        served_cpu_us,
        start_p50: percentile(&starts, 50.0),
        start_p95: percentile(&starts, 95.0),
        server_rss_kib,
        db_mib,
    })
}

/// What the `cortex serve` runs showed: the cold starts, the peak RSS after finds and the
/// server's CPU µs per find.
struct Served {
    starts: Vec<Duration>,
    rss_kib: u64,
    cpu_us: Option<f64>,
}

/// Starts `cortex serve` on the database `runs` times and times spawn → `tools/list` answer.
/// On the last run, also sends every query as a find (the first 20 untimed, to page the index
/// in), reads the server's CPU time over them, and its peak RSS before it exits.
fn cold_starts(db: &str, runs: usize, queries: &[String], mode: &str) -> Result<Served, String> {
    let exe = cortex::exe()?;
    let mut times = Vec::new();
    let mut rss = 0;
    let mut cpu_us = None;
    for run in 0..runs.max(1) {
        let t = Instant::now();
        let mut child =
            serve_command(&exe, db).spawn().map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
        let mut stdin = child.stdin.take().ok_or("no stdin")?;
        let mut stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let send = |stdin: &mut std::process::ChildStdin, v: Value| -> Result<(), String> {
            writeln!(stdin, "{v}").map_err(|e| e.to_string())
        };
        let read_id = |stdout: &mut BufReader<std::process::ChildStdout>, id: i64| -> Result<Value, String> {
            let mut line = String::new();
            loop {
                line.clear();
                if stdout.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
                    return Err("the server closed stdout".into());
                }
                let v: Value =
                    serde_json::from_str(&line).map_err(|e| format!("non-JSON on stdout: {e}: {line}"))?;
                if v["id"] == id {
                    return Ok(v);
                }
            }
        };
        send(
            &mut stdin,
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}),
        )?;
        read_id(&mut stdout, 1)?;
        send(&mut stdin, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        send(&mut stdin, json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))?;
        read_id(&mut stdout, 2)?;
        times.push(t.elapsed());
        if run + 1 == runs.max(1) {
            let mut before = None;
            for (i, q) in queries.iter().enumerate() {
                if i == WARM_UP.min(queries.len() / 2) {
                    before = cpu::process_cpu(child.id());
                }
                let id = 10 + i as i64;
                send(
                    &mut stdin,
                    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": "memory_find", "arguments": {"query": q, "mode": mode}}}),
                )?;
                read_id(&mut stdout, id)?;
            }
            if let (Some(before), Some(after)) = (before, cpu::process_cpu(child.id())) {
                let timed = queries.len() - WARM_UP.min(queries.len() / 2);
                let (user, system) = cpu::per_request(before, after, timed);
                cpu_us = Some(user + system);
            }
            rss = peak_rss_kib(child.id());
        }
        drop(stdin);
        let status = child.wait().map_err(|e| e.to_string())?;
        if !status.success() {
            return Err(format!("cortex serve exited with {status}"));
        }
    }
    times.sort();
    Ok(Served { starts: times, rss_kib: rss, cpu_us })
}

/// Finds sent to the server before its CPU time is read.
const WARM_UP: usize = 20;
/// Copies every item and vector of another benchmark database in; the time spent writing.
fn import_corpus(service: &MemoryService, source: &str) -> Result<Duration, String> {
    let scope = bench_scope();
    let from = MemoryService::open(&Config::new(DbTarget::parse(source), scope, EmbedderChoice::None))
        .map_err(|e| e.to_string())?;
    service
        .transfer()
        .accept_embedding_model(from.transfer().embedding_model().map_err(|e| e.to_string())?.as_deref())
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let mut after = None;
    let mut time = Duration::ZERO;
    loop {
        let page = from.transfer().export_page(after, 500).map_err(|e| e.to_string())?;
        let Some(last) = page.last() else { break };
        after = Some(last.id);
        let t = Instant::now();
        service.transfer().import_batch(page).map_err(|e| e.to_string())?;
        time += t.elapsed();
    }
    Ok(time)
}
