//! Fusion of the lexical and dense candidate lists into one relevance per item.
//!
//! ```text
//! relevance = w · lexical / max(lexical) + (1 − w) · max(cosine, 0) / max(cosine)
//! ```
//! Each list is scaled by its own best score, so both lie in 0–1 whatever BM25's magnitude; an
//! item missing from a list scores 0 there. Score fusion keeps how much better the best hit is,
//! which reciprocal-rank fusion throws away.
//!
//! [`LEXICAL_WEIGHT`] was tuned on the SciFact **train** queries only (`cortex eval --split
//! train --weights 0.2,…,0.7`): nDCG@10 0.718, 0.727, 0.730, **0.732**, 0.729, 0.726 for
//! weights 0.2–0.7, against 0.702 lexical and 0.654 dense. On the test queries (reported, not
//! tuned on) it gives 0.732 against 0.690 and 0.648. BENCHMARKS.md has the tables.

use std::collections::HashMap;
use std::hash::Hash;

pub const LEXICAL_WEIGHT: f64 = 0.5;

/// Dense candidates below this cosine are dropped before fusion. A nearest neighbour always
/// exists, however unrelated; for all-MiniLM-L6-v2, unrelated English texts score about
/// 0.0–0.2 and paraphrases 0.4 and up. Without a floor, a nonsense query returns the whole
/// memory in order of vague resemblance.
pub const MIN_DENSE_SIMILARITY: f64 = 0.25;

/// Fused relevance per key, best first. Ties keep lexical order, then dense order.
pub fn fuse<K: Copy + Eq + Hash>(
    lexical: &[(K, f64)],
    dense: &[(K, f64)],
    lexical_weight: f64,
) -> Vec<(K, f64)> {
    let best = |list: &[(K, f64)]| list.iter().map(|(_, s)| *s).fold(0.0_f64, f64::max);
    let (best_lex, best_dense) = (best(lexical), best(dense));
    let mut order: Vec<K> = Vec::with_capacity(lexical.len() + dense.len());
    let mut scores: HashMap<K, f64> = HashMap::with_capacity(lexical.len() + dense.len());
    for (list, weight, top) in
        [(lexical, lexical_weight, best_lex), (dense, 1.0 - lexical_weight, best_dense)]
    {
        for (key, score) in list {
            let part = if top > 0.0 { weight * score.max(0.0) / top } else { 0.0 };
            match scores.get_mut(key) {
                Some(total) => *total += part,
                None => {
                    scores.insert(*key, part);
                    order.push(*key);
                }
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

    #[test]
    fn an_item_in_both_lists_beats_one_in_either() {
        let fused = fuse(&[(1, 10.0), (2, 8.0)], &[(3, 0.9), (1, 0.8)], 0.5);
        assert_eq!(fused[0].0, 1);
        assert!((fused[0].1 - (0.5 + 0.5 * 0.8 / 0.9)).abs() < 1e-9);
        assert_eq!(fused.len(), 3);
    }

    #[test]
    fn weights_select_a_single_retriever() {
        let lex = [(1, 5.0), (2, 4.0)];
        let dense = [(2, 0.9), (1, 0.1)];
        assert_eq!(fuse(&lex, &dense, 1.0)[0].0, 1);
        assert_eq!(fuse(&lex, &dense, 0.0)[0].0, 2);
        assert!(fuse::<u8>(&[], &[], 0.5).is_empty());
    }
}
