//! The int8 matrix product `out = bias + a · b`: an AVX-512 VNNI kernel (`vpdpbusd`: 64
//! unsigned × signed byte multiply-adds into 16 i32 sums per instruction, four times the f32
//! FMA rate) chosen at run time when the CPU has it, and a scalar fallback computing the same
//! integer sums, which is also what the kernel is tested against.
//!
//! `b` (the weight) is quantized once, at packing time, per output column: `b[k][j] ≈
//! wscale[j] · q[k][j]` with `q` in [-127, 127] and `wscale[j] = max_k |b[k][j]| / 127`. `a`
//! (the activations) is quantized per row at every product, asymmetrically, so that the whole
//! range a row takes (post-GELU rows are far from symmetric) gets all 256 steps:
//! `a[i][k] ≈ ascale[i] · (u[i][k] − zero[i])`, `u` in [0, 255]. Then
//! `(a · b)[i][j] ≈ ascale[i] · wscale[j] · (Σ_k u[i][k]·q[k][j] − zero[i] · Σ_k q[k][j])`:
//! the integer sum is exact in i32 (at most 255 · 127 · k, under 2^31 for k < 66,000) and each
//! column's `Σ_k q[k][j]` is computed at packing time. The kernel's loads and stores are
//! `unsafe`; each says which checked length keeps it in bounds.
//!
//! `q` is stored in the order the kernel reads it: for each panel of 32 output columns, for each
//! run of four rows `4p … 4p+3`, the 32 columns' four bytes side by side, so one 64-byte load
//! gives 16 columns' quads and one broadcast of `u[i][4p … 4p+3]` multiplies them all.

/// Output columns per panel: two 512-bit registers of i32 sums.
pub const PANEL: usize = 32;
/// Rows of `a` per register tile: 8 rows × 2 registers = 16 sums in flight.
const TILE_ROWS: usize = 8;
/// Rows of `a` per block, run against one panel after another while they stay in the L2 cache
/// (≤ 64 × 1536 bytes).
const BLOCK_ROWS: usize = 64;

/// A product's weight in int8, as [`quantize`] made it.
pub struct Quantized {
    /// `q` in the kernel's order.
    pub values: Vec<i8>,
    /// `wscale[j]` per output column.
    pub scales: Vec<f32>,
    /// `Σ_k q[k][j]` per output column.
    pub sums: Vec<i32>,
}

/// Can `b` (`k × n`) be packed for the kernel: `k` a multiple of 4, `n` of [`PANEL`].
pub fn packable(k: usize, n: usize) -> bool {
    k.is_multiple_of(4) && n.is_multiple_of(PANEL) && k > 0 && n > 0
}

/// `b` (`k × n`, row-major) quantized per output column, in the kernel's order.
pub fn quantize(b: &[f32], k: usize, n: usize) -> Quantized {
    assert!(packable(k, n) && b.len() == k * n, "a {k}×{n} matrix cannot be packed");
    let scales: Vec<f32> = (0..n)
        .map(|j| {
            let max = (0..k).map(|t| b[t * n + j].abs()).fold(0.0f32, f32::max);
            if max > 0.0 { max / 127.0 } else { 1.0 }
        })
        .collect();
    let q = |t: usize, j: usize| (b[t * n + j] / scales[j]).round().clamp(-127.0, 127.0) as i8;
    let sums = (0..n).map(|j| (0..k).map(|t| q(t, j) as i32).sum()).collect();
    let mut values = Vec::with_capacity(k * n);
    for panel in 0..n / PANEL {
        for p in 0..k / 4 {
            for j in panel * PANEL..(panel + 1) * PANEL {
                values.extend((0..4).map(|r| q(4 * p + r, j)));
            }
        }
    }
    Quantized { values, scales, sums }
}

/// Rows of activations in u8, each with its scale and zero point.
pub struct Rows {
    pub values: Vec<u8>,
    pub scales: Vec<f32>,
    pub zeros: Vec<i32>,
}

