//! A dry run: each write a real run would make, checked as the store flow checks it
//! (validation, then governance against the stored item), and counted as what it would
//! become. Nothing is written.

use super::Ingest;
use super::apply::{Write, refuse, write};
use super::plan::{Plan, Wanted};
use super::report::IngestReport;
use crate::Result;
use crate::memory_store::view_of;
use cortex_domain::governance::{check_delete, check_update};
use cortex_domain::item::{ItemOp, parse_item};
use serde_json::{Value, json};
use uuid::Uuid;

/// What a write would become.
pub(super) enum Outcome {
    Inserted,
    Updated,
    Deleted,
}

/// The writes of a plan, each with what it would become.
pub(super) fn planned(
    from: &str,
    root: &str,
    wanted: &[Wanted],
    plan: &Plan,
    report: &mut IngestReport,
) -> Vec<(Write, Outcome)> {
    let mut writes: Vec<(Write, Outcome)> = Vec::new();
    for &(i, id) in &plan.updates {
        writes.push((write(from, root, &wanted[i], Some(id), None), Outcome::Updated));
    }
    for (i, old) in &plan.inserts {
        writes.push((write(from, root, &wanted[*i], None, None), Outcome::Inserted));
        if let Some(old) = old {
            report.superseded.push((wanted[*i].path.clone(), old.clone()));
        }
    }
    for e in &plan.deletes {
        let item = json!({"operation": "delete", "id": e.id.to_string(), "kind": e.kind.as_str()});
        let w = Write { item, kind: e.kind, path: e.path.clone(), key: e.key.clone(), supersedes: None };
        writes.push((w, Outcome::Deleted));
    }
    for link in &plan.links {
        report.superseded.push((link.new_path.clone(), link.old_path.clone()));
    }
    writes
}

impl Ingest<'_> {
    /// Counts each write as what it would become, or as refused when the store flow would
    /// refuse it.
    pub(super) fn foresee(&self, writes: Vec<(Write, Outcome)>, report: &mut IngestReport) -> Result<()> {
        let ids: Vec<Uuid> = writes
            .iter()
            .filter_map(|(w, _)| w.item.get("id")?.as_str().and_then(|id| Uuid::parse_str(id).ok()))
            .collect();
        let stored = if ids.is_empty() { Vec::new() } else { self.service.view.get(&ids)? };
        for (w, outcome) in writes {
            let parsed = Some(parse_item(&w.item).map_err(|e| e.under("items[0]")));
            let verdict = match parsed {
                Some(Ok(op)) => {
                    let id = w.item.get("id").and_then(Value::as_str).and_then(|id| Uuid::parse_str(id).ok());
                    let current = stored.iter().find(|s| Some(s.record.id) == id && s.deleted_at.is_none());
                    match (op, current) {
                        (ItemOp::Upsert(new), Some(current)) => check_update(
                            view_of(current),
                            &Value::Object(new.data.clone()),
                            &new.content_hash,
                        ),
                        (ItemOp::Delete { .. }, Some(current)) => check_delete(view_of(current)),
                        // A restore brings back what is deleted: no rule guards a live item from it.
                        (ItemOp::Restore { .. }, Some(_)) => Ok(()),
                        (_, None) => Ok(()),
                    }
                }
                Some(Err(error)) => Err(error),
                None => Ok(()),
            };
            match verdict {
                Err(e) => refuse(&w, e.code.as_str(), e.message, e.human_hint, report),
                Ok(()) => {
                    let counts = report.kind(w.kind.as_str());
                    match outcome {
                        Outcome::Inserted => counts.inserted += 1,
                        Outcome::Updated => counts.updated += 1,
                        Outcome::Deleted => counts.deleted += 1,
                    }
                }
            }
        }
        Ok(())
    }
}
