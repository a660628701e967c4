//! The lexical index of Cortex Memory: BM25 over every live item's title and body, answered by
//! tantivy with block-max WAND, so a find ranks its top-k over any number of query words
//! without scoring every item that holds one of them (an agent's question of fifteen words
//! holds common ones).
//!
//! The database stays the source of truth. The index is derived from it and kept current from
//! its change log, as the in-process vector index is: before a search, the store's change
//! counter says whether anything was committed since, by any process; if so, the items changed
//! since the last read are read again into an in-memory delta, which searches mask the index
//! with and score beside it; a fold commits the delta a moment later, off the finds' path.
//! Several processes may share one index folder: whoever folds takes tantivy's writer lock for
//! that moment, commits, and lets it go; the others read the commit. An index that is missing,
//! of another version, of another database, or further behind than the log keeps, is built
//! again from the store.
//!
//! - [`schema`]: what a document holds, and the analyzer (stemming, folding)
//! - [`query`]: a parsed query as a plan of index terms, and as a tantivy query
//! - [`delta`]: the items changed since the last commit, scored as the index scores its own
//! - [`filter`]: the shared filter rule on a segment's fast fields
//! - [`search`]: the filtered top-k and its count
//! - [`parallel`]: a long question's search split across cores
//! - [`stem`]: English stems, remembered
//! - [`sync`]: catching up with the store, building from it (the index's `Follower`)
//! - [`fold`]: committing the delta, off the finds' path
//! - [`health`]: a damaged index's files found, its panics caught, its folder made anew
//! - [`vocab`]: the vocabulary behind spelling hints and common words, checked against filters
//!   (a [`Vocabulary`] borrowed from the index)

mod delta;
mod filter;
mod fold;
mod health;
mod parallel;
mod query;
mod schema;
mod search;
mod stem;
mod sync;
mod vocab;

pub use sync::Progress;
pub use vocab::Vocabulary;

use schema::{ANALYZER, Fields};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tantivy::directory::MmapDirectory;
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{Index, IndexReader, ReloadPolicy, Searcher};

/// Where an index lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// A folder of its own (beside a SQLite file, or in the cache folder for a PostgreSQL
    /// database), kept across runs: opening it reads, never rebuilds.
    Dir(PathBuf),
    /// In memory, built on first use and gone with the process.
    Memory,
}

/// A folder's path, or `memory`.
impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Dir(dir) => write!(f, "{}", dir.display()),
            Place::Memory => f.write_str("memory"),
        }
    }
}

/// What can go wrong with the index. None of it loses data: the store holds everything, and a
/// find can always ask the database's own lexical search instead.
#[derive(Debug, thiserror::Error)]
pub enum LexicalError {
    #[error("cannot open the lexical index at {path}: {reason} (delete the folder to have it rebuilt)")]
    Open { path: String, reason: OpenFailure },
    #[error("the lexical index failed: {0}")]
    Engine(#[from] tantivy::TantivyError),
    #[error("reading the lexical index failed: {0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Store(#[from] cortex_store::StoreError),
    #[error("another process has been updating the lexical index for {seconds} s; try again when it is done")]
    Busy { seconds: u64 },
    #[error("the lexical index is being built; finds ask the database meanwhile")]
    Building,
    #[error("the store changes faster than the lexical index can follow; finds ask the database meanwhile")]
    Lagging,
    #[error("a thread of the lexical search panicked: {message}")]
    SearchPanicked { message: String },
}

/// Why the index's folder cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum OpenFailure {
    /// The folder cannot be made.
    #[error("{0}")]
    Create(std::io::Error),
    #[error("{0}")]
    Directory(#[from] tantivy::directory::error::OpenDirectoryError),
    /// A damaged index's files cannot be removed.
    #[error("cannot empty the folder: {0}")]
    Empty(std::io::Error),
}

pub type Result<T, E = LexicalError> = std::result::Result<T, E>;

pub struct LexicalIndex {
    index: Index,
    reader: IndexReader,
    fields: Fields,
    analyzer: TextAnalyzer,
    place: Place,
    sync: Mutex<sync::SyncState>,
    /// What searches read; `None` until the first catch-up.
    view: Mutex<Option<Arc<View>>>,
    /// Whether a fold waits, runs, or may no longer start.
    folding: fold::Folding,
    /// Set while this process builds the index from the whole store: finds do not wait for
    /// it (minutes at a million items), they ask the database meanwhile.
    building: AtomicBool,
    /// Searches running now: a search splits across cores only when it runs alone.
    searching: AtomicUsize,
    /// Why the folder was emptied at opening, if it was (its files could not be read).
    found_damaged: Option<String>,
    common: vocab::CommonTerms,
}

impl LexicalIndex {
    /// Opens the index at `place`, creating an empty one if there is none (it is filled on the
    /// first catch-up). A folder holding an index of another schema, or files that cannot be
    /// read (overwritten, truncated), is emptied and reused.
    pub fn open(place: &Place) -> Result<LexicalIndex> {
        match (LexicalIndex::open_as_is(place), place) {
            (Ok(index), _) => Ok(index),
            (Err(e), Place::Dir(dir)) if !matches!(e, LexicalError::Open { .. }) => {
                tracing::warn!(path = %dir.display(), error = %e, "the lexical index cannot be read; building it again");
                health::empty_folder(dir)?;
                let mut index = LexicalIndex::open_as_is(place)?;
                index.found_damaged = Some(e.to_string());
                Ok(index)
            }
            (Err(e), _) => Err(e),
        }
    }

