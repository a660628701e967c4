//! The in-process vector index, for a store that does not search vectors itself (SQLite):
//! one entry per item's whole text and per chunk, kept current with the store.
//!
//! Freshness across processes: every find asks the store's change counter, which moves when
//! any connection commits. When it moved, the store's change log (written by the database on
//! every change of an item or its vectors, whoever makes it: an import keeping old timestamps,
//! a re-embedding, a purge) names the items changed since the last read; their current rows
//! are read and upserted, or removed when they are gone. A first load, or a reader that fell
//! behind what the log keeps, reads every vector.

use super::Span;
use super::entry_facts::{CompactFacts, FactTable};
use super::nearest::Nearest;
use cortex_embed::MINILM_DIMENSION;
use cortex_store::{ChangeCursor, ChangeFeed, Filters, Result as StoreResult, VectorRow};
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

/// Change-log entries read per page.
const CHANGES_PAGE: usize = 10_000;

/// The index and what keeps it current.
pub struct IndexState {
    index: VectorIndex<EntryMeta, EntryKey>,
    /// The chunks each item has in the index, to remove them with it.
    chunks: HashMap<Uuid, Vec<Span>>,
    /// The distinct values entries' facts refer to.
    facts: FactTable,
    /// Where the next read of the change log starts; `None` before the first load.
    cursor: Option<ChangeCursor>,
    counter: Option<i64>,
}

impl IndexState {
    pub fn new() -> IndexState {
        IndexState {
            index: VectorIndex::new(MINILM_DIMENSION),
            chunks: HashMap::new(),
            facts: FactTable::default(),
            cursor: None,
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
    pub fn refresh(&mut self, store: &dyn ChangeFeed) -> StoreResult<()> {
        // Read the counter before the log: a write landing in between is read next time.
        let counter = store.change_counter()?;
        if self.counter == Some(counter) {
            return Ok(());
        }
        match self.cursor {
            None => self.reload(store)?,
            Some(mut cursor) => loop {
                let changes = store.changes_since(cursor, CHANGES_PAGE)?;
                if changes.behind {
                    self.reload(store)?;
                    break;
                }
                for id in &changes.items {
                    self.remove(*id);
                }
                for row in store.vector_rows(Some(&changes.items))? {
                    self.apply(row);
                }
                let moved = changes.next != cursor;
                cursor = changes.next;
                self.cursor = Some(cursor);
                if changes.complete {
                    break;
                }
                if !moved {
                    // A full page that cannot move the cursor (a long-running transaction
                    // holds it back): reading everything is the way past it.
                    self.reload(store)?;
                    break;
                }
            },
        }
        self.counter = Some(counter);
        Ok(())
    }

    /// Empties the index and reads every vector; the change log is read from where it stood
    /// before, so a change made during the load is read again, not lost.
    fn reload(&mut self, store: &dyn ChangeFeed) -> StoreResult<()> {
        let head = store.change_head()?;
        let rows = store.vector_rows(None)?;
        *self = IndexState::new();
        for row in rows {
            self.apply(row);
        }
        self.cursor = Some(head);
        Ok(())
    }

    /// Removes an item's entries (its whole text and its chunks).
    fn remove(&mut self, item: Uuid) {
        self.index.remove(EntryKey { item, chunk: None });
        for span in self.chunks.remove(&item).unwrap_or_default() {
            self.index.remove(EntryKey { item, chunk: Some(span) });
        }
    }

    /// Brings one item's entries in line with the store: its former ones go, its current ones
    /// (unless it is deleted) come in.
    fn apply(&mut self, row: VectorRow) {
        self.remove(row.id);
        let index = &mut self.index;
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
