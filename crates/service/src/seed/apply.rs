//! A plan written through the store flow, 100 items a call: updates and the inserts that
//! supersede nothing (or an item stored by then) first, then the inserts that supersede a
//! record inserted in an earlier round, then the deletes. Each result is counted per kind,
//! and each refusal reported with its file.

use super::Progress;
use super::plan::{Plan, Wanted};
use super::report::{IngestReport, Refusal};
use crate::response::{ItemResult, ItemStatus};
use crate::{MemoryService, Result};
use cortex_domain::Kind;
use cortex_domain::limits::MAX_BATCH_ITEMS;
use serde_json::{Value, json};
use std::collections::HashMap;
use uuid::Uuid;

/// One write and what it is about, for the report.
struct Write {
    item: Value,
    kind: Kind,
    path: String,
    key: String,
    /// The path of the record it supersedes, for the report.
    supersedes: Option<String>,
}

impl MemoryService {
    pub(super) fn apply(
        &self,
        from: &str,
        root: &str,
        wanted: &[Wanted],
        plan: Plan,
        report: &mut IngestReport,
        progress: Progress<'_>,
    ) -> Result<()> {
        let total = (plan.inserts.len() + plan.updates.len() + plan.deletes.len()) as u64;
        if report.dry_run {
            for &(i, _) in &plan.inserts {
                report.kind(wanted[i].item.kind.as_str()).inserted += 1;
            }
            for &(i, _) in &plan.updates {
                report.kind(wanted[i].item.kind.as_str()).updated += 1;
            }
            for e in &plan.deletes {
                report.kind(e.kind.as_str()).deleted += 1;
            }
            for (i, old) in plan.inserts.iter().filter_map(|(i, old)| Some((i, old.as_ref()?))) {
                report.superseded.push((wanted[*i].path.clone(), old.clone()));
            }
            return Ok(());
        }
        let mut done = 0u64;
        progress(done, total);
        // Record ids by path: what a later round's inserts supersede.
        let mut record_ids: HashMap<String, Uuid> =
            plan.stored_records.iter().map(|(path, e)| (path.clone(), e.id)).collect();
        let mut writes: Vec<Write> =
            plan.updates.iter().map(|&(i, id)| write(from, root, &wanted[i], Some(id), None)).collect();
        let mut pending = plan.inserts;
        while !writes.is_empty() || !pending.is_empty() {
            let (mut ready, waiting): (Vec<_>, Vec<_>) = pending
                .into_iter()
                .partition(|(_, old)| old.as_ref().is_none_or(|old| record_ids.contains_key(old)));
            if ready.is_empty() && writes.is_empty() {
                // The records left replace records that were never stored (refused, or a
                // cycle of links): stored without the supersede.
                for (i, old) in &waiting {
                    report.unlinked.push(super::report::Unlinked {
                        path: wanted[*i].path.clone(),
                        target: old.clone().unwrap_or_default(),
                        reason: "the record it replaces was not stored (refused, or links in a cycle)".into(),
                    });
                }
                ready = waiting.into_iter().map(|(i, _)| (i, None)).collect();
                pending = Vec::new();
            } else {
                pending = waiting;
            }
            for (i, old) in ready {
                let target = old.as_ref().and_then(|o| record_ids.get(o).map(|id| (o.clone(), *id)));
                let mut w = write(from, root, &wanted[i], None, target.as_ref().map(|t| t.1));
                w.supersedes = target.map(|t| t.0);
                writes.push(w);
            }
            for (w, id) in self.write_all(std::mem::take(&mut writes), report, &mut done, total, progress)? {
                if let (Some(id), Kind::Decision) = (id, w.kind) {
                    record_ids.insert(w.path.clone(), id);
                }
            }
        }
        let deletes = plan
            .deletes
            .into_iter()
            .map(|e| Write {
                item: json!({"operation": "delete", "id": e.id.to_string(), "kind": e.kind.as_str()}),
                kind: e.kind,
                path: e.path,
                key: e.key,
                supersedes: None,
            })
            .collect();
        self.write_all(deletes, report, &mut done, total, progress)?;
        Ok(())
    }

