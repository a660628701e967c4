//! `cortex export` / `cortex import`: a whole memory as JSON Lines, to move it between backends
//! (SQLite ⇄ PostgreSQL) or machines, keeping ids, timestamps, scopes, deletions and vectors.
//! The file format lives in [`format`]; the CLI reads and writes the file around these methods.
//! Import verifies at the end that every item of the file is in the target store.

pub mod format;
pub mod git_lines;

pub use format::{
    ChunkLine, FORMAT_VERSION, Header, ItemLine, Line, Trailer, TrailerCounts, check_lines, encode_line,
    parse_line,
};
pub use git_lines::{GitImport, GitLine};

use crate::MemoryService;
use crate::response::Redacted;
use crate::secrets::{named, redact_record};
use crate::semantic::EmbeddingInputs;
use crate::semantic::MODEL_KEY;
use crate::settings::SecretsMode;
use cortex_domain::{ErrorCode, ValidationError};
use cortex_store::{WriteOp, WriteOutcome};
use serde::Serialize;
use uuid::Uuid;

/// Export and import as one caller is served (see the module doc); made by
/// [`MemoryService::transfer`].
pub struct Transfer<'a> {
    pub(crate) service: &'a MemoryService,
}

/// How one batch of an import went.
#[derive(Debug, Default)]
pub struct ImportBatch {
    pub imported: u64,
    pub present: u64,
    /// The items whose secrets were replaced, and what was taken from each.
    pub redacted: Vec<(Uuid, Vec<Redacted>)>,
}

/// How an import went.
#[derive(Debug, Default, Serialize)]
pub struct ImportReport {
    /// Items in the file.
    pub items: u64,
    pub imported: u64,
    /// Already in the target: the same id, or the same idempotency key or content.
    pub already_present: u64,
    /// Items of the file found in the target afterwards (must equal `items`).
    pub verified: u64,
    /// Items' provenance written (with the git tables of the file).
    pub provenance: u64,
    /// Items whose secrets were replaced by markers before they were written.
    pub redacted: u64,
}

