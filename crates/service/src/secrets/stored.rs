//! Secrets already stored (`cortex secrets scan [--redact]`): items written before the
//! scanner, under `CORTEX_SECRETS=off`, or by a build without it. Every item of the chosen
//! scope is scanned with the one scanner; `--redact` rewrites each live item that holds one as
//! an audited update (the trail keeps the content hashes before and after, never the text).

use super::{named, redact_record};
use crate::MemoryService;
use crate::response::Redacted;
use crate::semantic::EmbeddingInputs;
use cortex_domain::Scope;
use cortex_domain::kind::Kind;
use cortex_store::{ExpectedState, ExportedItem, Record, StoreError, WriteOp, WriteOutcome};
use serde::Serialize;
use uuid::Uuid;

/// Items read per page, and rewritten per transaction.
const PAGE: usize = 500;

/// The stored secrets of one service's store; made by [`MemoryService::secrets`].
pub struct Secrets<'a> {
    pub(crate) service: &'a MemoryService,
}

/// An item holding secrets: what it is, and where and what (never the secret itself).
#[derive(Debug, Clone, Serialize)]
pub struct StoredFinding {
    pub id: Uuid,
    pub kind: Kind,
    /// The item's title as stored (a secret in the title is shown as its marker).
    pub title: String,
    pub scope: Scope,
    /// Soft-deleted: kept for audit, not redacted in place (purge it instead).
    pub deleted: bool,
    pub found: Vec<Redacted>,
    /// Rewritten with the secrets replaced (`--redact`).
    pub redacted: bool,
}

/// What a scan went through and found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StoredScan {
    /// Items of the scope scanned (deleted ones too).
    pub scanned: u64,
    pub items: Vec<StoredFinding>,
    /// Items rewritten with their secrets replaced.
    pub redacted: u64,
}

impl MemoryService {
    /// Secrets already stored, found and replaced.
    pub fn secrets(&self) -> Secrets<'_> {
        Secrets { service: self }
    }
}

impl Secrets<'_> {
    /// Every item within `scope` (each field it names must match; none: every item) that
    /// holds a secret; with `redact`, each live one rewritten with its secrets replaced by
    /// their markers, embedded again from the redacted text.
    pub fn scan(&self, scope: &Scope, redact: bool) -> crate::Result<StoredScan> {
        let store = self.service.whole_store("scanning the memory for secrets")?;
        let mut report = StoredScan::default();
        let mut after = None;
        loop {
            let page = store.export_page(after, PAGE)?;
            let Some(last) = page.last() else { break };
            after = Some(last.item.record.id);
            let mut updates = Vec::new();
            for ExportedItem { item, .. } in page {
                if !within(&item.record.scope, scope) {
                    continue;
                }
                report.scanned += 1;
                let seen = ExpectedState::of(&item);
                let mut record = item.record;
                let found = redact_record(&mut record);
                if found.is_empty() {
                    continue;
                }
                let deleted = item.deleted_at.is_some();
                report.items.push(StoredFinding {
                    id: record.id,
                    kind: record.kind,
                    title: record.title.clone(),
                    scope: record.scope.clone(),
                    deleted,
                    found: named(found),
                    redacted: false,
                });
                if redact && !deleted {
                    updates.push(Rewrite { at: report.items.len() - 1, record, seen });
                }
            }
            if !updates.is_empty() {
                report.redacted += self.rewrite(updates, &mut report.items)?;
            }
        }
        Ok(report)
    }

    /// Writes the redacted records in one audited transaction, embedded again; how many. The
    /// transaction holds only if no item changed since it was read (another writer's edit is
    /// never overwritten): otherwise the items are read, redacted and written again, a few
    /// times at most.
    fn rewrite(&self, mut updates: Vec<Rewrite>, items: &mut [StoredFinding]) -> crate::Result<u64> {
        let store = self.service.whole_store("redacting stored secrets")?;
        let mut attempt = 1;
        let outcomes = loop {
            match self.write(store, &updates) {
                Err(crate::ServiceError::Internal(StoreError::Conflict { id })) if attempt < ATTEMPTS => {
                    tracing::debug!(attempt, %id, "an item changed while its secrets were redacted; reading it again");
                    attempt += 1;
                    updates = reread(store, updates)?;
                }
                other => break other?,
            }
        };
        let mut written = 0;
        for (update, outcome) in updates.iter().zip(outcomes) {
            if matches!(outcome, WriteOutcome::Updated { .. }) {
                items[update.at].redacted = true;
                written += 1;
            }
        }
        self.service.shared.semantic.resume_backfill();
        self.service.shared.lexical.after_write();
        Ok(written)
    }

    fn write(
        &self,
        store: &dyn cortex_store::Store,
        updates: &[Rewrite],
    ) -> crate::Result<Vec<WriteOutcome>> {
        let now = self.service.now()?;
        let inputs: Vec<EmbeddingInputs> = updates.iter().map(|u| EmbeddingInputs::of(&u.record)).collect();
        let texts: Vec<&str> = inputs.iter().flat_map(EmbeddingInputs::texts).collect();
        let vectors = self.service.shared.semantic.embed_for_store(&texts);
        let mut vectors = vectors.into_iter().flatten();
        let ops: Vec<WriteOp> = updates
            .iter()
            .zip(&inputs)
            .map(|(update, input)| {
                let mut record = update.record.clone();
                record.updated_at = now;
                (record.vector, record.chunks) = input.take(&mut vectors);
                WriteOp::Update { record }
            })
            .collect();
        let mut context = self.service.write_context("cortex secrets scan");
        context.expected = updates.iter().map(|u| u.seen.clone()).collect();
        Ok(store.write_batch_as(&ops, &context)?)
    }
}

/// Rewrites of one page in a row.
const ATTEMPTS: usize = 3;

/// A live item to write again: its place in the report, its redacted record, and what it
/// was when read.
struct Rewrite {
    at: usize,
    record: Record,
    seen: ExpectedState,
}

/// `updates` read again from the store and redacted again; an item deleted meanwhile, or
/// holding no secret any more, is left out.
fn reread(store: &dyn cortex_store::Store, updates: Vec<Rewrite>) -> crate::Result<Vec<Rewrite>> {
    let ids: Vec<Uuid> = updates.iter().map(|u| u.record.id).collect();
    let fresh = store.get(&ids)?;
    Ok(updates
        .into_iter()
        .filter_map(|u| {
            let item = fresh.iter().find(|i| i.record.id == u.record.id && i.deleted_at.is_none())?;
            let mut record = item.record.clone();
            (!redact_record(&mut record).is_empty()).then(|| Rewrite {
                at: u.at,
                record,
                seen: ExpectedState::of(item),
            })
        })
        .collect())
}

/// Whether `scope` lies within `wanted`: each field `wanted` names, `scope` holds alike.
fn within(scope: &Scope, wanted: &Scope) -> bool {
    let pairs = [
        (&wanted.org, &scope.org),
        (&wanted.project, &scope.project),
        (&wanted.branch, &scope.branch),
        (&wanted.service, &scope.service),
        (&wanted.sprint, &scope.sprint),
        (&wanted.tenant, &scope.tenant),
        (&wanted.environment, &scope.environment),
    ];
    pairs.iter().all(|(want, have)| want.is_none() || want == have)
}
