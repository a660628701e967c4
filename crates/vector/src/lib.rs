//! An exact flat index over int8-quantized vectors.
//!
//! Each vector is stored as `i8` values with one scale (`max |x| / 127`), a quarter of the
//! memory of `f32`. A search quantizes the query the same way and scans every entry that passes
//! the caller's filter, scoring `dot(q, v) · scale_q · scale_v` in integer arithmetic, which the
//! compiler vectorizes. The error against the f32 cosine is about 1e-3 for unit vectors: enough
//! to choose candidates, which the service then scores exactly with their f32 vectors. The
//! scan (`scan.rs`) is compiled for AVX-512 and AVX2 besides the baseline and picks the widest
//! the CPU has at run time (an `unsafe` call guarded by that check). An index of 50,000
//! entries or more is scanned on every core at once.
//!
//! [`VectorIndex`] holds its vectors in memory; [`MappedFile`] (`file.rs`) is the same kind of
//! vectors written to a file and mapped, which a fresh process searches without reading them.

mod file;
mod quantize;
pub mod sample;
mod scan;
#[cfg(test)]
mod scan_properties;

pub use file::{FileError, FileWriter, MappedFile, Written, write_file};
pub use quantize::{Quantized, dot_i8};
pub use scan::Slab;

use std::collections::HashMap;
use std::hash::Hash;
use uuid::Uuid;

/// A search that could not look at every entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScanError {
    /// The scan of these entries panicked; its message.
    WorkerPanicked { entries: std::ops::Range<usize>, message: String },
}

impl std::fmt::Display for ScanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScanError::WorkerPanicked { entries, message } => write!(
                f,
                "the vector scan of entries {}..{} panicked ({message}); the search is incomplete, so it failed",
                entries.start, entries.end
            ),
        }
    }
}

impl std::error::Error for ScanError {}

pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".into())
}

/// The exact cosine similarity of two unit vectors (their f32 dot product); `None` when their
/// dimensions differ.
pub fn cosine(a: &[f32], b: &[f32]) -> Option<f32> {
    (a.len() == b.len()).then(|| a.iter().zip(b).map(|(x, y)| x * y).sum())
}

/// One scored entry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored<M, K = Uuid> {
    pub id: K,
    /// Approximate cosine similarity, -1–1.
    pub score: f32,
    pub meta: M,
}

/// Vectors with a per-entry `M` (what filters need: kind, scope, times), all of one dimension,
/// each under a key `K` (an item id, or an item id and a chunk of its text).
pub struct VectorIndex<M, K = Uuid> {
    dimension: usize,
    ids: Vec<K>,
    metas: Vec<M>,
    scales: Vec<f32>,
    /// `dimension` values per entry, entries back to back: one allocation, scanned in order.
    values: Vec<i8>,
    positions: HashMap<K, usize>,
}

