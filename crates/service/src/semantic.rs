//! Semantic memory: the embedder (loaded on first need) and the in-process vector index,
//! kept current with the store.
//!
//! Freshness across processes: every find asks the store's change counter, which moves when
//! any connection commits. When it moved, the rows updated since the last load are read and
//! upserted or removed. A first load reads every vector once.
//!
//! Long documents (`cortex_domain::chunking`) have a vector per chunk besides their own: the
//! dense route searches both and groups what it finds by item, so one document is one hit
//! however many of its chunks match.

use crate::entry_facts::{CompactFacts, FactTable};
use cortex_domain::chunking;
use cortex_embed::{
    EmbedError, Embedder, LocalModel, MINILM_DIMENSION, MINILM_ID, OpenAiConfig, OpenAiEmbedder,
};
use cortex_store::{
    ChunkVector, Filters, ItemFacts, ItemVectors, Record, Result as StoreResult, Store, VectorRow,
};
use cortex_vector::VectorIndex;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use uuid::Uuid;

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

/// A byte range of an item's text.
pub type Span = (u32, u32);

/// An entry of the in-process index: an item's whole text, or one chunk of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct EntryKey {
    item: Uuid,
    chunk: Option<Span>,
}

/// What the dense route filters on, per entry: the store's facts about the item, compact.
#[derive(Debug, Clone)]
struct EntryMeta {
    facts: CompactFacts,
    is_chunk: bool,
}

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

/// What is embedded for a record: its whole text, then each chunk of a long document.
pub(crate) struct EmbeddingInputs {
    pub whole: String,
    pub chunks: Vec<(Span, String)>,
}

impl EmbeddingInputs {
    /// Title, then the searchable body; plus, for a long document of a chunked kind, each
    /// chunk of the text a find returns (the content, or the body without one).
    pub fn of(record: &Record) -> EmbeddingInputs {
        let whole = format!("{}\n{}", record.title, record.body);
        let text = record.content.as_deref().unwrap_or(&record.body);
        let chunks = if chunking::applies_to(record.kind) {
            chunking::chunk(text)
                .iter()
                .map(|c| ((c.start as u32, c.end as u32), chunking::embedding_input(&record.title, text, c)))
                .collect()
        } else {
            Vec::new()
        };
        EmbeddingInputs { whole, chunks }
    }

    /// Every text, whole first.
    pub fn texts(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.whole.as_str()).chain(self.chunks.iter().map(|(_, t)| t.as_str()))
    }

    /// The record's vector and chunk vectors, taken from `vectors` in the order of `texts`.
    pub fn take(&self, vectors: &mut impl Iterator<Item = Vec<f32>>) -> (Option<Vec<f32>>, Vec<ChunkVector>) {
        let whole = vectors.next();
        let chunks = self
            .chunks
            .iter()
            .filter_map(|((start, end), _)| {
                Some(ChunkVector { start: *start, end: *end, vector: vectors.next()? })
            })
            .collect();
        (whole, chunks)
    }
}

struct IndexState {
    index: VectorIndex<EntryMeta, EntryKey>,
    /// The chunks each item has in the index, to remove them with it.
    chunks: HashMap<Uuid, Vec<Span>>,
    /// The distinct values entries' facts refer to.
    facts: FactTable,
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
                chunks: HashMap::new(),
                facts: FactTable::default(),
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
        let vector = embedder.embed_query(text).map_err(|e| e.to_string())?.ok_or("no vector")?;
        if cache.len() >= QUERY_CACHE_SIZE {
            cache.clear();
        }
        cache.insert(text.to_string(), vector.clone());
        Ok(vector)
    }

    pub fn forget_query_embeddings(&self) {
        self.query_cache.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// The `k` nearest live items to `query` that pass `filters`, best first: searched by the
    /// database when it can (PostgreSQL's HNSW indexes), else by the in-process index, brought
    /// up to date first.
    pub fn nearest(
        &self,
        store: &dyn Store,
        query: &[f32],
        k: usize,
        filters: &Filters,
        compare: Compare,
    ) -> StoreResult<Vec<DenseHit>> {
        let whole_only = compare == Compare::WholeTexts;
        // A database answers its best `k` whole texts and its best `k` chunks.
        if let Some(found) = store.search_dense(query, filters, k)? {
            let found = found.into_iter().filter(|m| !(whole_only && m.chunk.is_some()));
            return Ok(group_by_item(found.map(|m| (m.id, m.score, m.chunk, m.facts)), k));
        }
        let (mut found, fetch) = {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            refresh(&mut state, store)?;
            // Chunks of one item may fill several places: look further, then group.
            let fetch = if whole_only || state.chunks.is_empty() { k } else { 2 * k };
            let filter = state.facts.compile(filters);
            let found = state.index.search(query, fetch + RESCORE_MARGIN, |m| {
                !(whole_only && m.is_chunk) && filter.admits(&m.facts)
            });
            let facts = &state.facts;
            let found: Vec<Nearest> = found
                .into_iter()
                .map(|s| (s.id.item, s.score, s.id.chunk, facts.expand(&s.meta.facts)))
                .collect();
            (found, fetch)
        };
        // The int8 scan chose the candidates; their f32 vectors give the exact similarity
        // (a near-duplicate threshold is a cosine, and fusion weighs these scores).
        let mut ids: Vec<Uuid> = found.iter().map(|n| n.0).collect();
        ids.sort_unstable();
        ids.dedup();
        rescore(&mut found, &store.vectors_of(&ids)?, query);
        found.truncate(fetch);
        Ok(group_by_item(found.into_iter(), k))
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
        apply(state, row);
    }
    state.counter = Some(counter);
    Ok(())
}

