//! Semantic memory: the embedder (loaded on first need) and the in-process vector index,
//! kept current with the store.
//!
//! Freshness across processes: every find asks the store's change counter, which moves when
//! any connection commits. When it moved, the rows updated since the last load are read and
//! upserted or removed. A first load reads every vector once.

use cortex_embed::{
    EmbedError, Embedder, LocalModel, MINILM_DIMENSION, MINILM_ID, OpenAiConfig, OpenAiEmbedder,
};
use cortex_store::{Filters, ItemFacts, Result as StoreResult, Store, VectorRow};
use cortex_vector::{Scored, VectorIndex};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

/// Which embedder the service uses, chosen by `CORTEX_EMBEDDER` (`local`, the default,
/// `openai`, or `none`).
#[derive(Debug, Clone)]
pub enum EmbedderChoice {
    Local { model_dir: PathBuf },
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

/// What the dense route filters on, per indexed item: the store's facts about it.
pub type EntryMeta = ItemFacts;

struct IndexState {
    index: VectorIndex<EntryMeta>,
    /// Rows updated at or after this instant have not been read yet.
    watermark: i64,
    counter: Option<i64>,
}

pub struct Semantic {
    choice: EmbedderChoice,
    embedder: OnceLock<Result<Arc<Embedder>, String>>,
    state: Mutex<IndexState>,
    query_cache: Mutex<std::collections::HashMap<String, Vec<f32>>>,
}

/// Query embeddings kept; the cache is simply emptied when full.
const QUERY_CACHE_SIZE: usize = 512;

/// How far back each refresh re-reads, in milliseconds.
const REREAD_MARGIN_MS: i64 = 10_000;

/// Store metadata key recording the model the vectors came from.
pub(crate) const MODEL_KEY: &str = "embedding_model";

impl Semantic {
    pub fn new(choice: EmbedderChoice) -> Semantic {
        Semantic {
            choice,
            embedder: OnceLock::new(),
            state: Mutex::new(IndexState {
                index: VectorIndex::new(MINILM_DIMENSION),
                watermark: 0,
                counter: None,
            }),
            query_cache: Mutex::new(std::collections::HashMap::new()),
        }
    }

    /// The embedder, loading it on first call; `Err` says why semantic search is unavailable.
    pub fn embedder(&self) -> Result<Arc<Embedder>, String> {
        self.embedder
            .get_or_init(|| match &self.choice {
                EmbedderChoice::None => {
                    Err("the embedder is `none` (CORTEX_EMBEDDER=none): set CORTEX_EMBEDDER=local and install the model to enable semantic search".to_string())
                }
                EmbedderChoice::Local { model_dir } => {
                    let started = std::time::Instant::now();
                    let model = LocalModel::load(model_dir).map_err(|e: EmbedError| e.to_string())?;
                    tracing::info!(ms = started.elapsed().as_millis() as u64, "embedding model loaded");
                    Ok(Arc::new(Embedder::Local(Box::new(model))))
                }
                EmbedderChoice::OpenAi(config) => {
                    Ok(Arc::new(Embedder::OpenAi(Box::new(OpenAiEmbedder::new(config.clone())))))
                }
            })
            .clone()
    }

    /// Vectors for texts about to be stored, or `None` (with the reason logged) when the
    /// embedder is unavailable or the store's vectors came from another model. Storing never
    /// fails for want of vectors: the item stays findable lexically.
    pub fn embed_for_store(&self, store: &dyn Store, texts: &[&str]) -> Option<Vec<Vec<f32>>> {
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
        match store.meta(MODEL_KEY) {
            Ok(Some(recorded)) if recorded != model => {
                tracing::warn!(%recorded, %model, "this store holds vectors of another model (run `cortex reindex`); storing without vectors");
                None
            }
            Ok(Some(_)) => Some(vectors),
            Ok(None) => match store.set_meta(MODEL_KEY, &model) {
                Ok(()) => Some(vectors),
                Err(e) => {
                    tracing::warn!("cannot record the embedding model: {e}");
                    None
                }
            },
            Err(e) => {
                tracing::warn!("cannot read the embedding model of the store: {e}");
                None
            }
        }
    }