/// Quantizes each row of `a` (`m × k`) over the range it takes (widened to hold 0, so the
/// zero point is a step of the grid and in [0, 255]).
pub fn quantize_rows(a: &[f32], m: usize, k: usize, smooth: &[f32]) -> Rows {
    let mut rows =
        Rows { values: vec![0; m * k], scales: Vec::with_capacity(m), zeros: Vec::with_capacity(m) };
    let mut scaled = vec![0.0f32; if smooth.is_empty() { 0 } else { k }];
    for (row, out) in a.chunks_exact(k).zip(rows.values.chunks_exact_mut(k)) {
        let row = if smooth.is_empty() {
            row
        } else {
            for ((s, &x), &f) in scaled.iter_mut().zip(row).zip(smooth) {
                *s = x * f;
            }
            &scaled[..]
        };
        let (lo, hi) = row.iter().fold((0.0f32, 0.0f32), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        let scale = if hi > lo { (hi - lo) / 255.0 } else { 1.0 };
        let zero = (-lo / scale).round();
        let inverse = 1.0 / scale;
        for (o, &x) in out.iter_mut().zip(row) {
            // Non-negative before the cast, so adding one half and truncating rounds.
            *o = (x * inverse + zero + 0.5).clamp(0.0, 255.0) as u8;
        }
        rows.scales.push(scale);
        rows.zeros.push(zero as i32);
    }
    rows
}

/// Does this CPU run the AVX-512 VNNI kernel?
pub fn has_int8_kernel() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A quantized weight as the product reads it (borrowed from the packed model).
#[derive(Clone, Copy)]
pub struct Weight<'a> {
    pub values: &'a [i8],
    pub scales: &'a [f32],
    pub sums: &'a [i32],
    /// Per input channel, the factor each activation is multiplied by before it is quantized
    /// (the weight's rows were divided by it); empty: none.
    pub smooth: &'a [f32],
}

/// `out (m × n) = bias + a (m × k) · b`, `b` as [`quantize`] made it; `a` and `out`
/// row-major. The AVX-512 VNNI kernel when the CPU has it, else the scalar one.
pub fn matmul(a: &[f32], m: usize, k: usize, b: Weight, n: usize, bias: &[f32], out: &mut [f32]) {
    assert!(packable(k, n), "a {k}×{n} product is not packed");
    assert!(a.len() == m * k && b.values.len() == k * n && bias.len() == n && out.len() == m * n);
    assert!(b.scales.len() == n && b.sums.len() == n);
    assert!(b.smooth.is_empty() || b.smooth.len() == k);
    let rows = quantize_rows(a, m, k, b.smooth);
    #[cfg(target_arch = "x86_64")]
    if has_int8_kernel() {
        #[allow(unsafe_code)]
        // SAFETY: the CPU has AVX-512 F and VNNI, checked just above: the one thing
        // `avx512::matmul` asks of its caller (it reads and writes only through checked slices).
        unsafe {
            avx512::matmul(&rows, m, k, b, n, bias, out)
        };
        return;
    }
    matmul_scalar(&rows, m, k, b, n, bias, out);
}

/// The kernel's integer sums in plain Rust, and the same dequantization.
pub fn matmul_scalar(rows: &Rows, m: usize, k: usize, b: Weight, n: usize, bias: &[f32], out: &mut [f32]) {
    for i in 0..m {
        let u = &rows.values[i * k..(i + 1) * k];
        for panel in 0..n / PANEL {
            let columns = &b.values[panel * k * PANEL..(panel + 1) * k * PANEL];
            for c in 0..PANEL {
                let j = panel * PANEL + c;
                let mut sum = 0i32;
                for p in 0..k / 4 {
                    let quad = &columns[p * 4 * PANEL + 4 * c..][..4];
                    for r in 0..4 {
                        sum += u[4 * p + r] as i32 * quad[r] as i32;
                    }
                }
                let exact = sum - rows.zeros[i] * b.sums[j];
                out[i * n + j] = exact as f32 * (rows.scales[i] * b.scales[j]) + bias[j];
            }
        }
    }
}

/// The AVX-512 VNNI kernel. Its functions are safe to call where the CPU has the instructions
/// (the `target_feature`s); each raw read or write is inside a slice whose length the function
/// checked on entry, said at each `unsafe` block. Visible to `bert` so that its properties can
/// give it quantized rows of their own (`kernel_properties`).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
pub(super) mod avx512 {
    use super::{BLOCK_ROWS, PANEL, Rows, TILE_ROWS, Weight};
    use core::arch::x86_64::*;

    /// The per-panel values of the dequantization: two registers each of `Σ q`, `wscale` and
    /// the bias.
    #[derive(Clone, Copy)]
    struct Columns {
        sums: [__m512i; 2],
        scales: [__m512; 2],
        bias: [__m512; 2],
    }

