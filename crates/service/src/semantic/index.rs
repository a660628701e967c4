//! The in-process vector index, for a store that does not search vectors itself (SQLite):
//! one entry per item's whole text and per chunk, kept current with the store.
//!
//! Where the entries live: the index file (`vector_file`), mapped, holds every entry as it was
//! when written; the items changed since are masked in it and held in memory. Without a file
//! place (`CORTEX_LEXICAL_INDEX=memory` or `off`), or when it cannot be written, everything is
//! held in memory.
//!
//! Freshness across processes: every find asks the store's change counter, which moves when
//! any connection commits. When it moved, the store's change log (written by the database on
//! every change of an item or its vectors, whoever makes it: an import keeping old timestamps,
//! a re-embedding, a purge) names the items changed since the last read; their current rows
//! are read and upserted, or removed when they are gone. A first load, or a reader that fell
//! behind what the log keeps, reads every vector (and writes the file again).

use super::Span;
use super::entry_facts::{CompactFacts, FactTable};
use super::nearest::Nearest;
use super::vector_file::{self, NewEntry, VectorFile};
use cortex_embed::MINILM_DIMENSION;
use cortex_store::{ChangeCursor, Filters, Result as StoreResult, Store, VectorRow};
use cortex_vector::VectorIndex;
use std::collections::HashMap;
use std::path::PathBuf;
use uuid::Uuid;

/// An entry of the in-process index: an item's whole text, or one chunk of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
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

/// Entries held in memory beside the file from which it is written again: reading what
/// changed since the file from the log and the database costs every fresh process, writing
/// the file again costs once.
const FOLD_AT: usize = 2_000;

/// The index and what keeps it current.
pub struct IndexState {
    /// Where the index file lives; `None`: everything in memory.
    place: Option<PathBuf>,
    /// The file, mapped, with the entries of items changed since masked.
    file: Option<VectorFile>,
    /// Entries of items changed since the file was written (every entry, without a file).
    index: VectorIndex<EntryMeta, EntryKey>,
    /// The chunks each item has in `index`, to remove them with it.
    chunks: HashMap<Uuid, Vec<Span>>,
    /// The distinct values `index`'s entries' facts refer to.
    facts: FactTable,
    /// Where the next read of the change log starts; `None` before the first load.
    cursor: Option<ChangeCursor>,
    counter: Option<i64>,
}

impl IndexState {
    /// An empty index, kept in the file at `place` when given.
    pub fn new(place: Option<PathBuf>) -> IndexState {
        IndexState {
            place,
            file: None,
            index: VectorIndex::new(MINILM_DIMENSION),
            chunks: HashMap::new(),
            facts: FactTable::default(),
            cursor: None,
            counter: None,
        }
    }

    /// Entries and the bytes their vectors take (in memory or mapped).
    pub fn size(&self) -> (usize, usize) {
        let mapped = self.file.as_ref().map_or((0, 0), |f| (f.len(), f.len() * (f.dimension() + 4)));
        (self.index.len() + mapped.0, self.index.vector_bytes() + mapped.1)
    }

    /// Whether any item has chunk entries.
    pub fn has_chunks(&self) -> bool {
        !self.chunks.is_empty() || self.file.as_ref().is_some_and(VectorFile::has_chunks)
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
        let found = self
            .index
            .search(query, n, |m| !(whole_only && m.is_chunk) && filter.admits(&m.facts.fields()))?;
        let mut all: Vec<Nearest> = found
            .into_iter()
            .map(|s| (s.id.item, s.score, s.id.chunk, self.facts.expand(&s.meta.facts.fields())))
            .collect();
        if let Some(file) = &self.file {
            all.extend(file.nearest(query, n, filters, whole_only)?);
            all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            all.truncate(n);
        }
        Ok(all)
    }

    /// Reads what changed in the store since the last refresh, if anything did.
    pub fn refresh(&mut self, store: &dyn Store) -> StoreResult<()> {
        // Read the counter before the log: a write landing in between is read next time.
        let counter = store.change_counter()?;
        if self.counter == Some(counter) {
            return Ok(());
        }
        if self.cursor.is_none() {
            self.start(store)?;
        }
        while let Some(mut cursor) = self.cursor {
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
        }
        self.counter = Some(counter);
        if self.place.is_some() && self.index.len() >= FOLD_AT {
            self.write_file(store);
        }
        Ok(())
    }

