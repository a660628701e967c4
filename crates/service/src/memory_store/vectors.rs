//! The semantic stages of a store: every written item embedded in one batch, then inserts
//! that nearly duplicate a live item (or an earlier item of the batch) found.

use super::MemoryStore;
use super::batch::Batch;
use super::results::near_duplicate;
use crate::response::ItemResult;
use crate::semantic::{Compare, EmbeddingInputs};
use cortex_domain::{dedupe, near_duplicate};
use cortex_store::{Filters, WriteOp};
use uuid::Uuid;

impl MemoryStore<'_> {
    /// Embeds every inserted or updated item in one batch: its whole text and, for a long
    /// document, each of its chunks (`semantic::EmbeddingInputs`).
    pub(super) fn attach_vectors(&self, batch: &mut Batch) {
        let inputs: Vec<EmbeddingInputs> = batch
            .pending
            .iter()
            .filter_map(|p| match &p.op {
                WriteOp::Insert { record, .. } | WriteOp::Update { record } => {
                    Some(EmbeddingInputs::of(record))
                }
                WriteOp::Delete { .. }
                | WriteOp::Restore { .. }
                | WriteOp::Import { .. }
                | WriteOp::Supersede { .. }
                | WriteOp::Blocked(_)
                | WriteOp::Provenance { .. }
                | WriteOp::Confirm { .. } => None,
            })
            .collect();
        let refs: Vec<&str> = inputs.iter().flat_map(EmbeddingInputs::texts).collect();
        let vectors = self.service.shared.semantic.embed_for_store(&refs);
        self.service.shared.semantic.resume_backfill();
        let Some(vectors) = vectors else { return };
        let mut vectors = vectors.into_iter();
        let mut inputs = inputs.iter();
        for pending in &mut batch.pending {
            if let WriteOp::Insert { record, .. } | WriteOp::Update { record } = &mut pending.op
                && let Some(input) = inputs.next()
            {
                (record.vector, record.chunks) = input.take(&mut vectors);
            }
        }
    }

    /// Settles each insert that nearly duplicates a live item, or an earlier item of the batch,
    /// with a result naming that item (`near_duplicates`).
    pub(super) fn drop_near_duplicates(&self, batch: &mut Batch, now: i64) {
        let ops: Vec<&WriteOp> = batch.pending.iter().map(|p| &p.op).collect();
        let replaced: Vec<Option<Uuid>> =
            batch.pending.iter().map(|p| p.replaces.map(|r| r.target)).collect();
        let found = self.near_duplicates(&ops, &replaced, now);
        let settled: Vec<(usize, ItemResult)> = batch
            .pending
            .iter()
            .zip(found)
            .filter_map(|(p, dup)| {
                dup.map(|(existing, similarity)| {
                    (p.index, near_duplicate(p.index, &p.op, existing, similarity))
                })
            })
            .collect();
        for (index, result) in settled {
            batch.settle(index, result);
        }
    }

    /// For each op, the live item it nearly duplicates and the similarity: same kind, same full
    /// scope, updated within the policy's window, cosine at or above its threshold — or an
    /// earlier item of the same batch. Only inserts that allow dedupe and have a vector qualify.
    /// The item an op supersedes (`replaced`) is never its duplicate: a new version is meant to
    /// read like the one it replaces, and skipping it would leave the old one in force.
    fn near_duplicates(
        &self,
        ops: &[&WriteOp],
        replaced: &[Option<Uuid>],
        now: i64,
    ) -> Vec<Option<(Uuid, f64)>> {
        let policy = self.service.shared.near_duplicate_policy;
        let mut found: Vec<Option<(Uuid, f64)>> = vec![None; ops.len()];
        for (i, &op) in ops.iter().enumerate() {
            // An insert that skips the exact check (`dedupe: false`, a link) skips this one too.
            let WriteOp::Insert { record, checks } = op else { continue };
            if !dedupe::compares_text(checks) {
                continue;
            }
            if !near_duplicate::applies_to(record.kind) {
                continue;
            }
            let Some(vector) = &record.vector else { continue };
            let same_place = Filters {
                merged: Vec::new(),
                kinds: vec![record.kind],
                scope_equals: Filters::exact_scope(&record.scope),
                since: Some(policy.window_start(now)),
                until: None,
                tags: Vec::new(),
                status: None,
                author: None,
                now,
                include_superseded: false,
                include_expired: false,
                bound: self.service.bound.clone(),
            };
            let stored = match self.service.shared.semantic.nearest(
                &*self.service.view,
                vector,
                2,
                &same_place,
                Compare::WholeTexts,
            ) {
                Ok(hits) => {
                    hits.iter().find(|h| Some(h.id) != replaced[i]).map(|h| (h.id, f64::from(h.score)))
                }
                Err(e) => {
                    tracing::warn!("near-duplicate check skipped: {e}");
                    None
                }
            };
            let in_batch = ops[..i]
                .iter()
                .zip(&found)
                .filter_map(|(&earlier, dup)| match earlier {
                    WriteOp::Insert { record: e, .. }
                        if dup.is_none() && e.kind == record.kind && e.scope == record.scope =>
                    {
                        let v = e.vector.as_ref()?;
                        Some((e.id, f64::from(cortex_vector::cosine(v, vector)?)))
                    }
                    _ => None,
                })
                .max_by(|a, b| a.1.total_cmp(&b.1));
            found[i] = [stored, in_batch]
                .into_iter()
                .flatten()
                .filter(|(_, similarity)| policy.is_near_duplicate(*similarity))
                .max_by(|a, b| a.1.total_cmp(&b.1));
        }
        found
    }
}