    fn open_as_is(place: &Place) -> Result<LexicalIndex> {
        let (schema, fields) = Fields::schema();
        let index = match place {
            Place::Memory => Index::create_in_ram(schema),
            Place::Dir(dir) => open_dir(dir, schema)?,
        };
        let analyzer = schema::analyzer();
        index.tokenizers().register(ANALYZER, analyzer.clone());
        // Reading a segment whose header was overwritten may panic inside tantivy.
        let reader =
            health::guarded(|| Ok(index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?))?;
        Ok(LexicalIndex {
            index,
            reader,
            fields,
            analyzer,
            place: place.clone(),
            sync: Mutex::new(sync::SyncState::default()),
            view: Mutex::new(None),
            folding: fold::Folding::default(),
            building: AtomicBool::new(false),
            searching: AtomicUsize::new(0),
            found_damaged: None,
            common: vocab::CommonTerms::default(),
        })
    }

    pub fn place(&self) -> &Place {
        &self.place
    }

    /// Live items in the index's commit that searches read (a fold before this call counts
    /// them all).
    pub fn documents(&self) -> u64 {
        self.searched().searcher.num_docs()
    }

    /// The bytes the index takes on disk (0 in memory).
    pub fn disk_bytes(&self) -> u64 {
        match &self.place {
            Place::Memory => 0,
            Place::Dir(dir) => std::fs::read_dir(dir)
                .map(|entries| entries.flatten().filter_map(|e| e.metadata().ok()).map(|m| m.len()).sum())
                .unwrap_or(0),
        }
    }
}

/// A commit as searches read it: its searcher, and the changes since it.
pub(crate) struct View {
    pub searcher: Searcher,
    pub delta: delta::Delta,
}

impl LexicalIndex {
    pub(crate) fn lock_sync(&self) -> MutexGuard<'_, sync::SyncState> {
        self.sync.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn view(&self) -> Option<Arc<View>> {
        self.view.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    pub(crate) fn set_view(&self, view: View) {
        *self.view.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(view));
    }

    /// The view a search reads: the caught-up one, or the last reload's commit alone.
    pub(crate) fn searched(&self) -> Arc<View> {
        self.view().unwrap_or_else(|| {
            Arc::new(View { searcher: self.reader.searcher(), delta: delta::Delta::default() })
        })
    }
}

/// The index in `dir`, created if there is none. One of another schema (an older version of
/// Cortex) or with files tantivy cannot read is an error that [`LexicalIndex::open`] answers
/// by emptying the folder: the index is derived from the database.
fn open_dir(dir: &Path, schema: tantivy::schema::Schema) -> Result<Index> {
    let failed = |reason: OpenFailure| LexicalError::Open { path: dir.display().to_string(), reason };
    std::fs::create_dir_all(dir).map_err(|e| failed(OpenFailure::Create(e)))?;
    let directory = MmapDirectory::open(dir).map_err(|e| failed(e.into()))?;
    health::guarded(|| Ok(Index::open_or_create(directory, schema)?))
}
