//! The activity page, `GET /activity`: what changed in the viewer's reach over the last
//! [`DAYS`] days, read from the audit trail — per day (each operation counted, drawn as a bar
//! with `<meter>`, which needs neither script nor inline style), the items changed per kind,
//! and the newest changes (`activity_feed`): each item's title and kind, who made it, the
//! claimed agent and session; filtered by kind, principal, agent, session and day.

use super::Ui;
use super::activity_feed::{self as feed, Choices, Filters, Line};
use super::page::{self, Chrome, Problem};
use super::places::{self, Picked};
use super::signin::{Viewer, viewer};
use askama::Template;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use cortex_domain::time::MILLIS_PER_DAY;
use cortex_service::audit::MAX_AUDIT_RECORDS;
use cortex_store::{AuditOperation, AuditRecord};

/// Days the page covers, today included.
pub const DAYS: i64 = 14;
/// Lines of the newest changes (a batch is one line).
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

/// What the page shows, from records oldest first.
pub struct Activity {
    pub days: Vec<Day>,
    pub busiest: usize,
    /// Distinct items changed, per kind.
    pub kinds: Vec<(String, usize)>,
}

/// Counts `records` (oldest first, all at or after the first day shown) per day and kind.
pub fn summarize(records: &[AuditRecord], now_ms: i64) -> Activity {
    let today = now_ms.div_euclid(MILLIS_PER_DAY);
    let first = today - (DAYS - 1);
    let columns = OPERATIONS.len() + 2;
    let mut days: Vec<Day> = (first..=today)
        .rev()
        .map(|day| Day { date: feed::date_of(day * MILLIS_PER_DAY), counts: vec![0; columns], total: 0 })
        .collect();
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
    }
    let kinds = feed::items_per_kind(records);
    Activity { busiest: days.iter().map(|d| d.total).max().unwrap_or(0).max(1), days, kinds }
}

#[derive(Template)]
#[template(path = "ui/activity.html")]
struct ActivityPage {
    chrome: Option<Chrome>,
    operations: Vec<&'static str>,
    activity: Activity,
    filters: Filters,
    choices: Choices,
    problem: Option<Problem>,
    recent: Vec<Line>,
    days: i64,
    /// The window held more changes than one read returns.
    cut: bool,
    chart: super::kind_chart::KindChart,
    chart_width: f64,
    chart_height: f64,
}

pub async fn page(State(ui): State<Ui>, headers: HeaderMap, uri: Uri) -> Response {
    let viewer = match viewer(&ui, &headers).await {
        Ok(v) => v,
        Err(answer) => return answer,
    };
    let filters = Filters::parse(uri.query());
    let now_ms = page::now_ms();
    let since = (now_ms.div_euclid(MILLIS_PER_DAY) - (DAYS - 1)) * MILLIS_PER_DAY;
    let service = ui.app.service.for_caller(&viewer.principal.caller);
    let wanted = filters.clone();
    let read = tokio::task::spawn_blocking(move || {
        let places = service.memory_find().places()?;
        let picked = places::pick(&places, &wanted.place, true);
        let records = service.audit().records(None, Some(since), MAX_AUDIT_RECORDS)?;
        let mut choices = Choices::of(&records);
        choices.places = places::choices(&places, picked.as_ref().unwrap_or(&Picked::All), None);
        let cut = records.len() >= MAX_AUDIT_RECORDS;
        let kept = picked.and_then(|picked| wanted.apply(records, &picked));
        let mut recent = kept.as_ref().map(|r| feed::lines(r, now_ms, RECENT)).unwrap_or_default();
        let labels = service.audit().labels(&feed::named(&recent))?;
        feed::name(&mut recent, &labels);
        Ok::<_, cortex_service::ServiceError>((kept, choices, cut, recent))
    })
    .await;
    let (kept, choices, cut, recent) = match read {
        Ok(Ok(read)) => read,
        Ok(Err(e)) => return failed(&viewer, e.to_string()),
        Err(e) => return failed(&viewer, e.to_string()),
    };
    let (records, problem, status) = match kept {
        Ok(records) => (records, None, StatusCode::OK),
        Err(message) => (
            Vec::new(),
            Some(Problem::new(
                message.to_string(),
                "correct the field, or clear it to see everything in reach",
            )),
            StatusCode::BAD_REQUEST,
        ),
    };
    let mut operations: Vec<&'static str> = OPERATIONS.iter().map(|op| op.as_str()).collect();
    operations.extend([AuditOperation::Blocked.as_str(), "other"]);
    let page = ActivityPage {
        chrome: Some(viewer.chrome()),
        operations,
        cut,
        chart: super::kind_chart::chart(&records, now_ms, DAYS),
        chart_width: super::kind_chart::WIDTH,
        chart_height: super::kind_chart::HEIGHT,
        activity: summarize(&records, now_ms),
        filters,
        choices,
        problem,
        recent,
        days: DAYS,
    };
    viewer.answer(page::html(status, &page))
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
        assert_eq!(a.kinds[0], ("decision".to_string(), 3), "three items of their own");
        assert_eq!(a.busiest, 2);
    }
}
