//! The memory service: the one place the MCP tools and the CLI reach. It turns requests into
//! domain operations and store calls, and answers with the types in [`response`].
//!
//! - [`ingest`]: the store flow (`memory_store`), one pipeline of stages over a batch
//! - [`search`]: the find flow (`memory_find`); `expand`: graph expansion and citations
//! - [`config`], [`scope_inference`]: where the server stands
//! - `caller`, `tenant`: who a request comes from, and the store as an API key's holder sees it
//! - [`keys`]: API keys (`cortex keys`), and the holder of the token a request presents
//! - [`report`]: `stats` and `doctor`
//! - [`seed`]: `cortex ingest`: decision records, changelogs, docs and commits into memory
//! - [`transfer`]: `export` / `import`; `audit`: the audit trail; [`reindex`]: embedding again

pub mod audit;
mod caller;
pub mod config;
mod context;
mod error;
mod expand;
mod ingest;
pub mod keys;
pub mod lanes;
pub mod lexical;
pub mod purge;
mod recall;
pub mod reindex;
pub mod report;
pub mod response;
pub mod scope_inference;
mod search;
pub mod seed;
pub mod semantic;
pub mod settings;
mod tenant;
pub mod transfer;
mod typos;
mod vocabulary;

pub use caller::Caller;
pub use config::Config;
pub use error::{Result, ServiceError};
pub use search::RouteLists;

use cortex_store::Store;
use scope_inference::InferredScope;
use std::sync::Arc;

pub struct MemoryService {
    store: Arc<dyn Store>,
    inferred: InferredScope,
    db_label: String,
    /// Shared with a find's dense route, which may outlive the find's deadline.
    semantic: Arc<semantic::Semantic>,
    /// The lexical route, over the whole store (shared by every caller's view).
    lexical: Arc<lexical::Lexical>,
    near_duplicate_policy: cortex_domain::near_duplicate::NearDuplicatePolicy,
    find_deadline: std::time::Duration,
    /// The tenant bound of the caller this service serves (`for_caller`); `None` for the
    /// local user. The store is then seen through `tenant::BoundedStore` as well.
    bound: Option<cortex_domain::tenant::Bound>,
    /// The audit trail's actor for this caller's changes (`Caller::actor`).
    actor: Option<String>,
    /// Store calls using the database at once (shared by every caller's view).
    write_lanes: Arc<lanes::WriteLanes>,
    /// Refused stores recorded lately, per actor (shared by every caller's view).
    refusals: Arc<std::sync::Mutex<ingest::RefusalBudget>>,
}

impl MemoryService {
    /// Opens (creating and migrating as needed) the store named by the config.
    pub fn open(config: &Config) -> Result<MemoryService> {
        Ok(MemoryService::with_store(cortex_store::open(&config.db)?, config))
    }

    /// A service over a store the caller opened already (`config.db` is not opened again).
    pub fn with_store(store: Arc<dyn Store>, config: &Config) -> MemoryService {
        let lexical = Arc::new(lexical::Lexical::new(store.clone(), config.lexical.as_ref()));
        let write_lanes = Arc::new(lanes::WriteLanes::for_connections(store.connections()));
        MemoryService {
            db_label: store.label(),
            lexical,
            store,
            inferred: config.scope.clone(),
            semantic: Arc::new(semantic::Semantic::new(config.embedder.clone())),
            near_duplicate_policy: config.near_duplicates,
            find_deadline: config.find_deadline,
            bound: None,
            actor: None,
            write_lanes,
            refusals: Arc::default(),
        }
    }

    /// Brings the lexical index up to date in the background (`serve` at start).
    pub fn prepare_lexical_index(&self) {
        self.lexical.prepare_in_background();
    }

    /// Embeds the items stored without vectors in the background (`serve` at start).
    pub fn embed_missing_in_background(&self) {
        self.semantic.embed_missing_in_background(self.store.clone());
    }

    /// Empties the query-embedding cache, so a benchmark times every embedding.
    pub fn forget_query_embeddings(&self) {
        self.semantic.forget_query_embeddings();
    }

    pub fn inferred_scope(&self) -> &InferredScope {
        &self.inferred
    }

    /// Now, by the clock every writer of the store shares: a PostgreSQL server's (issue 15,
    /// item 14: a client with a fast clock must not stamp items in the future or purge
    /// everyone's items early), this machine's for a SQLite file.
    pub(crate) fn now(&self) -> Result<i64> {
        Ok(self.store.now()?)
    }
}

/// This machine's clock, for what no other process compares (a hit's staleness hint).
pub(crate) fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}