impl<M: Clone, K: Copy + Eq + Hash> VectorIndex<M, K> {
    pub fn new(dimension: usize) -> VectorIndex<M, K> {
        VectorIndex {
            dimension,
            ids: Vec::new(),
            metas: Vec::new(),
            scales: Vec::new(),
            values: Vec::new(),
            positions: HashMap::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// Bytes held by vectors and scales (ids and metadata not counted).
    pub fn vector_bytes(&self) -> usize {
        self.values.len() + self.scales.len() * 4
    }

    /// Adds or replaces the entry for `id`. A vector of the wrong dimension is refused.
    pub fn upsert(&mut self, id: K, vector: &[f32], meta: M) -> bool {
        if vector.len() != self.dimension {
            return false;
        }
        let q = Quantized::from_f32(vector);
        match self.positions.get(&id) {
            Some(&at) => {
                self.values[at * self.dimension..(at + 1) * self.dimension].copy_from_slice(&q.values);
                self.scales[at] = q.scale;
                self.metas[at] = meta;
            }
            None => {
                self.positions.insert(id, self.ids.len());
                self.ids.push(id);
                self.metas.push(meta);
                self.scales.push(q.scale);
                self.values.extend_from_slice(&q.values);
            }
        }
        true
    }

    /// Removes `id` if present (the last entry moves into its place).
    pub fn remove(&mut self, id: K) {
        let Some(at) = self.positions.remove(&id) else { return };
        let last = self.ids.len() - 1;
        if at != last {
            let moved = self.ids[last];
            self.ids.swap(at, last);
            self.metas.swap(at, last);
            self.scales.swap(at, last);
            let d = self.dimension;
            let (head, tail) = self.values.split_at_mut(last * d);
            head[at * d..(at + 1) * d].copy_from_slice(&tail[..d]);
            self.positions.insert(moved, at);
        }
        self.ids.pop();
        self.metas.pop();
        self.scales.pop();
        self.values.truncate(last * self.dimension);
    }

    /// The vectors as a scan reads them.
    pub fn slab(&self) -> Slab<'_> {
        Slab::new(self.dimension, &self.values, &self.scales).unwrap_or(Slab::EMPTY)
    }

    /// The `k` entries most similar to `query` among those `keep` accepts, best first (see
    /// [`Slab::search`]: parallel from 50,000 entries, a panicking slice fails the search).
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        keep: impl Fn(&M) -> bool + Sync,
    ) -> Result<Vec<Scored<M, K>>, ScanError>
    where
        M: Sync,
        K: Sync,
    {
        let best = self.slab().search(query, k, |i| keep(&self.metas[i]))?;
        Ok(best
            .into_iter()
            .map(|(score, i)| Scored { id: self.ids[i], score, meta: self.metas[i].clone() })
            .collect())
    }

