//! Semantic memory: the embedder (loaded on first need) and the dense route — the database's
//! own vector search when it has one (PostgreSQL), else the in-process index (`index`).
//!
//! Long documents (`cortex_domain::chunking`) have a vector per chunk besides their own
//! (`inputs`): the dense route searches both and groups what it finds by item, so one
//! document is one hit however many of its chunks match (`nearest`). The in-process index is
//! kept in a file beside the lexical index (`vector_file`), mapped by every process.

mod backfill;
mod entry_facts;
mod index;
mod inputs;
mod nearest;
mod vector_file;

pub(crate) use inputs::{EmbeddingInputs, vectors_for};

use crate::error::EmbedderError;
use cortex_embed::{Embedder, LocalModel, MINILM_ID, OpenAiConfig, OpenAiEmbedder, Precision};
use cortex_store::{Filters, ItemFacts, Result as StoreResult, Store, TenantStore};
use index::IndexState;
pub(crate) use nearest::best_similarity;
use nearest::{RESCORE_MARGIN, group_by_item, rescore};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};
use uuid::Uuid;

/// Which embedder the service uses, chosen by `CORTEX_EMBEDDER` (`local`, the default,
/// `openai`, or `none`).
#[derive(Debug, Clone)]
pub enum EmbedderChoice {
    Local { model_dir: PathBuf, precision: Precision },
    OpenAi(OpenAiConfig),
    None,
}

impl EmbedderChoice {
    /// The model identity its vectors are recorded under (without the dimension), known
    /// without loading or asking anything.
    pub fn model_id(&self) -> Option<String> {
        match self {
            EmbedderChoice::Local { .. } => Some(MINILM_ID.to_string()),
            EmbedderChoice::OpenAi(config) => Some(format!("openai:{}", config.model)),
            EmbedderChoice::None => None,
        }
    }
}

/// A byte range of an item's text.
pub type Span = (u32, u32);

/// Which vectors a search compares against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compare {
    /// Whole texts and chunks (finding).
    Everything,
    /// Whole texts only (near-duplicates: a short note close to one part of a long document
    /// does not repeat the document).
    WholeTexts,
}

/// One item the dense route found.
#[derive(Debug, Clone)]
pub struct DenseHit {
    pub id: Uuid,
    /// Its best similarity, over its whole text and its chunks.
    pub score: f32,
    pub facts: ItemFacts,
    /// Its best-matching chunk, when any chunk matched.
    pub chunk: Option<Span>,
    /// How many of its chunks were among the nearest vectors.
    pub chunks_matched: usize,
}

pub struct Semantic {
    choice: EmbedderChoice,
    /// The whole store, unbounded: what the in-process index is kept from (its change feed),
    /// where the vectors' model is recorded, and what the background embedding fills in.
    store: Arc<dyn Store>,
    embedder: Mutex<Loaded>,
    /// Set when a local model loads after it had failed to: the items stored meanwhile wait
    /// for the background embedding (`resume_backfill`).
    became_available: AtomicBool,
    state: RwLock<IndexState>,
    query_cache: Mutex<std::collections::HashMap<String, Vec<f32>>>,
    /// Items stored without vectors, embedded in the background (`backfill`).
    backfill: backfill::Backfill,
}

/// The embedder as loaded: `None` before the first need; when it failed to load, when.
#[derive(Default)]
struct Loaded {
    result: Option<Result<Arc<Embedder>, EmbedderError>>,
    tried_at: Option<Instant>,
}

/// How long a local model that failed to load is not tried again: a find checks for it at most
/// this often (a missing model fails in a file check, a present one loads in under a second).
const LOAD_RETRY: Duration = Duration::from_secs(5);

/// Query embeddings kept; the cache is simply emptied when full.
const QUERY_CACHE_SIZE: usize = 512;

/// Store metadata key recording the model the vectors came from.
pub(crate) const MODEL_KEY: &str = "embedding_model";

impl Semantic {
    /// The semantic side of the service over the whole `store`, its in-process index kept in
    /// the file `vector_file` when given (`Config::vector_file`).
    pub fn new(choice: EmbedderChoice, store: Arc<dyn Store>, vector_file: Option<PathBuf>) -> Semantic {
        Semantic {
            choice,
            store,
            embedder: Mutex::new(Loaded::default()),
            became_available: AtomicBool::new(false),
            state: RwLock::new(IndexState::new(vector_file)),
            query_cache: Mutex::new(std::collections::HashMap::new()),
            backfill: backfill::Backfill::default(),
        }
    }

