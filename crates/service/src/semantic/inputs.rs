//! What is embedded for an item: its whole text and, for a long document, each chunk.
//! Store time (`memory_store`) and `cortex reindex` both use it, so they embed the same texts.

use super::Span;
use cortex_domain::chunking;
use cortex_embed::{EmbedError, Embedder};
use cortex_store::{ChunkVector, ItemVectors, Record};

/// The vectors of `records` (whole text and chunks), in one call of the embedder.
pub(crate) fn vectors_for(embedder: &Embedder, records: &[&Record]) -> Result<Vec<ItemVectors>, EmbedError> {
    let inputs: Vec<EmbeddingInputs> = records.iter().map(|r| EmbeddingInputs::of(r)).collect();
    let refs: Vec<&str> = inputs.iter().flat_map(EmbeddingInputs::texts).collect();
    let mut vectors = embedder.embed(&refs)?.into_iter();
    Ok(records
        .iter()
        .zip(&inputs)
        .filter_map(|(record, input)| {
            let (vector, chunks) = input.take(&mut vectors);
            Some(ItemVectors { id: record.id, vector: vector?, chunks })
        })
        .collect())
}

/// What is embedded for a record: its whole text, then each chunk of a long document.
pub struct EmbeddingInputs {
    pub whole: String,
    pub chunks: Vec<(Span, String)>,
}

impl EmbeddingInputs {
    /// Title, then the searchable body; plus, for a long document of a chunked kind, each
    /// chunk of the text a find returns (the content, or the body without one).
    pub fn of(record: &Record) -> EmbeddingInputs {
        let whole = format!("{}\n{}", record.title, record.body);
        let text = record.text();
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
