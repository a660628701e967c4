//! Fusion of the lexical and dense candidate lists into one relevance per item.
//!
//! ```text
//! relevance = w · lexical / max(lexical) + (1 − w) · trust · dense
//! dense     = max(cosine − DENSE_ZERO, 0) / (max(cosine) − DENSE_ZERO)
//! trust     = agreement · distinctness                              (per query, 0–1)
//! agreement = min(1, (1 + shared) / (1 + AGREEMENT_FULL))           shared: items in both top 10s
//! distinctness = min(1, (cosine₁ − cosine₁₀) / SPREAD_FULL)          cosine₁₀: the floor if < 10
//! ```
//! Each list is scaled by its own best score, so both lie in 0–1 whatever BM25's magnitude. A
//! lexical candidate the dense list left out is scored at its own cosine (read from its stored
//! vectors by the caller, `dense_of_lexical`), scaled like the list; only a dense-only item
//! scores 0 in the lexical part. Score fusion keeps how much better the best hit is, which
//! reciprocal-rank fusion throws away; RRF lost to it on both dev sets.
//!
//! Why the dense share depends on the query: all-MiniLM-L6-v2 is a good second opinion on
//! abstracts (SciFact) and a poor one on short dialogue turns (locomo-dev, where dense alone
//! recalls far less than lexical). A fixed weight tuned on one set pulls the other down. Two
//! signals, measured per query on both sets, said when dense helps:
//! - **agreement**: when the lexical and dense top 10s share no item, fusing at a fixed weight
//!   lowered the scores on both sets; with two or more shared it raised them. Dense that
//!   disagrees with every one of lexical's best is more often wrong.
//! - **distinctness**: when the dense similarities are flat (the first and the tenth within a
//!   few hundredths), the model does not tell the candidates apart; fusing them added nothing
//!   on either set.
//!
//! Dense cosines are measured from [`DENSE_ZERO`], not from 0: every English text resembles
//! every other a little, so scaling from 0 gave the whole dense list most of the weight for
//! being in it.
//!
//! Why the cosine of every lexical candidate: the dense pool ends somewhere, and a lexical
//! match just past it resembles the query about as much as the last item in it; counting it
//! as 0 made the ranking depend on where the pool ended. Filled in, the pool's size no longer
//! changes the ranking, so `deep` ranks `auto`'s pools. The trust is still measured on the
//! dense route's own list: it says how far that route's judgement is worth following. BM25 for
//! dense-only items (the reverse) added nothing: few of them hold any query word.
//!
//! [`Fusion::TUNED`] was chosen on locomo-dev and the SciFact **train** queries together
//! (`cortex-bench eval --dump`, then every rule replayed offline over the dumped lists), keeping only
//! settings under which no locomo-dev category fell below the lexical route
//! (`scripts/fusion_replay.py` replays this rule over the dumps). BENCHMARKS.md has the
//! figures, before and after, with SciFact reported on its test queries.

use std::collections::{HashMap, HashSet};
use std::hash::Hash;

/// Dense candidates below this cosine are dropped before fusion. A nearest neighbour always
/// exists, however unrelated; for all-MiniLM-L6-v2, unrelated English texts score about
/// 0.0–0.2 and paraphrases 0.4 and up. Without a floor, a nonsense query returns the whole
/// memory in order of vague resemblance.
pub const MIN_DENSE_SIMILARITY: f64 = 0.25;

/// The cosine that counts as no resemblance at all in the dense part.
pub const DENSE_ZERO: f64 = 0.2;

/// How many of each list's best are compared for agreement and spread: the page an agent
/// reads by default.
pub const TRUST_DEPTH: usize = 10;

/// Shared items among the two top 10s from which dense is trusted fully.
pub const AGREEMENT_FULL: usize = 3;

/// Spread between the first and the tenth dense similarity from which dense is trusted fully.
pub const SPREAD_FULL: f64 = 0.2;

