//! `cortex-bench bench`: store throughput, `fast` find latency, cold start to a `tools/list`
//! answer, and memory, on the synthetic corpus at each requested size (`store_find.rs`). Prints
//! a Markdown table for BENCHMARKS.md. Measured on the machine it runs on; nothing here is
//! assumed. `--purge` runs the purge benchmark (`purge.rs`) instead, `--graph` the graph expansion
//! benchmark (`graph.rs`), `--vectors` the vector index alone (`vectors.rs`), `--adversarial`
//! worst-case finds and whether the session answers other calls meanwhile (`adversarial.rs`),
//! `--responses` the size of find answers on real prose (`responses.rs`), `--concurrent` finds of
//! 1, 2 and 4 clients at once (`concurrency.rs`), `--http` the team server under an open-loop
//! load of many HTTP clients (`http.rs`, `http_load.rs`), `--flood` another tenant's finds
//! under one key's flood of stores (`flood.rs`), `--prose` `fast` (and `auto`) finds
//! with natural-language queries over real prose (`prose.rs`), `--recall` fresh `cortex recall`
//! processes as a prompt-submit hook runs them (`recall.rs`), `--ingest` `cortex ingest --git`
//! of a real repository's history (`ingest.rs`), `--fill` grows a PostgreSQL database with
//! `--prose`'s items for measuring a deployment at that size (`fill.rs`).

mod adversarial;
mod concurrency;
mod cortex;
pub(crate) mod cpu;
mod fill;
mod flood;
mod flood_hints;
mod graph;
mod http;
mod http_load;
mod ingest;
mod pg_cost;
mod prose;
mod prose_corpus;
mod purge;
mod recall;
mod responses;
mod session;
mod store_find;
mod vectors;

