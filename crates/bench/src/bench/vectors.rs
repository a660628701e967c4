//! `cortex-bench bench --vectors`: the in-process vector index alone (what SQLite's dense route
//! scans), at sizes beyond what embedding a corpus allows here: `size` random unit vectors of
//! all-MiniLM-L6-v2's 384 dimensions, a search for the best 100 (the `auto` candidate pool),
//! over every entry and with a filter that keeps half of them.

use super::{ms, percentile};
use crate::output;
use cortex_vector::VectorIndex;
use cortex_vector::sample::UnitVectors;
use std::time::{Duration, Instant};

const DIMENSION: usize = 384;
const K: usize = 100;

pub fn run(sizes: &[usize], queries: usize) -> Result<(), String> {
    output::line(
        "| vectors | index memory | scan k=100 p50 / p95 | with a filter keeping half p50 / p95 | cores used |",
    );
    output::line("|---:|---:|---:|---:|---:|");
    let mut random_unit = UnitVectors::new(0x9e37_79b9_7f4a_7c15, DIMENSION);
    for &size in sizes {
        tracing::info!(size, "vector benchmark: building");
        let mut index: VectorIndex<bool> = VectorIndex::new(DIMENSION);
        for i in 0..size {
            index.upsert(
                uuid::Uuid::from_u128(i as u128 + 1),
                &random_unit.next().unwrap_or_default(),
                i.is_multiple_of(2),
            );
        }
        let probes: Vec<Vec<f32>> = (0..queries).map(|_| random_unit.next().unwrap_or_default()).collect();
        let time = |keep: &(dyn Fn(&bool) -> bool + Sync)| -> Vec<Duration> {
            let mut times: Vec<Duration> = probes
                .iter()
                .map(|q| {
                    let t = Instant::now();
                    let found = index.search(q, K, keep).expect("the benchmark's filter does not panic");
                    let elapsed = t.elapsed();
                    assert_eq!(found.len(), K.min(size));
                    elapsed
                })
                .collect();
            times.sort();
            times
        };
        time(&|_| true); // warm-up: pages the index in
        let all = time(&|_| true);
        let half = time(&|even| *even);
        let cores =
            if size >= 50_000 { std::thread::available_parallelism().map_or(1, |p| p.get()) } else { 1 };
        output::line(&format!(
            "| {size} | {:.1} MiB | {:.2} / {:.2} ms | {:.2} / {:.2} ms | {cores} |",
            index.vector_bytes() as f64 / 1_048_576.0,
            ms(percentile(&all, 50.0)),
            ms(percentile(&all, 95.0)),
            ms(percentile(&half, 50.0)),
            ms(percentile(&half, 95.0)),
        ));
    }
    Ok(())
}