/// Brings one item's entries in line with the store: its former ones go, its current ones
/// (unless it is deleted) come in.
fn apply(state: &mut IndexState, row: VectorRow) {
    let index = &mut state.index;
    index.remove(EntryKey { item: row.id, chunk: None });
    for span in state.chunks.remove(&row.id).unwrap_or_default() {
        index.remove(EntryKey { item: row.id, chunk: Some(span) });
    }
    let Some(vector) = row.vector.filter(|_| !row.deleted) else { return };
    // The index takes the dimension of the store's model, whichever it is.
    if index.is_empty() && vector.len() != index.dimension() {
        *index = VectorIndex::new(vector.len());
    }
    let facts = state.facts.compact(&row.facts);
    index.upsert(
        EntryKey { item: row.id, chunk: None },
        &vector,
        EntryMeta { facts: facts.clone(), is_chunk: false },
    );
    let mut spans = Vec::with_capacity(row.chunks.len());
    for c in row.chunks {
        let key = EntryKey { item: row.id, chunk: Some((c.start, c.end)) };
        if index.upsert(key, &c.vector, EntryMeta { facts: facts.clone(), is_chunk: true }) {
            spans.push((c.start, c.end));
        }
    }
    if !spans.is_empty() {
        state.chunks.insert(row.id, spans);
    }
}

/// Candidates the scan ranks beyond those wanted, so that an entry the int8 approximation put
/// just below the cut can move above it once scored exactly.
const RESCORE_MARGIN: usize = 16;

/// One nearest vector: the item, the similarity, the chunk (if a chunk's), the item's facts.
type Nearest = (Uuid, f32, Option<Span>, ItemFacts);

/// Replaces each approximate similarity with the exact one from the item's stored vectors, and
/// sorts best first. An entry whose vectors are gone (deleted since the scan) keeps its score.
fn rescore(found: &mut [Nearest], exact: &[ItemVectors], query: &[f32]) {
    let by_id: HashMap<Uuid, &ItemVectors> = exact.iter().map(|v| (v.id, v)).collect();
    let dot =
        |v: &[f32]| (v.len() == query.len()).then(|| v.iter().zip(query).map(|(a, b)| a * b).sum::<f32>());
    for (id, score, chunk, _) in found.iter_mut() {
        let Some(vectors) = by_id.get(id) else { continue };
        let vector = match chunk {
            None => Some(vectors.vector.as_slice()),
            Some((start, end)) => vectors
                .chunks
                .iter()
                .find(|c| (c.start, c.end) == (*start, *end))
                .map(|c| c.vector.as_slice()),
        };
        if let Some(exact) = vector.and_then(dot) {
            *score = exact;
        }
    }
    found.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
}

/// Nearest vectors (best first) grouped into at most `k` items, each at its best score, with
/// its best chunk and how many of its chunks are among them.
fn group_by_item(
    found: impl Iterator<Item = (Uuid, f32, Option<Span>, ItemFacts)>,
    k: usize,
) -> Vec<DenseHit> {
    let mut hits: Vec<DenseHit> = Vec::new();
    let mut at: HashMap<Uuid, usize> = HashMap::new();
    for (id, score, chunk, facts) in found {
        match at.get(&id) {
            Some(&i) => {
                let hit = &mut hits[i];
                hit.score = hit.score.max(score);
                if chunk.is_some() {
                    hit.chunks_matched += 1;
                    hit.chunk = hit.chunk.or(chunk);
                }
            }
            None => {
                at.insert(id, hits.len());
                hits.push(DenseHit { id, score, facts, chunk, chunks_matched: usize::from(chunk.is_some()) });
            }
        }
    }
    // Scores arrive best first but a backend's relaxed order may differ slightly.
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
    hits.truncate(k);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;
    use cortex_domain::{Kind, Scope};

    fn facts() -> ItemFacts {
        ItemFacts {
            kind: Kind::Runbook,
            scope: Scope::default(),
            updated_at: 0,
            expires_at: None,
            status: None,
            tags: Vec::new(),
            superseded: false,
        }
    }

    #[test]
    fn exact_vectors_replace_approximate_scores_and_reorder() {
        let (a, b, gone) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
        let query = [0.6, 0.8];
        let mut found =
            vec![(a, 0.99, None, facts()), (b, 0.98, Some((10, 20)), facts()), (gone, 0.5, None, facts())];
        let exact = vec![
            ItemVectors { id: a, vector: vec![1.0, 0.0], chunks: Vec::new() },
            ItemVectors {
                id: b,
                vector: vec![0.0, 1.0],
                chunks: vec![ChunkVector { start: 10, end: 20, vector: vec![0.6, 0.8] }],
            },
        ];
        rescore(&mut found, &exact, &query);
        let scores: Vec<(Uuid, f32)> = found.iter().map(|n| (n.0, n.1)).collect();
        assert_eq!(scores, vec![(b, 1.0), (a, 0.6), (gone, 0.5)], "the chunk's own vector scores the chunk");
    }

    #[test]
    fn chunks_of_one_item_make_one_hit_with_its_best_chunk() {
        let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let found = vec![
            (a, 0.9, Some((100, 200)), facts()),
            (b, 0.8, None, facts()),
            (a, 0.7, None, facts()),
            (a, 0.6, Some((0, 100)), facts()),
        ];
        let hits = group_by_item(found.into_iter(), 10);
        assert_eq!(hits.len(), 2);
        assert_eq!(
            (hits[0].id, hits[0].score, hits[0].chunk, hits[0].chunks_matched),
            (a, 0.9, Some((100, 200)), 2)
        );
        assert_eq!((hits[1].id, hits[1].chunk, hits[1].chunks_matched), (b, None, 0));
        assert_eq!(group_by_item(vec![(b, 0.5, None, facts())].into_iter(), 0).len(), 0);
    }
}
