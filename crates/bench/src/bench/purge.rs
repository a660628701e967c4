//! `cortex-bench bench --purge`: the time to purge `size` expired items, and `fast` find latency
//! on the live items before and while the purge runs (finds on another thread, as an agent
//! would query a server whose periodic purge is running).

use super::{bench_scope, ms, on_each_backend, percentile};
use crate::corpus::{self, Rng};
use crate::output;
use cortex_domain::Mode;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Config, MemoryService};
use cortex_store::DbTarget;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Live items stored beside the expired ones, for the finds to find.
const LIVE_ITEMS: usize = 20_000;

struct Row {
    backend: &'static str,
    expired: usize,
    purge: Duration,
    before: Vec<Duration>,
    during: Vec<Duration>,
}

pub fn run(
    sizes: &[usize],
    queries: usize,
    dir: &std::path::Path,
    postgres: Option<&str>,
) -> Result<(), String> {
    let rows = on_each_backend("purge", sizes, dir, postgres, |backend, db, size| {
        bench_one(backend, db, size, queries)
    })?;
    output::line(
        "| backend | expired items purged | purge time | items/s | fast find p50 / p95 before | during purge p50 / p95 / max | finds during purge |",
    );
    output::line("|---|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        output::line(&format!(
            "| {} | {} | {:.1} s | {:.0} | {:.2} / {:.2} ms | {:.2} / {:.2} / {:.2} ms | {} |",
            r.backend,
            r.expired,
            r.purge.as_secs_f64(),
            r.expired as f64 / r.purge.as_secs_f64(),
            ms(percentile(&r.before, 50.0)),
            ms(percentile(&r.before, 95.0)),
            ms(percentile(&r.during, 50.0)),
            ms(percentile(&r.during, 95.0)),
            ms(r.during.last().copied().unwrap_or_default()),
            r.during.len(),
        ));
    }
    Ok(())
}

fn bench_one(backend: &'static str, db: &str, size: usize, queries: usize) -> Result<Row, String> {
    tracing::info!(backend, size, "purge benchmark: storing");
    let config = Config::new(DbTarget::parse(db), bench_scope(), EmbedderChoice::None);
    let service = MemoryService::open(&config).map_err(|e| e.to_string())?;
    let past = cortex_domain::time::format_instant(chrono::Utc::now().timestamp_millis() - 86_400_000);
    let mut rng = Rng::new(42);
    // Live corpus items first, then `size` more that expired yesterday.
    for start in (0..LIVE_ITEMS + size).step_by(100) {
        let items: Vec<Value> = (start..(start + 100).min(LIVE_ITEMS + size))
            .map(|i| {
                let mut item = corpus::item(i, &mut rng);
                if i >= LIVE_ITEMS {
                    item["expires_at"] = json!(past);
                }
                item
            })
            .collect();
        super::store_items(&service, &items)?;
    }
    let mut rng = Rng::new(7);
    let queries: Vec<String> = (0..queries).map(|_| corpus::query(&mut rng)).collect();
    let find = |q: &str| -> Result<Duration, String> {
        let t = Instant::now();
        super::find(&service, q, Mode::Fast)?;
        Ok(t.elapsed())
    };
    let mut before = queries.iter().map(|q| find(q)).collect::<Result<Vec<_>, _>>()?;
    before.sort();

    tracing::info!(backend, size, "purge benchmark: purging while finding");
    let done = AtomicBool::new(false);
    let (report, purge, during) = std::thread::scope(|scope| {
        let finder = scope.spawn(|| {
            let mut times = Vec::new();
            for q in queries.iter().cycle() {
                if done.load(Ordering::Relaxed) {
                    break;
                }
                times.push(find(q)?);
            }
            Ok::<_, String>(times)
        });
        let t = Instant::now();
        let report = service.lifecycle().purge(false);
        let purge = t.elapsed();
        done.store(true, Ordering::Relaxed);
        (report, purge, finder.join().map_err(|_| "the find thread panicked".to_string()))
    });
    let report = report.map_err(|e| e.to_string())?;
    if report.purged as usize != size {
        return Err(format!("expected {size} expired items purged, got {}", report.purged));
    }
    let mut during = during??;
    during.sort();
    Ok(Row { backend, expired: size, purge, before, during })
}
