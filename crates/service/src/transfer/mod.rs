//! `cortex export` / `cortex import`: a whole memory as JSON Lines, to move it between backends
//! (SQLite ⇄ PostgreSQL) or machines, keeping ids, timestamps, scopes, deletions and vectors.
//! The file format lives in [`format`]; the CLI reads and writes the file around these methods.
//! Import verifies at the end that every item of the file is in the target store.

pub mod file_error;
pub mod format;
pub mod git_lines;

pub use file_error::{FileError, VectorProblem};
pub use format::{
    ChunkLine, FORMAT_VERSION, Header, ItemLine, Line, Trailer, TrailerCounts, check_lines, encode_line,
    parse_line,
};
pub use git_lines::{GitImport, GitLine};

use crate::MemoryService;
use crate::semantic::MODEL_KEY;
use cortex_store::{WriteOp, WriteOutcome};
use serde::Serialize;
use uuid::Uuid;

/// Export and import as one caller is served (see the module doc); made by
/// [`MemoryService::transfer`].
pub struct Transfer<'a> {
    pub(crate) service: &'a MemoryService,
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
    pub fn accept_embedding_model(&self, model: Option<&str>) -> crate::Result<Result<(), FileError>> {
        let store = self.service.whole_store("importing a memory")?;
        let Some(model) = model else { return Ok(Ok(())) };
        match store.meta(MODEL_KEY)? {
            Some(here) if here != model => {
                Ok(Err(FileError::OtherModel { file: model.to_string(), store: here }))
            }
            Some(_) => Ok(Ok(())),
            None => {
                store.set_meta(MODEL_KEY, model)?;
                Ok(Ok(()))
            }
        }
    }

    /// Writes one batch of imported items in one transaction; returns (imported, already present).
    pub fn import_batch(&self, items: Vec<ItemLine>) -> crate::Result<(u64, u64)> {
        let ops: Vec<WriteOp> = items.into_iter().map(ItemLine::into_op).collect();
        let mut imported = 0;
        let mut present = 0;
        let context = self.service.write_context("cortex import");
        for outcome in self.service.whole_store("importing a memory")?.write_batch_as(&ops, &context)? {
            match outcome {
                WriteOutcome::Inserted { .. } => imported += 1,
                _ => present += 1,
            }
        }
        Ok((imported, present))
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
