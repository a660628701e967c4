//! The in-process vector index, for a store that does not search vectors itself (SQLite):
//! one entry per item's whole text and per chunk, kept current with the store.
//!
//! Freshness across processes: every find asks the store's change counter, which moves when
//! any connection commits. When it moved, the rows updated since the last load are read and
//! upserted or removed. A first load reads every vector once.

use super::Span;
use super::entry_facts::{CompactFacts, FactTable};
use super::nearest::Nearest;
use cortex_embed::MINILM_DIMENSION;
use cortex_store::{Filters, Result as StoreResult, Store, VectorRow};
use cortex_vector::VectorIndex;
use std::collections::HashMap;
use uuid::Uuid;

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

/// How far back each refresh re-reads, in milliseconds.
const REREAD_MARGIN_MS: i64 = 10_000;

/// The index and what keeps it current.
pub struct IndexState {
    index: VectorIndex<EntryMeta, EntryKey>,
    /// The chunks each item has in the index, to remove them with it.
    chunks: HashMap<Uuid, Vec<Span>>,
    /// The distinct values entries' facts refer to.
    facts: FactTable,
    /// Rows updated at or after this instant have not been read yet.
    watermark: i64,
    counter: Option<i64>,
}

impl IndexState {
    pub fn new() -> IndexState {
        IndexState {
            index: VectorIndex::new(MINILM_DIMENSION),
            chunks: HashMap::new(),
            facts: FactTable::default(),
            watermark: 0,
            counter: None,
        }
    }

    /// Entries and the bytes their vectors take.
    pub fn size(&self) -> (usize, usize) {
        (self.index.len(), self.index.vector_bytes())
    }

    /// Whether any item has chunk entries.
    pub fn has_chunks(&self) -> bool {
        !self.chunks.is_empty()
    }

    /// The `n` nearest entries that pass `filters` (whole texts only, with `whole_only`), best
    /// first, with approximate similarities.
    pub fn nearest(
        &self,
        query: &[f32],
        n: usize,
        filters: &Filters,
        whole_only: bool,
    ) -> Result<Vec<Nearest>, cortex_vector::ScanError> {
        let filter = self.facts.compile(filters);
        let found =
            self.index.search(query, n, |m| !(whole_only && m.is_chunk) && filter.admits(&m.facts))?;
        Ok(found
            .into_iter()
            .map(|s| (s.id.item, s.score, s.id.chunk, self.facts.expand(&s.meta.facts)))
            .collect())
    }

    /// Reads what changed in the store since the last refresh, if anything did.
    pub fn refresh(&mut self, store: &dyn Store) -> StoreResult<()> {
        let counter = store.change_counter()?;
        if self.counter == Some(counter) {
            return Ok(());
        }
        // Read the counter before the rows: a write landing in between is read again next time.
        // The margin re-reads recent rows, so a write committed late with an earlier timestamp
        // (another process, a coarse clock) is not skipped; upserts make re-reading harmless.
        let rows = store.vectors_changed_since(self.watermark.saturating_sub(REREAD_MARGIN_MS))?;
        for row in rows {
            self.watermark = self.watermark.max(row.facts.updated_at);
            self.apply(row);
        }
        self.counter = Some(counter);
        Ok(())
    }

    /// Brings one item's entries in line with the store: its former ones go, its current ones
    /// (unless it is deleted) come in.
    fn apply(&mut self, row: VectorRow) {
        let index = &mut self.index;
        index.remove(EntryKey { item: row.id, chunk: None });
        for span in self.chunks.remove(&row.id).unwrap_or_default() {
            index.remove(EntryKey { item: row.id, chunk: Some(span) });
        }
        let Some(vector) = row.vector.filter(|_| !row.deleted) else { return };
        // The index takes the dimension of the store's model, whichever it is.
        if index.is_empty() && vector.len() != index.dimension() {
            *index = VectorIndex::new(vector.len());
        }
        let facts = self.facts.compact(&row.facts);
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
            self.chunks.insert(row.id, spans);
        }
    }
}
