//! A store the caller may not make at all (an API key whose role only reads): nothing is
//! written, but each item of the request is recorded in the audit trail as a `blocked`
//! attempt with the reason, as governance refusals are — who tried to write what, and where.

use crate::{MemoryService, Result};
use cortex_domain::item::{ItemOp, parse_store_request};
use cortex_store::{BlockedAttempt, WriteContext, WriteOp};
use serde_json::{Value, json};
use uuid::Uuid;

impl MemoryService {
    /// Records the items of `args` as blocked attempts by `actor`, refused for `reason`; how
    /// many were recorded. An item naming a stored item (an update, a delete) is recorded
    /// against that item when the caller can see it; items that do not parse, or that lie
    /// outside the caller's reach, are left out.
    pub fn audit_refused_store(&self, args: &Value, actor: &str, reason: &str) -> Result<usize> {
        let Ok(items) = parse_store_request(args) else { return Ok(0) };
        let _lane = self.write_lane();
        let now = self.now()?;
        let source = Some(json!({"actor": actor, "tool": "memory_store"}));
        let mut ops = Vec::new();
        for op in items.into_iter().flatten() {
            let (named, kind, scope) = match &op {
                ItemOp::Upsert(item) => (item.id, Some(item.kind), item.scope.or(&self.inferred.scope)),
                ItemOp::Delete { id, kind } => (Some(*id), *kind, self.inferred.scope.clone()),
            };
            let stored = match named {
                Some(id) => self.store.get(&[id])?.into_iter().next(),
                None => None,
            };
            let attempt = match (stored, kind) {
                (Some(s), _) => BlockedAttempt {
                    id: s.record.id,
                    kind: s.record.kind,
                    scope: s.record.scope,
                    hash: Some(s.record.content_hash),
                    source: source.clone(),
                    reason: reason.to_string(),
                    at: now,
                },
                (None, Some(kind)) => BlockedAttempt {
                    id: Uuid::now_v7(),
                    kind,
                    scope,
                    hash: None,
                    source: source.clone(),
                    reason: reason.to_string(),
                    at: now,
                },
                (None, None) => continue,
            };
            ops.push(WriteOp::Blocked(Box::new(attempt)));
        }
        if ops.is_empty() {
            return Ok(0);
        }
        let context =
            WriteContext { request_id: Some(Uuid::now_v7().to_string()), ..WriteContext::default() };
        let outcomes = self.store.write_batch_as(&ops, &context)?;
        Ok(outcomes.iter().filter(|o| matches!(o, cortex_store::WriteOutcome::Blocked { .. })).count())
    }
}
