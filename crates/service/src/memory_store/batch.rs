//! The batch a store request becomes: one pending item per valid input item, each carrying its
//! request position and its write op, and one result slot per input item. Each stage of the
//! store flow works on the pending items: it rewrites an op (a natural key turns an insert into
//! an update, governance turns an edit into an audited `Blocked` attempt) or settles an item
//! (a refusal, a near-duplicate), which takes it out of the batch with its result. What is
//! still pending at the end is written, and the store's outcomes fill the remaining slots.

use super::results::{refused, summarize};
use crate::response::{ErrorBody, ItemResult, ItemStatus, Redacted, StoreResponse};
use cortex_domain::item::Refused;
use cortex_domain::lifecycle::StatusChange;
use cortex_domain::provenance::{Provenance, ProvenanceClaim};
use cortex_domain::{Kind, ValidationError};
use cortex_store::{ExpectedState, StoredItem, WriteOp};
use uuid::Uuid;

/// One valid input item on its way through the flow.
pub(super) struct Pending {
    /// Its position in the request's `items`.
    pub index: usize,
    pub op: WriteOp,
    /// The stored item it replaces (`supersedes`), once checked by `govern`.
    pub replaces: Option<Replacement>,
    /// What its `source` said of its files and commit.
    pub claim: ProvenanceClaim,
    /// Its provenance, once stamped (`provenance`): written after it.
    pub provenance: Option<Provenance>,
}

/// An item of the request that replaces a stored one (`supersedes`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Replacement {
    pub target: Uuid,
    /// What superseding writes into the target's status, once its kind is known.
    pub status: Option<StatusChange>,
    /// Named by the item's own `supersedes` (else by its `data.supersedes`).
    pub on_item: bool,
}

pub(super) struct Batch {
    /// The kind each item of the request named: a refused item's result repeats it.
    kinds: Vec<Option<Kind>>,
    pub pending: Vec<Pending>,
    results: Vec<Option<ItemResult>>,
    /// Refusals of governance and migration checksums: the item stays in the batch as an
    /// audited `Blocked` op, and its result carries this error once written.
    pub blocked: Vec<(usize, ValidationError)>,
    /// Inserts a natural key turned into updates, and why.
    pub keyed: Vec<(usize, String)>,
    /// The stored items the checks read, as first read: what the write must still find.
    pub seen: Seen,
    /// What the secrets stage took out of each item's text, by request position.
    pub redacted: Vec<(usize, Vec<Redacted>)>,
}

impl Batch {
    /// The batch of a request whose items named `kinds`: valid items pending, refused ones
    /// settled.
    pub fn new(kinds: Vec<Option<Kind>>, items: Vec<Result<Pending, Refused>>) -> Batch {
        let mut batch = Batch {
            kinds,
            pending: Vec::with_capacity(items.len()),
            results: vec![None; items.len()],
            blocked: Vec::new(),
            keyed: Vec::new(),
            seen: Seen::default(),
            redacted: Vec::new(),
        };
        for (index, item) in items.into_iter().enumerate() {
            match item {
                Ok(pending) => batch.pending.push(pending),
                Err(Refused { kind, error }) => {
                    batch.results[index] = Some(refused(index, kind.map(|k| k.to_string()), &error))
                }
            }
        }
        batch
    }

    /// Takes the item at request position `index` out of the batch, refused with `error`.
    pub fn refuse(&mut self, index: usize, error: &ValidationError) {
        let kind = self.kinds.get(index).copied().flatten();
        let result = refused(index, kind.map(|k| k.to_string()), error);
        self.settle(index, result);
    }

    /// Takes the item at request position `index` out of the batch with its result.
    pub fn settle(&mut self, index: usize, result: ItemResult) {
        self.pending.retain(|p| p.index != index);
        self.results[index] = Some(result);
    }

    /// How many items the request sent (one result slot each).
    pub fn slots(&self) -> usize {
        self.results.len()
    }

    /// The result slot of an item written: filled by the write stage.
    pub fn result_mut(&mut self, index: usize) -> &mut Option<ItemResult> {
        &mut self.results[index]
    }

    /// Results naming an item of this batch that turned out a duplicate of a stored one
    /// (`(new, stored)` ids) name the stored one instead.
    pub fn rename_existing(&mut self, replaced: &[(String, String)]) {
        for result in self.results.iter_mut().flatten() {
            if let Some((_, existing)) =
                replaced.iter().find(|(new, _)| result.existing_id.as_ref() == Some(new))
            {
                result.existing_id = Some(existing.clone());
                result.id = Some(existing.clone());
            }
        }
    }

    /// Every result in request order, with the governance errors and natural-key reasons
    /// attached, and the summary that counts them.
    pub fn finish(mut self) -> StoreResponse {
        for (index, error) in std::mem::take(&mut self.blocked) {
            if let Some(result) = self.results[index].as_mut() {
                result.error = Some(ErrorBody::from(&error));
            }
        }
        for (index, reason) in std::mem::take(&mut self.keyed) {
            if let Some(result) = self.results[index].as_mut().filter(|r| r.status == ItemStatus::Updated) {
                result.reason = Some(reason);
            }
        }
        for (index, redacted) in std::mem::take(&mut self.redacted) {
            if let Some(result) = self.results[index].as_mut() {
                result.redacted = redacted;
            }
        }
        let results: Vec<ItemResult> = self.results.into_iter().flatten().collect();
        let summary = summarize(&results);
        StoreResponse { results, summary }
    }
}

/// The stored items a request's checks read, as first read: what its write must find.
#[derive(Default)]
pub(super) struct Seen(pub Vec<ExpectedState>);

impl Seen {
    /// Records `item` as read, unless read already (the first read is what a merge or a
    /// verdict was derived from).
    pub fn saw(&mut self, item: &StoredItem) {
        if !self.0.iter().any(|e| e.id == item.record.id) {
            self.0.push(ExpectedState::of(item));
        }
    }
}
