//! One `ItemResult` per input item, from a refusal, a near-duplicate or the store's outcome,
//! and the summary that counts them.

use crate::response::{ErrorBody, ItemResult, ItemStatus, StoreSummary};
use cortex_domain::natural_key;
use cortex_domain::{ErrorCode, ValidationError};
use cortex_store::{DuplicateReason, WriteOp, WriteOutcome};
use uuid::Uuid;

pub(super) fn op_kind(op: &WriteOp) -> Option<String> {
    match op {
        WriteOp::Insert { record, .. } | WriteOp::Update { record } => Some(record.kind.to_string()),
        WriteOp::Delete { kind, .. } | WriteOp::Restore { kind, .. } | WriteOp::Confirm { kind, .. } => {
            kind.map(|k| k.to_string())
        }
        WriteOp::Import { item, .. } => Some(item.record.kind.to_string()),
        WriteOp::Blocked(attempt) => Some(attempt.kind.to_string()),
        WriteOp::Supersede { .. } | WriteOp::Provenance { .. } => None,
    }
}

pub(super) fn near_duplicate(index: usize, op: &WriteOp, existing: Uuid, similarity: f64) -> ItemResult {
    let kind = op_kind(op);
    ItemResult {
        index: index as i64,
        status: ItemStatus::SkippedDedupe,
        id: Some(existing.to_string()),
        existing_id: Some(existing.to_string()),
        reason: Some(format!(
            "near-duplicate (cosine {similarity:.3}) of an existing {} in the same scope; send \"dedupe\": false to store it anyway",
            kind.as_deref().unwrap_or("item")
        )),
        similarity: Some((similarity * 1000.0).round() / 1000.0),
        kind,
        error: None,
        may_contradict: Vec::new(),
        hint: None,
        redacted: Vec::new(),
    }
}

pub(super) fn refused(index: usize, kind: Option<String>, error: &ValidationError) -> ItemResult {
    ItemResult {
        index: index as i64,
        status: ItemStatus::ValidationError,
        id: None,
        kind,
        existing_id: None,
        reason: None,
        similarity: None,
        error: Some(ErrorBody::from(error)),
        may_contradict: Vec::new(),
        hint: None,
        redacted: Vec::new(),
    }
}

pub(super) fn result_of(index: usize, op: &WriteOp, outcome: WriteOutcome) -> ItemResult {
    let kind = op_kind(op);
    let done = |status, id: Uuid, reason: Option<String>| ItemResult {
        index: index as i64,
        status,
        id: Some(id.to_string()),
        kind: kind.clone(),
        existing_id: None,
        reason,
        similarity: None,
        error: None,
        may_contradict: Vec::new(),
        hint: None,
        redacted: Vec::new(),
    };
    let path = |field: &str| format!("items[{index}].{field}");
    match outcome {
        WriteOutcome::Inserted { id } => done(ItemStatus::Inserted, id, None),
        WriteOutcome::Updated { id } => done(ItemStatus::Updated, id, None),
        // The refusal's error body is filled in by `store` from `govern`'s answer.
        WriteOutcome::Blocked { id } => done(ItemStatus::BusinessRuleBlocked, id, None),
        WriteOutcome::Confirmed { id } => {
            let reason = match op {
                WriteOp::Confirm { provenance, .. } => crate::memory_store::provenance::confirmed(provenance),
                _ => "confirmed".to_string(),
            };
            done(ItemStatus::Updated, id, Some(reason))
        }
        WriteOutcome::Deleted { id, already, cascaded } => {
            let reason = if already {
                Some("the item was already deleted".to_string())
            } else {
                (cascaded > 0).then(|| {
                    format!("{cascaded} relation(s) and observation(s) attached to it were deleted too")
                })
            };
            done(ItemStatus::Deleted, id, reason)
        }
        // A restore changes the item from deleted to live: an update of it, said so.
        WriteOutcome::Restored { id, already } => {
            let reason = match already {
                true => "the item was not deleted: nothing changed",
                false => {
                    "restored: finds see it again (relations deleted with it stay deleted until restored too)"
                }
            };
            done(ItemStatus::Updated, id, Some(reason.to_string()))
        }
        WriteOutcome::Duplicate { existing_id, reason } => {
            let what = kind.as_deref().unwrap_or("item");
            let reason = match reason {
                DuplicateReason::IdempotencyKey => {
                    "an item with this idempotency_key already exists in this project".to_string()
                }
                DuplicateReason::ContentHash => format!(
                    "exact duplicate (same normalized text) of an existing {what} in the same scope; send \"dedupe\": false to store it anyway"
                ),
                DuplicateReason::SameId => format!("an {what} with this id is already stored"),
                DuplicateReason::NaturalKey => match kind.as_deref().and_then(cortex_domain::Kind::parse) {
                    Some(k) => format!("{}: already stored", natural_key::describe(k)),
                    None => "an item with the same natural key is already stored".to_string(),
                },
            };
            ItemResult {
                existing_id: Some(existing_id.to_string()),
                ..done(ItemStatus::SkippedDedupe, existing_id, Some(reason))
            }
        }
        WriteOutcome::NotFound { id } => refused(
            index,
            kind,
            &ValidationError::new(
                ErrorCode::NotFound,
                path("id"),
                format!("no live item has id {id}"),
                "check the id with memory_find {\"ids\": [...]}; leave `id` out to create a new item",
            ),
        ),
        WriteOutcome::KindMismatch { id, stored } => refused(
            index,
            kind.clone(),
            &ValidationError::new(
                ErrorCode::KindMismatch,
                path("kind"),
                format!("item {id} is a {stored}, not a {}", kind.as_deref().unwrap_or("?")),
                format!(
                    "send \"kind\": \"{stored}\" to change this item, or leave `id` out to create a new one"
                ),
            ),
        ),
    }
}

pub(super) fn summarize(results: &[ItemResult]) -> StoreSummary {
    let mut s = StoreSummary { total: results.len() as i64, ..StoreSummary::default() };
    for r in results {
        *s.count_mut(r.status) += 1;
    }
    s
}
