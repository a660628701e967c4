//! `cortex-bench bench --concurrent`: do finds of several clients run in parallel? One service (as
//! one `cortex serve` holds it, shared by its session's concurrent calls) on `size` corpus
//! items; the same `fast` finds issued by 1, 2 and 4 client threads at once. With finds that
//! serialize on a lock, throughput stays flat as clients are added; in parallel it grows with
//! the cores (this machine has 2).

use super::{bench_scope, ms, on_each_backend, percentile, store_corpus};
use crate::corpus::{self, Rng};
use crate::output;
use cortex_domain::Mode;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Config, MemoryService};
use cortex_store::DbTarget;
use std::time::{Duration, Instant};

const CLIENTS: [usize; 3] = [1, 2, 4];

struct Row {
    backend: &'static str,
    items: usize,
    clients: usize,
    finds_per_sec: f64,
    latencies: Vec<Duration>,
}

pub fn run(
    sizes: &[usize],
    queries: usize,
    dir: &std::path::Path,
    postgres: Option<&str>,
) -> Result<(), String> {
    let rows = on_each_backend("concurrent", sizes, dir, postgres, |backend, db, size| {
        bench_one(backend, db, size, queries)
    })?;
    output::line("| backend | items | clients at once | finds/s | p50 | p95 |");
    output::line("|---|---:|---:|---:|---:|---:|");
    for r in rows.into_iter().flatten() {
        output::line(&format!(
            "| {} | {} | {} | {:.0} | {:.2} ms | {:.2} ms |",
            r.backend,
            r.items,
            r.clients,
            r.finds_per_sec,
            ms(percentile(&r.latencies, 50.0)),
            ms(percentile(&r.latencies, 95.0)),
        ));
    }
    Ok(())
}

fn bench_one(backend: &'static str, db: &str, size: usize, queries: usize) -> Result<Vec<Row>, String> {
    let config = Config::new(DbTarget::parse(db), bench_scope(), EmbedderChoice::None);
    let service = MemoryService::open(&config).map_err(|e| e.to_string())?;
    store_corpus(&service, size)?;
    let mut rng = Rng::new(7);
    let questions: Vec<String> = (0..queries).map(|_| corpus::query(&mut rng)).collect();
    // Warm the caches once, so every client count starts alike.
    for q in questions.iter().take(20) {
        super::find(&service, q, Mode::Fast)?;
    }
    let mut rows = Vec::new();
    for clients in CLIENTS {
        let started = Instant::now();
        let latencies: Vec<Duration> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..clients)
                .map(|c| {
                    let (service, questions) = (&service, &questions);
                    scope.spawn(move || {
                        // Each client runs every question, from its own starting point.
                        let mut own = Vec::with_capacity(questions.len());
                        for i in 0..questions.len() {
                            let q = &questions[(i + c * 97) % questions.len()];
                            let t = Instant::now();
                            super::find(service, q, Mode::Fast)?;
                            own.push(t.elapsed());
                        }
                        Ok::<_, String>(own)
                    })
                })
                .collect();
            let mut all = Vec::new();
            for w in workers {
                all.extend(w.join().map_err(|_| "a client thread panicked".to_string())??);
            }
            Ok::<_, String>(all)
        })?;
        let wall = started.elapsed();
        let mut latencies = latencies;
        latencies.sort();
        rows.push(Row {
            backend,
            items: size,
            clients,
            finds_per_sec: latencies.len() as f64 / wall.as_secs_f64(),
            latencies,
        });
    }
    Ok(rows)
}
