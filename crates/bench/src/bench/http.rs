//! `cortex-bench bench --http`: the team server under load, on each backend at each size. The corpus
//! is stored first; then a real `cortex serve --http` answers the load of `http_load`:
//! 1. the team profile without keys (the local user on loopback);
//! 2. the same with an API key on every request (auth and rate limiting are the difference);
//! 3. the design's acceptance profile with the key: 100 clients asking for 1,000 `fast` finds
//!    a second, or each rate of `--rates` in turn until one does not hold (to find the highest
//!    rate a size sustains at p95 < 100 ms).
//!
//! The server runs without an embedder (`CORTEX_EMBEDDER=none`) unless `--semantic`: on this
//! 2-core machine the model embeds ~90 items/s, below what 10% stores of 1–10 items ask at
//! 400 requests/s, so the lexical run measures the server and the semantic run what the model
//! allows. `auto` finds without an embedder run lexical only, and say so.

use super::http_load::{self, Plan, Target};
use super::{bench_scope, on_each_backend, store_corpus};
use crate::output;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Config, MemoryService};
use cortex_store::DbTarget;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The load options `cortex-bench bench --http` takes.
pub struct Load {
    pub duration: Duration,
    pub clients: usize,
    pub per_second: f64,
    pub semantic: bool,
    /// The acceptance profile alone.
    pub acceptance_only: bool,
    /// The acceptance profile's asked rates of `fast` finds a second, run in order on one
    /// server until one does not hold (`http_load::held`).
    pub acceptance_rates: Vec<f64>,
}

/// Each size on each backend; with `reuse`, a SQLite database a previous run filled whole is
/// loaded again as it is (an acceptance run stores nothing, so it stays the same corpus).
pub fn run(
    sizes: &[usize],
    dir: &std::path::Path,
    postgres: Option<&str>,
    load: &Load,
    reuse: bool,
) -> Result<(), String> {
    tables("http", http_load::HEADER, sizes, dir, postgres, |backend, db, size| {
        let complete = dir.join(format!("bench-http-{size}.complete"));
        let filled = reuse && backend == "sqlite" && complete.exists();
        let reused = if filled { reused_copy(dir, size)? } else { None };
        let db = reused.as_deref().unwrap_or(db);
        let outcome = bench_one(backend, db, size, load, !filled)?;
        if backend == "sqlite" && !filled && reuse {
            keep_filled(db, dir, size)?;
        }
        Ok(outcome)
    })
}

/// The kept database of an earlier run, for `--reuse`.
fn reused_copy(dir: &std::path::Path, size: usize) -> Result<Option<String>, String> {
    let kept = dir.join(format!("bench-http-{size}-kept.db"));
    Ok(kept.exists().then(|| kept.display().to_string()))
}

/// Keeps the database just filled (and its lexical index) under another name, which
/// `on_each_backend` does not empty, and marks it complete.
fn keep_filled(db: &str, dir: &std::path::Path, size: usize) -> Result<(), String> {
    let kept = dir.join(format!("bench-http-{size}-kept.db"));
    let io = |e: std::io::Error| e.to_string();
    let _ = std::fs::remove_dir_all(format!("{}.lexical", kept.display()));
    std::fs::rename(db, &kept).map_err(io)?;
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::rename(format!("{db}{suffix}"), format!("{}{suffix}", kept.display()));
    }
    std::fs::rename(format!("{db}.lexical"), format!("{}.lexical", kept.display())).map_err(io)?;
    std::fs::write(dir.join(format!("bench-http-{size}.complete")), b"").map_err(io)
}