    /// Writes in calls of at most 100 items; each write with the id it now has (none when
    /// refused).
    fn write_all(
        &self,
        writes: Vec<Write>,
        report: &mut IngestReport,
        done: &mut u64,
        total: u64,
        progress: Progress<'_>,
    ) -> Result<Vec<(Write, Option<Uuid>)>> {
        let mut out = Vec::with_capacity(writes.len());
        let mut writes = writes.into_iter().peekable();
        while writes.peek().is_some() {
            let chunk: Vec<Write> = writes.by_ref().take(MAX_BATCH_ITEMS).collect();
            let items: Vec<Value> = chunk.iter().map(|w| w.item.clone()).collect();
            let response = self.store(&json!({ "items": items }))?;
            for (w, result) in chunk.into_iter().zip(response.results) {
                let id = count(&w, &result, report);
                out.push((w, id));
            }
            *done = (*done + items.len() as u64).min(total);
            progress(*done, total);
        }
        Ok(out)
    }
}

/// Counts one result into the report; the item's id when it is stored.
fn count(w: &Write, result: &ItemResult, report: &mut IngestReport) -> Option<Uuid> {
    let id = result.id.as_deref().and_then(|id| Uuid::parse_str(id).ok());
    let counts = report.kind(w.kind.as_str());
    match result.status {
        ItemStatus::Inserted => counts.inserted += 1,
        ItemStatus::Updated => counts.updated += 1,
        ItemStatus::Deleted => counts.deleted += 1,
        // A commit a memory already holds under its natural key (stored by an agent).
        ItemStatus::SkippedDedupe => counts.unchanged += 1,
        ItemStatus::BusinessRuleBlocked | ItemStatus::ValidationError => {
            counts.refused += 1;
            let error = result.error.as_ref();
            let code = error.map_or("", |e| e.code.as_str()).to_string();
            let message = error.map_or(String::new(), |e| e.message.clone());
            let mut hint = error.map_or(String::new(), |e| e.human_hint.clone());
            if w.kind == Kind::Decision && result.status == ItemStatus::BusinessRuleBlocked {
                hint = format!(
                    "an accepted decision keeps the context and decision it was accepted with: restore {}'s \
                     text, and write the change as a new decision record that supersedes it \
                     (adr-tools: `adr new -s <number> <title>`; MADR: a new record whose status line says \
                     \"Supersedes [<old>](<old file>)\")",
                    w.path
                );
            }
            report.refused.push(Refusal {
                path: w.path.clone(),
                key: w.key.clone(),
                code,
                message,
                human_hint: hint,
            });
            return None;
        }
    }
    if let Some(old) = &w.supersedes
        && result.status == ItemStatus::Inserted
    {
        report.superseded.push((w.path.clone(), old.clone()));
    }
    id
}

/// The `memory_store` item of a wanted one: an update when `id` is given.
fn write(from: &str, root: &str, w: &Wanted, id: Option<Uuid>, supersedes: Option<Uuid>) -> Write {
    let mut metadata = w.item.metadata.clone();
    metadata.insert(
        "ingest".into(),
        json!({"from": from, "root": root, "path": w.path, "key": w.item.key, "hash": w.hash}),
    );
    let mut item = json!({
        "kind": w.item.kind.as_str(),
        "data": w.item.data,
        "metadata": metadata,
        // The file decides when the item goes, not a lifetime.
        "ttl": "permanent",
        // Two files may hold the same text; each keeps its own item.
        "dedupe": false,
        "source": {"tool": "cortex ingest"},
    });
    if let Some(id) = id {
        item["id"] = json!(id.to_string());
    }
    if let Some(old) = supersedes {
        item["supersedes"] = json!(old.to_string());
    }
    Write { item, kind: w.item.kind, path: w.path.clone(), key: w.item.key.clone(), supersedes: None }
}
