//! The activity page, `GET /activity`: what changed in the viewer's reach over the last
//! [`DAYS`] days, read from the audit trail — per day (each operation counted, drawn as a bar
//! with `<meter>`, which needs neither script nor inline style), per kind, and the newest
//! changes with links to their items.

use super::Ui;
use super::page::{self, Chrome};
use super::signin::{Viewer, viewer};
use askama::Template;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use cortex_domain::time::{MILLIS_PER_DAY, format_instant};
use cortex_service::audit::MAX_AUDIT_RECORDS;
use cortex_store::{AuditOperation, AuditRecord};
use std::collections::BTreeMap;

/// Days the page covers, today included.
pub const DAYS: i64 = 14;
/// Newest changes listed one by one.
const RECENT: usize = 50;
/// The operations counted per day, in the order of their columns; others count as `other`.
const OPERATIONS: [AuditOperation; 5] = [
    AuditOperation::Insert,
    AuditOperation::Update,
    AuditOperation::Supersede,
    AuditOperation::Delete,
    AuditOperation::Purge,
];

pub struct Day {
    pub date: String,
    /// One count per [`OPERATIONS`] entry, then `blocked` and `other`.
    pub counts: Vec<usize>,
    pub total: usize,
}

pub struct Change {
    pub at: String,
    pub operation: String,
    pub kind: String,
    pub item: String,
    pub summary: String,
}

/// What the page shows, from records oldest first.
pub struct Activity {
    pub days: Vec<Day>,
    pub busiest: usize,
    pub kinds: Vec<(String, usize)>,
    pub recent: Vec<Change>,
}

/// Counts `records` (oldest first, all at or after the first day shown) per day and kind.
pub fn summarize(records: &[AuditRecord], now_ms: i64) -> Activity {
    let today = now_ms.div_euclid(MILLIS_PER_DAY);
    let first = today - (DAYS - 1);
    let columns = OPERATIONS.len() + 2;
    let mut days: Vec<Day> = (first..=today)
        .rev()
        .map(|day| Day {
            date: format_instant(day * MILLIS_PER_DAY)[..10].to_string(),
            counts: vec![0; columns],
            total: 0,
        })
        .collect();
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    for record in records {
        let day = record.at.div_euclid(MILLIS_PER_DAY);
        if !(first..=today).contains(&day) {
            continue;
        }
        let row = &mut days[(today - day) as usize];
        let op = record.op();
        let column = match OPERATIONS.iter().position(|o| Some(*o) == op) {
            Some(i) => i,
            None if op == Some(AuditOperation::Blocked) => OPERATIONS.len(),
            None => OPERATIONS.len() + 1,
        };
        row.counts[column] += 1;
        row.total += 1;
        *kinds.entry(record.kind.clone().unwrap_or_else(|| "-".into())).or_default() += 1;
    }
    let mut kinds: Vec<(String, usize)> = kinds.into_iter().collect();
    kinds.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let recent = records
        .iter()
        .rev()
        .take(RECENT)
        .map(|r| Change {
            at: format_instant(r.at),
            operation: r.operation.clone(),
            kind: r.kind.clone().unwrap_or_default(),
            item: r.item_id.map(|id| id.to_string()).unwrap_or_default(),
            summary: r.summary.clone(),
        })
        .collect();
    Activity { busiest: days.iter().map(|d| d.total).max().unwrap_or(0).max(1), days, kinds, recent }
}

#[derive(Template)]
#[template(path = "ui/activity.html")]
struct ActivityPage {
    chrome: Option<Chrome>,
    operations: Vec<&'static str>,
    activity: Activity,
    days: i64,
    /// The window held more changes than one read returns.
    cut: bool,
    chart: super::kind_chart::KindChart,
    chart_width: f64,
    chart_height: f64,
}

pub async fn page(State(ui): State<Ui>, headers: HeaderMap) -> Response {
    let viewer = match viewer(&ui, &headers).await {
        Ok(v) => v,
        Err(answer) => return answer,
    };
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let since = (now_ms.div_euclid(MILLIS_PER_DAY) - (DAYS - 1)) * MILLIS_PER_DAY;
    let service = ui.app.service.for_caller(&viewer.principal.caller);
    let read =
        tokio::task::spawn_blocking(move || service.audit().records(None, Some(since), MAX_AUDIT_RECORDS))
            .await;
    let records = match read {
        Ok(Ok(records)) => records,
        Ok(Err(e)) => return failed(&viewer, e.to_string()),
        Err(e) => return failed(&viewer, e.to_string()),
    };
    let mut operations: Vec<&'static str> = OPERATIONS.iter().map(|op| op.as_str()).collect();
    operations.extend([AuditOperation::Blocked.as_str(), "other"]);
    let page = ActivityPage {
        chrome: Some(viewer.chrome()),
        operations,
        cut: records.len() >= MAX_AUDIT_RECORDS,
        chart: super::kind_chart::chart(&records, now_ms, DAYS),
        chart_width: super::kind_chart::WIDTH,
        chart_height: super::kind_chart::HEIGHT,
        activity: summarize(&records, now_ms),
        days: DAYS,
    };
    viewer.answer(page::html(StatusCode::OK, &page))
}

fn failed(viewer: &Viewer, e: String) -> Response {
    page::server_error("the activity page", e, Some(viewer.chrome()))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use cortex_domain::Scope;

    pub(in crate::ui) fn record(at: i64, operation: &str, kind: &str) -> AuditRecord {
        AuditRecord {
            seq: at,
            at,
            operation: operation.into(),
            item_id: Some(uuid::Uuid::now_v7()),
            kind: Some(kind.into()),
            scope: Scope::default(),
            principal: None,
            via: None,
            claimed: Default::default(),
            request_id: None,
            batch_id: None,
            hash_before: None,
            hash_after: None,
            summary: String::new(),
        }
    }

    #[test]
    fn changes_are_counted_per_day_operation_and_kind() {
        let now = 20 * MILLIS_PER_DAY + 5_000;
        let records = vec![
            record(7 * MILLIS_PER_DAY - 1, "insert", "todo"),
            record(now - 2 * MILLIS_PER_DAY, "insert", "decision"),
            record(now - 2 * MILLIS_PER_DAY + 1, "blocked", "decision"),
            record(now - 1, "update", "decision"),
            record(now, "restore", "issue"),
        ];
        let a = summarize(&records, now);
        assert_eq!(a.days.len(), DAYS as usize);
        assert_eq!(a.days[0].date, "1970-01-21");
        assert_eq!((a.days[0].total, a.days[0].counts[1], a.days[0].counts[6]), (2, 1, 1), "update, other");
        assert_eq!((a.days[2].total, a.days[2].counts[0], a.days[2].counts[5]), (2, 1, 1), "insert, blocked");
        assert_eq!(
            a.days.iter().map(|d| d.total).sum::<usize>(),
            4,
            "the end of day 6 is before the window (days 7 to 20)"
        );
        assert_eq!(a.kinds[0], ("decision".to_string(), 3));
        assert_eq!(a.busiest, 2);
        assert_eq!(a.recent[0].operation, "restore", "newest first");
    }
}
