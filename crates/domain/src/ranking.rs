//! Ranking: how a hit's score is made from its parts.
//!
//! ```text
//! score = 0.4·relevance + 0.3·recency + 0.2·scope_proximity + 0.1·citations
//! ```
//! - relevance: the backend's lexical score (BM25, higher is better) divided by the best
//!   score among the candidates of this query, so 1.0 is the best match and every value is in 0–1.
//! - recency: exponential decay on the time since the last update, halving every
//!   [`RECENCY_HALF_LIFE_DAYS`] days; 1.0 for an item updated now.
//! - scope_proximity: 1.0 in the caller's branch, 0.5 elsewhere in its project, 0.2 anywhere else.
//! - citations: how many live relations point at the item, saturating: `ln(1+n) / ln(1+10)`,
//!   capped at 1.0 — the first links count most, ten or more count fully. Well-linked items
//!   (the service everything depends on, the ADR every change implements) rise a little.
//!
//! For a question ("why …", "how do I …", "…?"), relevance is first weighed by how well the
//! item's kind can answer one ([`kind_fit`]): a decision, a doc section or a runbook says why
//! and how; a commit, a release or a pull request records that something happened, and its
//! short text matches a question's words easily without answering it.
//!
//! A hit's `confidence` says how well it answers the query, independent of how new it is:
//! the share of query words it contains, scaled by its relevance.

use crate::kind::Kind;
use crate::scope::ScopeMatch;
use crate::time::MILLIS_PER_DAY;
use serde::Serialize;

pub const W_RELEVANCE: f64 = 0.4;
pub const W_RECENCY: f64 = 0.3;
pub const W_SCOPE: f64 = 0.2;
pub const W_CITATIONS: f64 = 0.1;
pub const RECENCY_HALF_LIFE_DAYS: f64 = 30.0;