    /// The embedder, loading it on first call; `Err` says why semantic search is unavailable.
    /// A local model that failed to load (not installed yet) is tried again, at most every
    /// [`LOAD_RETRY`], so a model installed while the server runs is picked up.
    pub fn embedder(&self) -> Result<Arc<Embedder>, EmbedderError> {
        let mut loaded = self.embedder.lock().unwrap_or_else(PoisonError::into_inner);
        let retry = matches!(self.choice, EmbedderChoice::Local { .. })
            && loaded.tried_at.is_some_and(|at| at.elapsed() >= LOAD_RETRY);
        match &loaded.result {
            Some(Ok(embedder)) => return Ok(embedder.clone()),
            Some(Err(reason)) if !retry => return Err(reason.clone()),
            _ => {}
        }
        // Loaded under the lock: concurrent first callers wait for the one load.
        let failed_before = loaded.result.is_some();
        let result = self.load();
        if failed_before && result.is_ok() {
            self.became_available.store(true, Ordering::Release);
        }
        *loaded = Loaded { result: Some(result.clone()), tried_at: Some(Instant::now()) };
        result
    }

    fn load(&self) -> Result<Arc<Embedder>, EmbedderError> {
        match &self.choice {
            EmbedderChoice::None => Err(EmbedderError::Off),
            EmbedderChoice::Local { model_dir, precision } => {
                let started = std::time::Instant::now();
                let model = LocalModel::load_with(model_dir, *precision)?;
                tracing::info!(
                    ms = started.elapsed().as_millis() as u64,
                    precision = model.precision().name(),
                    "embedding model loaded"
                );
                Ok(Arc::new(Embedder::Local(Box::new(model))))
            }
            EmbedderChoice::OpenAi(config) => {
                Ok(Arc::new(Embedder::OpenAi(Box::new(OpenAiEmbedder::new(config.clone())))))
            }
        }
    }

    /// The model and the precision its products run at, without loading it: the loaded
    /// model's (`true`), or the configured ones before it loads (`false`).
    pub fn model_and_precision(&self) -> (Option<String>, Option<String>, bool) {
        let loaded = self.embedder.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(Ok(embedder)) = &loaded.result {
            let precision = match embedder.as_ref() {
                Embedder::Local(model) => Some(model.precision().name().to_string()),
                _ => None,
            };
            return (embedder.model_id(), precision, true);
        }
        let precision = match &self.choice {
            EmbedderChoice::Local { precision, .. } => Some(precision.name().to_string()),
            _ => None,
        };
        (self.choice.model_id(), precision, false)
    }

    /// The embedder's state without loading it (a readiness probe must not wait seconds for
    /// a model): `not_loaded` until the first store or find needs it.
    pub fn embedder_state(&self) -> (&'static str, String) {
        let loaded = self.embedder.lock().unwrap_or_else(PoisonError::into_inner);
        match (&self.choice, loaded.result.as_ref()) {
            (EmbedderChoice::None, _) => ("none", "lexical search only (CORTEX_EMBEDDER=none)".to_string()),
            (_, None) => ("not_loaded", "loads on the first store or find that needs it".to_string()),
            (_, Some(Ok(e))) => ("ready", e.model_id().unwrap_or_else(|| "?".into())),
            (_, Some(Err(reason))) => ("unavailable", reason.to_string()),
        }
    }