/// How a find fuses its routes. Not part of a find request (no agent chooses it): finds use
/// [`Fusion::TUNED`]; the evaluation harness (`cortex-bench eval`) compares it with other rules
/// through the service's `find_with_fusion`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fusion {
    /// Share of the lexical relevance; the dense part has the rest, times the query's trust.
    pub lexical_weight: f64,
    /// The cosine counted as zero in the dense part.
    pub dense_zero: f64,
    /// Whether the dense share follows the query's trust ([`dense_trust`]); off, it is fixed.
    pub adaptive: bool,
    /// Whether the best hits bring their session neighbours (`neighbours.rs`).
    pub neighbours: bool,
    /// Whether lexical candidates the dense list left out are fused at their own cosine
    /// ([`fuse`]'s `dense_of_lexical`) rather than at 0.
    pub fill_dense: bool,
}

impl Fusion {
    pub const TUNED: Fusion = Fusion {
        lexical_weight: 0.4,
        dense_zero: DENSE_ZERO,
        adaptive: true,
        neighbours: true,
        fill_dense: true,
    };

    /// A fixed lexical weight, each list scaled by its best, no neighbours, no filled cosines:
    /// the earlier rule, kept to compare against. `fixed(0.0)` is the dense route alone,
    /// `fixed(1.0)` the lexical one.
    pub const fn fixed(lexical_weight: f64) -> Fusion {
        Fusion { lexical_weight, dense_zero: 0.0, adaptive: false, neighbours: false, fill_dense: false }
    }
}

/// How far the dense list is to be trusted for this query (0–1): agreement with the lexical
/// list times the spread of its own similarities. Both lists best first. With no lexical
/// candidate there is nothing to disagree with and dense is all there is: 1.
pub fn dense_trust<K: Copy + Eq + Hash>(lexical: &[(K, f64)], dense: &[(K, f64)]) -> f64 {
    if dense.is_empty() {
        return 0.0;
    }
    if lexical.is_empty() {
        return 1.0;
    }
    let lexical_best: HashSet<K> = lexical.iter().take(TRUST_DEPTH).map(|(k, _)| *k).collect();
    let shared = dense.iter().take(TRUST_DEPTH).filter(|(k, _)| lexical_best.contains(k)).count();
    let agreement = ((1 + shared) as f64 / (1 + AGREEMENT_FULL) as f64).min(1.0);
    // A list shorter than the depth counts its missing places at the floor: one strong match
    // among nothing else is distinct.
    let first = dense[0].1;
    let tenth = dense.get(TRUST_DEPTH - 1).map_or(MIN_DENSE_SIMILARITY, |(_, s)| *s);
    let distinctness = ((first - tenth) / SPREAD_FULL).clamp(0.0, 1.0);
    agreement * distinctness
}

