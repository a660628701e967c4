//! The memory service: the one place the MCP tools and the CLI reach. It turns requests into
//! domain operations and store calls, and answers with the types in [`response`].
//!
//! - [`memory_store`]: the store flow (`memory_store`), one pipeline of stages over a batch
//! - [`memory_find`]: the find flow (`memory_find`): search, lookups by id, suggestions, typo
//!   correction, the index's vocabulary, graph expansion and citations
//! - [`config`], [`scope_inference`]: where the server stands
//! - `caller`, `tenant`: who a request comes from, and the store as an API key's holder sees it
//! - [`keys`]: API keys (`cortex keys`), the holder of the token a request presents, and the
//!   same kept inside an admin key's bound
//! - [`audit`]: the audit trail, read and verified
//! - [`lifecycle`]: purge of expired items, deleted items to restore
//! - [`transfer`]: `export` / `import`; [`ingest`]: `cortex ingest` (decision records,
//!   changelogs, docs and commits into memory) and `cortex export --markdown`
//! - [`indexes`]: the derived indexes' lifecycles ([`lexical_index`], [`semantic`]): prepare,
//!   backfill, reindex, whether the embedder fits the store
//! - `briefing`: the session briefing and the prompt's recall
//! - [`administration`]: `stats`, `doctor`, readiness, pools and lanes

pub mod administration;
pub mod audit;
mod briefing;
mod caller;
pub mod config;
mod error;
pub mod indexes;
pub mod ingest;
pub mod keys;
mod lab;
pub mod lanes;
pub mod lexical_index;
pub mod lifecycle;
pub mod memory_find;
pub mod memory_store;
pub mod response;
pub mod scope_inference;
pub mod semantic;
pub mod settings;
mod tenant;
pub mod transfer;

pub use caller::Caller;
pub use config::Config;
pub use error::{Result, ServiceError};
pub use lab::Lab;
pub use memory_find::RouteLists;

use cortex_store::{Store, TenantStore};
use scope_inference::InferredScope;
use std::sync::Arc;

/// The service as one caller is served: the parts every caller shares, and the caller's own
/// view of the store. Flows reach items only through `view`; what spans every tenant goes
/// through [`MemoryService::admin`], which a key's holder is refused.
pub struct MemoryService {
    shared: Arc<Shared>,
    /// The store as this caller sees it: the whole store for the local user, a
    /// `tenant::BoundedStore` (which has no admin part at all) for a key's holder.
    view: Arc<dyn TenantStore>,
    /// Where this caller stands: the server's inferred scope, at the caller's scope.
    inferred: InferredScope,
    /// The caller's tenant bound; `None` for the local user.
    bound: Option<cortex_domain::tenant::Bound>,
    /// The audit trail's actor for this caller's changes (`Caller::actor`).
    actor: Option<String>,
}

/// What every caller's service shares: made once, at open.
struct Shared {
    /// The whole store, unbounded: what the derived indexes are kept from and what the admin
    /// paths use. Never handed to a caller's flow.
    store: Arc<dyn Store>,
    /// The scope the server inferred where it started.
    inferred: InferredScope,
    db_label: String,
    /// Shared with a find's dense route, which may outlive the find's deadline.
    semantic: Arc<semantic::Semantic>,
    lexical: Arc<lexical_index::Lexical>,
    near_duplicate_policy: cortex_domain::near_duplicate::NearDuplicatePolicy,
    find_deadline: std::time::Duration,
    /// Store calls using the database at once.
    write_lanes: Arc<lanes::WriteLanes>,
    /// Refused stores recorded lately, per actor.
    refusals: std::sync::Mutex<memory_store::RefusalBudget>,
}

impl MemoryService {
    /// Opens (creating and migrating as needed) the store named by the config.
    pub fn open(config: &Config) -> Result<MemoryService> {
        Ok(MemoryService::with_store(cortex_store::open(&config.db)?, config))
    }

    /// A service over a store the caller opened already (`config.db` is not opened again),
    /// serving the local user.
    pub fn with_store(store: Arc<dyn Store>, config: &Config) -> MemoryService {
        let shared = Arc::new(Shared {
            db_label: store.label(),
            lexical: Arc::new(lexical_index::Lexical::new(store.clone(), config.lexical.as_ref())),
            semantic: Arc::new(semantic::Semantic::new(config.embedder.clone(), store.clone())),
            write_lanes: Arc::new(lanes::WriteLanes::for_connections(store.connections())),
            store: store.clone(),
            inferred: config.scope.clone(),
            near_duplicate_policy: config.near_duplicates,
            find_deadline: config.find_deadline,
            refusals: Default::default(),
        });
        MemoryService { view: store, inferred: shared.inferred.clone(), shared, bound: None, actor: None }
    }

    /// The whole store, for what spans every tenant (counts, integrity, purge, export, keys,
    /// the audit chain, re-embedding). Refused to a key's holder: its view stops at its bound,
    /// and these answers would either leak other tenants or, answered from the view, lie.
    pub(crate) fn admin(&self, what: &'static str) -> Result<&dyn Store> {
        match self.bound {
            None => Ok(self.shared.store.as_ref()),
            Some(_) => Err(ServiceError::AdminOnly(what)),
        }
    }

    /// Brings the lexical index up to date in the background (`serve` at start).
    pub fn prepare_lexical_index(&self) {
        self.shared.lexical.prepare_in_background();
    }

    /// Embeds the items stored without vectors in the background (`serve` at start).
    pub fn embed_missing_in_background(&self) {
        self.shared.semantic.embed_missing_in_background();
    }

    /// Empties the query-embedding cache, so a benchmark times every embedding.
    pub(crate) fn forget_query_embeddings(&self) {
        self.shared.semantic.forget_query_embeddings();
    }

    pub fn inferred_scope(&self) -> &InferredScope {
        &self.inferred
    }

    /// Now, by the clock every writer of the store shares: a PostgreSQL server's (a client
    /// with a fast clock must not stamp items in the future or purge everyone's items early),
    /// this machine's for a SQLite file.
    pub(crate) fn now(&self) -> Result<i64> {
        Ok(self.view.now()?)
    }
}

/// This machine's clock, for what no other process compares (a hit's staleness hint).
pub(crate) fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}
