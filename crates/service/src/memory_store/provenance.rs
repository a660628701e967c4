//! Each written item's provenance (`cortex_domain::provenance`): the commit it is written at
//! and the files it concerns, stamped by `git::stamp` and written in the same transaction,
//! after the item. A `confirm` gets its item's files again — a renamed one under its new name,
//! a deleted one dropped — counted at the current commit, which clears the flag.

use super::MemoryStore;
use super::batch::Batch;
use crate::Result;
use crate::git::stamp::Stamper;
use cortex_domain::provenance::{Provenance, ProvenanceClaim, records_provenance};
use cortex_store::WriteOp;
use uuid::Uuid;

impl MemoryStore<'_> {
    pub(super) fn attach_provenance(&self, batch: &mut Batch) -> Result<()> {
        let wanted = |op: &WriteOp| match op {
            WriteOp::Insert { record, .. } | WriteOp::Update { record } => records_provenance(record.kind),
            WriteOp::Confirm { .. } => true,
            _ => false,
        };
        if !batch.pending.iter().any(|p| wanted(&p.op)) {
            return Ok(());
        }
        let stamper = Stamper::new(self.service);
        // What updates and confirms concerned before: their stored provenance and scope.
        let known: Vec<Uuid> = batch
            .pending
            .iter()
            .filter_map(|p| match &p.op {
                WriteOp::Update { record } => Some(record.id),
                WriteOp::Confirm { id, .. } => Some(*id),
                _ => None,
            })
            .collect();
        let before = self.service.view.provenance_of(&known)?;
        let stored = self.service.view.get(&known)?;
        for pending in &mut batch.pending {
            match &mut pending.op {
                WriteOp::Insert { record, .. } if records_provenance(record.kind) => {
                    let text = format!("{}\n{}", record.title, record.body);
                    pending.provenance = stamper.stamp(&record.scope, &pending.claim, &text, &[])?;
                }
                WriteOp::Update { record } if records_provenance(record.kind) => {
                    let text = format!("{}\n{}", record.title, record.body);
                    // An update naming no files keeps those the item had.
                    let keep: Vec<String> = match pending.claim.files.is_empty() {
                        true => before
                            .iter()
                            .find(|(id, _)| *id == record.id)
                            .map(|(_, p)| p.paths().map(str::to_string).collect())
                            .unwrap_or_default(),
                        false => Vec::new(),
                    };
                    let scope = stored
                        .iter()
                        .find(|s| s.record.id == record.id)
                        .map_or_else(|| record.scope.clone(), |s| record.scope.or(&s.record.scope));
                    pending.provenance = stamper.stamp(&scope, &pending.claim, &text, &keep)?;
                }
                WriteOp::Confirm { id, provenance, .. } => {
                    // A missing or deleted item: the store answers it.
                    let Some(item) = stored.iter().find(|s| s.record.id == *id) else { continue };
                    let earlier =
                        before.iter().find(|(i, _)| i == id).map(|(_, p)| p.clone()).unwrap_or_default();
                    let files = stamper.followed(&item.record.scope, &earlier)?;
                    let claim = ProvenanceClaim { files, commit: None };
                    **provenance = stamper.stamp(&item.record.scope, &claim, "", &[])?.unwrap_or_default();
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// What a confirm's result says.
pub(crate) fn confirmed(provenance: &Provenance) -> String {
    let at = match (&provenance.commit, &provenance.branch) {
        (Some(commit), Some(branch)) => format!(" at {} on {branch}", &commit[..commit.len().min(12)]),
        (Some(commit), None) => format!(" at {}", &commit[..commit.len().min(12)]),
        _ => String::new(),
    };
    match provenance.files.is_empty() {
        true => format!("confirmed{at}: it names no files, so it is never flagged out of date"),
        false => format!("confirmed{at}: no longer flagged out of date until its files change again"),
    }
}
