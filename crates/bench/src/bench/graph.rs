//! `cortex-bench bench --graph`: graph expansion on a memory of `size` corpus items and 3 × `size`
//! relations between random items of one project (stored through `memory_store`, so every
//! reference is resolved as an agent's would be). Times the walk alone at depth 1 and 2 from
//! one random item, and a whole `fast` find that expands its hits at depth 2.

use super::{bench_scope, ms, on_each_backend, percentile};
use crate::corpus::{self, Rng};
use crate::output;
use cortex_domain::graph::Expand;
use cortex_domain::{FindRequest, Mode, ScopeLevel};
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Config, MemoryService};
use cortex_store::{DbTarget, Filters};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::{Duration, Instant};

const RELATIONS_PER_ITEM: usize = 3;
const RELATION_TYPES: &[&str] = &["depends_on", "implements", "caused_by", "fixed_by", "documents"];
/// Items a timed walk may add (the most `memory_find` allows).
const WALK_CAP: usize = 100;

struct Row {
    backend: &'static str,
    items: usize,
    relations: usize,
    relations_per_sec: f64,
    depth1: Vec<Duration>,
    depth2: Vec<Duration>,
    mean_reached: f64,
    find: Vec<Duration>,
}

pub fn run(
    sizes: &[usize],
    queries: usize,
    dir: &std::path::Path,
    postgres: Option<&str>,
) -> Result<(), String> {
    let rows = on_each_backend("graph", sizes, dir, postgres, |backend, db, size| {
        bench_one(backend, db, size, queries)
    })?;
    output::line(
        "| backend | items | relations | relations stored/s | walk depth 1 p50 / p95 | walk depth 2 p50 / p95 / max | items reached at depth 2 (mean, cap 100) | fast find + expand all depth 2 p50 / p95 |",
    );
    output::line("|---|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        output::line(&format!(
            "| {} | {} | {} | {:.0} | {:.2} / {:.2} ms | {:.2} / {:.2} / {:.2} ms | {:.1} | {:.2} / {:.2} ms |",
            r.backend,
            r.items,
            r.relations,
            r.relations_per_sec,
            ms(percentile(&r.depth1, 50.0)),
            ms(percentile(&r.depth1, 95.0)),
            ms(percentile(&r.depth2, 50.0)),
            ms(percentile(&r.depth2, 95.0)),
            ms(r.depth2.last().copied().unwrap_or_default()),
            r.mean_reached,
            ms(percentile(&r.find, 50.0)),
            ms(percentile(&r.find, 95.0)),
        ));
    }
    Ok(())
}

fn bench_one(backend: &'static str, db: &str, size: usize, queries: usize) -> Result<Row, String> {
    tracing::info!(backend, size, "graph benchmark: storing items");
    let config = Config::new(DbTarget::parse(db), bench_scope(), EmbedderChoice::None);
    let service = MemoryService::open(&config).map_err(|e| e.to_string())?;
    let mut rng = Rng::new(42);
    // Item ids by project: relations link items of one project.
    let mut by_project: HashMap<String, Vec<(String, Value)>> = HashMap::new();
    for start in (0..size).step_by(100) {
        let items: Vec<Value> = (start..(start + 100).min(size)).map(|i| corpus::item(i, &mut rng)).collect();
        let stored = super::store_items(&service, &items)?;
        for (item, result) in items.iter().zip(&stored.results) {
            if let Some(id) = &result.id {
                let project = item["scope"]["project"].as_str().unwrap_or_default().to_string();
                by_project.entry(project).or_default().push((id.clone(), item["scope"].clone()));
            }
        }
    }
    let projects: Vec<&Vec<(String, Value)>> = by_project.values().collect();
    let weights: Vec<usize> = projects.iter().map(|p| p.len()).collect();
    let total: usize = weights.iter().sum();

    tracing::info!(backend, size, "graph benchmark: storing relations");
    let wanted = size * RELATIONS_PER_ITEM;
    let mut stored = 0;
    let started = Instant::now();
    while stored < wanted {
        let batch: Vec<Value> = (0..100.min(wanted - stored))
            .map(|_| {
                // A project in proportion to its items, then two of its items.
                let mut at = rng.below(total);
                let members = projects
                    .iter()
                    .zip(&weights)
                    .find(|(_, w)| {
                        let here = at < **w;
                        if !here {
                            at -= **w;
                        }
                        here
                    })
                    .map(|(p, _)| *p)
                    .unwrap_or(projects[0]);
                let (from, scope) = &members[rng.below(members.len())];
                let mut to = &members[rng.below(members.len())].0;
                while to == from && members.len() > 1 {
                    to = &members[rng.below(members.len())].0;
                }
                json!({"kind": "relation", "scope": scope,
                       "data": {"from": from, "to": to, "relation_type": rng.pick(RELATION_TYPES)}})
            })
            .collect();
        let out = super::store_items(&service, &batch)?;
        stored += batch.len();
        if out.summary.validation_error > 0 {
            return Err(format!("relations refused: {:?}", out.results.iter().find(|r| r.error.is_some())));
        }
    }
    let relations_per_sec = wanted as f64 / started.elapsed().as_secs_f64();

    tracing::info!(backend, size, "graph benchmark: walking");
    // The find's default scope widened to the project: every branch of acme/api.
    let filters = Filters {
        scope_equals: vec![("org", "acme".to_string()), ("project", "api".to_string())],
        now: chrono::Utc::now().timestamp_millis(),
        ..Filters::default()
    };
    let api = by_project.get("api").ok_or("the corpus has no api project")?;
    let seeds: Vec<uuid::Uuid> = (0..queries)
        .map(|_| uuid::Uuid::parse_str(&api[rng.below(api.len())].0).unwrap_or_default())
        .collect();
    let walk = |seed: uuid::Uuid, depth: u8| -> Result<(Duration, usize), String> {
        let t = Instant::now();
        let (reached, _) = service
            .lab()
            .walk_graph(&[seed], Expand::All, depth, WALK_CAP, &filters)
            .map_err(|e| e.to_string())?;
        Ok((t.elapsed(), reached.len()))
    };
    for &seed in seeds.iter().take(20) {
        walk(seed, 2)?;
    }
    let mut depth1 = Vec::with_capacity(queries);
    let mut depth2 = Vec::with_capacity(queries);
    let mut reached = 0;
    for &seed in &seeds {
        depth1.push(walk(seed, 1)?.0);
        let (t, n) = walk(seed, 2)?;
        depth2.push(t);
        reached += n;
    }
    let mut query_rng = Rng::new(7);
    let mut find = Vec::with_capacity(queries);
    for _ in 0..queries {
        let q = corpus::query(&mut query_rng);
        let t = Instant::now();
        let request = FindRequest::query(q.as_str())
            .with_mode(Mode::Fast)
            .with_widen(ScopeLevel::Project)
            .with_expand(Expand::All)
            .with_depth(2);
        service.memory_find().find(&request).map_err(|e| e.to_string())?;
        find.push(t.elapsed());
    }
    for times in [&mut depth1, &mut depth2, &mut find] {
        times.sort();
    }
    Ok(Row {
        backend,
        items: size,
        relations: wanted,
        relations_per_sec,
        depth1,
        depth2,
        mean_reached: reached as f64 / queries.max(1) as f64,
        find,
    })
}
