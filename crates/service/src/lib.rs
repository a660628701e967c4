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
//! - `place_counts`: where the live items are, kept until the store changes
//! - [`git`]: memory that follows the code: the git tables kept, merges recorded
//! - [`contradictions`]: decisions in force that may contradict each other

pub mod administration;
pub mod audit;
mod briefing;
mod caller;
pub mod config;
pub mod contradictions;
mod error;
pub mod git;
pub mod index_sizes;
pub mod indexes;
pub mod ingest;
pub mod keys;
mod lab;
pub mod lanes;
pub mod lexical_index;
pub mod lifecycle;
pub mod memory_find;
pub mod memory_store;
mod os_user;
mod place_counts;
pub mod response;
pub mod scope_inference;
pub mod secrets;
pub mod semantic;
pub mod settings;
mod tenant;
pub mod transfer;

pub use administration::Administration;
pub use audit::Audit;
pub use briefing::{Briefing, RecallRequest, Recalled, Sessions, Weighed};
pub use caller::Caller;
pub use config::Config;
pub use contradictions::Contradictions;
pub use error::{EmbedderError, Result, ServiceError};
pub use git::Git;
pub use indexes::Indexes;
pub use ingest::Ingest;
pub use keys::Keys;
pub use lab::Lab;
pub use lifecycle::Lifecycle;
pub use memory_find::{MemoryFind, RouteLists};
pub use memory_store::MemoryStore;
pub use secrets::Secrets;
pub use transfer::Transfer;

use cortex_store::{Store, TenantStore};
use scope_inference::InferredScope;
use std::sync::Arc;

/// The service as one caller is served: the parts every caller shares, and the caller's own
/// view of the store. It does no job itself: each job is a small type borrowing it, handed out
/// by the methods below ([`MemoryService::memory_store`], [`MemoryService::memory_find`], …).
/// Flows reach items only through `view`; what spans every tenant goes through
/// `MemoryService::whole_store`, which a key's holder is refused.
pub struct MemoryService {
    shared: Arc<Shared>,
    /// The store as this caller sees it: the whole store for the local user, a
    /// `tenant::BoundedStore` (which has no admin part at all) for a key's holder.
    view: Arc<dyn TenantStore>,
    /// Where this caller stands: the server's inferred scope, at the caller's scope.
    inferred: InferredScope,
    /// The caller's tenant bound; `None` for the local user.
    bound: Option<cortex_domain::tenant::Bound>,
    /// Who this caller's changes are recorded as made by (`Caller::principal`).
    principal: Option<cortex_domain::principal::Principal>,
    /// What this caller's changes come through, when not the flow's own name (`Caller::via`).
    via: Option<&'static str>,
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
    /// The threads finds' dense routes run on.
    dense_routes: memory_find::DensePool,
    /// Store calls using the database at once.
    write_lanes: Arc<lanes::WriteLanes>,
    /// Refused stores recorded lately, per actor.
    refusals: std::sync::Mutex<memory_store::RefusalBudget>,
    /// The prompt-submit hook's budgets and where it keeps its sessions and counts.
    recall: config::RecallConfig,
    /// What a store does with a credential in an item's text.
    secrets: settings::SecretsMode,
    /// The live items per org, project and branch, as of the store's last change.
    places: place_counts::PlaceCounts,
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
            semantic: Arc::new(semantic::Semantic::new(
                config.embedder.clone(),
                store.clone(),
                config.vector_file.clone(),
            )),
            write_lanes: Arc::new(lanes::WriteLanes::for_connections(store.connections())),
            store: store.clone(),
            inferred: config.scope.clone(),
            near_duplicate_policy: config.near_duplicates,
            find_deadline: config.find_deadline,
            dense_routes: memory_find::DensePool::per_core(),
            refusals: Default::default(),
            recall: config.recall.clone(),
            secrets: config.secrets,
            places: Default::default(),
        });
        MemoryService {
            view: store,
            inferred: shared.inferred.clone(),
            shared,
            bound: None,
            principal: Some(os_user::local_principal()),
            via: None,
        }
    }

    pub fn inferred_scope(&self) -> &InferredScope {
        &self.inferred
    }

    /// The `memory_store` tool's flow: a batch of items written (or refused) item by item.
    pub fn memory_store(&self) -> MemoryStore<'_> {
        MemoryStore { service: self }
    }

    /// The `memory_find` tool's flow: search, lookups by id, listings, a long item's chunks.
    pub fn memory_find(&self) -> MemoryFind<'_> {
        MemoryFind { service: self }
    }

    /// API keys: made, listed and revoked (also within an admin's bound), and the holder of a
    /// presented token.
    pub fn keys(&self) -> Keys<'_> {
        Keys { service: self }
    }

    /// The audit trail: records read, and the chain verified.
    pub fn audit(&self) -> Audit<'_> {
        Audit { service: self }
    }

    /// Expired items purged; the caller's deleted items, to restore.
    pub fn lifecycle(&self) -> Lifecycle<'_> {
        Lifecycle { service: self }
    }

    /// `cortex export` and `cortex import`: the whole memory as JSON Lines.
    pub fn transfer(&self) -> Transfer<'_> {
        Transfer { service: self }
    }

    /// Decisions, runbooks and sections in force that may contradict each other
    /// (`cortex doctor --conflicts`).
    pub fn contradictions(&self) -> Contradictions<'_> {
        Contradictions { service: self }
    }

    /// Memory that follows the code: the git tables brought up to date (`cortex git sync`),
    /// merge records listed and undone.
    pub fn git(&self) -> Git<'_> {
        Git { service: self }
    }

    /// `cortex ingest` (files and commits into memory) and `cortex export --markdown`.
    pub fn ingest(&self) -> Ingest<'_> {
        Ingest { service: self }
    }

    /// The derived indexes (lexical, vector): brought up to date, rebuilt, their embedder.
    pub fn indexes(&self) -> Indexes<'_> {
        Indexes { service: self }
    }

    /// The session briefing and the prompt-submit hook's recall.
    pub fn briefing(&self) -> Briefing<'_> {
        Briefing { service: self }
    }

    /// `stats`, `doctor`, readiness, and the pools' and lanes' state.
    pub fn administration(&self) -> Administration<'_> {
        Administration { service: self }
    }

    /// The calls only the benchmark and evaluation harness makes.
    pub fn lab(&self) -> Lab<'_> {
        Lab(self)
    }

    /// The whole store, for what spans every tenant (counts, integrity, purge, export, keys,
    /// the audit chain, re-embedding). Refused to a key's holder: its view stops at its bound,
    /// and these answers would either leak other tenants or, answered from the view, lie.
    pub(crate) fn whole_store(&self, what: &'static str) -> Result<&dyn Store> {
        match self.bound {
            None => Ok(self.shared.store.as_ref()),
            Some(_) => Err(ServiceError::AdminOnly(what)),
        }
    }

    /// Now, by the clock every writer of the store shares: a PostgreSQL server's (a client
    /// with a fast clock must not stamp items in the future or purge everyone's items early),
    /// this machine's for a SQLite file.
    pub(crate) fn now(&self) -> Result<i64> {
        Ok(self.view.now()?)
    }

    /// A lane for one store call of this caller's tenant (its org; the local user is one
    /// tenant too), waiting for one if need be: see [`crate::lanes`].
    pub(crate) fn write_lane(&self) -> lanes::Lane {
        self.shared.write_lanes.take(self.bound.as_ref().map_or("", |b| b.org.as_str()))
    }
}

/// This machine's clock, for what no other process compares (a hit's staleness hint).
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}