use crate::corpus::{self, Rng};
use cortex_domain::item::StoreRequest;
use cortex_domain::{FindRequest, Mode};
use cortex_service::MemoryService;
use cortex_service::response::{FindResponse, StoreResponse};
use cortex_service::scope_inference::InferredScope;
use serde_json::Value;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Corpus sizes, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "10000,100000")]
    sizes: Vec<usize>,
    /// Finds timed per size.
    #[arg(long, default_value_t = 500)]
    queries: usize,
    /// Cold starts timed per size.
    #[arg(long, default_value_t = 10)]
    starts: usize,
    /// Folder for the benchmark databases [default: a new temporary folder, removed after].
    #[arg(long)]
    dir: Option<std::path::PathBuf>,
    /// Embed items at store (the installed model) and time `auto` (hybrid) finds instead of
    /// `fast` ones.
    #[arg(long)]
    semantic: bool,
    /// Keep the SQLite databases in --dir and reuse one that a previous run filled completely:
    /// only finds and starts are timed then (the store column says `reused`); with --http
    /// --acceptance, only the load runs.
    #[arg(long, requires = "dir")]
    reuse: bool,
    /// Also run every size on this PostgreSQL database, beside SQLite. It must be a scratch
    /// database: its items are deleted before each size.
    #[arg(long, env = "CORTEX_BENCH_POSTGRES")]
    postgres: Option<String>,
    /// Time purging `size` expired items (beside 20,000 live ones) and `fast` finds before and
    /// during the purge, instead of the store and find benchmark.
    #[arg(long, conflicts_with_all = ["semantic", "reuse"])]
    purge: bool,
    /// Time graph expansion on `size` items and 3 × `size` relations (walks at depth 1 and 2,
    /// and `fast` finds expanding their hits), instead of the store and find benchmark.
    #[arg(long, conflicts_with_all = ["semantic", "reuse", "purge"])]
    graph: bool,
    /// Time the in-process vector index alone on `size` random 384-d vectors (the dense scan
    /// SQLite uses), instead of the store and find benchmark.
    #[arg(long, conflicts_with_all = ["semantic", "reuse", "purge", "graph", "postgres"])]
    vectors: bool,
    /// Measure the characters (and tokens, at 3 characters each) of find answers on the
    /// abstracts and queries of this BEIR dataset (e.g. ../shared/evals/scifact), instead of
    /// the store and find benchmark. `--queries` sets how many questions.
    #[arg(long, value_name = "DATASET", conflicts_with_all = ["semantic", "reuse", "purge", "graph", "vectors", "postgres", "adversarial", "concurrent"])]
    responses: Option<std::path::PathBuf>,
    /// Time `fast` finds (and `auto` ones with --semantic) in-process and through MCP over
    /// items of 3 sentences recombined from this BEIR dataset's abstracts (e.g.
    /// ../shared/evals/scifact), queried with its test claims and with two-word queries,
    /// instead of the store and find benchmark. `--queries` caps each query set.
    #[arg(long, value_name = "DATASET", conflicts_with_all = ["reuse", "purge", "graph", "vectors", "responses", "adversarial", "concurrent", "http"])]
    prose: Option<std::path::PathBuf>,
    /// Time worst-case finds (one word 50,000 times, 256 KiB items, 100 × 30 KB hits, 1,000
    /// tags) over `size` corpus items through one `cortex serve` session, and whether a probe
    /// find of the same session is answered meanwhile, instead of the store and find benchmark.
    #[arg(long, conflicts_with_all = ["semantic", "reuse", "purge", "graph", "vectors"])]
    adversarial: bool,
    /// Time the same `fast` finds issued by 1, 2 and 4 clients at once on one service, to show
    /// whether concurrent finds run in parallel, instead of the store and find benchmark.
    #[arg(long, conflicts_with_all = ["semantic", "reuse", "purge", "graph", "vectors", "adversarial"])]
    concurrent: bool,
    /// Load a real `cortex serve --http` on `size` corpus items with many HTTP clients on a
    /// fixed schedule (open loop): 90% finds (`fast` and `auto`) and 10% stores of 1–10 items,
    /// without and with an API key, then the design's 100 clients asking for 1,000 `fast` finds
    /// a second, instead of the store and find benchmark. `--semantic` serves with the model.
    #[arg(long, conflicts_with_all = ["purge", "graph", "vectors", "adversarial", "concurrent"])]
    http: bool,
    /// `--http`: the acceptance profile alone (100 clients, 1,000 `fast` finds a second or
    /// `--rates`, with a key), without the team profile's runs before it.
    #[arg(long, requires = "http")]
    acceptance: bool,
    /// Measure whether one tenant starves another: a real `cortex serve --http` with its
    /// default limits; another org's finds alone, then while a write key runs 16 parallel
    /// 100-item stores (`--seconds` each), against the bound p95 ≤ 10× alone and ≤ 1 s,
    /// instead of the store and find benchmark. `--semantic` serves with the model.
    #[arg(long, conflicts_with_all = ["reuse", "purge", "graph", "vectors", "adversarial", "concurrent", "http"])]
    flood: bool,
    /// Time fresh `cortex recall` processes (the prompt-submit hook, with the model) from spawn
    /// to exit over items recombined from this BEIR dataset's abstracts with their vectors (as
    /// --prose --semantic), prompted with its test claims and with everyday coding asks, on
    /// SQLite and `--postgres`, instead of the store and find benchmark.
    #[arg(long, value_name = "DATASET", conflicts_with_all = ["semantic", "reuse", "purge", "graph", "vectors", "responses", "prose", "adversarial", "concurrent", "http"])]
    recall: Option<std::path::PathBuf>,
    /// Time `cortex ingest --git` of this repository's newest `size` commits (each of
    /// --sizes) on a fresh database, then again (nothing to write): wall and CPU time, peak
    /// memory, instead of the store and find benchmark. `--semantic` embeds each change.
    #[arg(long, value_name = "REPO", conflicts_with_all = ["reuse", "purge", "graph", "vectors", "responses", "prose", "adversarial", "concurrent", "http", "postgres", "recall", "flood"])]
    ingest: Option<std::path::PathBuf>,
    /// Grow the `--postgres` database (nothing deleted) to the largest of --sizes items
    /// recombined from this BEIR dataset's abstracts, as --prose stores them (with their
    /// vectors under --semantic), in steps of 10,000 that each leave it whole, instead of the
    /// store and find benchmark: a database for `scripts/capacity`.
    #[arg(long, value_name = "DATASET", requires = "postgres", conflicts_with_all = ["reuse", "purge", "graph", "vectors", "responses", "prose", "adversarial", "concurrent", "http", "recall", "flood", "ingest"])]
    fill: Option<std::path::PathBuf>,
    /// `--http --acceptance`: the asked rates of `fast` finds a second (comma separated, 100
    /// clients each), run in order on one server until one does not hold (an error, under 98%
    /// of the rate sustained, or p95 ≥ 100 ms); the highest that held is printed.
    #[arg(long, value_delimiter = ',', default_value = "1000", requires = "acceptance")]
    rates: Vec<f64>,
    /// `--http`: clients sending at once.
    #[arg(long, default_value_t = 32, requires = "http")]
    clients: usize,
    /// `--http`: requests per second the clients are asked to send.
    #[arg(long, default_value_t = 400.0, requires = "http")]
    rate: f64,
    /// `--http`, `--flood`: seconds each load runs.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
}

