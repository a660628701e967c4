//! The scan's AVX-512 and AVX2 builds against the baseline build over random shapes and
//! values, from a seeded generator (`cortex_testdb::fuzz`: `CORTEX_FUZZ_CASES` and
//! `CORTEX_FUZZ_SEED` run more cases or others; a failure names its case). Every build sums
//! the same integers and scales them with the same float operations, so results are equal to
//! the bit: the dot product on lengths around the 32-lane chunk and the registers' widths, and
//! the whole filtered top-k on dimensions from 1 to 1,000, indexes from empty to thousands of
//! entries, zero, huge and non-finite vectors. On a CPU without those instructions the
//! dispatched scan is the baseline itself.

use super::{Quantized, VectorIndex, dot_i8};
use cortex_testdb::fuzz::{Rng, cases, check};

/// A length around what the builds split at (the 32-lane chunk, 64-byte registers), or any.
fn length(rng: &mut Rng) -> usize {
    match rng.below(4) {
        0 => rng.pick(&[0, 1, 2, 31, 32, 33, 63, 64, 65, 95, 127, 128, 129, 383, 384, 385]),
        1 => 1 + rng.below(40),
        _ => rng.below(4097),
    }
}

/// An i8 of a kind: the extremes (-128, -127, 127), zero, or any.
fn byte(rng: &mut Rng, kind: usize) -> i8 {
    match kind {
        0 => rng.pick(&[i8::MIN, -127, 127]),
        1 => 0,
        _ => rng.next_u64() as i8,
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
fn dot_avx512(a: &[i8], b: &[i8]) -> i32 {
    dot_i8(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn dot_avx2(a: &[i8], b: &[i8]) -> i32 {
    dot_i8(a, b)
}

#[test]
fn every_build_of_the_dot_product_sums_the_same_integers() {
    check("dot_i8 builds agree", cases(), |rng| {
        let len = length(rng);
        let (kind_a, kind_b) = (rng.below(4), rng.below(4));
        let a: Vec<i8> = (0..len).map(|_| byte(rng, kind_a)).collect();
        let b: Vec<i8> = (0..len).map(|_| byte(rng, kind_b)).collect();
        let plain: i32 = a.iter().zip(&b).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum();
        assert_eq!(dot_i8(&a, &b), plain, "baseline, length {len}");
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512bw") {
                #[allow(unsafe_code)]
                // SAFETY: the CPU has AVX-512 BW (which implies F), checked just above.
                let wide = unsafe { dot_avx512(&a, &b) };
                assert_eq!(wide, plain, "AVX-512, length {len}");
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                #[allow(unsafe_code)]
                // SAFETY: the CPU has AVX2, checked just above.
                let wide = unsafe { dot_avx2(&a, &b) };
                assert_eq!(wide, plain, "AVX2, length {len}");
            }
        }
    });
}

/// A vector of one kind: ordinary, all zeros, huge, tiny, holding an infinity or a NaN.
fn vector(rng: &mut Rng, dimension: usize) -> Vec<f32> {
    let kind = rng.below(8);
    (0..dimension)
        .map(|i| {
            let x = (rng.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0;
            match kind {
                0 => 0.0,
                1 => x * 1e30,
                2 => x * 1e-30,
                3 if i == 0 => f32::INFINITY,
                4 if i == 0 => f32::NAN,
                _ => x,
            }
        })
        .collect()
}

#[test]
fn the_scan_for_this_cpu_finds_to_the_bit_what_the_baseline_scan_finds() {
    check("scan builds agree", (cases() / 10).max(1), |rng| {
        let dimension = match rng.below(4) {
            0 => 1 + rng.below(3),
            1 => 384,
            _ => 1 + rng.below(1000),
        };
        let entries = match rng.below(4) {
            0 => rng.below(3),
            _ => rng.below(3000usize.min(400_000 / dimension)),
        };
        let mut index = VectorIndex::new(dimension);
        for i in 0..entries {
            assert!(index.upsert(uuid::Uuid::from_u128(i as u128 + 1), &vector(rng, dimension), i));
        }
        let q = Quantized::from_f32(&vector(rng, dimension));
        let k = 1 + rng.below(entries + 20);
        let every = 1 + rng.below(4);
        let keep = |i: usize| i.is_multiple_of(every);
        let slab = index.slab();
        let dispatched = slab.best_in(&q, k, 0..slab.len(), &keep);
        let baseline = slab.scan(&q, k, 0..slab.len(), &keep);
        assert_eq!(dispatched.len(), baseline.len(), "{entries} entries of {dimension}, top {k}");
        for (d, b) in dispatched.iter().zip(&baseline) {
            assert!(d.0.to_bits() == b.0.to_bits() && d.1 == b.1, "{d:?} vs {b:?}");
        }
        assert_eq!(baseline.len(), k.min(entries.div_ceil(every)), "every kept entry up to k");
    });
}