    /// Vectors for texts about to be stored, or `None` (with the reason logged) when the
    /// embedder is unavailable or the store's vectors came from another model. Storing never
    /// fails for want of vectors: the item stays findable lexically.
    pub fn embed_for_store(&self, texts: &[&str]) -> Option<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return None;
        }
        let embedder = match self.embedder() {
            Ok(e) => e,
            Err(reason) => {
                tracing::debug!("storing without vectors: {reason}");
                return None;
            }
        };
        let vectors = match embedder.embed(texts) {
            Ok(vectors) => vectors,
            Err(e) => {
                tracing::warn!("embedding failed, storing without vectors: {e}");
                return None;
            }
        };
        let model = format!("{}:{}", embedder.model_id()?, vectors.first()?.len());
        model_fits(self.store.as_ref(), &model).then_some(vectors)
    }

    /// Why the configured embedder cannot serve this store, if it cannot: its vectors came
    /// from another model.
    pub fn conflict(&self) -> StoreResult<Option<EmbedderError>> {
        let Some(configured) = self.choice.model_id() else { return Ok(None) };
        let Some(recorded) = self.store.meta(MODEL_KEY)? else { return Ok(None) };
        let recorded_model = recorded.rsplit_once(':').map_or(recorded.as_str(), |(model, _)| model);
        if recorded_model == configured {
            return Ok(None);
        }
        Ok(Some(EmbedderError::OtherModel { recorded, configured: configured.to_string() }))
    }

    /// The configured choice.
    pub fn choice(&self) -> &EmbedderChoice {
        &self.choice
    }

    /// The embedding of a query, from a small cache: agents repeat queries within a session.
    /// The cache is locked only to look up and to insert, never while embedding: a remote
    /// embedder may take up to its timeout, and other finds must not wait behind it. Two finds of one new query may both embed it; the second insert is harmless.
    /// `None` when the embedder makes no vectors (`none`).
    pub fn embed_query(&self, text: &str) -> Result<Option<Vec<f32>>, EmbedderError> {
        if let Some(v) = self.query_cache.lock().unwrap_or_else(|e| e.into_inner()).get(text) {
            return Ok(Some(v.clone()));
        }
        let embedder = self.embedder()?;
        let Some(vector) = embedder.embed_query(text)? else { return Ok(None) };
        let mut cache = self.query_cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= QUERY_CACHE_SIZE {
            cache.clear();
        }
        cache.insert(text.to_string(), vector.clone());
        Ok(Some(vector))
    }

    pub fn forget_query_embeddings(&self) {
        self.query_cache.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// The `k` nearest live items to `query` that pass `filters`, best first: searched by the
    /// database when it can (PostgreSQL's HNSW indexes), else by the in-process index, brought
    /// up to date first. `view` is the store as the caller sees it: the database's search and
    /// the exact vectors are read through it; the index is kept from the whole store.
    pub fn nearest(
        &self,
        view: &dyn TenantStore,
        query: &[f32],
        k: usize,
        filters: &Filters,
        compare: Compare,
    ) -> Result<Vec<DenseHit>, NearestError> {
        let whole_only = compare == Compare::WholeTexts;
        // A database answers its best `k` whole texts and its best `k` chunks.
        if let Some(found) = view.search_dense(query, filters, k)? {
            let found = found.into_iter().filter(|m| !(whole_only && m.chunk.is_some()));
            return Ok(group_by_item(found.map(|m| (m.id, m.score, m.chunk, m.facts)), k));
        }
        // Refreshing takes the index alone, briefly (usually only the change counter is read);
        // scans share it, so concurrent finds scan side by side.
        self.state.write().unwrap_or_else(|e| e.into_inner()).refresh(self.store.as_ref())?;
        let (mut found, fetch) = {
            let state = self.state.read().unwrap_or_else(|e| e.into_inner());
            // Chunks of one item may fill several places: look further, then group.
            let fetch = if whole_only || !state.has_chunks() { k } else { 2 * k };
            (state.nearest(query, fetch + RESCORE_MARGIN, filters, whole_only)?, fetch)
        };
        // The int8 scan chose the candidates; their f32 vectors give the exact similarity
        // (a near-duplicate threshold is a cosine, and fusion weighs these scores).
        let mut ids: Vec<Uuid> = found.iter().map(|n| n.0).collect();
        ids.sort_unstable();
        ids.dedup();
        rescore(&mut found, &view.vectors_of(&ids)?, query);
        found.truncate(fetch);
        Ok(group_by_item(found.into_iter(), k))
    }

    /// How many vectors the in-process index holds now, without bringing it up to date (no
    /// I/O: for metrics read often, like `/metrics`).
    pub fn indexed_now(&self) -> usize {
        self.state.read().unwrap_or_else(|e| e.into_inner()).size().0
    }

    /// Entries in the index (after a refresh), for `stats` and `doctor`.
    pub fn indexed(&self) -> StoreResult<(usize, usize)> {
        let mut state = self.state.write().unwrap_or_else(|e| e.into_inner());
        state.refresh(self.store.as_ref())?;
        Ok(state.size())
    }
}

/// Whether vectors of `model` (`id:dimension`) may be written to `store`: its vectors are of
/// that model, or it has none yet (the model is recorded then). Logged when not.
fn model_fits(store: &dyn Store, model: &str) -> bool {
    match store.meta(MODEL_KEY) {
        Ok(Some(recorded)) if recorded != model => {
            tracing::warn!(%recorded, %model, "this store holds vectors of another model (run `cortex reindex`); storing without vectors");
            false
        }
        Ok(Some(_)) => true,
        Ok(None) => match store.set_meta(MODEL_KEY, model) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!("cannot record the embedding model: {e}");
                false
            }
        },
        Err(e) => {
            tracing::warn!("cannot read the embedding model of the store: {e}");
            false
        }
    }
}

/// Why a dense search has no answer: the store failed, or the in-process scan did.
#[derive(Debug, thiserror::Error)]
pub enum NearestError {
    #[error(transparent)]
    Store(#[from] cortex_store::StoreError),
    #[error(transparent)]
    Scan(#[from] cortex_vector::ScanError),
}