/// Runs `bench` on each backend at each size (`on_each_backend`), then prints the rows of
/// every run under `header` and each run's line below the table.
pub(super) fn tables(
    name: &str,
    header: &str,
    sizes: &[usize],
    dir: &std::path::Path,
    postgres: Option<&str>,
    bench: impl FnMut(&'static str, &str, usize) -> Result<(Vec<String>, String), String>,
) -> Result<(), String> {
    let runs = on_each_backend(name, sizes, dir, postgres, bench)?;
    output::line(header);
    let mut lines = Vec::new();
    for (table, line) in runs {
        table.iter().for_each(|row| output::line(row));
        lines.push(line);
    }
    output::line("");
    lines.iter().for_each(|line| output::line(line));
    Ok(())
}

/// Requests whose gate is timed alone.
const GATE_CALLS: usize = 5_000;

/// What the gate adds to a request that carries a key, timed alone in this process: the key's
/// lookup by its id and the check of its secret (`authenticate`), then its rate bucket. The
/// load runs with and without a key differ by more than this from run to run on 2 shared
/// cores, so their difference cannot show a cost this small.
fn time_gate(backend: &str, db: &str, key: &str) -> Result<String, String> {
    let config = Config::new(DbTarget::parse(db), bench_scope(), EmbedderChoice::None);
    let service = MemoryService::open(&config).map_err(|e| e.to_string())?;
    let limits = cortex_server::Limits::new(16);
    let mut times = Vec::with_capacity(GATE_CALLS);
    for _ in 0..GATE_CALLS {
        let started = Instant::now();
        let holder = service
            .keys()
            .authenticate(key)
            .map_err(|e| e.to_string())?
            .map_err(|why| format!("the benchmark's key was refused: {why:?}"))?;
        let rate = holder.rate.ok_or("the benchmark's key has no rate of its own")?;
        limits
            .admit(&holder.name, rate, Instant::now())
            .map_err(|_| "the benchmark's key was rate limited")?;
        times.push(started.elapsed().as_secs_f64() * 1e6);
    }
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    Ok(format!(
        "{backend}: the gate of a keyed request alone (key lookup, SHA-256 of the secret, constant-time compare, rate bucket), {GATE_CALLS} requests: p50 {:.0} µs, p95 {:.0} µs, p99 {:.0} µs",
        at(0.5),
        at(0.95),
        at(0.99)
    ))
}

fn bench_one(
    backend: &'static str,
    db: &str,
    size: usize,
    load: &Load,
    fill: bool,
) -> Result<(Vec<String>, String), String> {
    if fill {
        let config = Config::new(DbTarget::parse(db), bench_scope(), EmbedderChoice::None);
        let service = MemoryService::open(&config).map_err(|e| e.to_string())?;
        let filling = Instant::now();
        let stored = store_corpus(&service, size)?;
        drop(service);
        if backend == "postgres" {
            // Else autovacuum catches up with the 100k rows just written during the first profile.
            super::settle_postgres(db)?;
        }
        let (indexed, index_mib) = super::build_index(db)?;
        output::line(&format!(
            "{backend}, {size} items filled in {:.0} s: stored at {:.0} items/s (lexical only), index built at {indexed:.0} items/s ({index_mib:.0} MiB)",
            filling.elapsed().as_secs_f64(),
            size as f64 / stored.as_secs_f64().max(f64::MIN_POSITIVE),
        ));
    }
    let team = Plan {
        name: "team",
        clients: load.clients,
        per_second: load.per_second,
        duration: load.duration,
        store_percent: 10,
        auto_percent: 50,
    };
    let mut rows = Vec::new();
    let mut costs = Vec::new();
    if !load.acceptance_only {
        let server = Server::start(db, load.semantic, UNLIMITED)?;
        let target = Target { url: server.url.clone(), key: None };
        let (outcome, cost) =
            measured(backend, db, &server, "team profile, no key", || http_load::apply(&team, &target));
        rows.extend(http_load::rows(backend, size, &team, &outcome, server.pid(), "none"));
        costs.extend(cost);
    }
    let key = create_key(db)?;
    let gate = time_gate(backend, db, &key)?;
    {
        let server = Server::start(db, load.semantic, UNLIMITED)?;
        let target = Target { url: server.url.clone(), key: Some(key) };
        if !load.acceptance_only {
            let (outcome, cost) =
                measured(backend, db, &server, "team profile, API key", || http_load::apply(&team, &target));
            rows.extend(http_load::rows(backend, size, &team, &outcome, server.pid(), "API key"));
            costs.extend(cost);
        }
        let (ladder_rows, ladder_costs, highest) =
            acceptance_ladder(backend, db, size, &server, &target, load);
        rows.extend(ladder_rows);
        costs.extend(ladder_costs);
        output::line(&match highest {
            Some(rate) => format!(
                "{backend}, acceptance profile: {rate:.0} `fast` finds/s asked is the highest rate tried that held (p95 < {} ms)",
                http_load::ACCEPTANCE_P95.as_millis()
            ),
            None => format!(
                "{backend}, acceptance profile: no rate tried held (p95 < {} ms)",
                http_load::ACCEPTANCE_P95.as_millis()
            ),
        });
    }
    costs.iter().for_each(|line| output::line(line));
    Ok((rows, gate))
}

/// The acceptance profile (100 clients, `fast` finds, with a key) at each asked rate in turn,
/// the server's CPU per find printed, until a rate does not hold: the runs' rows, their
/// PostgreSQL cost lines and the highest rate that held.
fn acceptance_ladder(
    backend: &'static str,
    db: &str,
    size: usize,
    server: &Server,
    target: &Target,
    load: &Load,
) -> (Vec<String>, Vec<String>, Option<f64>) {
    let (mut rows, mut costs, mut highest) = (Vec::new(), Vec::new(), None);
    for &per_second in &load.acceptance_rates {
        let acceptance = Plan {
            name: "acceptance",
            clients: 100,
            per_second,
            duration: load.duration,
            store_percent: 0,
            auto_percent: 0,
        };
        let before = super::cpu::process_cpu(server.pid());
        let (outcome, cost) =
            measured(backend, db, server, "acceptance profile", || http_load::apply(&acceptance, target));
        rows.extend(http_load::rows(backend, size, &acceptance, &outcome, server.pid(), "API key"));
        costs.extend(cost);
        if let (Some(before), Some(after)) = (before, super::cpu::process_cpu(server.pid())) {
            let (user, system) = super::cpu::per_request(before, after, outcome.latencies.len());
            output::line(&format!(
                "{backend}, acceptance profile at {per_second:.0}/s asked: the server's CPU per `fast` find {:.0} µs ({user:.0} user + {system:.0} system)",
                user + system
            ));
        }
        if !http_load::held(&acceptance, &outcome, http_load::ACCEPTANCE_P95) {
            break;
        }
        highest = Some(per_second);
    }
    (rows, costs, highest)
}

/// Runs a load; on PostgreSQL, also what each request cost: the server's CPU and the database
/// backends' (`pg_cost`), as a line to print after the table.
fn measured(
    backend: &str,
    db: &str,
    server: &Server,
    what: &str,
    run: impl FnOnce() -> http_load::Outcome,
) -> (http_load::Outcome, Option<String>) {
    if backend != "postgres" {
        return (run(), None);
    }
    let (server_before, pg_before) = (super::cpu::process_cpu(server.pid()), super::pg_cost::read(db));
    let outcome = run();
    let (server_after, pg_after) = (super::cpu::process_cpu(server.pid()), super::pg_cost::read(db));
    let requests = outcome.latencies.len();
    let line = super::pg_cost::line(what, pg_before, pg_after, requests).map(|line| {
        match server_before.zip(server_after) {
            Some((before, after)) => {
                let (user, system) = super::cpu::per_request(before, after, requests);
                format!("{line}; the server's CPU {:.0} µs", user + system)
            }
            None => line,
        }
    });
    (outcome, line)
}

/// A key for the benchmark's scope, with a rate no run reaches: the run measures the checks,
/// not refusals.
fn create_key(db: &str) -> Result<String, String> {
    let scope = bench_scope().scope;
    let org = scope.org.as_deref().unwrap_or_default();
    let project = scope.project.as_deref().unwrap_or_default();
    create_key_for(db, &["--role", "write", "--org", org, "--project", project, "--rate", "100000/s"])
}

/// A new key made by `cortex keys create` with these flags (role, scope, rate): its token.
pub(super) fn create_key_for(db: &str, flags: &[&str]) -> Result<String, String> {
    let exe = super::cortex::exe()?;
    let out = Command::new(exe)
        .args(["keys", "create", "--name", &format!("bench-{}", uuid::Uuid::now_v7())])
        .args(flags)
        .env("CORTEX_DB", db)
        .env("CORTEX_LOG", "error")
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("cortex keys create failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let created: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
    created["token"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("no token in what cortex keys create printed: {created}"))
}

/// `cortex serve --http` on a free loopback port, stopped (SIGTERM, then kill) when dropped.
pub(super) struct Server {
    child: Child,
    pub url: String,
}

/// The limits `--http` serves under: none that its load reaches (it measures the server, not
/// refusals).
const UNLIMITED: &[(&str, &str)] =
    &[("CORTEX_HTTP_MAX_CONCURRENT", "4096"), ("CORTEX_HTTP_RATE", "100000/s")];

impl Server {
    /// Started on `db` with these settings beside the benchmark's scope.
    pub(super) fn start(db: &str, semantic: bool, settings: &[(&str, &str)]) -> Result<Server, String> {
        let exe = super::cortex::exe()?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let mut command = Command::new(exe);
        command
            .args(["serve", "--http", &format!("127.0.0.1:{port}")])
            .env("CORTEX_DB", db)
            .env("CORTEX_LOG", "warn")
            // The local user stands where the benchmark's queries look, as a key's holder does.
            .env("CORTEX_ORG", "acme")
            .env("CORTEX_PROJECT", "api")
            .env("CORTEX_BRANCH", "main")
            .envs(settings.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if !semantic {
            command.env("CORTEX_EMBEDDER", "none");
        }
        let mut child = command.spawn().map_err(|e| e.to_string())?;
        let url = format!("http://127.0.0.1:{port}/mcp");
        // Ready once /health answers.
        let deadline = Instant::now() + Duration::from_secs(60);
        let health = format!("http://127.0.0.1:{port}/health");
        while ureq::get(&health).call().is_err() {
            if Instant::now() > deadline || child.try_wait().map_err(|e| e.to_string())?.is_some() {
                let _ = child.kill();
                let mut said = String::new();
                if let Some(mut stderr) = child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut stderr, &mut said);
                }
                return Err(format!("cortex serve --http did not come up: {}", said.trim()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // The server's log (slow calls are WARN) is drained so it never blocks on a full pipe.
        if let Some(stderr) = child.stderr.take() {
            std::thread::spawn(move || {
                let mut slow = 0u64;
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if line.contains("WARN") {
                        slow += 1;
                    }
                }
                tracing::debug!(slow, "server log drained");
            });
        }
        Ok(Server { child, url })
    }

    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg(self.child.id().to_string()).status();
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
