//! The scan: the best `k` of int8 vectors laid out back to back, whoever holds them (a
//! [`crate::VectorIndex`] in memory, or a [`crate::MappedFile`]). Compiled for AVX-512 and
//! AVX2 besides the baseline and dispatched at run time (an `unsafe` call,
//! guarded by that check); split across cores from [`PARALLEL_FROM`] entries.

use crate::quantize::{Quantized, dot_i8};
use crate::{ScanError, panic_message};

/// Int8 vectors of one dimension back to back, and one scale per vector: what a scan reads.
#[derive(Debug, Clone, Copy)]
pub struct Slab<'a> {
    dimension: usize,
    values: &'a [i8],
    scales: &'a [f32],
}

impl Slab<'static> {
    /// No entries.
    pub const EMPTY: Slab<'static> = Slab { dimension: 1, values: &[], scales: &[] };
}

impl<'a> Slab<'a> {
    /// `None` when `values` does not hold `dimension` values for each scale.
    pub fn new(dimension: usize, values: &'a [i8], scales: &'a [f32]) -> Option<Slab<'a>> {
        (dimension > 0 && values.len() == dimension * scales.len()).then_some(Slab {
            dimension,
            values,
            scales,
        })
    }

    pub fn len(&self) -> usize {
        self.scales.len()
    }

    pub fn is_empty(&self) -> bool {
        self.scales.is_empty()
    }

    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// Entry `i`'s values and scale.
    pub fn entry(&self, i: usize) -> (&'a [i8], f32) {
        (&self.values[i * self.dimension..(i + 1) * self.dimension], self.scales[i])
    }

    /// The `k` entries most similar to `query` among the positions `keep` accepts, best first,
    /// as (approximate cosine, position). A large slab is scanned in parallel slices, one per
    /// core, whose best `k` are merged. A slice whose scan panicked (in `keep`, or a bug)
    /// fails the whole search, naming the panic, rather than leaving its entries out.
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        keep: impl Fn(usize) -> bool + Sync,
    ) -> Result<Vec<(f32, usize)>, ScanError> {
        if query.len() != self.dimension || k == 0 {
            return Ok(Vec::new());
        }
        let q = Quantized::from_f32(query);
        let n = self.len();
        let threads = scan_threads(n);
        let slice = n.div_ceil(threads.max(1));
        let scan = |t: usize| {
            let range = t * slice..((t + 1) * slice).min(n);
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.best_in(&q, k, range.clone(), &keep)
            }))
            .map_err(|panic| ScanError::WorkerPanicked { entries: range, message: panic_message(&*panic) })
        };
        if threads <= 1 {
            return scan(0);
        }
        let slices: Vec<Result<Vec<(f32, usize)>, ScanError>> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads).map(|t| scope.spawn(move || scan(t))).collect();
            // `scan` catches its own panics: a join error cannot happen, but is not dropped.
            workers
                .into_iter()
                .enumerate()
                .map(|(t, w)| {
                    w.join().unwrap_or_else(|panic| {
                        Err(ScanError::WorkerPanicked {
                            entries: t * slice..((t + 1) * slice).min(n),
                            message: panic_message(&*panic),
                        })
                    })
                })
                .collect()
        });
        let mut merged = Vec::with_capacity(k * threads);
        for found in slices {
            merged.extend(found?);
        }
        merged.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        merged.truncate(k);
        Ok(merged)
    }

    /// The best `k` (score, position) among the entries at `range`, best first: the scan
    /// compiled for the widest vector instructions this CPU has (AVX-512 or AVX2 on x86-64,
    /// checked at run time), else for the build's baseline. Every variant computes the same
    /// integers, so the same results.
    #[allow(unsafe_code)]
    pub(crate) fn best_in(
        &self,
        q: &Quantized,
        k: usize,
        range: std::ops::Range<usize>,
        keep: &(impl Fn(usize) -> bool + Sync),
    ) -> Vec<(f32, usize)> {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512bw") {
                // SAFETY: the CPU has AVX-512 F and BW (BW implies F), checked just above.
                return unsafe { self.best_in_avx512(q, k, range, keep) };
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2, checked just above.
                return unsafe { self.best_in_avx2(q, k, range, keep) };
            }
        }
        self.scan(q, k, range, keep)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw")]
    fn best_in_avx512(
        &self,
        q: &Quantized,
        k: usize,
        range: std::ops::Range<usize>,
        keep: &(impl Fn(usize) -> bool + Sync),
    ) -> Vec<(f32, usize)> {
        self.scan(q, k, range, keep)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn best_in_avx2(
        &self,
        q: &Quantized,
        k: usize,
        range: std::ops::Range<usize>,
        keep: &(impl Fn(usize) -> bool + Sync),
    ) -> Vec<(f32, usize)> {
        self.scan(q, k, range, keep)
    }

    /// The scan itself, inlined into each variant above so each is compiled for its
    /// instructions.
    #[inline(always)]
    pub(crate) fn scan(
        &self,
        q: &Quantized,
        k: usize,
        range: std::ops::Range<usize>,
        keep: &(impl Fn(usize) -> bool + Sync),
    ) -> Vec<(f32, usize)> {
        let d = self.dimension;
        // A small sorted buffer beats a heap for k ≤ a few hundred.
        let mut best: Vec<(f32, usize)> = Vec::with_capacity(k + 1);
        for i in range {
            if !keep(i) {
                continue;
            }
            let score = dot_i8(&q.values, &self.values[i * d..(i + 1) * d]) as f32 * q.scale * self.scales[i];
            if best.len() == k && score <= best[k - 1].0 {
                continue;
            }
            let at = best.partition_point(|(s, _)| *s >= score);
            best.insert(at, (score, i));
            best.truncate(k);
        }
        best
    }
}

/// Entries from which a scan is split across cores: below it, starting threads costs more
/// than it saves.
pub(crate) const PARALLEL_FROM: usize = 50_000;

fn scan_threads(entries: usize) -> usize {
    if entries < PARALLEL_FROM {
        return 1;
    }
    cores().min(8)
}

/// The cores this process may use, read once: the standard library reads the cgroup quota
/// files on every call, which cost a scan 50 µs.
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |p| p.get()))
}
