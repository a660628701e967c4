//! The lexical route: the index (`cortex_lexical`) when there is one, brought up to date with
//! the store before each search, else the database's own full-text search. An index that fails
//! (a full disk, a folder it may not write, another process building it for longer than a find
//! can wait) never fails a find: the find asks the database instead, and says so in the log.
//! An index whose files are damaged is never an empty answer either: it is set aside, finds
//! ask the database and say so, and it is built again in the background (`repair`).
//!
//! The index is kept from the whole store, never from a caller's bounded view of it: a key's
//! bound reaches the index as a filter clause (`Filters::bound`), as it reaches the database.
//!
//! - [`repair`]: a damaged index noticed, set aside, and built again from nothing

mod repair;

use crate::index_sizes::{LexicalHealth, LexicalSizes};
use cortex_lexical::{LexicalIndex, Place};
use cortex_store::{LexicalMatch, LexicalQuery, Store, TenantStore};
use repair::Health;
use std::sync::{Arc, PoisonError, RwLock};

/// Why there is no index.
pub(crate) const NO_INDEX: &str = "CORTEX_LEXICAL_INDEX=off, or the index could not be opened: see the log";

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
    /// Where the index lives (`None`: the database's search only).
    place: Option<Place>,
    /// The index; replaced by a new one when a damaged one is built again.
    index: RwLock<Option<Arc<LexicalIndex>>>,
    /// The whole store, unbounded: what the index is derived from.
    store: Arc<dyn Store>,
    health: Health,
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
        Lexical { place: place.cloned(), index: RwLock::new(index), store, health: Health::default() }
    }

    /// The index as it is now, whether or not it can be trusted.
    fn opened(&self) -> Option<Arc<LexicalIndex>> {
        self.index.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The index, brought up to date; `None` when finds must ask the database.
    pub(crate) fn current(self: &Arc<Self>) -> Option<Arc<LexicalIndex>> {
        if self.health.set_aside().is_some() {
            return None;
        }
        let index = self.opened()?;
        match index.catch_up(&self.store) {
            Ok(()) => Some(index),
            Err(cortex_lexical::LexicalError::Building) => None,
            Err(e) if e.is_damage() => {
                self.set_aside(&index, e.to_string());
                None
            }
            Err(e) => {
                tracing::warn!("this find uses the database's own search: {e}");
                None
            }
        }
    }

    /// Reads a store call's own write into the index, on the writer's time: else the next find
    /// (maybe another tenant's) pays for indexing every write since its last one, and under a
    /// flood of stores that is most of its time. A failure is left to that find, which logs it
    /// (and sets a damaged index aside).
    pub fn after_write(&self) {
        if self.health.set_aside().is_some() {
            return;
        }
        if let Some(index) = self.opened()
            && let Err(e) = index.catch_up(&self.store)
        {
            tracing::debug!("the lexical index is left to the next find to bring up to date: {e}");
        }
    }

    /// Brings the index up to date on a thread of its own, so that the first find does not
    /// wait for it (`serve` calls it at start: building a million items takes a minute; finds
    /// meanwhile ask the database), then checks its files against their checksums: damage
    /// that left them readable would otherwise answer wrong, silently.
    pub fn prepare_in_background(self: &Arc<Self>) {
        let Some(index) = self.opened() else { return };
        let lexical = self.clone();
        let spawned = std::thread::Builder::new().name("lexical-index".into()).spawn(move || {
            match index.catch_up(&lexical.store) {
                Err(e) if e.is_damage() => lexical.set_aside(&index, e.to_string()),
                Err(e) => {
                    tracing::warn!("the lexical index could not be prepared; finds will try again: {e}")
                }
                Ok(()) => lexical.check_files(&index),
            }
        });
        if let Err(e) = spawned {
            tracing::warn!("cannot start the lexical index's preparation: {e}");
        }
    }

    /// Whether the index answers lexical searches (else the database does).
    pub fn indexed(&self) -> bool {
        self.opened().is_some() && self.health.set_aside().is_none()
    }

    /// Why lexical finds ask the database although an index is configured, while it is
    /// being built again: a note for the find's response.
    pub fn unavailable(&self) -> Option<String> {
        let reason = self.health.set_aside()?;
        Some(format!(
            "the lexical index is unavailable ({reason}); the database's own text search answered \
             while the index is built again"
        ))
    }

    /// The best matches of `query`; `view` is the store as the caller sees it, asked when
    /// there is no index. `cores` says whether the index may split the search across cores.
    /// The index's empty answer is checked with the database: a damaged index's files may
    /// read as holding nothing, and an empty answer is cheap to confirm.
    pub fn search(
        self: &Arc<Self>,
        query: &LexicalQuery,
        view: &dyn TenantStore,
        cores: Cores,
    ) -> cortex_store::Result<Vec<LexicalMatch>> {
        if let Some(index) = self.current() {
            let found = match cores {
                Cores::Any => index.search(query),
                Cores::One => index.search_on_one_core(query),
            };
            match found {
                Ok(found) if !found.is_empty() => return Ok(found),
                Ok(_) => {
                    let theirs = view.search_lexical(query)?;
                    if !theirs.is_empty() {
                        self.suspect(&index, theirs.len());
                    }
                    return Ok(theirs);
                }
                Err(e) if e.is_damage() => self.set_aside(&index, e.to_string()),
                Err(e) => tracing::warn!("lexical index search failed, asking the database: {e}"),
            }
        }
        view.search_lexical(query)
    }

    /// How many items match `query` (up to `cap`).
    pub fn count(
        self: &Arc<Self>,
        query: &LexicalQuery,
        cap: usize,
        view: &dyn TenantStore,
    ) -> cortex_store::Result<usize> {
        if let Some(index) = self.current() {
            match index.count(query, cap) {
                Ok(n) => return Ok(n),
                Err(e) if e.is_damage() => self.set_aside(&index, e.to_string()),
                Err(e) => tracing::warn!("lexical index count failed, asking the database: {e}"),
            }
        }
        view.count_lexical(query, cap)
    }

    /// Builds the index again from the whole store (`cortex reindex --lexical`): where it
    /// lives, the live items indexed, and its size on disk. Whatever state its folder is in:
    /// a sound index is rebuilt in place (other processes read its last commit meanwhile); a
    /// damaged one, or one that could not be opened, is emptied and built from nothing.
    pub fn rebuild(&self, progress: cortex_lexical::Progress<'_>) -> crate::Result<(String, u64, u64)> {
        let Some(place) = &self.place else {
            return Err(crate::ServiceError::NoLexicalIndex);
        };
        let sound = self.opened().filter(|index| {
            self.health.set_aside().is_none() && index.damaged_files().is_ok_and(|d| d.is_empty())
        });
        let index = match sound {
            Some(index) => match index.rebuild(self.store.as_ref(), progress) {
                Ok(items) => return Ok((place.to_string(), items, index.disk_bytes())),
                Err(e) if e.is_damage() => {
                    tracing::warn!(
                        "the lexical index failed while being rebuilt; building it from nothing: {e}"
                    );
                    self.build_anew(place, &mut |_, _| {})?
                }
                Err(e) => return Err(crate::ServiceError::Lexical(e)),
            },
            None => self.build_anew(place, progress)?,
        };
        Ok((place.to_string(), index.documents(), index.disk_bytes()))
    }

    /// What the index holds and whether it answers, read cheaply (see `crate::index_sizes`).
    pub fn sizes(&self) -> LexicalSizes {
        let answered_by = self.store.engine().text_search().to_string();
        let Some(index) = self.opened() else {
            let health = LexicalHealth::Absent { reason: NO_INDEX.to_string(), answered_by };
            return LexicalSizes { health, place: None, items: 0, bytes: 0 };
        };
        let health = match self.health.set_aside() {
            Some(reason) => LexicalHealth::Damaged { reason, answered_by },
            None => LexicalHealth::Sound,
        };
        LexicalSizes {
            health,
            place: Some(index.place().to_string()),
            items: index.documents(),
            bytes: index.disk_bytes(),
        }
    }

    /// What answers lexical finds, for `doctor`: the index (brought up to date: where it lives,
    /// its items, its size), or the database's search and why; a damaged index is named with
    /// its fix.
    pub fn status(&self) -> String {
        let database = self.store.engine().text_search();
        let Some(index) = self.opened() else {
            return format!("enabled: {database} ({NO_INDEX})");
        };
        let place = index.place();
        if let Some(reason) = self.health.set_aside() {
            return format!(
                "damaged: the index at {place} is set aside ({reason}) and being built again; \
                 {database} answers meanwhile. If it stays so, run `cortex reindex --lexical`"
            );
        }
        match index.damaged_files() {
            Ok(damaged) if !damaged.is_empty() => {
                return format!(
                    "damaged: {} file(s) of the index at {place} fail their checksum ({}); finds \
                     ask {database} until it is built again: run `cortex reindex --lexical` (a \
                     running server also rebuilds it by itself)",
                    damaged.len(),
                    damaged.join(", ")
                );
            }
            Err(e) => {
                return format!(
                    "damaged: the index at {place} cannot be checked ({e}): run `cortex reindex --lexical`"
                );
            }
            Ok(_) => {}
        }
        let repaired = index
            .found_damaged()
            .map(|reason| format!("; its files could not be read ({reason}), so it was built again"))
            .unwrap_or_default();
        // Folded first, so that the count holds every item, not only those of the last commit.
        let catch_up = Arc::clone(&index);
        match catch_up.catch_up(&self.store).and_then(|()| index.fold(self.store.as_ref())) {
            Ok(()) => format!(
                "enabled: BM25 index at {place}, {} items ({:.1} MiB){repaired}",
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
        if self.health.set_aside().is_some() {
            return;
        }
        if let Some(index) = self.opened()
            && let Err(e) = index.close(self.store.as_ref())
        {
            tracing::warn!("the lexical index's last changes stay in the log for the next process: {e}");
        }
    }
}
