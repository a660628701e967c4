//! A whole `memory_store` refused before it ran (an API key whose role may not write): the
//! stored items it named by `id` — what it would have changed — each get a `blocked` audit
//! record, as a governance refusal does. New items name no stored item, so only the refusal
//! itself (the tool error, the access log) tells of them.

use crate::{MemoryService, Result};
use cortex_store::{BlockedAttempt, WriteContext, WriteOp};
use serde_json::Value;
use uuid::Uuid;

impl MemoryService {
    /// Records `reason` as a `blocked` attempt on every stored item (that this caller may see)
    /// the request names by `id`; returns how many were recorded. Malformed parts of the
    /// request are ignored: it was refused whole, whatever it held.
    pub fn record_refused_store(&self, args: &Value, reason: &str) -> Result<usize> {
        let items: Vec<&Value> =
            args.get("items").and_then(Value::as_array).map(|a| a.iter().collect()).unwrap_or_default();
        let named: Vec<(Uuid, Option<Value>)> = items
            .iter()
            .filter_map(|item| {
                let id = Uuid::parse_str(item.get("id")?.as_str()?.trim()).ok()?;
                Some((id, item.get("source").filter(|s| s.is_object()).cloned()))
            })
            .collect();
        if named.is_empty() {
            return Ok(0);
        }
        let ids: Vec<Uuid> = named.iter().map(|(id, _)| *id).collect();
        let now = self.now()?;
        let ops: Vec<WriteOp> = self
            .store
            .get(&ids)?
            .into_iter()
            .map(|stored| {
                let source =
                    named.iter().find(|(id, _)| *id == stored.record.id).and_then(|(_, s)| s.clone());
                WriteOp::Blocked(Box::new(BlockedAttempt {
                    id: stored.record.id,
                    kind: stored.record.kind,
                    scope: stored.record.scope.clone(),
                    hash: Some(stored.record.content_hash.clone()),
                    source,
                    reason: reason.to_string(),
                    at: now,
                }))
            })
            .collect();
        if ops.is_empty() {
            return Ok(0);
        }
        let context =
            WriteContext { request_id: Some(Uuid::now_v7().to_string()), ..WriteContext::default() };
        self.store.write_batch_as(&ops, &context)?;
        Ok(ops.len())
    }
}
