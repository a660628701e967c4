//! The candidates of a find: lexical matches and dense hits fused into one relevance (0–1)
//! per item by the domain's rule (`fusion`), then the best ones' session neighbours lifted
//! (`neighbours`), each with what the page needs to show it.

use super::MemoryFind;
use super::deadline::DenseFound;
use crate::semantic::{DenseHit, Span, best_similarity};
use cortex_domain::fusion::{self, Fusion};
use cortex_domain::{Kind, Scope, neighbours, ranking};
use cortex_store::{ItemVectors, LexicalMatch, Neighbour};
use std::collections::{HashMap, HashSet};
use uuid::Uuid;

/// One candidate of either route, with the fused relevance (0–1).
pub(super) struct Candidate {
    pub(super) id: Uuid,
    pub(super) relevance: f64,
    pub(super) updated_at: i64,
    pub(super) scope: Scope,
    /// Its kind, when the route that found it knows (a question weighs it).
    pub(super) kind: Option<Kind>,
    /// Whether the lexical route found it (and so FTS5 can cut its snippet).
    pub(super) lexical: bool,
    /// The dense route's best chunk of it, and how many of its chunks matched.
    pub(super) chunk: Option<Span>,
    pub(super) chunks_matched: usize,
    /// The dense route's cosine of it, when that route found it: how near in meaning it is,
    /// on a scale of its own (relevance is relative to the best candidate).
    pub(super) cosine: Option<f64>,
}

/// The stored vectors of a find's lexical candidates. Read while the dense route is still
/// embedding the query (the slower of the two routes), so the read is off a find's critical
/// path; with them, the lexical candidates the dense route does not return are fused at their
/// own cosine rather than at 0.
pub(super) struct LexicalVectors(Vec<ItemVectors>);

impl MemoryFind<'_> {
    /// The lexical candidates' vectors; none (and the find fuses them at 0, as before) when the
    /// store cannot read them.
    pub(super) fn lexical_vectors(&self, lexical: &[LexicalMatch]) -> LexicalVectors {
        let ids: Vec<Uuid> = lexical.iter().map(|m| m.id).collect();
        if ids.is_empty() {
            return LexicalVectors(Vec::new());
        }
        match self.service.view.vectors_of(&ids) {
            Ok(vectors) => LexicalVectors(vectors),
            Err(e) => {
                tracing::warn!("cannot read the lexical candidates' vectors, fusing them at 0: {e}");
                LexicalVectors(Vec::new())
            }
        }
    }
}

impl LexicalVectors {
    /// The cosine of each lexical candidate the dense route did not return. Its pool ends
    /// somewhere: an item just past it resembles the query about as much as the last one in
    /// it, not "not at all".
    pub(super) fn dense_of_lexical(&self, dense: &DenseFound) -> Vec<(Uuid, f64)> {
        let returned: HashSet<Uuid> = dense.hits.iter().map(|d| d.id).collect();
        self.0
            .iter()
            .filter(|v| !returned.contains(&v.id))
            .filter_map(|v| Some((v.id, f64::from(best_similarity(v, &dense.query)?))))
            .collect()
    }
}

