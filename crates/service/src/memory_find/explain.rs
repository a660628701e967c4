//! What each route of a find sees before fusion, for tuning the fusion offline
//! (`cortex-bench eval --dump`): the conjunctive and the disjunctive lexical lists and the dense
//! list, each with its raw scores (BM25 as the backend gives it, cosine), over a pool the
//! caller chooses. Nothing here is on a find's path.

use super::MemoryFind;
use crate::Result;
use crate::lexical_index::Cores;
use crate::semantic::{Compare, best_similarity};
use cortex_domain::query::parse_query;
use cortex_domain::{FindRequest, Mode, ScopeFilter};
use cortex_store::{Combine, LexicalQuery};
use uuid::Uuid;

/// Each route's candidates, best first, with their raw scores.
pub struct RouteLists {
    /// Items holding every query word (BM25).
    pub lexical_all: Vec<(Uuid, f64)>,
    /// Items holding any query word (BM25).
    pub lexical_any: Vec<(Uuid, f64)>,
    /// Nearest items by embedding (cosine), no similarity floor applied; empty when the
    /// dense route cannot run.
    pub dense: Vec<(Uuid, f64)>,
    /// The exact cosine of every disjunctive lexical candidate, whether or not the dense list
    /// holds it; empty when the dense route cannot run.
    pub lexical_cosines: Vec<(Uuid, f64)>,
    /// The query's embedding; empty when the dense route cannot run.
    pub query_vector: Vec<f32>,
}

impl MemoryFind<'_> {
    /// The route lists of `req`'s query, `pool` deep each. In `deep` mode the query is
    /// corrected for typos first, as a find does.
    pub(crate) fn explain_routes(&self, req: &FindRequest, pool: usize) -> Result<RouteLists> {
        let mut lists = RouteLists {
            lexical_all: Vec::new(),
            lexical_any: Vec::new(),
            dense: Vec::new(),
            lexical_cosines: Vec::new(),
            query_vector: Vec::new(),
        };
        let Some(text) = &req.query else { return Ok(lists) };
        let parsed = parse_query(text);
        if parsed.is_empty() {
            return Ok(lists);
        }
        let parsed = if req.mode == Mode::Deep { self.correct_typos(&parsed)?.0 } else { parsed };
        let filter = ScopeFilter::resolve(&self.service.inferred.scope, req.scope.as_ref(), req.widen);
        let filter = self.with_merged_branches(filter)?;
        let filters = super::filters_for(req, &filter, self.service.now()?, self.service.bound.as_ref());
        for (combine, out) in [(Combine::All, &mut lists.lexical_all), (Combine::Any, &mut lists.lexical_any)]
        {
            let query = LexicalQuery { query: parsed.clone(), combine, filters: filters.clone(), pool };
            *out = self
                .service
                .shared
                .lexical
                .search(&query, self.service.view.as_ref(), Cores::Any)?
                .into_iter()
                .map(|m| (m.id, m.score))
                .collect();
        }
        if let Ok(Some(vector)) = self.service.shared.semantic.embed_query(text) {
            let found = self
                .service
                .shared
                .semantic
                .nearest(&*self.service.view, &vector, pool, &filters, Compare::Everything)
                .map_err(|e| crate::EmbedderError::Nearest(std::sync::Arc::new(e)))?;
            lists.dense = found.into_iter().map(|d| (d.id, f64::from(d.score))).collect();
            let ids: Vec<Uuid> = lists.lexical_any.iter().map(|(id, _)| *id).collect();
            lists.lexical_cosines = self
                .service
                .view
                .vectors_of(&ids)?
                .iter()
                .filter_map(|v| Some((v.id, f64::from(best_similarity(v, &vector)?))))
                .collect();
            lists.query_vector = vector;
        }
        Ok(lists)
    }
}
