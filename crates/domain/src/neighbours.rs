//! Session neighbours: items stored one after another in the same session
//! (`source.session`) — the turns of a conversation, the notes of one working session —
//! answer questions together. A question's words often match the turn that asks ("You play
//! any instruments?") while the answer is the reply stored right after it ("Yeah, I play
//! clarinet!"), which shares none of them.
//!
//! So in `auto` and `deep`, each of a find's best candidates (the first half of its page, at
//! most [`MAX_ANCHORS`]) lifts the item stored right after it in its session to at least
//! [`NEXT_SHARE`] of its own relevance, and the item right before to [`PREVIOUS_SHARE`]. A
//! neighbour keeps its own relevance when that is higher; one that no route found joins the
//! candidates. The store finds neighbours among the [`NEIGHBOUR_WINDOW`] items stored on
//! either side (storage order is creation order), so a session interleaved with many other
//! writes loses them; items without a session have none.
//!
//! The shares were chosen on locomo-dev (turns stored per session, in order, with
//! `source.session`; figures in BENCHMARKS.md): the reply counts more than the turn before.
//! Items with no session (SciFact's abstracts) are untouched.

use std::collections::HashMap;
use std::hash::Hash;

/// The reply: the item stored right after a candidate in its session.
pub const NEXT_SHARE: f64 = 0.8;
/// The item stored right before a candidate in its session.
pub const PREVIOUS_SHARE: f64 = 0.6;
/// Candidates whose neighbours are looked up, at most: only the best can lift a neighbour onto
/// the page (a neighbour gets a share of its anchor's relevance).
pub const MAX_ANCHORS: usize = 10;
/// How many items stored on either side of a candidate the store looks through for the nearest
/// of the same session.
pub const NEIGHBOUR_WINDOW: usize = 16;

/// Where a neighbour was stored relative to its anchor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Before,
    After,
}

impl Side {
    /// The share of its anchor's relevance a neighbour on this side gets at least.
    pub fn share(self) -> f64 {
        match self {
            Side::Before => PREVIOUS_SHARE,
            Side::After => NEXT_SHARE,
        }
    }
}

/// How many of a find's best candidates lift their neighbours, for a page ending at `page_end`
/// (offset + limit): the first half of it. A neighbour gets at most [`NEXT_SHARE`] of its
/// anchor's relevance, so one lifted by the second half rarely passes the page's last place;
/// on locomo-dev the first 5 anchors of a 10-hit page gave the same figures, to four places, as
/// all 10 or 20, at half the lookups.
pub fn anchors(page_end: usize) -> usize {
    page_end.div_ceil(2).min(MAX_ANCHORS)
}

/// The relevances with each neighbour lifted to at least its share of its anchor's, best
/// first; neighbours not among `relevance` are appended with that share. `links` are
/// (anchor, neighbour, side); an anchor missing from `relevance` lifts nothing. Ties keep the
/// order of `relevance`, then of `links`.
pub fn lift<K: Copy + Eq + Hash>(relevance: &[(K, f64)], links: &[(K, K, Side)]) -> Vec<(K, f64)> {
    let of: HashMap<K, f64> = relevance.iter().copied().collect();
    let mut lifted: Vec<(K, f64)> = relevance.to_vec();
    let mut at: HashMap<K, usize> = relevance.iter().enumerate().map(|(i, (k, _))| (*k, i)).collect();
    for (anchor, neighbour, side) in links {
        // Shares come from the anchors' own relevance, not from one another's lifts: a chain of
        // turns does not carry a match down the conversation.
        let Some(anchor_relevance) = of.get(anchor) else { continue };
        let share = side.share() * anchor_relevance;
        match at.get(neighbour) {
            Some(&i) => lifted[i].1 = lifted[i].1.max(share),
            None => {
                at.insert(*neighbour, lifted.len());
                lifted.push((*neighbour, share));
            }
        }
    }
    lifted.sort_by(|a, b| b.1.total_cmp(&a.1));
    lifted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(ranked: &[(u32, f64)]) -> Vec<u32> {
        ranked.iter().map(|(k, _)| *k).collect()
    }

    #[test]
    fn the_reply_to_the_best_match_joins_right_behind_it() {
        // 1 asks the question (best match); 9, its reply, matched nothing.
        let relevance = [(1, 1.0), (2, 0.7), (3, 0.5)];
        let lifted = lift(&relevance, &[(1, 9, Side::After)]);
        assert_eq!(keys(&lifted), [1, 9, 2, 3]);
        assert!((lifted[1].1 - NEXT_SHARE).abs() < 1e-12);
    }

    #[test]
    fn the_turn_before_counts_less_than_the_reply() {
        let relevance = [(1, 1.0), (2, 0.7), (3, 0.5)];
        let lifted = lift(&relevance, &[(1, 8, Side::Before), (1, 9, Side::After)]);
        assert_eq!(keys(&lifted), [1, 9, 2, 8, 3]);
    }

    #[test]
    fn a_neighbour_keeps_a_higher_relevance_of_its_own() {
        let relevance = [(1, 1.0), (2, 0.95), (3, 0.5)];
        let lifted = lift(&relevance, &[(1, 2, Side::After), (1, 3, Side::Before)]);
        assert_eq!(lifted, vec![(1, 1.0), (2, 0.95), (3, PREVIOUS_SHARE)]);
    }

    #[test]
    fn lifts_do_not_chain_and_unknown_anchors_lift_nothing() {
        // 9 is lifted by 1; 9's own neighbour 10 gets nothing from that lift.
        let relevance = [(1, 1.0), (2, 0.3)];
        let lifted = lift(&relevance, &[(1, 9, Side::After), (9, 10, Side::After), (7, 11, Side::After)]);
        assert_eq!(keys(&lifted), [1, 9, 2]);
        // A neighbour of two anchors takes the larger share.
        let lifted = lift(&[(1, 1.0), (2, 0.9)], &[(2, 5, Side::After), (1, 5, Side::Before)]);
        assert!((lifted.iter().find(|(k, _)| *k == 5).unwrap().1 - 0.72).abs() < 1e-12);
    }

    #[test]
    fn anchors_are_the_first_half_of_the_page_up_to_a_cap() {
        assert_eq!(anchors(10), 5);
        assert_eq!(anchors(1), 1);
        assert_eq!(anchors(500), MAX_ANCHORS);
    }
}