    /// The entries' keys and metadata, in scan order.
    pub fn entries(&self) -> impl Iterator<Item = (&K, &M)> {
        self.ids.iter().zip(&self.metas)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vectors(count: usize, dim: usize) -> Vec<Vec<f32>> {
        sample::UnitVectors::new(0x1234_5678, dim).take(count).collect()
    }

    #[test]
    fn finds_the_same_top_hits_as_an_exact_f32_scan() {
        let dim = 384;
        let data = vectors(2000, dim);
        let mut index = VectorIndex::new(dim);
        let ids: Vec<Uuid> = (0..data.len()).map(|i| Uuid::from_u128(i as u128 + 1)).collect();
        for (id, v) in ids.iter().zip(&data) {
            assert!(index.upsert(*id, v, ()));
        }
        for query in vectors(20, dim).iter().chain(data.iter().take(5)) {
            let mut exact: Vec<(f32, Uuid)> =
                data.iter().zip(&ids).map(|(v, id)| (cosine(query, v).unwrap(), *id)).collect();
            exact.sort_by(|a, b| b.0.total_cmp(&a.0));
            let found = index.search(query, 10, |_| true).unwrap();
            assert_eq!(found.len(), 10);
            assert_eq!(found[0].id, exact[0].1, "the best hit agrees");
            let overlap = found.iter().filter(|f| exact[..10].iter().any(|e| e.1 == f.id)).count();
            assert!(overlap >= 9, "top-10 overlap {overlap}");
            for f in &found {
                let true_score = exact.iter().find(|e| e.1 == f.id).unwrap().0;
                assert!((f.score - true_score).abs() < 0.01, "{} vs {}", f.score, true_score);
            }
        }
    }

    #[test]
    fn a_parallel_scan_finds_exactly_what_one_pass_finds() {
        let dim = 8;
        let data = vectors(scan::PARALLEL_FROM + 10_001, dim);
        let mut index = VectorIndex::new(dim);
        for (i, v) in data.iter().enumerate() {
            index.upsert(Uuid::from_u128(i as u128 + 1), v, i);
        }
        let keep = |i: &usize| !i.is_multiple_of(3);
        for query in vectors(5, dim) {
            let parallel: Vec<(Uuid, f32)> =
                index.search(&query, 25, keep).unwrap().iter().map(|s| (s.id, s.score)).collect();
            let one_pass: Vec<(Uuid, f32)> = index
                .slab()
                .best_in(&Quantized::from_f32(&query), 25, 0..index.len(), &|i| keep(&i))
                .into_iter()
                .map(|(score, i)| (index.ids[i], score))
                .collect();
            assert_eq!(parallel.len(), 25);
            let scores = |v: &[(Uuid, f32)]| v.iter().map(|x| x.1).collect::<Vec<_>>();
            assert_eq!(scores(&parallel), scores(&one_pass), "same scores in the same order");
            assert!(parallel.iter().all(|(id, _)| keep(&(id.as_u128() as usize - 1))));
        }
    }

    #[test]
    fn the_scan_for_this_cpu_finds_exactly_what_the_baseline_scan_finds() {
        let dim = 384;
        let data = vectors(3000, dim);
        let mut index = VectorIndex::new(dim);
        for (i, v) in data.iter().enumerate() {
            index.upsert(Uuid::from_u128(i as u128 + 1), v, i);
        }
        let keep = |i: &usize| !i.is_multiple_of(5);
        for query in vectors(10, dim) {
            let q = Quantized::from_f32(&query);
            let dispatched = index.slab().best_in(&q, 50, 0..index.len(), &|i| keep(&i));
            let baseline = index.slab().scan(&q, 50, 0..index.len(), &|i| keep(&i));
            assert_eq!(dispatched.len(), 50);
            assert_eq!(dispatched, baseline);
        }
    }

    #[test]
    fn filters_updates_and_removals() {
        let dim = 8;
        let mut index = VectorIndex::new(dim);
        let a = Uuid::from_u128(1);
        let b = Uuid::from_u128(2);
        let c = Uuid::from_u128(3);
        let x = Vec::from([1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        let y = Vec::from([0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        index.upsert(a, &x, "main");
        index.upsert(b, &x, "feature");
        index.upsert(c, &y, "main");
        assert!(!index.upsert(c, &[1.0], "main"), "wrong dimension refused");
        let hits = index.search(&x, 5, |m| *m == "main").unwrap();
        assert_eq!(hits.iter().map(|h| h.id).collect::<Vec<_>>(), vec![a, c]);
        index.upsert(c, &x, "main");
        assert!(index.search(&x, 1, |m| *m == "main").unwrap()[0].score > 0.99);
        index.remove(a);
        assert_eq!(index.len(), 2);
        let hits = index.search(&x, 5, |_| true).unwrap();
        assert!(hits.iter().all(|h| h.id != a));
        assert!(hits.iter().all(|h| h.score > 0.99), "the moved entry kept its own vector");
        index.remove(a);
        assert_eq!(index.len(), 2);
    }

    /// A slice whose scan panicked used to count as a slice with no
    /// matches, so a search silently lost up to half its candidates.
    #[test]
    fn a_panicking_scan_fails_the_search_and_says_so() {
        let dim = 4;
        let mut index = VectorIndex::new(dim);
        for i in 0..(scan::PARALLEL_FROM + 1_000) as u128 {
            index.upsert(Uuid::from_u128(i), &[1.0, 0.5, 0.25, (i % 7) as f32], i);
        }
        let last = (scan::PARALLEL_FROM + 999) as u128;
        let err =
            index
                .search(&[1.0, 0.5, 0.25, 1.0], 10, |m| {
                    if *m == last { panic!("filter broke on {m}") } else { true }
                })
                .unwrap_err();
        let ScanError::WorkerPanicked { entries, message } = &err;
        assert!(entries.contains(&(scan::PARALLEL_FROM + 999)), "{err}");
        assert_eq!(message, &format!("filter broke on {last}"));
        assert!(err.to_string().contains("panicked"), "{err}");
    }
}