    /// The first load: the file when it is whole and of this store (then the log from its
    /// cursor), else every vector from the store.
    fn start(&mut self, store: &dyn Store) -> StoreResult<()> {
        if let Some(place) = &self.place
            && place.exists()
        {
            match VectorFile::open(place, &cortex_store::identity(store)?) {
                Ok((file, cursor)) => {
                    self.file = Some(file);
                    self.cursor = Some(cursor);
                    return Ok(());
                }
                Err(e) => tracing::info!("{e}"),
            }
        }
        self.reload(store)
    }

    /// Empties the index and reads every vector; the change log is read from where it stood
    /// before, so a change made during the load is read again, not lost. The file is written
    /// again from what was read.
    fn reload(&mut self, store: &dyn Store) -> StoreResult<()> {
        let head = store.change_head()?;
        let rows = store.vector_rows(None)?;
        *self = IndexState::new(self.place.take());
        for row in rows {
            self.apply(row);
        }
        self.cursor = Some(head);
        if self.place.is_some() {
            self.write_file(store);
        }
        Ok(())
    }

    /// Writes the file from what the index holds (the file's entries that still count and
    /// those in memory) and maps it, emptying the memory. On failure everything stays as it
    /// was, in memory, and the log says why.
    fn write_file(&mut self, store: &dyn Store) {
        let (Some(place), Some(cursor)) = (self.place.clone(), self.cursor) else { return };
        let written = cortex_store::identity(store).map_err(|e| e.to_string()).and_then(|id| {
            self.write_to(&place, &id, cursor).map_err(|e| e.to_string())?;
            VectorFile::open(&place, &id).map_err(|e| e.to_string())
        });
        match written {
            Ok((file, _)) => {
                tracing::debug!(entries = file.len(), path = %place.display(), "vector index file written");
                let dimension = self.index.dimension();
                self.file = Some(file);
                self.index = VectorIndex::new(dimension);
                self.chunks.clear();
                self.facts = FactTable::default();
            }
            Err(e) => tracing::warn!("the vector index stays in memory: {e}"),
        }
    }

    /// `Err` is a message to log, never matched on: writing the file fails in the file layer,
    /// in encoding or in the disk, and the index then stays in memory whichever it was.
    fn write_to(&self, place: &std::path::Path, store: &str, cursor: ChangeCursor) -> Result<usize, String> {
        // One table for the new file: both sources' facts, interned again.
        let mut table = FactTable::default();
        let mut keyed: Vec<(EntryKey, Source, CompactFacts)> = Vec::new();
        if let Some(file) = &self.file {
            for i in 0..file.total() {
                if file.is_masked(i) {
                    continue;
                }
                let e = file.entry(i);
                let compact = table.compact(&file.facts().expand(&e.fields));
                keyed.push((EntryKey { item: e.item, chunk: e.chunk }, Source::File(i), compact));
            }
        }
        for (i, (key, meta)) in self.index.entries().enumerate() {
            let compact = table.compact(&self.facts.expand(&meta.facts.fields()));
            keyed.push((*key, Source::Memory(i), compact));
        }
        keyed.sort_by_key(|(key, _, _)| *key);
        let dimension = match &self.file {
            Some(file) if self.index.is_empty() => file.dimension(),
            _ => self.index.dimension(),
        };
        let slab = self.index.slab();
        let entries = keyed.iter().map(|(key, source, compact)| {
            let (values, scale) = match source {
                Source::File(i) => self.file.as_ref().map_or((&[][..], 0.0), |f| f.vector(*i)),
                Source::Memory(i) => slab.entry(*i),
            };
            NewEntry { item: key.item, chunk: key.chunk, values, scale, fields: compact.fields() }
        });
        vector_file::write(place, store, cursor, dimension, &table, entries).map_err(|e| e.to_string())
    }

    /// Removes an item's entries (its whole text and its chunks).
    fn remove(&mut self, item: Uuid) {
        if let Some(file) = &mut self.file {
            file.mask(item);
        }
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

/// Where an entry written to a new file comes from.
enum Source {
    File(usize),
    Memory(usize),
}
