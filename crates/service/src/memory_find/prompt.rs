//! A prompt's candidates for the recall hook (`briefing::recall`): the find's two routes, its
//! fusion and its session neighbours, as `auto` ranks them, with what the hook's relevance
//! rule weighs besides (each candidate's cosine with the prompt). Here so that the hook and
//! `memory_find` rank with one rule.

use super::MemoryFind;
use super::candidates::{fused_candidates, with_neighbours};
use super::deadline::{Deadline, DenseOutcome, DenseRoute};
use crate::Result;
use crate::lexical_index::Cores;
use crate::semantic::{EmbedderChoice, Span};
use cortex_domain::fusion::Fusion;
use cortex_domain::neighbours;
use cortex_domain::query::ParsedQuery;
use cortex_store::{Filters, LexicalMatch};
use std::collections::HashMap;
use uuid::Uuid;

/// One candidate, best first in [`PromptCandidates::ranked`].
#[derive(Debug, Clone)]
pub(crate) struct PromptCandidate {
    pub id: Uuid,
    /// The fused relevance, 0–1 (the best: 1).
    pub relevance: f64,
    /// Its cosine with the prompt, when the dense route ran and it has a vector (a session
    /// neighbour no route found has none read).
    pub cosine: Option<f64>,
    /// The dense route's best chunk of it.
    pub chunk: Option<Span>,
}

/// A prompt's candidates, and whether the dense route took part.
pub(crate) struct PromptCandidates {
    pub ranked: Vec<PromptCandidate>,
    /// Why the lexical route ran alone, when it did.
    pub lexical_only: Option<String>,
}

impl MemoryFind<'_> {
    /// The lexical route alone, as [`MemoryFind::prompt_candidates`] ranks it without an
    /// embedder (the evaluation compares both on one memory).
    pub(crate) fn prompt_candidates_lexical(
        &self,
        parsed: &ParsedQuery,
        filters: &Filters,
        pool: usize,
    ) -> Result<PromptCandidates> {
        let lexical = if parsed.is_empty() {
            Vec::new()
        } else {
            self.lexical_matches(parsed, filters, pool, pool, Cores::Any)?
        };
        Ok(lexical_alone(&lexical, "the lexical route was asked alone".into()))
    }

    /// The candidates of a prompt: `parsed` (its words) searched lexically and `text` (the
    /// prompt) embedded, both `pool` deep under `filters`, fused as a find fuses them, the best
    /// ones' session neighbours lifted. Without an embedder, or when the dense route fails or
    /// misses the find deadline, the lexical candidates alone (by BM25 over the best).
    pub(crate) fn prompt_candidates(
        &self,
        parsed: &ParsedQuery,
        text: &str,
        filters: &Filters,
        pool: usize,
    ) -> Result<PromptCandidates> {
        let shared = &self.service.shared;
        let embeds = !matches!(shared.semantic.choice(), EmbedderChoice::None);
        let deadline = Deadline::start(shared.find_deadline);
        let dense = embeds.then(|| {
            DenseRoute::start(
                &shared.dense_routes,
                &deadline,
                shared.semantic.clone(),
                self.service.view.clone(),
                text,
                filters,
                pool,
            )
        });
        let cores = if dense.is_some() { Cores::One } else { Cores::Any };
        let lexical = if parsed.is_empty() {
            Vec::new()
        } else {
            self.lexical_matches(parsed, filters, pool, pool, cores)?
        };
        let vectors = dense.is_some().then(|| self.lexical_vectors(&lexical));
        let (found, lexical_only) = match dense.map(|route| route.wait(&deadline)) {
            None => (None, Some("no embedding model is configured (CORTEX_EMBEDDER=none)".to_string())),
            Some(DenseOutcome::Found(found)) => (Some(found), None),
            Some(DenseOutcome::Unavailable(reason)) => (None, Some(reason.to_string())),
            Some(DenseOutcome::TimedOut) => (None, Some(deadline.note("the dense route did not answer"))),
        };
        let (Some(found), None) = (found, &lexical_only) else {
            return Ok(lexical_alone(&lexical, lexical_only.unwrap_or_default()));
        };
        let dense_of_lexical = vectors.map(|v| v.dense_of_lexical(&found)).unwrap_or_default();
        let mut cosine: HashMap<Uuid, f64> = dense_of_lexical.iter().copied().collect();
        cosine.extend(found.hits.iter().map(|h| (h.id, f64::from(h.score))));
        let mut candidates = fused_candidates(&lexical, Some(&found.hits), &dense_of_lexical, &Fusion::TUNED);
        if !candidates.is_empty() {
            let anchors: Vec<Uuid> =
                candidates.iter().take(neighbours::anchors(pool)).map(|c| c.id).collect();
            let near =
                self.service.view.session_neighbours(&anchors, filters, neighbours::NEIGHBOUR_WINDOW)?;
            candidates = with_neighbours(candidates, &near);
        }
        let ranked = candidates
            .into_iter()
            .map(|c| PromptCandidate {
                id: c.id,
                relevance: c.relevance,
                cosine: cosine.get(&c.id).copied(),
                chunk: c.chunk,
            })
            .collect();
        Ok(PromptCandidates { ranked, lexical_only: None })
    }
}

/// The lexical candidates alone, by BM25 over the best, and why.
fn lexical_alone(lexical: &[LexicalMatch], why: String) -> PromptCandidates {
    let ranked = fused_candidates(lexical, None, &[], &Fusion::TUNED)
        .into_iter()
        .map(|c| PromptCandidate { id: c.id, relevance: c.relevance, cosine: None, chunk: None })
        .collect();
    PromptCandidates { ranked, lexical_only: Some(why) }
}
