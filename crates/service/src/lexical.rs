//! The lexical route: the index (`cortex_lexical`) when there is one, brought up to date with
//! the store before each search, else the database's own full-text search. An index that fails
//! (a full disk, a folder it may not write, another process building it for longer than a find
//! can wait) never fails a find: the find asks the database instead, and says so in the log.
//!
//! The index is kept from the whole store, never from a caller's bounded view of it: a key's
//! bound reaches the index as a filter clause (`Filters::bound`), as it reaches the database.

use cortex_lexical::{LexicalIndex, Place};
use cortex_store::{LexicalMatch, LexicalQuery, Store};
use std::sync::Arc;

/// Why there is no index.
const NO_INDEX: &str = "CORTEX_LEXICAL_INDEX=off, or the index could not be opened: see the log";

/// The cores a lexical search may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cores {
    /// As many as the index finds worth it (a long question over a large index, no other
    /// search running).
    Any,
    /// One: the search runs beside other work that uses the rest (`auto`'s dense route).
    One,
}

pub struct Lexical {
    index: Option<Arc<LexicalIndex>>,
    /// The whole store, unbounded: what the index is derived from.
    store: Arc<dyn Store>,
}

impl Lexical {
    /// The route over `store`, with the index at `place` (`None`: the database's search). An
    /// index that cannot be opened is logged and left out.
    pub fn new(store: Arc<dyn Store>, place: Option<&Place>) -> Lexical {
        let index = place.and_then(|place| match LexicalIndex::open(place) {
            Ok(index) => Some(Arc::new(index)),
            Err(e) => {
                tracing::warn!("lexical finds use the database's own search: {e}");
                None
            }
        });
        Lexical { index, store }
    }

    /// The index, brought up to date; `None` when finds must ask the database.
    fn current(&self) -> Option<&LexicalIndex> {
        let index = self.index.as_ref()?;
        match index.catch_up(&self.store) {
            Ok(()) => Some(index),
            Err(cortex_lexical::LexicalError::Building) => None,
            Err(e) => {
                tracing::warn!("this find uses the database's own search: {e}");
                None
            }
        }
    }

    /// Reads a store call's own write into the index, on the writer's time: else the next find
    /// (maybe another tenant's) pays for indexing every write since its last one, and under a
    /// flood of stores that is most of its time. A failure is left to that find, which logs it.
    pub fn after_write(&self) {
        if let Some(index) = &self.index
            && let Err(e) = index.catch_up(&self.store)
        {
            tracing::debug!("the lexical index is left to the next find to bring up to date: {e}");
        }
    }

    /// Brings the index up to date on a thread of its own, so that the first find does not
    /// wait for it (`serve` calls it at start: building a million items takes a minute; finds
    /// meanwhile ask the database).
    pub fn prepare_in_background(self: &Arc<Self>) {
        if self.index.is_none() {
            return;
        }
        let lexical = self.clone();
        let spawned = std::thread::Builder::new().name("lexical-index".into()).spawn(move || {
            if let Some(index) = &lexical.index
                && let Err(e) = index.catch_up(&lexical.store)
            {
                tracing::warn!("the lexical index could not be prepared; finds will try again: {e}");
            }
        });
        if let Err(e) = spawned {
            tracing::warn!("cannot start the lexical index's preparation: {e}");
        }
    }

    /// Whether the index answers lexical searches (else the database does).
    pub fn indexed(&self) -> bool {
        self.index.is_some()
    }

    /// The best matches of `query`; `view` is the store as the caller sees it, asked when
    /// there is no index. `cores` says whether the index may split the search across cores.
    pub fn search(
        &self,
        query: &LexicalQuery,
        view: &dyn Store,
        cores: Cores,
    ) -> cortex_store::Result<Vec<LexicalMatch>> {
        if let Some(index) = self.current() {
            let found = match cores {
                Cores::Any => index.search(query),
                Cores::One => index.search_on_one_core(query),
            };
            match found {
                Ok(found) => return Ok(found),
                Err(e) => tracing::warn!("lexical index search failed, asking the database: {e}"),
            }
        }
        view.search_lexical(query)
    }

    /// How many items match `query` (up to `cap`).
    pub fn count(&self, query: &LexicalQuery, cap: usize, view: &dyn Store) -> cortex_store::Result<usize> {
        if let Some(index) = self.current() {
            match index.count(query, cap) {
                Ok(n) => return Ok(n),
                Err(e) => tracing::warn!("lexical index count failed, asking the database: {e}"),
            }
        }
        view.count_lexical(query, cap)
    }

    /// Builds the index again from the whole store (`cortex reindex --lexical`): where it
    /// lives, the live items indexed, and its size on disk.
    pub fn rebuild(&self, progress: cortex_lexical::Progress<'_>) -> crate::Result<(String, u64, u64)> {
        let index = self.index.as_ref().ok_or_else(|| {
            crate::ServiceError::Lexical(format!("there is no lexical index to build: {NO_INDEX}"))
        })?;
        let items = index
            .rebuild(self.store.as_ref(), progress)
            .map_err(|e| crate::ServiceError::Lexical(e.to_string()))?;
        Ok((index.place().to_string(), items, index.disk_bytes()))
    }

    /// What answers lexical finds, for `doctor`: the index (brought up to date: where it lives,
    /// its items, its size), or the database's search and why.
    pub fn status(&self) -> String {
        let database = if self.store.label().starts_with("postgres") {
            "PostgreSQL tsvector, ts_rank"
        } else {
            "SQLite FTS5 BM25"
        };
        let Some(index) = &self.index else {
            return format!("enabled: {database} ({NO_INDEX})");
        };
        let place = index.place();
        // Folded first, so that the count holds every item, not only those of the last commit.
        match index.catch_up(&self.store).and_then(|()| index.fold(self.store.as_ref())) {
            Ok(()) => format!(
                "enabled: BM25 index at {place}, {} items ({:.1} MiB)",
                index.documents(),
                index.disk_bytes() as f64 / 1_048_576.0
            ),
            Err(e) => format!("enabled: {database}, while the index at {place} is unavailable: {e}"),
        }
    }
}

/// A closing service commits what its index has read but not yet folded, so the next process
/// opens a commit that holds it.
impl Drop for Lexical {
    fn drop(&mut self) {
        if let Some(index) = &self.index
            && let Err(e) = index.close(self.store.as_ref())
        {
            tracing::warn!("the lexical index's last changes stay in the log for the next process: {e}");
        }
    }
}
