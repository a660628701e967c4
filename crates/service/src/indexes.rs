//! The derived indexes' lifecycles (the indexes themselves are `crate::lexical_index` and
//! `crate::semantic`): brought up to date and backfilled in the background when `serve`
//! starts, the embedder checked against the store's vectors before a command stores or finds,
//! their state for `/ready` and `/metrics`, and built again.
//!
//! `cortex reindex`: every live item embedded again with the configured embedder, then the
//! store records that model, so a memory can move to another embedder (a different local
//! model, an OpenAI-compatible server) without losing its dense search.
//!
//! Items stay findable lexically throughout; the store keeps recording the old model until
//! the last page is written, so an interrupted reindex is simply run again. A running server's
//! in-process index reads the rewritten vectors through the store's change log. `cortex reindex
//! --lexical` builds the lexical index again from every item.

use crate::semantic::{MODEL_KEY, vectors_for};
use crate::{EmbedderError, MemoryService, Result, ServiceError};
use serde::Serialize;
use uuid::Uuid;

/// The derived indexes as one caller is served (see the module doc); made by
/// [`MemoryService::indexes`].
pub struct Indexes<'a> {
    pub(crate) service: &'a MemoryService,
}

/// Items embedded per store round trip.
const PAGE: usize = 128;

#[derive(Debug, Serialize)]
pub struct ReindexReport {
    /// The model now recorded, as `model:dimension`.
    pub model: String,
    pub items: usize,
    pub seconds: f64,
}

/// What `cortex reindex --lexical` did.
#[derive(Debug, Serialize)]
pub struct LexicalReindexReport {
    /// Where the index lives (a folder, or `memory`).
    pub index: String,
    /// Live items indexed.
    pub items: u64,
    /// The index's size on disk (0 in memory).
    pub bytes: u64,
    pub seconds: f64,
}

impl Indexes<'_> {
    /// Brings the lexical index up to date in the background (`serve` at start).
    pub fn prepare_lexical(&self) {
        self.service.shared.lexical.prepare_in_background();
    }

    /// Embeds the items stored without vectors in the background (`serve` at start).
    pub fn embed_missing_in_background(&self) {
        self.service.shared.semantic.embed_missing_in_background();
    }

    /// The embedder's state (`none`, `not_loaded`, `ready`, `unavailable`) and a detail, without
    /// loading it.
    pub fn embedder_state(&self) -> (&'static str, String) {
        self.service.shared.semantic.embedder_state()
    }

    /// Vectors in the in-process index as it is now (0 before the first dense search, and on
    /// PostgreSQL, which searches its own index).
    pub fn vectors_in_process(&self) -> usize {
        self.service.shared.semantic.indexed_now()
    }

    /// Builds the lexical index again from every item of the store, reporting items read and
    /// their total as it goes. Without an index (`CORTEX_LEXICAL_INDEX=off`), says so.
    pub fn reindex_lexical(&self, progress: cortex_lexical::Progress<'_>) -> Result<LexicalReindexReport> {
        let started = std::time::Instant::now();
        let (index, items, bytes) = self.service.shared.lexical.rebuild(progress)?;
        Ok(LexicalReindexReport { index, items, bytes, seconds: started.elapsed().as_secs_f64() })
    }

    /// Fails with what to do when the configured embedder cannot serve this store; commands
    /// that store or find call it before starting.
    pub fn ensure_embedder_fits(&self) -> Result<()> {
        match self.service.shared.semantic.conflict()? {
            Some(conflict) => Err(ServiceError::Embedder(conflict)),
            None => Ok(()),
        }
    }

    /// Embeds every live item again; `progress(done, total)` after each page.
    pub fn reindex_vectors(&self, mut progress: impl FnMut(usize, usize)) -> Result<ReindexReport> {
        let store = self.service.whole_store("embedding every item again")?;
        let started = std::time::Instant::now();
        let embedder = self.service.shared.semantic.embedder()?;
        let model_id = embedder.model_id().ok_or(EmbedderError::Off)?;
        let total = store.stats()?.items as usize;
        let mut done = 0;
        let mut dimension = None;
        let mut after: Option<Uuid> = None;
        loop {
            let page = store.export_page(after, PAGE)?;
            let Some(last) = page.last() else { break };
            after = Some(last.item.record.id);
            // The same texts as at store time (`memory_store`).
            let live: Vec<_> =
                page.iter().filter(|e| e.item.deleted_at.is_none()).map(|e| &e.item.record).collect();
            let rows = vectors_for(&embedder, &live).map_err(EmbedderError::from)?;
            dimension = dimension.or_else(|| rows.first().map(|r| r.vector.len()));
            store.set_vectors(&rows)?;
            done += rows.len();
            progress(done, total);
        }
        let dimension = match dimension {
            Some(d) => d,
            None => embedder.dimension().map_err(EmbedderError::from)?,
        };
        let model = format!("{model_id}:{dimension}");
        store.set_meta(MODEL_KEY, &model)?;
        Ok(ReindexReport { model, items: done, seconds: started.elapsed().as_secs_f64() })
    }
}