    /// Why the configured embedder cannot serve this store, if it cannot: its vectors came
    /// from another model.
    pub fn conflict(&self, store: &dyn Store) -> StoreResult<Option<String>> {
        let Some(configured) = self.choice.model_id() else { return Ok(None) };
        let Some(recorded) = store.meta(MODEL_KEY)? else { return Ok(None) };
        let recorded_model = recorded.rsplit_once(':').map_or(recorded.as_str(), |(model, _)| model);
        if recorded_model == configured {
            return Ok(None);
        }
        Ok(Some(format!(
            "this memory's vectors come from {recorded}, but the configured embedder is {configured}: \
             run `cortex reindex` to embed every item again with {configured}, or configure the \
             embedder that made them (CORTEX_EMBEDDER, CORTEX_OPENAI_MODEL)"
        )))
    }

    /// The configured choice.
    pub fn choice(&self) -> &EmbedderChoice {
        &self.choice
    }

    /// The embedding of a query, from a small cache: agents repeat queries within a session.
    pub fn embed_query(&self, text: &str) -> Result<Vec<f32>, String> {
        let mut cache = self.query_cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = cache.get(text) {
            return Ok(v.clone());
        }
        let embedder = self.embedder()?;
        let vector = embedder.embed(&[text]).map_err(|e| e.to_string())?.pop().ok_or("no vector")?;
        if cache.len() >= QUERY_CACHE_SIZE {
            cache.clear();
        }
        cache.insert(text.to_string(), vector.clone());
        Ok(vector)
    }

    pub fn forget_query_embeddings(&self) {
        self.query_cache.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// The `k` nearest live items to `query` that pass `filters`: searched by the database
    /// when it can (PostgreSQL's HNSW index), else by the in-process index, brought up to date
    /// first.
    pub fn nearest(
        &self,
        store: &dyn Store,
        query: &[f32],
        k: usize,
        filters: &Filters,
    ) -> StoreResult<Vec<Scored<EntryMeta>>> {
        if let Some(found) = store.search_dense(query, filters, k)? {
            return Ok(found
                .into_iter()
                .map(|m| Scored { id: m.id, score: m.score, meta: m.facts })
                .collect());
        }
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        refresh(&mut state, store)?;
        Ok(state.index.search(query, k, |facts| filters.admits(facts)))
    }

    /// Entries in the index (after a refresh), for `stats` and `doctor`.
    pub fn indexed(&self, store: &dyn Store) -> StoreResult<(usize, usize)> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        refresh(&mut state, store)?;
        Ok((state.index.len(), state.index.vector_bytes()))
    }
}

fn refresh(state: &mut IndexState, store: &dyn Store) -> StoreResult<()> {
    let counter = store.change_counter()?;
    if state.counter == Some(counter) {
        return Ok(());
    }
    // Read the counter before the rows: a write landing in between is read again next time.
    // The margin re-reads recent rows, so a write committed late with an earlier timestamp
    // (another process, a coarse clock) is not skipped; upserts make re-reading harmless.
    let rows = store.vectors_changed_since(state.watermark.saturating_sub(REREAD_MARGIN_MS))?;
    for row in rows {
        state.watermark = state.watermark.max(row.facts.updated_at);
        apply(&mut state.index, row);
    }
    state.counter = Some(counter);
    Ok(())
}

fn apply(index: &mut VectorIndex<EntryMeta>, row: VectorRow) {
    match row.vector {
        Some(vector) if !row.deleted => {
            // The index takes the dimension of the store's model, whichever it is.
            if index.is_empty() && vector.len() != index.dimension() {
                *index = VectorIndex::new(vector.len());
            }
            index.upsert(row.id, &vector, row.facts);
        }
        _ => index.remove(row.id),
    }
}
