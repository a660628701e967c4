//! The admin page's status in words: how long the server has run, the model it embeds with,
//! what the viewer's reach holds (items per project and branch; for the local user also per
//! kind, the database's size and the search indexes' sizes and health — a bound admin's page
//! never counts another tenant's items),
//! requests per route and status from the metrics, and the newest refusals the audit trail
//! recorded within reach.

use super::admin::Sample;
use super::page::When;
use cortex_domain::text::byte_size;
use cortex_domain::time::MILLIS_PER_DAY;
use cortex_service::index_sizes::IndexSizes;
use cortex_service::{Caller, MemoryService};
use cortex_store::AuditOperation;
use std::sync::OnceLock;
use std::time::Instant;

/// Refusals listed at most, and how far back they are looked for.
const REFUSALS: usize = 10;
const REFUSAL_DAYS: i64 = 14;

static STARTED: OnceLock<Instant> = OnceLock::new();

/// Marks the server's start (its UI's routes being made): the uptime counts from here.
pub fn mark_start() {
    STARTED.get_or_init(Instant::now);
}

pub struct Refusal {
    pub when: When,
    pub who: String,
    pub summary: String,
    pub item: String,
}

pub struct Requests {
    pub path: String,
    pub status: String,
    pub count: String,
}

#[derive(Default)]
pub struct Status {
    pub uptime: String,
    pub embedder: String,
    /// Per project and branch within reach: label and items.
    pub places: Vec<(String, i64)>,
    pub items: i64,
    /// The whole store's, for the local user only.
    pub by_kind: Vec<(String, i64)>,
    pub database: String,
    pub bytes: String,
    /// The search indexes, for the local user only (they count the whole store).
    pub indexes: Option<IndexSizes>,
    pub refusals: Vec<Refusal>,
    pub requests: Vec<Requests>,
}

/// What the status section shows to `caller` (the page's viewer).
pub fn read(service: &MemoryService, caller: &Caller, now: i64) -> cortex_service::Result<Status> {
    let seen = service.for_caller(caller);
    let places = seen.memory_find().places()?;
    let items = places.iter().map(|p| p.items).sum();
    let places = places.into_iter().map(|p| (super::search::scope_label(&p.scope), p.items)).collect();
    let mut status = Status { uptime: uptime(), places, items, ..Status::default() };
    if caller.bound.is_none() {
        let stats = service.administration().stats_in_full()?;
        status.by_kind = stats.by_kind.into_iter().map(|k| (k.kind, k.items)).collect();
        status.database = stats.database;
        status.bytes = size(stats.bytes);
        status.indexes = stats.indexes;
    }
    let records = seen.audit().newest_records(None, Some(now - REFUSAL_DAYS * MILLIS_PER_DAY), 2_000)?;
    status.refusals = records
        .into_iter()
        .filter(|r| r.op() == Some(AuditOperation::Blocked))
        .take(REFUSALS)
        .map(|r| Refusal {
            when: When::at(r.at, now),
            who: r.principal.clone().or(r.claimed.actor.clone()).unwrap_or_default(),
            summary: r.summary,
            item: r.item_id.map(|id| id.to_string()).unwrap_or_default(),
        })
        .collect();
    Ok(status)
}

/// The HTTP requests counted per route and status, busiest first.
pub fn requests(metrics: &[Sample]) -> Vec<Requests> {
    let label = |series: &str, name: &str| {
        let at = series.find(&format!("{name}=\""))? + name.len() + 2;
        series[at..].split('"').next().map(str::to_string)
    };
    let mut out: Vec<Requests> = metrics
        .iter()
        .filter(|s| s.series.starts_with("cortex_http_requests_total{"))
        .filter_map(|s| {
            Some(Requests {
                path: label(&s.series, "path")?,
                status: label(&s.series, "status")?,
                count: s.value.clone(),
            })
        })
        .collect();
    out.sort_by(|a, b| {
        let n = |r: &Requests| r.count.parse::<f64>().unwrap_or(0.0);
        n(b).total_cmp(&n(a)).then_with(|| a.path.cmp(&b.path))
    });
    out
}

fn uptime() -> String {
    let seconds = STARTED.get().map_or(0, |s| s.elapsed().as_secs());
    let (d, h, m) = (seconds / 86_400, seconds / 3_600 % 24, seconds / 60 % 60);
    match (d, h) {
        (0, 0) => format!("{m} min"),
        (0, _) => format!("{h} h {m} min"),
        _ => format!("{d} d {h} h"),
    }
}

/// Bytes as a person reads them (the store reports them as `i64`).
pub fn size(bytes: i64) -> String {
    byte_size(u64::try_from(bytes).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_read_per_route_busiest_first_and_sizes_read_as_words() {
        let samples = super::super::admin::samples(
            "cortex_http_requests_total{path=\"/\",status=\"200\"} 3\n\
             cortex_http_requests_total{path=\"/items/{id}\",status=\"404\"} 7\nup 1\n",
        );
        let r = requests(&samples);
        assert_eq!(r.len(), 2);
        assert_eq!(
            (r[0].path.as_str(), r[0].status.as_str(), r[0].count.as_str()),
            ("/items/{id}", "404", "7")
        );
        assert_eq!((size(2_500_000), size(512)), ("2.5 MB".to_string(), "512 bytes".to_string()));
    }
}
