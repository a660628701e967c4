//! Natural keys: an insert whose key a live item of the project holds updates that item (issues,
//! pull requests, entities: merged with what is stored) or is refused (a DDL migration whose
//! checksum changed).

use super::MemoryStore;
use super::batch::Batch;
use crate::Result;
use cortex_domain::graph;
use cortex_domain::item::derive;
use cortex_domain::natural_key::{self, OnMatch};
use cortex_domain::{Kind, Scope};
use cortex_store::{BlockedAttempt, Record, WriteOp};
use uuid::Uuid;

impl MemoryStore<'_> {
    /// an issue or pull request updates that item instead; a DDL migration with a different
    /// checksum becomes a `Blocked` op (the same checksum stays an insert, which the store
    /// reports as a duplicate, as it does for changes). Notes the refusals in
    /// `batch.blocked` and, for the inserts turned into updates, why in `batch.keyed`.
    pub(super) fn resolve_natural_keys(&self, batch: &mut Batch, now: i64) -> Result<()> {
        // Earlier inserts of this batch own their key too: a later one updates them.
        let mut in_batch: Vec<(Scope, String, Uuid)> = Vec::new();
        for pending in &mut batch.pending {
            let (index, op) = (pending.index, &mut pending.op);
            let WriteOp::Insert { record, .. } = op else { continue };
            let Some(key) = record.data.as_object().and_then(|d| natural_key::natural_key(record.kind, d))
            else {
                continue;
            };
            let on_match = natural_key::on_match(record.kind);
            if on_match == OnMatch::Skip {
                continue;
            }
            let earlier = in_batch
                .iter()
                .find(|(scope, k, _)| *k == key && scope.same_project(&record.scope))
                .map(|(_, _, id)| *id);
            let owner = match earlier {
                Some(id) => Some(id),
                None => self.service.view.natural_key_owner(&record.scope, &key)?,
            };
            let Some(owner) = owner else {
                in_batch.push((record.scope.clone(), key, record.id));
                continue;
            };
            match on_match {
                OnMatch::Update => {
                    let mut updated = record.clone();
                    updated.id = owner;
                    if record.kind == Kind::Entity
                        && earlier.is_none()
                        && let Some(current) = self.service.view.get(&[owner])?.first()
                    {
                        // The merge is written only over the state it was made from.
                        batch.seen.saw(current);
                        merge_entity(&mut updated, &current.record);
                    }
                    batch
                        .keyed
                        .push((index, format!("{}: updated in place", natural_key::describe(record.kind))));
                    *op = WriteOp::Update { record: updated };
                }
                OnMatch::SameChecksum => {
                    let stored = self.service.view.get(&[owner])?;
                    let Some(current) = stored.first() else { continue };
                    let Some(error) = natural_key::migration_changed(
                        &current.record.data,
                        &record.data,
                        &owner.to_string(),
                    ) else {
                        continue;
                    };
                    let error = error.under(&format!("items[{index}]"));
                    *op = WriteOp::Blocked(Box::new(BlockedAttempt {
                        id: owner,
                        kind: record.kind,
                        scope: current.record.scope.clone(),
                        hash: Some(current.record.content_hash.clone()),
                        source: record.source.clone(),
                        reason: error.message.clone(),
                        at: now,
                    }));
                    batch.blocked.push((index, error));
                }
                OnMatch::Skip => {}
            }
        }
        Ok(())
    }
}

/// An entity stored again under its name: the fields, content and tags it leaves out keep
/// their stored values (`graph::merge_entity_data`), and its text is derived anew.
fn merge_entity(record: &mut Record, stored: &Record) {
    let (Some(new), Some(old)) = (record.data.as_object(), stored.data.as_object()) else { return };
    let data = graph::merge_entity_data(old, new);
    let content = record.content.take().or_else(|| stored.content.clone());
    let derived = derive(record.kind, content.as_deref(), &data);
    record.title = derived.title;
    record.body = derived.body;
    record.content_hash = derived.content_hash;
    record.data = serde_json::Value::Object(data);
    record.content = content;
    for tag in &stored.tags {
        if !record.tags.contains(tag) {
            record.tags.push(tag.clone());
        }
    }
    if record.metadata.is_none() {
        record.metadata = stored.metadata.clone();
    }
}