pub fn run(args: BenchArgs) -> Result<ExitCode, String> {
    // Those that start `cortex` look for it first, not after minutes of filling a database.
    if !(args.purge
        || args.vectors
        || args.graph
        || args.concurrent
        || args.responses.is_some()
        || args.fill.is_some())
    {
        cortex::exe()?;
    }
    let temp = tempdir()?;
    let dir = args.dir.clone().unwrap_or_else(|| temp.clone());
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let (sizes, queries, postgres) = (&args.sizes, args.queries, args.postgres.as_deref());
    // One benchmark, the store and find one unless another is asked for; the temporary folder
    // goes after.
    let outcome = if args.purge {
        purge::run(sizes, queries, &dir, postgres)
    } else if args.vectors {
        vectors::run(sizes, queries)
    } else if let Some(dataset) = &args.prose {
        let options =
            prose::Options { dataset, sizes, queries, dir: &dir, postgres, semantic: args.semantic };
        prose::run(&options)
    } else if let (Some(dataset), Some(url)) = (&args.fill, postgres) {
        fill::run(dataset, sizes.iter().copied().max().unwrap_or(0), &dir, url, args.semantic)
    } else if let Some(dataset) = &args.recall {
        recall::run(dataset, sizes, queries, &dir, postgres)
    } else if let Some(repo) = &args.ingest {
        ingest::run(repo, sizes, &dir, args.semantic)
    } else if let Some(dataset) = &args.responses {
        responses::run(dataset, queries, &dir)
    } else if args.concurrent {
        concurrency::run(sizes, queries, &dir, postgres)
    } else if args.adversarial {
        adversarial::run(sizes, queries, &dir, postgres)
    } else if args.graph {
        graph::run(sizes, queries, &dir, postgres)
    } else if args.http {
        let load = http::Load {
            duration: Duration::from_secs(args.seconds),
            clients: args.clients,
            per_second: args.rate,
            semantic: args.semantic,
            acceptance_only: args.acceptance,
            acceptance_rates: args.rates.clone(),
        };
        if let Some(bad) = args.rates.iter().find(|r| !(r.is_finite() && **r > 0.0)) {
            return Err(format!(
                "--rates: {bad} is not a rate; give positive finds a second, rising, e.g. --rates 600,800,1000"
            ));
        }
        if args.reuse && !args.acceptance {
            return Err("--http --reuse needs --acceptance: the team profile stores items".into());
        }
        http::run(sizes, &dir, postgres, &load, args.reuse)
    } else if args.flood {
        let load = flood::Load { duration: Duration::from_secs(args.seconds), semantic: args.semantic };
        http::tables("flood", flood::HEADER, sizes, &dir, postgres, |backend, db, size| {
            flood::bench_one(backend, db, size, &load)
        })
    } else {
        store_find::run(&args, &dir)
    };
    let _ = std::fs::remove_dir_all(&temp);
    outcome.map(|()| ExitCode::SUCCESS)
}

/// `cortex serve` on a benchmark database, at the benchmarks' scope, speaking over pipes.
fn serve_command(exe: &std::path::Path, db: &str) -> Command {
    let mut command = Command::new(exe);
    command
        .arg("serve")
        .env("CORTEX_DB", db)
        .env("CORTEX_LOG", "error")
        .env("CORTEX_ORG", "acme")
        .env("CORTEX_PROJECT", "api")
        .env("CORTEX_BRANCH", "main")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    command
}

