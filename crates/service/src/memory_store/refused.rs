//! A store the caller may not make at all (an API key whose role only reads): nothing is
//! written, but the call is recorded in the audit trail as one `blocked` record — who tried,
//! how many items, what the first of them named, why it was refused — bounded in size and,
//! per actor, in number ([`super::refusal_budget`]): a refused call costs the trail at most one
//! short row, whatever it carried.

use super::MemoryStore;
use super::refusal_budget::Unrecorded;
use crate::Result;
use cortex_domain::Kind;
use cortex_domain::item::{Entry, ItemOp, StoreRequest};
use cortex_store::{BlockedAttempt, WriteOp};
use uuid::Uuid;

/// Items of a refused call named one by one in its record; the rest are counted.
pub const NAMED_ITEMS: usize = 10;

/// What a refused call's record says about one item.
struct Named {
    /// The stored item it names, when the caller can see it.
    stored: Option<(Uuid, Kind, cortex_domain::Scope, String)>,
    text: String,
}

impl MemoryStore<'_> {
    /// Records a store the caller was refused for `reason` as one blocked attempt; how many
    /// records were written (0 or 1). The record stands on the first stored item the call
    /// named (when the caller can see it), else on a new id of the first item's kind; its
    /// summary says the reason, the number of items and what the first [`NAMED_ITEMS`] named.
    /// Items that do not parse, or that lie outside the caller's reach, are counted, never
    /// named. Past the actor's records for this minute, the call is only counted, and its next
    /// record says how many calls and items went unrecorded. A call whose arguments are not
    /// even a batch names nothing to record it on: the caller does not ask.
    pub fn audit_refused_store(&self, request: &StoreRequest, reason: &str) -> Result<usize> {
        let items = &request.items;
        let count = items.len();
        let now = self.service.now()?;
        let budget = || self.service.shared.refusals.lock().unwrap_or_else(|e| e.into_inner());
        // Counted per principal, whose name holds its org (two orgs may each have a key `ci`):
        // no org's record tells of another's refusals.
        let counted =
            self.service.principal.as_ref().map_or_else(|| "unnamed".to_string(), ToString::to_string);
        let Some(carried) = budget().admit(&counted, count as u64, now) else { return Ok(0) };
        let written = self.record_refused(items, count, reason, carried, now);
        if !matches!(written, Ok(1)) {
            budget().give_back(&counted, carried, count as u64, now);
        }
        written
    }

    fn record_refused(
        &self,
        items: &[Entry],
        count: usize,
        reason: &str,
        carried: Unrecorded,
        now: i64,
    ) -> Result<usize> {
        let named = items
            .iter()
            .take(NAMED_ITEMS)
            .map(|op| self.named(op.as_ref().ok()))
            .collect::<Result<Vec<_>>>()?;
        let first_kind = items.iter().find_map(|op| match op.as_ref().ok()? {
            ItemOp::Upsert(item) => Some(item.kind),
            ItemOp::Delete { kind, .. } | ItemOp::Restore { kind, .. } => *kind,
        });
        let (id, kind, scope, hash) = match named.iter().find_map(|n| n.stored.clone()) {
            Some((id, kind, scope, hash)) => (id, kind, scope, Some(hash)),
            None => match first_kind {
                Some(kind) => (Uuid::now_v7(), kind, self.service.inferred.scope.clone(), None),
                // Nothing it sent names a kind or an item the caller can see: there is no
                // item to record the attempt on.
                None => return Ok(0),
            },
        };
        let _lane = self.service.write_lane();
        let attempt = BlockedAttempt {
            id,
            kind,
            scope,
            hash,
            // The call's own claims are not repeated: the principal says who it was.
            source: None,
            reason: summary(reason, count, &named, carried),
            at: now,
        };
        let context = self.service.write_context("memory_store");
        let outcomes = self.service.view.write_batch_as(&[WriteOp::Blocked(Box::new(attempt))], &context)?;
        Ok(outcomes.iter().filter(|o| matches!(o, cortex_store::WriteOutcome::Blocked { .. })).count())
    }

    /// What the record says of one item of the call (`None`: it did not parse).
    fn named(&self, op: Option<&ItemOp>) -> Result<Named> {
        let Some(op) = op else { return Ok(Named { stored: None, text: "an invalid item".into() }) };
        let (id, verb, kind) = match op {
            ItemOp::Upsert(item) => {
                (item.id, if item.id.is_some() { "update" } else { "insert" }, Some(item.kind))
            }
            ItemOp::Delete { id, kind } => (Some(*id), "delete", *kind),
            ItemOp::Restore { id, kind } => (Some(*id), "restore", *kind),
        };
        let stored = match id {
            Some(id) => self.service.view.get(&[id])?.into_iter().next(),
            None => None,
        };
        Ok(match stored {
            Some(s) => Named {
                text: format!("{verb} {} {}", s.record.kind.as_str(), s.record.id),
                stored: Some((s.record.id, s.record.kind, s.record.scope, s.record.content_hash)),
            },
            // An id the caller cannot see is not repeated: it says nothing the trail needs.
            None if id.is_some() => Named { stored: None, text: format!("{verb} an item out of reach") },
            None => {
                Named { stored: None, text: format!("{verb} {}", kind.map_or("an item", |k| k.as_str())) }
            }
        })
    }
}

/// The record's summary: bounded by [`NAMED_ITEMS`] whatever the call carried.
fn summary(reason: &str, count: usize, named: &[Named], carried: Unrecorded) -> String {
    let mut out = format!("{reason}; {count} item{}", if count == 1 { "" } else { "s" });
    if !named.is_empty() {
        let list: Vec<&str> = named.iter().map(|n| n.text.as_str()).collect();
        out.push_str(&format!(": {}", list.join(", ")));
        if count > named.len() {
            out.push_str(&format!(" and {} more", count - named.len()));
        }
    }
    if carried.calls > 0 {
        out.push_str(&format!(
            "; {} more refused call{} of this principal ({} items) since {} not recorded one by one",
            carried.calls,
            if carried.calls == 1 { "" } else { "s" },
            carried.items,
            cortex_domain::time::format_instant(carried.since),
        ));
    }
    out
}