    /// See [`super::matmul`]: `rows` is `a` quantized (`m × k`), `out` is `m × n`.
    #[target_feature(enable = "avx512f,avx512vnni")]
    pub fn matmul(rows: &Rows, m: usize, k: usize, b: Weight, n: usize, bias: &[f32], out: &mut [f32]) {
        assert!(super::packable(k, n) && rows.values.len() == m * k && out.len() == m * n);
        assert!(rows.scales.len() == m && rows.zeros.len() == m);
        assert!(b.values.len() == k * n && b.scales.len() == n && b.sums.len() == n && bias.len() == n);
        for block in (0..m).step_by(BLOCK_ROWS) {
            let block_end = (block + BLOCK_ROWS).min(m);
            for panel in 0..n / PANEL {
                let column = panel * PANEL;
                let quads = &b.values[panel * k * PANEL..(panel + 1) * k * PANEL];
                let (sums, scales, bias) = (
                    &b.sums[column..column + PANEL],
                    &b.scales[column..column + PANEL],
                    &bias[column..column + PANEL],
                );
                // SAFETY: `sums`, `scales` and `bias` hold PANEL (32) numbers each, as their
                // indexing just checked; each pair of unaligned loads reads elements 0–15 and
                // 16–31.
                let columns = unsafe {
                    Columns {
                        sums: [
                            _mm512_loadu_si512(sums.as_ptr().cast()),
                            _mm512_loadu_si512(sums.as_ptr().add(16).cast()),
                        ],
                        scales: [_mm512_loadu_ps(scales.as_ptr()), _mm512_loadu_ps(scales.as_ptr().add(16))],
                        bias: [_mm512_loadu_ps(bias.as_ptr()), _mm512_loadu_ps(bias.as_ptr().add(16))],
                    }
                };
                let mut row = block;
                while row < block_end {
                    let count = (block_end - row).min(TILE_ROWS);
                    let u = &rows.values[row * k..(row + count) * k];
                    let (scales, zeros) = (&rows.scales[row..row + count], &rows.zeros[row..row + count]);
                    // From the tile's first output to its last row's 32nd: rows n apart.
                    let out = &mut out[row * n + column..(row + count - 1) * n + column + PANEL];
                    let tile = Tile { u, k, quads, columns, scales, zeros };
                    match count {
                        8 => tile.run::<8>(out, n),
                        7 => tile.run::<7>(out, n),
                        6 => tile.run::<6>(out, n),
                        5 => tile.run::<5>(out, n),
                        4 => tile.run::<4>(out, n),
                        3 => tile.run::<3>(out, n),
                        2 => tile.run::<2>(out, n),
                        _ => tile.run::<1>(out, n),
                    }
                    row += count;
                }
            }
        }
    }

