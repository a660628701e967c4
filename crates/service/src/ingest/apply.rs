//! A plan written through the store flow, 100 items a call: updates and the inserts that
//! supersede nothing (or an item stored by then) first, then the inserts that supersede a
//! record inserted in an earlier round, then the deletes. Each result is counted per kind,
//! and each refusal reported with its file.

use super::Ingest;
use super::Progress;
use super::plan::{Plan, Wanted};
use super::report::{IngestReport, Refusal};
use crate::Result;
use crate::response::{ItemResult, ItemStatus};
use cortex_domain::item::StoreRequest;
use cortex_domain::limits::MAX_BATCH_ITEMS;
use cortex_domain::{ErrorCode, Kind};
use serde_json::{Value, json};
use std::collections::HashMap;
use uuid::Uuid;

/// One write and what it is about, for the report.
pub(super) struct Write {
    pub item: Value,
    pub kind: Kind,
    pub path: String,
    pub key: String,
    /// The path of the record it supersedes, for the report.
    pub supersedes: Option<String>,
}

impl Ingest<'_> {
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
            let writes = super::foresee::planned(from, root, wanted, &plan, report);
            return self.foresee(writes, report);
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
        for link in &plan.links {
            match self.supersede_stored(link.old, link.new)? {
                None => report.superseded.push((link.new_path.clone(), link.old_path.clone())),
                Some(reason) => report.unlinked.push(super::report::Unlinked {
                    path: link.new_path.clone(),
                    target: link.old_path.clone(),
                    reason,
                }),
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
            let response = self
                .service
                .through("cortex ingest")
                .memory_store()
                .store(&StoreRequest::from_items(&items)?)?;
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
            let error = result.error.as_ref();
            let code = error.map_or("", |e| e.code.as_str());
            let message = error.map_or(String::new(), |e| e.message.clone());
            let hint = error.map_or(String::new(), |e| e.human_hint.clone());
            refuse(w, code, message, hint, report);
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

/// Counts and reports a write the memory refused (or, in a dry run, would refuse).
pub(super) fn refuse(w: &Write, code: &str, message: String, hint: String, report: &mut IngestReport) {
    report.kind(w.kind.as_str()).refused += 1;
    let hint = if w.kind == Kind::Decision && code == ErrorCode::BusinessRuleBlocked.as_str() {
        format!(
            "an accepted decision keeps the context and decision it was accepted with: restore {}'s \
             text, and write the change as a new decision record that supersedes it \
             (adr-tools: `adr new -s <number> <title>`; MADR: a new record whose status line says \
             \"Supersedes [<old>](<old file>)\")",
            w.path
        )
    } else {
        hint
    };
    report.refused.push(Refusal {
        path: w.path.clone(),
        key: w.key.clone(),
        code: code.to_string(),
        message,
        human_hint: hint,
    });
}

/// The `memory_store` item of a wanted one: an update when `id` is given. An update of the
/// item an exported file names keeps what the file does not show (metadata, source,
/// lifetime) as stored.
pub(super) fn write(from: &str, root: &str, w: &Wanted, id: Option<Uuid>, supersedes: Option<Uuid>) -> Write {
    let parts = w.item.exported.as_ref();
    if let (Some(stored), Some(id)) = (&w.matched, id) {
        let r = &stored.record;
        let mut item = json!({
            "id": id.to_string(),
            "kind": w.item.kind.as_str(),
            "data": w.item.data,
            "tags": parts.map(|p| p.tags.clone()).unwrap_or_default(),
        });
        for (field, value) in [
            ("content", parts.and_then(|p| p.content.clone()).map(Value::String)),
            ("metadata", r.metadata.clone()),
            ("source", r.source.clone()),
            ("ttl", r.ttl.clone().map(Value::String)),
        ] {
            if let Some(value) = value {
                item[field] = value;
            }
        }
        return Write {
            item,
            kind: w.item.kind,
            path: w.path.clone(),
            key: w.item.key.clone(),
            supersedes: None,
        };
    }
    let mut metadata = w.item.metadata.clone();
    metadata.insert(
        "ingest".into(),
        json!({"from": from, "root": root, "path": w.path, "key": w.item.key, "hash": w.hash,
               "reader": cortex_domain::sources::READER_VERSION}),
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
    if !w.files.is_empty() {
        item["source"]["files"] = json!(w.files);
    }
    if let Some(commit) = &w.commit {
        item["source"]["commit"] = json!(commit);
    }
    if let Some(id) = id {
        item["id"] = json!(id.to_string());
    }
    if let Some(parts) = parts {
        item["tags"] = json!(parts.tags);
        if let Some(content) = &parts.content {
            item["content"] = json!(content);
        }
    }
    if let Some(old) = supersedes {
        item["supersedes"] = json!(old.to_string());
    }
    if let Some(at) = w.item.occurred_at {
        item["occurred_at"] = json!(cortex_domain::time::format_instant(at));
    }
    Write { item, kind: w.item.kind, path: w.path.clone(), key: w.item.key.clone(), supersedes: None }
}
