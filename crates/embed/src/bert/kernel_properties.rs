//! The AVX-512 kernels against their scalar twins over random shapes and values, from a seeded
//! generator (`cortex_testdb::fuzz`: `CORTEX_FUZZ_CASES` and `CORTEX_FUZZ_SEED` run more cases
//! or others; a failure names its case). Shapes: no rows, one, a few that do not fill the
//! kernel's 8-row tile, more than its 64-row block; depths and widths from one step of the
//! packing (`k` a multiple of 2 or 4, `n` of 32) to the model's own (384, 1152, 1536). Values:
//! zeros, ordinary, large, tiny, powers of two, bf16 rounding ties, either sign, alone or a
//! whole matrix of one kind. On a CPU without the instructions both sides are the scalar loop.
//!
//! - int8: the integer sums are exact, so with powers of two for every scale and no bias the
//!   outputs are equal to the bit (for `k` ≤ 512 every sum is below 2^24, so equal outputs are
//!   equal sums); with any scales and biases, the kernel's fused multiply-add differs from the
//!   scalar multiply then add by at most 2 ε (|x·s| + |bias|).
//! - bf16: both sum the same exact products of bf16 pairs in f32, in another order, so each
//!   output differs by at most (2k + 2) · 2^-24 · (|bias| + Σ|aᵢ·bᵢ|), the bound of two
//!   summations of k + 1 terms. Operands are finite and normal or zero, as the model's are:
//!   the instruction reads subnormal bf16 as zero, the scalar loop does not.

use super::{int8, kernel};
use cortex_testdb::fuzz::{Rng, cases, check};

/// Products per property: a tenth of the run's cases, since one can be model-sized.
fn products() -> usize {
    (cases() / 10).max(1)
}

/// Scalar multiply-adds a case may cost at most: a large depth and width get fewer rows.
const MAX_WORK: usize = 6_000_000;

/// Rows of `a`: none, one, a few (not a multiple of the tile's 8), or more than a block (64).
fn rows(rng: &mut Rng) -> usize {
    match rng.below(6) {
        0 => 0,
        1 => 1,
        2 | 3 => 2 + rng.below(15),
        4 => 63 + rng.below(4),
        _ => 1 + rng.below(140),
    }
}

/// A depth, a multiple of `step`: one step, the model's, or a random multiple.
fn depth(rng: &mut Rng, step: usize) -> usize {
    match rng.below(6) {
        0 => step,
        1 => 384,
        2 => 1536,
        _ => step * (1 + rng.below(200)),
    }
}

/// Output columns, a multiple of the 32-column panel: one panel, the model's, or several.
fn width(rng: &mut Rng) -> usize {
    match rng.below(6) {
        0 => 32,
        1 => 384,
        2 => rng.pick(&[1152, 1536]),
        _ => 32 * (1 + rng.below(12)),
    }
}

/// `(m, k, n)` within [`MAX_WORK`].
fn shape(rng: &mut Rng, step: usize) -> (usize, usize, usize) {
    let (k, n) = (depth(rng, step), width(rng));
    (rows(rng).min(MAX_WORK / (k * n)), k, n)
}

/// What a matrix is made of.
#[derive(Clone, Copy)]
enum Fill {
    Zeros,
    /// Uniform in [-1, 1).
    Ordinary,
    /// Every element of its own kind (see [`value`]).
    Mixed,
    /// One value, an extreme one, everywhere.
    Constant(f32),
}

/// A finite number of a kind the kernels must handle, zero or at least 2^-40 in magnitude (so
/// that no product of two is subnormal in f32).
fn value(rng: &mut Rng) -> f32 {
    let sign = if rng.chance(2) { -1.0 } else { 1.0 };
    let magnitude = match rng.below(7) {
        0 => 0.0,
        1 => unit(rng),
        2 => (1.0 + unit(rng)) * 2f32.powi(20 + rng.below(21) as i32),
        3 => (1.0 + unit(rng)) * 2f32.powi(-40 + rng.below(21) as i32),
        4 => 2f32.powi(rng.below(61) as i32 - 30),
        // Halfway between two bf16 values: rounding must go to the even one on both sides.
        5 => 1.0 + 2f32.powi(-8),
        _ => unit(rng) * 100.0,
    };
    sign * magnitude
}

