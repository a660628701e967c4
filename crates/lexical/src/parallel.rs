//! A search on every core at once, when it pays. A query whose words hold many postings, run
//! while no other search is, is split: the segments go into groups of about equal size, one per
//! thread, and the groups share the best threshold any of them has reached. Any group's k-th
//! best score is a lower bound of the whole index's k-th best, so a match below it can be
//! skipped everywhere. A natural-language question holds common words whose postings
//! block-max WAND cannot skip until the threshold is high; at a million items one thread spends
//! tens of milliseconds on such a query. Under concurrent finds the cores are busy already, and
//! splitting only adds threads to wait for them: under a steady load of finds, splitting every
//! search multiplied the tail latency (BENCHMARKS.md).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use tantivy::{Score, SegmentReader};

/// One search counted in `searching` while it runs.
pub(crate) struct Running<'a> {
    searching: &'a AtomicUsize,
    /// No other search was running when this one started.
    pub alone: bool,
}

impl<'a> Running<'a> {
    pub(crate) fn start(searching: &'a AtomicUsize) -> Running<'a> {
        let before = searching.fetch_add(1, Ordering::Relaxed);
        Running { searching, alone: before == 0 }
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.searching.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The best k-th score any group has reached, shared between the threads of one search.
/// Scores are BM25, never negative, so their bit patterns order like the scores; the high
/// bit says a threshold was set at all.
#[derive(Default)]
pub(crate) struct SharedThreshold(AtomicU64);

impl SharedThreshold {
    const SET: u64 = 1 << 32;

    pub(crate) fn raise(&self, score: Score) {
        if score >= 0.0 {
            self.0.fetch_max(Self::SET | u64::from(score.to_bits()), Ordering::Relaxed);
        }
    }

    /// What a group prunes below: one step under the higher of its own k-th best and the
    /// shared one. A match tying with the k-th best is still taken, and the heap keeps the
    /// best `k` by (score, segment, doc) — so the answer is the same whatever the number of
    /// threads and whichever got there first.
    pub(crate) fn prune_below(&self, local: Score) -> Score {
        let bits = self.0.load(Ordering::Relaxed);
        let shared = if bits & Self::SET == 0 { Score::MIN } else { Score::from_bits(bits as u32) };
        local.max(shared).next_down()
    }
}

/// Postings from which a search is split across cores: below it the search takes well under
/// a millisecond (a two-word query over 100k items), and a thread waiting for a busy core
/// would cost more than it saves.
const PARALLEL_FROM: u64 = 50_000;

pub(crate) fn search_threads(postings: u64) -> usize {
    if postings < PARALLEL_FROM {
        return 1;
    }
    most_threads()
}

/// Threads one search uses at most; also a build's indexing threads, and the segments it
/// leaves (`sync.rs`).
pub(crate) fn most_threads() -> usize {
    cores().min(4)
}

/// The cores this process may use, read once: the standard library reads the cgroup quota
/// files on every call, which cost a find 50 µs.
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |p| p.get()))
}

/// The segments' ordinals split into at most `threads` groups of about equal size: the largest
/// segment first, each into the group with the fewest documents so far. Empty groups are left
/// out.
pub(crate) fn segment_groups(segments: &[SegmentReader], threads: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..segments.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(segments[i].max_doc()));
    let mut groups: Vec<(u64, Vec<usize>)> = vec![(0, Vec::new()); threads.max(1)];
    for i in order {
        let lightest = groups.iter_mut().min_by_key(|(docs, _)| *docs).expect("at least one group");
        lightest.0 += u64::from(segments[i].max_doc());
        lightest.1.push(i);
    }
    groups.into_iter().map(|(_, group)| group).filter(|group| !group.is_empty()).collect()
}

pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string())
}
