//! The knowledge graph in finds: expansion from the hits along relations and observations
//! (`expand`, `depth`, `expand_limit`), citations for ranking, and the links of items read by id.

use super::MemoryFind;
use super::{hit, parts_for};
use crate::Result;
use crate::response::{
    Direction, FindResponse, GraphEdge, GraphNode, GraphView, Hit, ObservationView, RelationView,
};
use cortex_domain::graph::{self, Edge, Expand, HAS_OBSERVATION, Reached};
use cortex_domain::ranking;
use cortex_domain::snippet::{SnippetTerms, best_passage};
use cortex_domain::time::format_instant;
use cortex_domain::{FindRequest, Kind, ScopeFilter};
use cortex_store::{Filters, ItemFacts, Link, StoredItem};
use std::collections::HashMap;
use uuid::Uuid;

impl MemoryFind<'_> {
    /// The citations part of the score for each of `ids` that live, unexpired relations
    /// point at (superseded ones too: a relation is cited while it stands).
    pub(super) fn citations(&self, ids: &[Uuid], now: i64) -> Result<HashMap<Uuid, f64>> {
        let relations = Filters { now, include_superseded: true, ..Filters::default() };
        Ok(self
            .service
            .view
            .incoming_links(ids, &relations)?
            .into_iter()
            .map(|(id, n)| (id, ranking::citations(n)))
            .collect())
    }

    /// Walks the graph from `seeds` (see [`graph::walk`]): every link and item on the way must
    /// pass `filters` (scope, expiry, supersession). Returns what was reached and those items.
    pub(crate) fn walk_graph(
        &self,
        seeds: &[Uuid],
        expand: Expand,
        depth: u8,
        cap: usize,
        filters: &Filters,
    ) -> Result<(Vec<Reached>, HashMap<Uuid, StoredItem>)> {
        let mut items: HashMap<Uuid, StoredItem> = HashMap::new();
        let reached = graph::walk(
            seeds,
            expand,
            depth,
            cap,
            |frontier| -> Result<Vec<Edge>> {
                Ok(self
                    .service
                    .view
                    .links(frontier)?
                    .into_iter()
                    .filter(|link| filters.admits(&link.facts))
                    .filter_map(edge_of)
                    .collect())
            },
            |new| -> Result<Vec<Uuid>> {
                let mut admitted = Vec::with_capacity(new.len());
                for item in self.service.view.get(new)? {
                    if filters.admits(&ItemFacts::of(&item)) {
                        admitted.push(item.record.id);
                        items.insert(item.record.id, item);
                    }
                }
                Ok(admitted)
            },
        )?;
        Ok((reached, items))
    }

    /// Appends the items linked to the hits, marked `expanded` with their path, and the
    /// `graph` they form. Only scope, expiry and supersession filter what is added: `types`,
    /// `tags`, `status` and dates choose the hits, not their neighbours.
    pub(super) fn expand_hits(
        &self,
        req: &FindRequest,
        filter: &ScopeFilter,
        response: &mut FindResponse,
    ) -> Result<()> {
        let expand = req.expansion();
        if expand == Expand::None || response.hits.is_empty() {
            return Ok(());
        }
        let now = self.service.now()?;
        let filters = Filters {
            scope_equals: filter.equals.clone(),
            now,
            include_superseded: req.filter.include_superseded,
            include_expired: req.filter.include_expired,
            bound: self.service.bound.clone(),
            ..Filters::default()
        };
        let seeds: Vec<Uuid> = response.hits.iter().map(|h| h.id).collect();
        let (reached, items) = self.walk_graph(&seeds, expand, req.depth, req.expand_limit, &filters)?;
        let mut edges: Vec<GraphEdge> = Vec::new();
        let mut added = Vec::with_capacity(reached.len());
        for r in &reached {
            let Some(item) = items.get(&r.id) else { continue };
            let seed_confidence =
                response.hits.iter().find(|h| h.id == r.seed).and_then(|h| h.confidence).unwrap_or(0.0);
            let confidence = graph::confidence_after(seed_confidence, r.path.len());
            let snippet = best_passage(&item.record.body, &SnippetTerms::none());
            let parts = parts_for(item, 0.0, filter, now);
            let mut expanded = hit(item, parts, snippet, confidence, filter, req.max_content_chars);
            expanded.expanded = true;
            expanded.path = r.path.iter().map(view_of).collect();
            for edge in &expanded.path {
                if !edges.contains(edge) {
                    edges.push(edge.clone());
                }
            }
            added.push(expanded);
        }
        response.hits.extend(added);
        let mut nodes: Vec<GraphNode> = Vec::new();
        for edge in &edges {
            for end in [&edge.from, &edge.to] {
                if nodes.iter().any(|n| n.id == *end) {
                    continue;
                }
                if let Some(h) = response.hits.iter().find(|h| h.id == *end) {
                    nodes.push(GraphNode { id: h.id, kind: h.kind, title: h.title.clone() });
                }
            }
        }
        response.graph = Some(GraphView {
            expand: expand.as_str().into(),
            depth: req.depth,
            added: reached.len(),
            nodes,
            edges,
        });
        Ok(())
    }

    /// Fills in the relations (both ways) of items read by id, and the observations of
    /// entities, so one lookup shows what an item is connected to.
    pub(super) fn attach_links(&self, hits: &mut [Hit]) -> Result<()> {
        let ids: Vec<Uuid> = hits.iter().map(|h| h.id).collect();
        let links = self.service.view.links(&ids)?;
        if links.is_empty() {
            return Ok(());
        }
        let mut wanted: Vec<Uuid> = Vec::new();
        for link in &links {
            match link.kind {
                Kind::Observation => wanted.push(link.id),
                _ => wanted.extend([Some(link.from), link.to].into_iter().flatten()),
            }
        }
        let items: HashMap<Uuid, StoredItem> = self
            .service
            .view
            .get(&wanted)?
            .into_iter()
            .filter(|i| i.deleted_at.is_none())
            .map(|i| (i.record.id, i))
            .collect();
        for hit in hits.iter_mut() {
            let id = hit.id;
            for link in &links {
                if link.kind == Kind::Observation {
                    if link.from == id
                        && let Some(obs) = items.get(&link.id)
                    {
                        let text =
                            obs.record.data.get("text").and_then(|t| t.as_str()).unwrap_or(&obs.record.title);
                        hit.observations.push(ObservationView {
                            id: link.id.to_string(),
                            text: text.to_string(),
                            created_at: format_instant(obs.record.created_at),
                        });
                    }
                    continue;
                }
                let (direction, other) = if link.from == id {
                    (Direction::Outgoing, link.to)
                } else if link.to == Some(id) {
                    (Direction::Incoming, Some(link.from))
                } else {
                    continue;
                };
                let Some(other) = other.and_then(|o| items.get(&o)) else { continue };
                hit.relations.push(RelationView {
                    id: link.id.to_string(),
                    relation_type: link.title.clone(),
                    direction,
                    other_id: other.record.id.to_string(),
                    other_kind: other.record.kind.to_string(),
                    other_title: other.record.title.clone(),
                });
            }
        }
        Ok(())
    }
}

/// A stored link as the walk sees it; a relation whose `to` is unknown is no edge.
fn edge_of(link: Link) -> Option<Edge> {
    match link.kind {
        Kind::Observation => Some(Edge {
            id: link.id,
            from: link.from,
            to: link.id,
            relation_type: HAS_OBSERVATION.into(),
            observation: true,
        }),
        _ => Some(Edge {
            id: link.id,
            from: link.from,
            to: link.to?,
            relation_type: link.title,
            observation: false,
        }),
    }
}

fn view_of(edge: &Edge) -> GraphEdge {
    GraphEdge { id: edge.id, from: edge.from, to: edge.to, relation_type: edge.relation_type.clone() }
}
