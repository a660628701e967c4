//! The memory service: the one place the MCP tools and the CLI reach. It turns requests into
//! domain operations and store calls, and answers with the types in [`response`].
//!
//! - [`ingest`]: the store flow (`memory_store`)
//! - [`search`]: the find flow (`memory_find`)
//! - [`config`], [`scope_inference`]: where the server stands
//! - [`report`]: `stats` and `doctor`

pub mod config;
mod error;
mod ingest;
pub mod report;
pub mod response;
pub mod scope_inference;
mod search;
pub mod semantic;

pub use config::Config;
pub use error::{Result, ServiceError};

use cortex_store::{SqliteStore, Store};
use scope_inference::InferredScope;
use std::sync::Arc;

pub struct MemoryService {
    store: Arc<dyn Store>,
    inferred: InferredScope,
    db_label: String,
    semantic: semantic::Semantic,
    near_duplicate_policy: cortex_domain::near_duplicate::NearDuplicatePolicy,
}

impl MemoryService {
    /// Opens the embedded SQLite store named by the config.
    pub fn open(config: &Config) -> Result<MemoryService> {
        let store = SqliteStore::open(&config.db_path)?;
        Ok(MemoryService {
            store: Arc::new(store),
            inferred: config.scope.clone(),
            db_label: config.db_path.display().to_string(),
            semantic: semantic::Semantic::new(config.embedder.clone()),
            near_duplicate_policy: config.near_duplicates,
        })
    }

    /// Empties the query-embedding cache, so a benchmark times every embedding.
    pub fn forget_query_embeddings(&self) {
        self.semantic.forget_query_embeddings();
    }

    pub fn inferred_scope(&self) -> &InferredScope {
        &self.inferred
    }
}

pub(crate) fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}