/// Both routes' candidates fused, best first. `dense_of_lexical`: the cosines of lexical
/// candidates the dense route left out ([`LexicalVectors::dense_of_lexical`]), or nothing.
pub(super) fn fused_candidates(
    lexical: &[LexicalMatch],
    dense: Option<&[DenseHit]>,
    dense_of_lexical: &[(Uuid, f64)],
    fusion: &Fusion,
) -> Vec<Candidate> {
    let lex: Vec<(Uuid, f64)> = lexical.iter().map(|m| (m.id, m.score)).collect();
    let Some(dense) = dense else {
        let best = lex.iter().map(|(_, s)| *s).fold(0.0_f64, f64::max);
        return lexical
            .iter()
            .map(|m| Candidate {
                id: m.id,
                relevance: ranking::relevance(m.score, best),
                updated_at: m.updated_at,
                scope: m.scope.clone(),
                kind: m.kind,
                lexical: true,
                chunk: None,
                chunks_matched: 0,
                cosine: None,
            })
            .collect();
    };
    let dense_scores: Vec<(Uuid, f64)> = dense.iter().map(|d| (d.id, d.score as f64)).collect();
    let fused = fusion::fuse(&lex, &dense_scores, dense_of_lexical, fusion);
    let best = fused.first().map_or(0.0, |(_, s)| *s);
    let lexical_of: HashMap<Uuid, &LexicalMatch> = lexical.iter().map(|m| (m.id, m)).collect();
    let dense_of: HashMap<Uuid, &DenseHit> = dense.iter().map(|d| (d.id, d)).collect();
    fused
        .into_iter()
        .filter_map(|(id, score)| {
            let (m, d) = (lexical_of.get(&id), dense_of.get(&id));
            let (updated_at, scope) = match (m, d) {
                (Some(m), _) => (m.updated_at, &m.scope),
                (None, Some(d)) => (d.facts.updated_at, &d.facts.scope),
                (None, None) => return None,
            };
            let kind = d.map(|d| d.facts.kind).or(m.and_then(|m| m.kind));
            Some(Candidate {
                id,
                relevance: ranking::relevance(score, best),
                updated_at,
                scope: scope.clone(),
                kind,
                lexical: m.is_some(),
                chunk: d.and_then(|d| d.chunk),
                chunks_matched: d.map_or(0, |d| d.chunks_matched),
                cosine: d.map(|d| d.score as f64),
            })
        })
        .collect()
}

/// The candidates with the session neighbours the store `found` for the best of them lifted
/// by the domain's rule, best first; a neighbour no route found joins as a candidate of its own.
pub(super) fn with_neighbours(candidates: Vec<Candidate>, found: &[Neighbour]) -> Vec<Candidate> {
    if found.is_empty() {
        return candidates;
    }
    let relevance: Vec<(Uuid, f64)> = candidates.iter().map(|c| (c.id, c.relevance)).collect();
    let links: Vec<(Uuid, Uuid, neighbours::Side)> = found.iter().map(|n| (n.of, n.id, n.side)).collect();
    let lifted = neighbours::lift(&relevance, &links);
    let mut by_id: HashMap<Uuid, Candidate> = candidates.into_iter().map(|c| (c.id, c)).collect();
    let facts: HashMap<Uuid, &Neighbour> = found.iter().map(|n| (n.id, n)).collect();
    lifted
        .into_iter()
        .filter_map(|(id, relevance)| {
            let candidate = match by_id.remove(&id) {
                Some(c) => Candidate { relevance, ..c },
                None => {
                    let n = facts.get(&id)?;
                    Candidate {
                        id,
                        relevance,
                        updated_at: n.updated_at,
                        scope: n.scope.clone(),
                        kind: None,
                        lexical: false,
                        chunk: None,
                        chunks_matched: 0,
                        cosine: None,
                    }
                }
            };
            Some(candidate)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cortex_domain::neighbours::{NEXT_SHARE, Side};

    fn lexical(id: Uuid, score: f64) -> LexicalMatch {
        LexicalMatch { id, score, updated_at: 1, scope: Scope::default(), kind: None }
    }

    #[test]
    fn a_reply_no_route_found_joins_behind_its_anchor() {
        let (ask, other, reply) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        let candidates =
            fused_candidates(&[lexical(ask, 9.0), lexical(other, 6.0)], None, &[], &Fusion::TUNED);
        let found =
            [Neighbour { of: ask, side: Side::After, id: reply, updated_at: 7, scope: Scope::default() }];
        let lifted = with_neighbours(candidates, &found);
        let ids: Vec<Uuid> = lifted.iter().map(|c| c.id).collect();
        assert_eq!(ids, [ask, reply, other]);
        assert_eq!(lifted[1].relevance, NEXT_SHARE);
        assert!(!lifted[1].lexical && lifted[1].updated_at == 7);
    }
}