    /// Up to [`TILE_ROWS`] rows of `u` (`k` bytes each, back to back, with their scales and
    /// zero points) against one panel (`quads`: `k × 32` in [`super::quantize`]'s order).
    struct Tile<'a> {
        u: &'a [u8],
        k: usize,
        quads: &'a [i8],
        columns: Columns,
        scales: &'a [f32],
        zeros: &'a [i32],
    }

    impl Tile<'_> {
        /// The tile's `R` rows, dequantized, into `R` rows of 32 outputs in `out` (rows `n`
        /// apart, from its start).
        #[target_feature(enable = "avx512f,avx512vnni")]
        #[inline]
        fn run<const R: usize>(&self, out: &mut [f32], n: usize) {
            let Tile { u, k, quads, columns, scales, zeros } = *self;
            assert!(k.is_multiple_of(4) && u.len() == R * k && quads.len() == k * PANEL);
            assert!(scales.len() == R && zeros.len() == R);
            assert!(n >= PANEL && out.len() == (R - 1) * n + PANEL);
            let (a, quads, out) = (u.as_ptr(), quads.as_ptr(), out.as_mut_ptr());
            let mut low = [_mm512_setzero_si512(); R];
            let mut high = [_mm512_setzero_si512(); R];
            for p in 0..k / 4 {
                // SAFETY: the quads of step p are `quads[4·p·PANEL .. 4·(p+1)·PANEL]`, inside its
                // k·PANEL bytes (p < k/4, asserted above); each load reads 64 bytes.
                let (b0, b1) = unsafe {
                    let step = quads.add(p * 4 * PANEL);
                    (_mm512_loadu_si512(step.cast()), _mm512_loadu_si512(step.add(PANEL * 2).cast()))
                };
                for r in 0..R {
                    // SAFETY: `u[r·k + 4p .. r·k + 4p + 4]`: r < R and 4p + 3 < k, inside the R·k
                    // bytes asserted above; read unaligned as one i32.
                    let quad = unsafe { a.add(r * k + 4 * p).cast::<i32>().read_unaligned() };
                    let av = _mm512_set1_epi32(quad);
                    low[r] = _mm512_dpbusd_epi32(low[r], av, b0);
                    high[r] = _mm512_dpbusd_epi32(high[r], av, b1);
                }
            }
            for r in 0..R {
                let zero = _mm512_set1_epi32(zeros[r]);
                let scale = _mm512_set1_ps(scales[r]);
                for (h, sums) in [low[r], high[r]].into_iter().enumerate() {
                    let exact = _mm512_sub_epi32(sums, _mm512_mullo_epi32(zero, columns.sums[h]));
                    let value = _mm512_fmadd_ps(
                        _mm512_cvtepi32_ps(exact),
                        _mm512_mul_ps(scale, columns.scales[h]),
                        columns.bias[h],
                    );
                    // SAFETY: `out[r·n + 16·h .. r·n + 16·h + 16]` with r < R and h < 2, inside the
                    // (R−1)·n + 32 elements asserted above.
                    unsafe { _mm512_storeu_ps(out.add(r * n + 16 * h), value) };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bert::kernel::tests::{random, reference};

    fn cosine(a: &[f32], b: &[f64]) -> f64 {
        let dot: f64 = a.iter().zip(b).map(|(x, y)| *x as f64 * y).sum();
        let na: f64 = a.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
        let nb: f64 = b.iter().map(|y| y * y).sum::<f64>().sqrt();
        dot / (na * nb)
    }

    #[test]
    fn quantized_rows_and_weights_read_back_within_half_a_step() {
        let (m, k, n) = (5, 64, 32);
        let a: Vec<f32> = random(m * k, 11).iter().map(|x| x * 3.0 + 0.5).collect();
        let rows = quantize_rows(&a, m, k, &[]);
        for i in 0..m {
            for t in 0..k {
                let back = rows.scales[i] * (rows.values[i * k + t] as i32 - rows.zeros[i]) as f32;
                assert!((back - a[i * k + t]).abs() <= rows.scales[i] * 0.5001, "row {i} [{t}]");
            }
        }
        let b = random(k * n, 12);
        let q = quantize(&b, k, n);
        for j in 0..n {
            let (panel, c) = (j / PANEL, j % PANEL);
            let mut sum = 0;
            for t in 0..k {
                let v = q.values[panel * k * PANEL + (t / 4) * 4 * PANEL + 4 * c + t % 4];
                assert!((q.scales[j] * v as f32 - b[t * n + j]).abs() <= q.scales[j] * 0.5001);
                sum += v as i32;
            }
            assert_eq!(sum, q.sums[j], "column {j}'s sum");
        }
        let zeros = quantize_rows(&[0.0; 8], 1, 8, &[]);
        assert_eq!((zeros.values, zeros.zeros), (vec![0; 8], vec![0]), "a row of zeros stays zero");
    }

    /// Every row count a tile handles (1–8), several blocks, several panels, and the model's
    /// own shapes (384 → 1152, 384 → 1536, 1536 → 384): the kernel in use on this CPU and the
    /// scalar one agree to f32 rounding, and both are close to the exact product, row by row.
    #[test]
    fn both_kernels_match_the_exact_product_within_int8_error() {
        for (m, k, n) in
            [(1, 4, 32), (7, 384, 64), (13, 384, 1152), (70, 1536, 384), (131, 384, 1536), (9, 64, 128)]
        {
            let (a, b, bias) = (random(m * k, 1), random(k * n, 2), random(n, 3));
            let want = reference(&a, m, k, &b, n, &bias);
            let q = quantize(&b, k, n);
            let weight = Weight { values: &q.values, scales: &q.scales, sums: &q.sums, smooth: &[] };
            let mut fast = vec![0.0; m * n];
            matmul(&a, m, k, weight, n, &bias, &mut fast);
            let mut scalar = vec![0.0; m * n];
            matmul_scalar(&quantize_rows(&a, m, k, &[]), m, k, weight, n, &bias, &mut scalar);
            for i in 0..m {
                let row = i * n..(i + 1) * n;
                let c = cosine(&fast[row.clone()], &want[row.clone()]);
                assert!(c > 0.999, "{m}×{k}×{n} row {i}: cosine {c} to the exact product");
                for j in row {
                    let tolerance = 1e-5 * want[j].abs().max(1.0) as f32;
                    assert!((fast[j] - scalar[j]).abs() <= tolerance, "[{j}]: {} vs {}", fast[j], scalar[j]);
                }
            }
        }
    }
}
