//! Turning nearest vectors into hits: exact scores, then one hit per item.

use super::{DenseHit, Span};
use cortex_store::{ItemFacts, ItemVectors};
use std::collections::HashMap;
use uuid::Uuid;

/// Candidates the scan ranks beyond those wanted, so that an entry the int8 approximation put
/// just below the cut can move above it once scored exactly.
pub(super) const RESCORE_MARGIN: usize = 16;

/// One nearest vector: the item, the similarity, the chunk (if a chunk's), the item's facts.
pub(super) type Nearest = (Uuid, f32, Option<Span>, ItemFacts);

/// Replaces each approximate similarity with the exact one from the item's stored vectors, and
/// sorts best first. An entry whose vectors are gone (deleted since the scan) keeps its score.
pub(super) fn rescore(found: &mut [Nearest], exact: &[ItemVectors], query: &[f32]) {
    let by_id: HashMap<Uuid, &ItemVectors> = exact.iter().map(|v| (v.id, v)).collect();
    for (id, score, chunk, _) in found.iter_mut() {
        let Some(vectors) = by_id.get(id) else { continue };
        let vector = match chunk {
            None => Some(vectors.vector.as_slice()),
            Some((start, end)) => vectors
                .chunks
                .iter()
                .find(|c| (c.start, c.end) == (*start, *end))
                .map(|c| c.vector.as_slice()),
        };
        if let Some(exact) = vector.and_then(|v| cortex_vector::cosine(v, query)) {
            *score = exact;
        }
    }
    found.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
}

/// An item's best exact similarity to `query`, over its whole text and its chunks: what the
/// dense route would have scored it had it been among the nearest. `None` when no vector of
/// it has the query's dimension.
pub(crate) fn best_similarity(vectors: &ItemVectors, query: &[f32]) -> Option<f32> {
    let chunks = vectors.chunks.iter().map(|c| c.vector.as_slice());
    std::iter::once(vectors.vector.as_slice())
        .chain(chunks)
        .filter_map(|vector| cortex_vector::cosine(vector, query))
        .reduce(f32::max)
}

/// Nearest vectors (best first) grouped into at most `k` items, each at its best score, with
/// its best chunk and how many of its chunks are among them.
pub(super) fn group_by_item(
    found: impl Iterator<Item = (Uuid, f32, Option<Span>, ItemFacts)>,
    k: usize,
) -> Vec<DenseHit> {
    let mut hits: Vec<DenseHit> = Vec::new();
    let mut at: HashMap<Uuid, usize> = HashMap::new();
    for (id, score, chunk, facts) in found {
        match at.get(&id) {
            Some(&i) => {
                let hit = &mut hits[i];
                hit.score = hit.score.max(score);
                if chunk.is_some() {
                    hit.chunks_matched += 1;
                    hit.chunk = hit.chunk.or(chunk);
                }
            }
            None => {
                at.insert(id, hits.len());
                hits.push(DenseHit { id, score, facts, chunk, chunks_matched: usize::from(chunk.is_some()) });
            }
        }
    }
    // Scores arrive best first but a backend's relaxed order may differ slightly.
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
    hits.truncate(k);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;
    use cortex_domain::{Kind, Scope};
    use cortex_store::ChunkVector;

    fn facts() -> ItemFacts {
        ItemFacts {
            kind: Kind::Runbook,
            scope: Scope::default(),
            created_at: 0,
            updated_at: 0,
            expires_at: None,
            status: None,
            tags: Vec::new(),
            superseded: false,
            deleted: false,
            author: None,
            agent: None,
        }
    }

    #[test]
    fn exact_vectors_replace_approximate_scores_and_reorder() {
        let (a, b, gone) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
        let query = [0.6, 0.8];
        let mut found =
            vec![(a, 0.99, None, facts()), (b, 0.98, Some((10, 20)), facts()), (gone, 0.5, None, facts())];
        let exact = vec![
            ItemVectors { id: a, vector: vec![1.0, 0.0], chunks: Vec::new() },
            ItemVectors {
                id: b,
                vector: vec![0.0, 1.0],
                chunks: vec![ChunkVector { start: 10, end: 20, vector: vec![0.6, 0.8] }],
            },
        ];
        rescore(&mut found, &exact, &query);
        let scores: Vec<(Uuid, f32)> = found.iter().map(|n| (n.0, n.1)).collect();
        assert_eq!(scores, vec![(b, 1.0), (a, 0.6), (gone, 0.5)], "the chunk's own vector scores the chunk");
    }

    #[test]
    fn an_item_scores_its_best_vector_whole_or_chunk() {
        let (a, b, other_model) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
        let vectors = [
            ItemVectors {
                id: a,
                vector: vec![1.0, 0.0],
                chunks: vec![ChunkVector { start: 0, end: 5, vector: vec![0.6, 0.8] }],
            },
            ItemVectors { id: b, vector: vec![0.6, 0.8], chunks: Vec::new() },
            ItemVectors { id: other_model, vector: vec![1.0, 0.0, 0.0], chunks: Vec::new() },
        ];
        let found: Vec<Option<f32>> = vectors.iter().map(|v| best_similarity(v, &[0.0, 1.0])).collect();
        assert_eq!(
            found,
            [Some(0.8), Some(0.8), None],
            "a's chunk beats its whole text; another dimension scores nothing"
        );
    }

    #[test]
    fn chunks_of_one_item_make_one_hit_with_its_best_chunk() {
        let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let found = vec![
            (a, 0.9, Some((100, 200)), facts()),
            (b, 0.8, None, facts()),
            (a, 0.7, None, facts()),
            (a, 0.6, Some((0, 100)), facts()),
        ];
        let hits = group_by_item(found.into_iter(), 10);
        assert_eq!(hits.len(), 2);
        assert_eq!(
            (hits[0].id, hits[0].score, hits[0].chunk, hits[0].chunks_matched),
            (a, 0.9, Some((100, 200)), 2)
        );
        assert_eq!((hits[1].id, hits[1].chunk, hits[1].chunks_matched), (b, None, 0));
        assert_eq!(group_by_item(vec![(b, 0.5, None, facts())].into_iter(), 0).len(), 0);
    }
}
