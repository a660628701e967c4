//! What only the benchmark and evaluation harness (`cortex-bench`) asks of the service: the
//! steps of a find taken apart, a fusion rule other than the tuned one, the query-embedding
//! cache emptied. Kept behind [`MemoryService::lab`] so the service's own surface is what the
//! product's adapters use, and a reader sees at once which calls exist only to be measured.

use crate::response::FindResponse;
use crate::{MemoryService, Result, RouteLists, Weighed};
use cortex_domain::fusion::Fusion;
use cortex_domain::graph::{Expand, Reached};
use cortex_domain::{FindRequest, Scope, ScopeLevel};
use cortex_store::{Filters, StoredItem};
use std::collections::HashMap;
use uuid::Uuid;

/// The harness's view of one service (see the module doc).
pub struct Lab<'a>(pub(crate) &'a MemoryService);

impl Lab<'_> {
    /// Empties the query-embedding cache, so a benchmark times every embedding.
    pub fn forget_query_embeddings(&self) {
        self.0.shared.semantic.forget_query_embeddings();
    }

    /// A find whose routes are fused by `fusion` instead of the tuned rule.
    pub fn find_with_fusion(&self, req: &FindRequest, fusion: &Fusion) -> Result<FindResponse> {
        self.0.memory_find().find_with_fusion(req, fusion)
    }

    /// The route lists of `req`'s query, `pool` deep each, before fusion.
    pub fn explain_routes(&self, req: &FindRequest, pool: usize) -> Result<RouteLists> {
        self.0.memory_find().explain_routes(req, pool)
    }

    /// The recall hook's candidates for `prompt` and its rule for them, before the rule:
    /// hybrid when `dense` and the model answers, the lexical route alone otherwise.
    pub fn recall_weighed(
        &self,
        prompt: &str,
        scope: Option<&Scope>,
        level: Option<ScopeLevel>,
        dense: bool,
    ) -> Result<Weighed> {
        self.0.briefing().weigh(prompt, scope, level, dense)
    }

    /// A graph walk alone, as a find's expansion takes it.
    pub fn walk_graph(
        &self,
        seeds: &[Uuid],
        expand: Expand,
        depth: u8,
        cap: usize,
        filters: &Filters,
    ) -> Result<(Vec<Reached>, HashMap<Uuid, StoredItem>)> {
        self.0.memory_find().walk_graph(seeds, expand, depth, cap, filters)
    }
}
