//! `cortex stats` and `cortex audit` for a person: counts and sizes in words, the trail newest
//! first with times relative and exact. `--json` prints the service's answers instead.

use crate::output;
use cortex_domain::text::byte_size;
use cortex_domain::time::{describe_age, parse_instant};
use cortex_service::administration::StatsReport;
use cortex_store::AuditRecord;

/// `2 hours ago (2026-12-06 19:00:12 UTC)` for an RFC 3339 time; the text as is otherwise.
pub fn when(instant: &str, now: i64) -> String {
    match parse_instant(instant) {
        Ok(t) => at(t, now),
        Err(_) => instant.to_string(),
    }
}

/// `2 hours ago (2026-12-06 19:00:12 UTC)` for epoch milliseconds.
fn at(millis: i64, now: i64) -> String {
    format!("{} ({})", describe_age(millis, now), exact(millis))
}

fn exact(millis: i64) -> String {
    chrono::DateTime::<chrono::Utc>::from_timestamp_millis(millis)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_else(|| millis.to_string())
}

/// A size the store reports as `i64`, as a person reads it.
fn size(bytes: i64) -> String {
    byte_size(u64::try_from(bytes).unwrap_or(0))
}

pub fn stats(report: &StatsReport) {
    output::line(&format!(
        "database   {} (schema {}, {})",
        report.database,
        report.schema_version,
        size(report.bytes)
    ));
    output::line(&format!("items      {} live, {} deleted", report.items, report.deleted));
    let width = report.by_kind.iter().map(|k| k.kind.len()).max().unwrap_or(0);
    for kind in &report.by_kind {
        output::line(&format!("  {:<width$}  {:>6}", kind.kind, kind.items));
    }
    if let Some(indexes) = &report.indexes {
        let lexical = &indexes.lexical;
        match &lexical.place {
            Some(place) => output::line(&format!(
                "lexical    {}: {} items, {} at {place}",
                lexical.health.describe(),
                lexical.items,
                lexical.size()
            )),
            None => output::line(&format!("lexical    {}", lexical.health.describe())),
        }
        let v = &indexes.vectors;
        output::line(&format!(
            "vectors    {} ({} {}); {} of {} items embedded",
            v.vectors,
            v.size(),
            v.kept(),
            v.items - v.unembedded,
            v.items
        ));
        output::line(&format!("model      {}", v.model_line()));
        if let Some(waiting) = v.waiting() {
            output::line(&format!("  warning: {waiting}"));
        }
    }
    if !report.recall.is_empty() {
        output::line("recall     what the prompt-submit hook added, per project (counted on this machine)");
    }
    for r in &report.recall {
        output::line(&format!(
            "  {}/{}: {} prompts, {} with memories ({} memories, {} tokens), {} sessions at their ceiling",
            r.org, r.project, r.prompts, r.injections, r.memories, r.tokens, r.sessions_at_ceiling
        ));
    }
}

/// The records as read, newest first; says so when `limit` cut the list.
pub fn audit(records: &[AuditRecord], limit: usize) {
    if records.is_empty() {
        output::line("no audit records (nothing stored yet, or nothing matches --item/--since)");
        return;
    }
    let now = cortex_service::now_ms();
    // As wide as the longest operation (`key_restore`, `branch_unmerge`), so every row lines up.
    let change = cortex_store::AuditOperation::ALL.iter().map(|op| op.as_str().len()).max().unwrap_or(9);
    output::line(&format!(
        "{:<15} {:<23} {:<change$} {:<11} {:<36} {:<20} {:<14} SUMMARY",
        "WHEN", "AT", "CHANGE", "KIND", "ITEM", "BY", "VIA"
    ));
    for r in records {
        let item = r.item_id.map(|id| id.to_string()).unwrap_or_default();
        // Who Cortex established made the change; on records from before principals were
        // recorded, what the client claimed, labelled as a claim.
        let by = match (&r.principal, &r.claimed.actor) {
            (Some(principal), _) => principal.clone(),
            (None, Some(actor)) => format!("{actor} (claimed)"),
            (None, None) => "-".to_string(),
        };
        let via = r.via.as_deref().or(r.claimed.tool.as_deref()).unwrap_or("-");
        output::line(&format!(
            "{:<15} {:<23} {:<change$} {:<11} {:<36} {:<20} {:<14} {}",
            describe_age(r.at, now),
            exact(r.at),
            r.operation,
            r.kind.as_deref().unwrap_or("-"),
            item,
            by,
            via,
            r.summary.replace('\n', " ")
        ));
    }
    if records.len() >= limit {
        output::line(&format!("(the newest {limit} records; --limit N shows more, --since narrows)"));
    }
}