/// Uniform in [0, 1), 24 bits: zero, or at least 2^-24.
fn unit(rng: &mut Rng) -> f32 {
    (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32
}

fn fill(rng: &mut Rng) -> Fill {
    match rng.below(8) {
        0 => Fill::Zeros,
        1 => Fill::Constant(value(rng)),
        2 | 3 => Fill::Mixed,
        _ => Fill::Ordinary,
    }
}

fn matrix(rng: &mut Rng, len: usize) -> Vec<f32> {
    let kind = fill(rng);
    (0..len)
        .map(|_| match kind {
            Fill::Zeros => 0.0,
            Fill::Ordinary => unit(rng) * 2.0 - 1.0,
            Fill::Mixed => value(rng),
            Fill::Constant(v) => v,
        })
        .collect()
}

#[test]
fn the_bf16_kernel_sums_what_its_scalar_twin_sums_within_f32_rounding() {
    check("bf16 kernel = scalar", products(), |rng| {
        let (m, k, n) = shape(rng, 2);
        let (a, b, bias) = (matrix(rng, m * k), matrix(rng, k * n), matrix(rng, n));
        let packed = kernel::pack(&b, k, n);
        let mut fast = vec![f32::NAN; m * n];
        kernel::matmul(&a, m, k, &packed, n, &bias, &mut fast);
        let a16: Vec<u16> = a.iter().map(|&x| kernel::to_bf16(x)).collect();
        let mut scalar = vec![f32::NAN; m * n];
        kernel::matmul_scalar(&a16, m, k, &packed, n, &bias, &mut scalar);
        let widened = |h: &u16| kernel::from_bf16(*h) as f64;
        let a64: Vec<f64> = a16.iter().map(widened).collect();
        let b64: Vec<f64> =
            b.iter().map(|&x| kernel::to_bf16(x)).collect::<Vec<_>>().iter().map(widened).collect();
        let unit_roundoff = 2f64.powi(-24);
        for i in 0..m {
            for j in 0..n {
                let terms: f64 = (0..k).map(|t| (a64[i * k + t] * b64[t * n + j]).abs()).sum();
                let bound = (2 * k + 2) as f64 * unit_roundoff * (bias[j].abs() as f64 + terms);
                let (f, s) = (fast[i * n + j], scalar[i * n + j]);
                assert!(
                    f.is_finite() && ((f - s).abs() as f64) <= bound,
                    "{m}×{k}×{n} [{i}, {j}]: kernel {f}, scalar {s}, bound {bound}"
                );
            }
        }
    });
}

/// Quantized activations as the kernel takes them: each row's bytes, scale and zero point.
fn quantized_rows(rng: &mut Rng, m: usize, k: usize, scale: &mut impl FnMut(&mut Rng) -> f32) -> int8::Rows {
    let byte = |rng: &mut Rng, kind: usize| match kind {
        0 => 0,
        1 => 255,
        _ => rng.below(256) as u8,
    };
    let mut rows = int8::Rows { values: Vec::with_capacity(m * k), scales: Vec::new(), zeros: Vec::new() };
    for _ in 0..m {
        let kind = rng.below(6);
        rows.values.extend((0..k).map(|_| byte(rng, kind)));
        rows.scales.push(scale(rng));
        let zero_kind = rng.below(4);
        rows.zeros.push(i32::from(byte(rng, zero_kind)));
    }
    rows
}

/// The int8 kernel and its scalar twin on the same quantized operands; `None` on a CPU
/// without the kernel.
fn int8_outputs(
    rows: &int8::Rows,
    (m, k, n): (usize, usize, usize),
    weight: int8::Weight,
    bias: &[f32],
) -> Option<(Vec<f32>, Vec<f32>)> {
    if !int8::has_int8_kernel() {
        return None;
    }
    let mut fast = vec![f32::NAN; m * n];
    #[cfg(target_arch = "x86_64")]
    #[allow(unsafe_code)]
    // SAFETY: the CPU has AVX-512 F and VNNI, checked just above.
    unsafe {
        int8::avx512::matmul(rows, m, k, weight, n, bias, &mut fast)
    };
    let mut scalar = vec![f32::NAN; m * n];
    int8::matmul_scalar(rows, m, k, weight, n, bias, &mut scalar);
    Some((fast, scalar))
}

#[test]
fn the_int8_kernel_sums_exactly_what_its_scalar_twin_sums() {
    check("int8 kernel = scalar, exact", products(), |rng| {
        let (m, k, n) = shape(rng, 4);
        let k = if rng.chance(4) { k } else { k.min(512) };
        let mut power_of_two = |rng: &mut Rng| 2f32.powi(rng.below(21) as i32 - 10);
        let rows = quantized_rows(rng, m, k, &mut power_of_two);
        let mut q = int8::quantize(&matrix(rng, k * n), k, n);
        q.scales = (0..n).map(|_| power_of_two(rng)).collect();
        let weight = int8::Weight { values: &q.values, scales: &q.scales, sums: &q.sums, smooth: &[] };
        let Some((fast, scalar)) = int8_outputs(&rows, (m, k, n), weight, &vec![0.0; n]) else { return };
        for (i, (f, s)) in fast.iter().zip(&scalar).enumerate() {
            assert!(f.to_bits() == s.to_bits(), "{m}×{k}×{n} [{i}]: kernel {f}, scalar {s}");
        }
    });
}

#[test]
fn the_int8_kernel_dequantizes_as_its_scalar_twin_within_one_rounding() {
    check("int8 kernel ≈ scalar, dequantized", products(), |rng| {
        let (m, k, n) = shape(rng, 4);
        let mut any_scale = |rng: &mut Rng| (value(rng).abs() + f32::MIN_POSITIVE).min(1e6);
        let rows = quantized_rows(rng, m, k, &mut any_scale);
        let q = int8::quantize(&matrix(rng, k * n), k, n);
        let weight = int8::Weight { values: &q.values, scales: &q.scales, sums: &q.sums, smooth: &[] };
        let bias = matrix(rng, n);
        let Some((fast, scalar)) = int8_outputs(&rows, (m, k, n), weight, &bias) else { return };
        for i in 0..m {
            for j in 0..n {
                let (f, s) = (fast[i * n + j], scalar[i * n + j]);
                let product = (s as f64 - bias[j] as f64).abs();
                let bound = 2.0 * f32::EPSILON as f64 * (product + bias[j].abs() as f64);
                assert!(
                    ((f as f64) - (s as f64)).abs() <= bound,
                    "{m}×{k}×{n} [{i}, {j}]: kernel {f}, scalar {s}, bound {bound}"
                );
            }
        }
    });
}

#[test]
fn a_product_of_no_rows_writes_nothing_and_unpackable_shapes_are_refused() {
    let (k, n) = (8, 32);
    let (b, bias) = (vec![1.0; k * n], vec![0.5; n]);
    let mut out: Vec<f32> = Vec::new();
    kernel::matmul(&[], 0, k, &kernel::pack(&b, k, n), n, &bias, &mut out);
    let q = int8::quantize(&b, k, n);
    let weight = int8::Weight { values: &q.values, scales: &q.scales, sums: &q.sums, smooth: &[] };
    int8::matmul(&[], 0, k, weight, n, &bias, &mut out);
    assert!(out.is_empty());
    for (k, n) in [(0, 32), (3, 32), (8, 0), (8, 31)] {
        assert!(std::panic::catch_unwind(|| kernel::pack(&vec![0.0; k * n], k, n)).is_err(), "bf16 {k}×{n}");
        assert!(
            std::panic::catch_unwind(|| int8::quantize(&vec![0.0; k * n], k, n)).is_err(),
            "int8 {k}×{n}"
        );
    }
}