impl Transfer<'_> {
    /// The `model:dimension` of the vectors stored, if any.
    pub fn embedding_model(&self) -> crate::Result<Option<String>> {
        Ok(self.service.whole_store("reading the embedding model")?.meta(MODEL_KEY)?)
    }

    /// Up to `limit` items (deleted ones too) with ids after `after`, in id order.
    pub fn export_page(&self, after: Option<Uuid>, limit: usize) -> crate::Result<Vec<ItemLine>> {
        Ok(self
            .service
            .whole_store("exporting the memory")?
            .export_page(after, limit)?
            .into_iter()
            .map(ItemLine::from)
            .collect())
    }

    /// Prepares the store for vectors of `model`: records it when the store has none yet;
    /// `Ok(Err(why))` when the store holds another model's vectors (searches would compare
    /// incomparable vectors).
    pub fn accept_embedding_model(&self, model: Option<&str>) -> crate::Result<Result<(), String>> {
        let store = self.service.whole_store("importing a memory")?;
        let Some(model) = model else { return Ok(Ok(())) };
        match store.meta(MODEL_KEY)? {
            Some(here) if here != model => Ok(Err(format!(
                "the file holds vectors of {model}, but this store's vectors come from {here}: import into an empty store instead"
            ))),
            Some(_) => Ok(Ok(())),
            None => {
                store.set_meta(MODEL_KEY, model)?;
                Ok(Ok(()))
            }
        }
    }

    /// Writes one batch of imported items in one transaction, each screened for secrets as
    /// `CORTEX_SECRETS` says (see [`Transfer::refusal`]): under `redact`, an item's secrets are
    /// replaced by their markers and it is embedded again from the redacted text. Under
    /// `refuse`, a batch holding a secret is refused whole (the CLI checks the whole file
    /// first, so nothing is written).
    pub fn import_batch(&self, items: Vec<ItemLine>) -> crate::Result<ImportBatch> {
        let mode = self.service.shared.secrets;
        let mut report = ImportBatch::default();
        let mut ops = Vec::with_capacity(items.len());
        for line in items {
            if let Some(refusal) = self.refusal(&line) {
                return Err(refusal.into());
            }
            let mut op = line.into_op();
            if mode != SecretsMode::Off
                && let WriteOp::Import { item, vector, chunks } = &mut op
            {
                let found = redact_record(&mut item.record);
                if !found.is_empty() {
                    let inputs = EmbeddingInputs::of(&item.record);
                    let texts: Vec<&str> = inputs.texts().collect();
                    (*vector, *chunks) = match self.service.shared.semantic.embed_for_store(&texts) {
                        Some(vectors) => inputs.take(&mut vectors.into_iter()),
                        None => (None, Vec::new()),
                    };
                    report.redacted.push((item.record.id, named(found)));
                }
            }
            ops.push(op);
        }
        let context = self.service.write_context("cortex import");
        for outcome in self.service.whole_store("importing a memory")?.write_batch_as(&ops, &context)? {
            match outcome {
                WriteOutcome::Inserted { .. } => report.imported += 1,
                _ => report.present += 1,
            }
        }
        if !report.redacted.is_empty() {
            // Items left without vectors (no embedder at hand) get them in the background.
            self.service.shared.semantic.resume_backfill();
        }
        Ok(report)
    }

    /// Whether this server refuses secrets (`CORTEX_SECRETS=refuse`): an import file is then
    /// checked whole for them before anything is written.
    pub fn refuses_secrets(&self) -> bool {
        self.service.shared.secrets == SecretsMode::Refuse
    }

    /// Why an import line may not be written under `CORTEX_SECRETS=refuse`: it holds a secret
    /// (the item and field named, never the secret). `None` otherwise.
    pub fn refusal(&self, line: &ItemLine) -> Option<ValidationError> {
        if !self.refuses_secrets() {
            return None;
        }
        let mut record = line.record_copy();
        let first = redact_record(&mut record).into_iter().find(|f| f.is_secret())?;
        Some(ValidationError::new(
            ErrorCode::InvalidValue,
            format!("item {}: {}", line.id, first.field),
            format!(
                "`{}` holds a secret ({}); this server refuses secrets (CORTEX_SECRETS=refuse)",
                first.field, first.rule
            ),
            "import with CORTEX_SECRETS=redact to store the item with the secret replaced by a marker, or remove it from the file",
        ))
    }

    /// Up to `limit` items' provenance with ids after `after`, in id order, as export lines.
    pub fn provenance_page(&self, after: Option<Uuid>, limit: usize) -> crate::Result<Vec<GitLine>> {
        Ok(self
            .service
            .whole_store("exporting the memory")?
            .provenance_page(after, limit)?
            .into_iter()
            .map(|(item, provenance)| GitLine::Provenance { item, provenance })
            .collect())
    }

    /// The git tables (each branch's head and paths, the merge records) as export lines.
    pub fn git_tables(&self) -> crate::Result<Vec<GitLine>> {
        let tables = self.service.whole_store("exporting the memory")?.git_tables()?;
        Ok(GitLine::of_tables(tables).collect())
    }

    /// Writes what the git lines of a file held: the items' provenance (an item the store
    /// does not hold is left out), then the tables (rows, heads and merges already here are
    /// left alone). How many provenance rows were written.
    pub fn import_git(&self, import: GitImport) -> crate::Result<u64> {
        let store = self.service.whole_store("importing a memory")?;
        let context = self.service.write_context("cortex import");
        let mut written = 0;
        for chunk in import.provenance.chunks(500) {
            let ops: Vec<WriteOp> = chunk
                .iter()
                .map(|(id, p)| WriteOp::Provenance { id: *id, provenance: Box::new(p.clone()) })
                .collect();
            written += store
                .write_batch_as(&ops, &context)?
                .iter()
                .filter(|o| matches!(o, WriteOutcome::Updated { .. }))
                .count() as u64;
        }
        store.import_git_tables(&import.tables, &context)?;
        Ok(written)
    }

    /// How many of `ids` the store holds (deleted or not).
    pub fn count_present(&self, ids: &[Uuid]) -> crate::Result<u64> {
        Ok(self.service.whole_store("importing a memory")?.get(ids)?.len() as u64)
    }
}
