//! Which of a prompt's candidates are put before the agent: the relevance rule.
//!
//! - **Lexical** (no embedding model): a candidate holding at least `floor` of the prompt's
//!   meaningful words ([`super::strength`]), strongest first. Counted on words, not on BM25,
//!   because a BM25 score has no fixed scale: the best match of an unrelated prompt scores as
//!   high, relative to the others, as the best match of a related one.
//! - **Hybrid**: a cosine does have a scale. A prompt about something stored resembles it
//!   clearly more than a prompt about nothing stored resembles anything (the measured ranges
//!   are in BENCHMARKS.md, "Hybrid recall"): so nothing is injected unless some candidate
//!   passes [`Hybrid::gate`]. Then the find's own ranking (both routes
//!   fused, session neighbours lifted) chooses: its best candidate, and those after it only
//!   while they stay close to it, since each one more is more often noise than answer.

use super::{Candidate, MAX_RECALLED};

/// How the candidates are chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    /// The lexical route alone: candidates in lexical order, kept at `floor`.
    Lexical { floor: f64 },
    /// Both routes: candidates in the find's fused order.
    Hybrid(Hybrid),
}

/// The hybrid rule's constants ([`Hybrid::TUNED`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hybrid {
    /// Nothing is injected unless some candidate's cosine with the prompt reaches this.
    pub gate: f64,
    /// A candidate after the first is shown when its relevance is at least this share of the
    /// first's …
    pub more_relevance: f64,
    /// … and it holds at least this share of the prompt's words.
    pub more_strength: f64,
}

impl Hybrid {
    pub const TUNED: Hybrid = Hybrid { gate: 0.4, more_relevance: 0.95, more_strength: 0.8 };
}

/// The default floor of the lexical rule: all of a prompt's three or four meaningful words,
/// four of five, five of six — the lowest at which prompts about nothing stored inject
/// nothing on both dev sets (BENCHMARKS.md).
pub const DEFAULT_FLOOR: f64 = 0.8;

/// The candidates `rule` keeps, at most [`MAX_RECALLED`], in the order they are shown; none
/// when none passes. `candidates` come best first (lexical order, or the fused one).
pub fn select(candidates: Vec<Candidate>, rule: &Rule) -> Vec<Candidate> {
    let mut kept = match rule {
        Rule::Lexical { floor } => {
            let mut kept: Vec<Candidate> = candidates.into_iter().filter(|c| c.strength >= *floor).collect();
            // A stable sort: equally strong matches keep the lexical order.
            kept.sort_by(|a, b| b.strength.total_cmp(&a.strength));
            kept
        }
        Rule::Hybrid(h) => hybrid(candidates, h),
    };
    kept.truncate(MAX_RECALLED);
    kept
}

fn hybrid(candidates: Vec<Candidate>, h: &Hybrid) -> Vec<Candidate> {
    let resembles = candidates.iter().any(|c| c.cosine.is_some_and(|cos| cos >= h.gate));
    let mut candidates = candidates.into_iter();
    let Some(first) = candidates.next().filter(|_| resembles) else { return Vec::new() };
    let bar = h.more_relevance * first.relevance;
    let more = candidates.filter(|c| c.relevance >= bar && c.strength >= h.more_strength);
    std::iter::once(first).chain(more).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(id: &str, strength: f64, relevance: f64, cosine: Option<f64>) -> Candidate {
        Candidate {
            id: id.into(),
            kind: "decision".into(),
            title: id.into(),
            passage: String::new(),
            strength,
            relevance,
            cosine,
            updated_at: 0,
            note: None,
        }
    }

    fn ids(kept: &[Candidate]) -> Vec<&str> {
        kept.iter().map(|c| c.id.as_str()).collect()
    }

    #[test]
    fn lexically_nothing_below_the_floor_is_kept_and_the_strongest_come_first() {
        let rule = Rule::Lexical { floor: 0.5 };
        let picked = select(
            vec![
                candidate("a", 0.3, 1.0, None),
                candidate("b", 0.6, 0.9, None),
                candidate("c", 0.9, 0.8, None),
            ],
            &rule,
        );
        assert_eq!(ids(&picked), ["c", "b"]);
        assert!(select(vec![candidate("a", 0.49, 1.0, None)], &rule).is_empty());
        let many: Vec<Candidate> = (0..9).map(|i| candidate(&i.to_string(), 1.0, 1.0, None)).collect();
        assert_eq!(select(many, &rule).len(), MAX_RECALLED);
    }

    #[test]
    fn hybrid_injects_nothing_for_a_prompt_that_resembles_nothing() {
        let rule = Rule::Hybrid(Hybrid::TUNED);
        let unrelated = vec![candidate("a", 1.0, 1.0, Some(0.2)), candidate("b", 1.0, 0.9, Some(0.3))];
        assert!(select(unrelated, &rule).is_empty(), "even one holding the prompt's words");
        assert!(select(vec![candidate("a", 1.0, 1.0, None)], &rule).is_empty(), "no cosine: no resemblance");
    }

    #[test]
    fn hybrid_shows_the_best_and_only_those_close_behind_it() {
        let rule = Rule::Hybrid(Hybrid::TUNED);
        let found = vec![
            candidate("best", 0.2, 1.0, Some(0.5)),
            candidate("close", 1.0, 0.97, Some(0.3)),
            candidate("weak words", 0.5, 0.99, Some(0.6)),
            candidate("far", 1.0, 0.5, Some(0.7)),
        ];
        assert_eq!(ids(&select(found, &rule)), ["best", "close"]);
    }
}