/// Fused relevance per key, best first. Ties keep lexical order, then dense order. Both lists
/// best first. `dense_of_lexical` holds the cosine of lexical candidates that `dense` left out
/// (any order; empty when not looked up): they are fused at it, scaled as `dense` is, instead
/// of at 0. It does not enter the trust, which judges the dense route's own list.
pub fn fuse<K: Copy + Eq + Hash>(
    lexical: &[(K, f64)],
    dense: &[(K, f64)],
    dense_of_lexical: &[(K, f64)],
    fusion: &Fusion,
) -> Vec<(K, f64)> {
    let lexical_top = lexical.iter().map(|(_, s)| *s).fold(0.0_f64, f64::max);
    let all_dense = || dense.iter().chain(dense_of_lexical);
    // A filled cosine can pass the list's best only when the nearest search is approximate.
    let dense_top = all_dense().map(|(_, s)| *s).fold(0.0_f64, f64::max);
    let trust = if fusion.adaptive { dense_trust(lexical, dense) } else { 1.0 };
    let dense_weight = (1.0 - fusion.lexical_weight) * trust;
    let zero = fusion.dense_zero;
    let lexical_part = |s: f64| if lexical_top > 0.0 { s.max(0.0) / lexical_top } else { 0.0 };
    let dense_part = |s: f64| if dense_top > zero { (s - zero).max(0.0) / (dense_top - zero) } else { 0.0 };
    let mut order: Vec<K> = Vec::with_capacity(lexical.len() + dense.len());
    let mut scores: HashMap<K, f64> = HashMap::with_capacity(lexical.len() + dense.len());
    let parts = lexical
        .iter()
        .map(|(k, s)| (*k, fusion.lexical_weight * lexical_part(*s)))
        .chain(all_dense().map(|(k, s)| (*k, dense_weight * dense_part(*s))));
    for (key, part) in parts {
        match scores.get_mut(&key) {
            Some(total) => *total += part,
            None => {
                scores.insert(key, part);
                order.push(key);
            }
        }
    }
    let mut fused: Vec<(K, f64)> = order.into_iter().map(|k| (k, scores[&k])).collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1));
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(fused: &[(u32, f64)]) -> Vec<u32> {
        fused.iter().map(|(k, _)| *k).collect()
    }

    /// Dense hits for `keys`, from `first` down by `step`.
    fn dense_list(keys: &[u32], first: f64, step: f64) -> Vec<(u32, f64)> {
        keys.iter().enumerate().map(|(i, k)| (*k, first - step * i as f64)).collect()
    }

    #[test]
    fn fixed_weights_reproduce_the_old_rule() {
        let fused = fuse(&[(1, 10.0), (2, 8.0)], &[(3, 0.9), (1, 0.8)], &[], &Fusion::fixed(0.5));
        assert_eq!(keys(&fused), [1, 3, 2]);
        assert!((fused[0].1 - (0.5 + 0.5 * 0.8 / 0.9)).abs() < 1e-9);
        let lex = [(1, 5.0), (2, 4.0)];
        let dense = [(2, 0.9), (1, 0.1)];
        assert_eq!(fuse(&lex, &dense, &[], &Fusion::fixed(1.0))[0].0, 1);
        assert_eq!(fuse(&lex, &dense, &[], &Fusion::fixed(0.0))[0].0, 2);
        assert!(fuse::<u8>(&[], &[], &[], &Fusion::TUNED).is_empty());
    }

    #[test]
    fn dense_that_agrees_and_separates_is_trusted_fully() {
        let lexical: Vec<(u32, f64)> = (1..=10).map(|k| (k, 20.0 - k as f64)).collect();
        let dense = dense_list(&[3, 7, 9, 101, 102, 103, 104, 105, 106, 107], 0.8, 0.04);
        assert_eq!(dense_trust(&lexical, &dense), 1.0);
        let one_short = dense_list(&[3, 7, 100, 101, 102, 103, 104, 105, 106, 107], 0.8, 0.04);
        assert!((dense_trust(&lexical, &one_short) - 3.0 / 4.0).abs() < 1e-12);
    }

    #[test]
    fn dense_that_disagrees_with_every_lexical_best_counts_a_quarter() {
        let lexical: Vec<(u32, f64)> = (1..=10).map(|k| (k, 20.0 - k as f64)).collect();
        let dense = dense_list(&[100, 101, 102, 103, 104, 105, 106, 107, 108, 109], 0.8, 0.04);
        assert!((dense_trust(&lexical, &dense) - 1.0 / 4.0).abs() < 1e-12);
        let one_shared = dense_list(&[100, 5, 102, 103, 104, 105, 106, 107, 108, 109], 0.8, 0.04);
        assert!((dense_trust(&lexical, &one_shared) - 2.0 / 4.0).abs() < 1e-12);
    }

    #[test]
    fn flat_dense_similarities_are_not_trusted() {
        let lexical: Vec<(u32, f64)> = (1..=10).map(|k| (k, 20.0 - k as f64)).collect();
        let flat = dense_list(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.50, 0.002);
        assert!(dense_trust(&lexical, &flat) < 0.1, "{}", dense_trust(&lexical, &flat));
        // Fewer than ten: the missing places count at the floor, so one clear match is distinct
        // (it agrees with one lexical best: two quarters).
        assert!((dense_trust(&lexical, &[(1, 0.7)]) - 2.0 / 4.0).abs() < 1e-12);
        assert_eq!(dense_trust::<u32>(&[], &[(1, 0.3)]), 1.0);
        assert_eq!(dense_trust::<u32>(&lexical, &[]), 0.0);
    }

    #[test]
    fn a_lexical_ranking_survives_a_dense_list_that_disagrees() {
        // Dense prefers items lexical never matched.
        let lexical: Vec<(u32, f64)> = (1..=10).map(|k| (k, 10.0 - 0.5 * (k - 1) as f64)).collect();
        let dense = dense_list(&[100, 101, 102, 103, 104, 105, 106, 107, 108, 109], 0.7, 0.03);
        let tuned = fuse(&lexical, &dense, &[], &Fusion::TUNED);
        assert_eq!(&keys(&tuned)[..3], [1, 2, 3], "lexical's order kept on top: {tuned:?}");
        // The fixed rule lets dense's unmatched items in above lexical's second best.
        let fixed = fuse(&lexical, &dense, &[], &Fusion::fixed(0.5));
        assert_eq!(keys(&fixed)[..2], [1, 100]);
    }

    #[test]
    fn agreeing_dense_lifts_an_item_both_routes_found() {
        // 4 is lexical's fourth but dense's first, and the two lists share three items.
        let lexical = [(1, 10.0), (2, 9.5), (3, 9.0), (4, 8.8), (5, 8.0)];
        let dense = dense_list(&[4, 1, 2, 100, 101, 102, 103, 104, 105, 106], 0.8, 0.05);
        let fused = fuse(&lexical, &dense, &[], &Fusion::TUNED);
        let mut top_two = keys(&fused)[..2].to_vec();
        top_two.sort_unstable();
        assert_eq!(top_two, [1, 4], "{fused:?}");
        assert!(fused.iter().position(|(k, _)| *k == 4) < fused.iter().position(|(k, _)| *k == 2));
    }

    #[test]
    fn a_lexical_candidate_the_dense_list_left_out_counts_at_its_own_cosine() {
        // Lexical ties 1 and 2; the dense pool holds neither, but 2 resembles the query far more.
        let lexical = [(1, 5.0), (2, 5.0)];
        let dense = dense_list(&[100, 101, 102, 103, 104, 105, 106, 107, 108, 109], 0.8, 0.03);
        let score = |fused: &[(u32, f64)], k| fused.iter().find(|(key, _)| *key == k).unwrap().1;
        let unfilled = fuse(&lexical, &dense, &[], &Fusion::TUNED);
        assert_eq!(score(&unfilled, 1), score(&unfilled, 2), "both at 0 in the dense part");
        let filled = fuse(&lexical, &dense, &[(1, 0.3), (2, 0.7)], &Fusion::TUNED);
        assert_eq!(keys(&filled)[0], 2, "{filled:?}");
        // Scaled as the dense list is, at the weight its trust gives (it shares nothing: the
        // least agreement, one part in 1 + AGREEMENT_FULL).
        let dense_weight = (1.0 - Fusion::TUNED.lexical_weight) / (1 + AGREEMENT_FULL) as f64;
        let expected = dense_weight * (0.7 - 0.3) / (0.8 - DENSE_ZERO);
        assert!((score(&filled, 2) - score(&filled, 1) - expected).abs() < 1e-12);
        // The trust judges the dense route's own list: filling does not change its items' scores.
        assert_eq!(score(&filled, 100), score(&unfilled, 100));
    }

    #[test]
    fn cosines_count_from_the_dense_zero() {
        // One dense item at the zero adds nothing; the best dense item adds its full share.
        let fused = fuse(&[(1, 1.0), (2, 1.0)], &[(1, 0.9), (2, DENSE_ZERO)], &[], &Fusion::TUNED);
        let score = |k| fused.iter().find(|(key, _)| *key == k).unwrap().1;
        assert!((score(2) - Fusion::TUNED.lexical_weight).abs() < 1e-12);
        assert!(score(1) > score(2));
    }
}