/// The lowest score (before citations) a candidate may have and still reach a page whose last
/// place scores `last_on_page`: citations add at most [`W_CITATIONS`], so only candidates within
/// that of the last place are worth counting citations for.
pub fn citation_floor(last_on_page: f64) -> f64 {
    last_on_page - W_CITATIONS
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ScoreParts {
    pub relevance: f64,
    pub recency: f64,
    pub scope_proximity: f64,
    pub citations: f64,
}

impl ScoreParts {
    pub fn total(&self) -> f64 {
        W_RELEVANCE * self.relevance
            + W_RECENCY * self.recency
            + W_SCOPE * self.scope_proximity
            + W_CITATIONS * self.citations
    }
}

/// How much of its relevance a record of activity keeps for a question.
pub const ACTIVITY_FIT_FOR_QUESTIONS: f64 = 0.6;

/// The factor on an item's relevance for the query: 1 unless the query is a question and the
/// kind records activity rather than explains (a change, a release, release notes, a pull
/// request's context), then [`ACTIVITY_FIT_FOR_QUESTIONS`].
pub fn kind_fit(question: bool, kind: Kind) -> f64 {
    match kind {
        Kind::Change | Kind::Release | Kind::ReleaseNote | Kind::PrContext if question => {
            ACTIVITY_FIT_FOR_QUESTIONS
        }
        _ => 1.0,
    }
}

/// `raw / best`, clamped to 0–1; 0 when nothing scored.
pub fn relevance(raw: f64, best: f64) -> f64 {
    if best > 0.0 && raw.is_finite() { (raw / best).clamp(0.0, 1.0) } else { 0.0 }
}

/// `0.5 ^ (age_days / half_life)`; future timestamps count as now.
pub fn recency(updated_at_ms: i64, now_ms: i64) -> f64 {
    let age_days = (now_ms - updated_at_ms).max(0) as f64 / MILLIS_PER_DAY as f64;
    0.5_f64.powf(age_days / RECENCY_HALF_LIFE_DAYS)
}

pub fn scope_proximity(m: ScopeMatch) -> f64 {
    match m {
        ScopeMatch::Branch => 1.0,
        ScopeMatch::Project => 0.5,
        ScopeMatch::Org | ScopeMatch::Other => 0.2,
    }
}

/// Incoming relations at which the citations part reaches 1.0.
pub const CITATIONS_SATURATE_AT: f64 = 10.0;

/// The citations part for `incoming` live relations pointing at an item.
pub fn citations(incoming: i64) -> f64 {
    if incoming <= 0 {
        return 0.0;
    }
    ((1.0 + incoming as f64).ln() / (1.0 + CITATIONS_SATURATE_AT).ln()).min(1.0)
}

/// Share of the query words found in `text` (lowercased). A word counts as found when the
/// text contains its first characters (all but a short suffix), so `deploys` finds `deployment`.
pub fn term_coverage(words: &[&str], text_lower: &str) -> f64 {
    if words.is_empty() {
        return 0.0;
    }
    let found = words
        .iter()
        .filter(|w| {
            let n = w.chars().count();
            let keep = if n > 5 { n - 2 } else { n };
            let stem: String = w.chars().take(keep).collect();
            text_lower.contains(&stem)
        })
        .count();
    found as f64 / words.len() as f64
}

/// A cosine the model gives a passage that answers a query in other words: the dense route's
/// nearness counts in full from here.
pub const NEAR_COSINE: f64 = 0.6;

/// How near in meaning a dense-only hit is, 0–1: its cosine placed between the dense route's
/// floor ([`crate::fusion::MIN_DENSE_SIMILARITY`], 0) and [`NEAR_COSINE`] (1). Unlike
/// relevance, which is relative to the best candidate, it does not make the best of a poor lot
/// (the nearest item to a string of nonsense) look certain.
pub fn nearness(cosine: f64) -> f64 {
    let floor = crate::fusion::MIN_DENSE_SIMILARITY;
    ((cosine - floor) / (NEAR_COSINE - floor)).clamp(0.0, 1.0)
}

/// A hit's confidence: coverage scaled into 0.5–1.0 of itself by relevance.
pub fn confidence(coverage: f64, relevance: f64) -> f64 {
    (coverage * (0.5 + 0.5 * relevance)).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearness_runs_from_the_dense_floor_to_a_near_cosine() {
        assert_eq!(nearness(0.2), 0.0);
        assert_eq!(nearness(crate::fusion::MIN_DENSE_SIMILARITY), 0.0);
        assert!((nearness(0.425) - 0.5).abs() < 1e-9);
        assert_eq!(nearness(0.9), 1.0);
        assert!(confidence(nearness(0.3), 1.0) < 0.2, "the best of a poor lot is not certain");
    }

    #[test]
    fn weights_sum_to_one() {
        assert!((W_RELEVANCE + W_RECENCY + W_SCOPE + W_CITATIONS - 1.0).abs() < 1e-12);
    }

    #[test]
    fn recency_halves_every_half_life() {
        let now = 1_000 * MILLIS_PER_DAY;
        assert_eq!(recency(now, now), 1.0);
        assert!((recency(now - 30 * MILLIS_PER_DAY, now) - 0.5).abs() < 1e-9);
        assert_eq!(recency(now + 5, now), 1.0);
    }

    #[test]
    fn relevance_is_normalized() {
        assert_eq!(relevance(5.0, 10.0), 0.5);
        assert_eq!(relevance(1.0, 0.0), 0.0);
        assert_eq!(relevance(f64::NAN, 1.0), 0.0);
    }

    #[test]
    fn same_branch_outranks_same_project_at_equal_relevance() {
        let near = ScoreParts {
            relevance: 0.8,
            recency: 0.9,
            scope_proximity: scope_proximity(ScopeMatch::Branch),
            citations: 0.0,
        };
        let far = ScoreParts { scope_proximity: scope_proximity(ScopeMatch::Project), ..near };
        assert!(near.total() > far.total());
        assert!((near.total() - (0.32 + 0.27 + 0.2)).abs() < 1e-9);
    }

    #[test]
    fn citations_grow_then_saturate() {
        assert_eq!(citations(0), 0.0);
        assert!(citations(1) > 0.0 && citations(1) < citations(3));
        assert_eq!(citations(10), 1.0);
        assert_eq!(citations(500), 1.0);
    }

    #[test]
    fn a_question_weighs_records_of_activity_down_and_a_plain_query_does_not() {
        assert_eq!(kind_fit(true, Kind::Change), ACTIVITY_FIT_FOR_QUESTIONS);
        assert_eq!(kind_fit(true, Kind::Section), 1.0);
        assert_eq!(kind_fit(true, Kind::Decision), 1.0);
        assert_eq!(kind_fit(false, Kind::Change), 1.0);
    }

    #[test]
    fn coverage_counts_word_stems() {
        assert_eq!(term_coverage(&["deploys", "redis"], "the deployment uses redis"), 1.0);
        assert_eq!(term_coverage(&["kafka", "redis"], "redis only"), 0.5);
        assert_eq!(term_coverage(&[], "x"), 0.0);
    }
}
