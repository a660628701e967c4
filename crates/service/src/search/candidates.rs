//! The candidates of a find: lexical matches and dense hits fused into one relevance (0–1)
//! per item, each with what the page needs to show it.

use crate::semantic::{DenseHit, Span};
use cortex_domain::{Scope, fusion, ranking};
use cortex_store::LexicalMatch;
use std::collections::HashMap;
use uuid::Uuid;

/// One candidate of either route, with the fused relevance (0–1).
pub(super) struct Candidate {
    pub(super) id: Uuid,
    pub(super) relevance: f64,
    pub(super) updated_at: i64,
    pub(super) scope: Scope,
    /// Whether the lexical route found it (and so FTS5 can cut its snippet).
    pub(super) lexical: bool,
    /// The dense route's best chunk of it, and how many of its chunks matched.
    pub(super) chunk: Option<Span>,
    pub(super) chunks_matched: usize,
}

pub(super) fn fused_candidates(
    lexical: &[LexicalMatch],
    dense: Option<&[DenseHit]>,
    lexical_weight: f64,
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
                lexical: true,
                chunk: None,
                chunks_matched: 0,
            })
            .collect();
    };
    let dense_scores: Vec<(Uuid, f64)> = dense.iter().map(|d| (d.id, d.score as f64)).collect();
    let fused = fusion::fuse(&lex, &dense_scores, lexical_weight);
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
            Some(Candidate {
                id,
                relevance: ranking::relevance(score, best),
                updated_at,
                scope: scope.clone(),
                lexical: m.is_some(),
                chunk: d.and_then(|d| d.chunk),
                chunks_matched: d.map_or(0, |d| d.chunks_matched),
            })
        })
        .collect()
}