/// Runs `cortex reindex --lexical` on `db`, building the index where a benchmark's server will
/// look for it (for PostgreSQL, a folder in the cache folder), so timed requests never meet a
/// build in progress. Returns items indexed per second and the index's size on disk.
pub(super) fn build_index(db: &str) -> Result<(f64, f64), String> {
    let exe = cortex::exe()?;
    let out = std::process::Command::new(exe)
        .args(["reindex", "--lexical"])
        .env("CORTEX_DB", db)
        .env("CORTEX_LOG", "error")
        .env("CORTEX_EMBEDDER", "none")
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("cortex reindex --lexical failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let report: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
    let items = report["items"].as_f64().unwrap_or(0.0);
    let seconds = report["seconds"].as_f64().unwrap_or(f64::INFINITY);
    let bytes = report["bytes"].as_f64().unwrap_or(0.0);
    Ok((items / seconds.max(f64::MIN_POSITIVE), bytes / (1024.0 * 1024.0)))
}

fn tempdir() -> Result<std::path::PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("cortex-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    Ok(dir)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The caller of the benchmark stands where half the corpus lives: acme/api@main.
fn bench_scope() -> InferredScope {
    InferredScope::fixed("acme", "api", "main")
}

/// Runs `bench(backend, db, size)` at each size on a new SQLite file `<dir>/bench-<name>-<size>.db`
/// and, when given, on the emptied scratch PostgreSQL database, in that order.
fn on_each_backend<R>(
    name: &str,
    sizes: &[usize],
    dir: &std::path::Path,
    postgres: Option<&str>,
    mut bench: impl FnMut(&'static str, &str, usize) -> Result<R, String>,
) -> Result<Vec<R>, String> {
    let mut rows = Vec::new();
    for &size in sizes {
        let file = dir.join(format!("bench-{name}-{size}.db"));
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
        }
        rows.push(bench("sqlite", &file.display().to_string(), size)?);
        if let Some(url) = postgres {
            empty_postgres(url)?;
            rows.push(bench("postgres", url, size)?);
        }
    }
    Ok(rows)
}

/// Deletes every item (and the recorded embedding model) of the scratch PostgreSQL database.
fn empty_postgres(url: &str) -> Result<(), String> {
    scratch_postgres(url)?.empty_scratch_database().map_err(|e| e.to_string())
}

/// `VACUUM ANALYZE` of the scratch PostgreSQL database after its corpus is loaded.
pub(super) fn settle_postgres(url: &str) -> Result<(), String> {
    scratch_postgres(url)?.vacuum_analyze().map_err(|e| e.to_string())
}

fn scratch_postgres(url: &str) -> Result<cortex_store::PostgresStore, String> {
    cortex_store::PostgresStore::open(url, None, cortex_store::PoolConfig { size: 1 })
        .map_err(|e| e.to_string())
}
/// VmHWM (peak resident set) of a process, from /proc; 0 where /proc is absent.
fn peak_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}

/// Stores `items`, parsed as the tool's `items` argument is at the MCP edge (inside the time a
/// caller measures, as an agent's call pays for it).
pub(crate) fn store_items(service: &MemoryService, items: &[Value]) -> Result<StoreResponse, String> {
    let request = StoreRequest::from_items(items).map_err(|e| e.to_string())?;
    service.memory_store().store(&request).map_err(|e| e.to_string())
}

/// A find of `query` in `mode`, every other argument at its default.
fn find(service: &MemoryService, query: &str, mode: Mode) -> Result<FindResponse, String> {
    service.memory_find().find(&FindRequest::query(query).with_mode(mode)).map_err(|e| e.to_string())
}

/// Stores the corpus in batches of 100, as an agent's client would send them; the time spent.
fn store_corpus(service: &MemoryService, size: usize) -> Result<Duration, String> {
    let mut rng = Rng::new(42);
    let mut stored_time = Duration::ZERO;
    let (mut inserted, mut skipped) = (0, 0);
    for start in (0..size).step_by(100) {
        let items: Vec<Value> = (start..(start + 100).min(size)).map(|i| corpus::item(i, &mut rng)).collect();
        let t = Instant::now();
        let response = store_items(service, &items)?;
        stored_time += t.elapsed();
        inserted += response.summary.inserted;
        skipped += response.summary.skipped_dedupe;
    }
    // With embeddings, near-duplicates in the synthetic corpus are (rightly) skipped.
    if (inserted + skipped) as usize != size {
        return Err(format!("expected {size} items inserted or skipped, got {inserted} + {skipped}"));
    }
    if skipped > 0 {
        tracing::info!(skipped, "near-duplicates skipped at store");
    }
    Ok(stored_time)
}
