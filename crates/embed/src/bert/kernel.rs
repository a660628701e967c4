//! The bf16 matrix product `out = bias + a · b`: an AVX-512 BF16 kernel (`vdpbf16ps`: 32 bf16
//! multiply-adds into 16 f32 sums per instruction, twice the f32 FMA rate) chosen at run time
//! when the CPU has it, and a scalar fallback computing the same sums in plain Rust, which is
//! also what the kernel is tested against (`kernel_properties`). The kernel's loads and stores
//! are `unsafe`; each says which checked length keeps it in bounds.
//!
//! Both operands are rounded to bf16 (round to nearest even; 8 bits of mantissa) and the
//! products summed in f32. `b` is packed once, at model packing time, in the order the kernel
//! reads it ([`pack`]): for each panel of 32 output columns, for each pair of rows `2p, 2p+1`,
//! the 32 columns' pairs `(b[2p][j], b[2p+1][j])` side by side, so one 64-byte load gives 16
//! columns' pairs and one broadcast of `(a[i][2p], a[i][2p+1])` multiplies them all.

/// Output columns per panel: two 512-bit registers of f32 sums.
pub const PANEL: usize = 32;
/// Rows of `a` per register tile: 8 rows × 2 registers = 16 sums in flight, enough to hide
/// the instruction's latency, with room left for the two panel loads and a broadcast.
const TILE_ROWS: usize = 8;
/// Rows of `a` per block: a block of rows is run against one panel after another, so the
/// block (≤ 64 × 1536 bf16, 192 KiB) stays in the L2 cache while the panels stream by.
const BLOCK_ROWS: usize = 64;

/// `x` rounded to bf16 (nearest, ties to even), as its 16 bits. NaN is not expected here.
pub fn to_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    ((bits + 0x7fff + ((bits >> 16) & 1)) >> 16) as u16
}

pub fn from_bf16(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

/// Can a product on this CPU skip every check the packing makes: `k` even, `n` a multiple of
/// [`PANEL`].
pub fn packable(k: usize, n: usize) -> bool {
    k.is_multiple_of(2) && n.is_multiple_of(PANEL) && k > 0 && n > 0
}

/// `b` (`k × n`, row-major) rounded to bf16 in the kernel's order. `packable(k, n)` must hold.
pub fn pack(b: &[f32], k: usize, n: usize) -> Vec<u16> {
    assert!(packable(k, n) && b.len() == k * n, "a {k}×{n} matrix cannot be packed");
    let mut packed = Vec::with_capacity(k * n);
    for panel in 0..n / PANEL {
        for p in 0..k / 2 {
            for j in panel * PANEL..(panel + 1) * PANEL {
                packed.push(to_bf16(b[2 * p * n + j]));
                packed.push(to_bf16(b[(2 * p + 1) * n + j]));
            }
        }
    }
    packed
}

/// Does this CPU run the AVX-512 BF16 kernel?
pub fn has_bf16_kernel() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512bf16")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `out (m × n) = bias + a (m × k) · b`, `b` as [`pack`] made it; `a` and `out` row-major.
/// The AVX-512 BF16 kernel when the CPU has it, else the scalar one.
pub fn matmul(a: &[f32], m: usize, k: usize, b: &[u16], n: usize, bias: &[f32], out: &mut [f32]) {
    let a16: Vec<u16> = a.iter().map(|&x| to_bf16(x)).collect();
    let product = Product::new(&a16, m, k, b, n, bias);
    assert_eq!(out.len(), m * n, "a {m}×{n} product's output");
    #[cfg(target_arch = "x86_64")]
    if has_bf16_kernel() {
        #[allow(unsafe_code)]
        // SAFETY: the CPU has AVX-512 F and BF16, checked just above: the one thing
        // `avx512::matmul` asks of its caller (it reads and writes only through checked slices).
        unsafe {
            avx512::matmul(product, out)
        };
        return;
    }
    matmul_scalar(&a16, m, k, b, n, bias, out);
}

/// The operands of one product, their lengths checked against `m`, `k` and `n` once, where
/// they are made: every slice the kernel cuts from them is in bounds.
#[derive(Clone, Copy)]
struct Product<'a> {
    /// `m × k` bf16, row-major.
    a: &'a [u16],
    m: usize,
    k: usize,
    /// `k × n` bf16 in [`pack`]'s order.
    b: &'a [u16],
    n: usize,
    bias: &'a [f32],
}

impl<'a> Product<'a> {
    fn new(a: &'a [u16], m: usize, k: usize, b: &'a [u16], n: usize, bias: &'a [f32]) -> Product<'a> {
        assert!(packable(k, n), "a {k}×{n} product is not packed");
        assert!(a.len() == m * k && b.len() == k * n && bias.len() == n, "a {m}×{k}×{n} product's operands");
        Product { a, m, k, b, n, bias }
    }
}

/// The kernel's sums in plain Rust, in the same order per output (pair by pair).
pub fn matmul_scalar(a16: &[u16], m: usize, k: usize, b: &[u16], n: usize, bias: &[f32], out: &mut [f32]) {
    for i in 0..m {
        for panel in 0..n / PANEL {
            let columns = &b[panel * k * PANEL..(panel + 1) * k * PANEL];
            for c in 0..PANEL {
                let mut sum = bias[panel * PANEL + c];
                for p in 0..k / 2 {
                    let pair = &columns[p * 2 * PANEL + 2 * c..][..2];
                    sum += from_bf16(a16[i * k + 2 * p]) * from_bf16(pair[0])
                        + from_bf16(a16[i * k + 2 * p + 1]) * from_bf16(pair[1]);
                }
                out[i * n + panel * PANEL + c] = sum;
            }
        }
    }
}

/// The AVX-512 BF16 kernel. Its functions are safe to call where the CPU has the instructions
/// (the `target_feature`s); each raw read or write is inside a slice whose length the function
/// checked on entry, said at each `unsafe` block.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx512 {
    use super::{BLOCK_ROWS, PANEL, Product, TILE_ROWS};
    use core::arch::x86_64::*;
    use core::mem::transmute;

    /// See [`super::matmul`]: `out` is `m × n`.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub fn matmul(product: Product, out: &mut [f32]) {
        let Product { a, m, k, b, n, bias } = product;
        assert_eq!(out.len(), m * n, "a {m}×{n} product's output");
        for block in (0..m).step_by(BLOCK_ROWS) {
            let block_end = (block + BLOCK_ROWS).min(m);
            for panel in 0..n / PANEL {
                let column = panel * PANEL;
                let columns = &b[panel * k * PANEL..(panel + 1) * k * PANEL];
                let bias = &bias[column..column + PANEL];
                // SAFETY: `bias` holds PANEL (32) f32, as its indexing just checked; the two
                // unaligned loads read its elements 0–15 and 16–31.
                let bias =
                    unsafe { [_mm512_loadu_ps(bias.as_ptr()), _mm512_loadu_ps(bias.as_ptr().add(16))] };
                let mut row = block;
                while row < block_end {
                    let rows = (block_end - row).min(TILE_ROWS);
                    let a = &a[row * k..(row + rows) * k];
                    // From the tile's first output to its last row's 32nd: rows n apart.
                    let out = &mut out[row * n + column..(row + rows - 1) * n + column + PANEL];
                    match rows {
                        8 => tile::<8>(a, k, columns, bias, out, n),
                        7 => tile::<7>(a, k, columns, bias, out, n),
                        6 => tile::<6>(a, k, columns, bias, out, n),
                        5 => tile::<5>(a, k, columns, bias, out, n),
                        4 => tile::<4>(a, k, columns, bias, out, n),
                        3 => tile::<3>(a, k, columns, bias, out, n),
                        2 => tile::<2>(a, k, columns, bias, out, n),
                        _ => tile::<1>(a, k, columns, bias, out, n),
                    }
                    row += rows;
                }
            }
        }
    }

    /// `R` rows of `a` (`k` bf16 each, back to back) against one panel (`columns`: `k × 32`
    /// in [`super::pack`]'s order), plus `bias`, into `R` rows of 32 outputs in `out` (rows
    /// `n` apart, from its start).
    #[target_feature(enable = "avx512f,avx512bf16")]
    #[inline]
    fn tile<const R: usize>(
        a: &[u16],
        k: usize,
        columns: &[u16],
        bias: [__m512; 2],
        out: &mut [f32],
        n: usize,
    ) {
        assert!(k.is_multiple_of(2) && a.len() == R * k && columns.len() == k * PANEL);
        assert!(n >= PANEL && out.len() == (R - 1) * n + PANEL);
        let (a, columns, out) = (a.as_ptr(), columns.as_ptr(), out.as_mut_ptr());
        let mut low = [bias[0]; R];
        let mut high = [bias[1]; R];
        for p in 0..k / 2 {
            // SAFETY: the pairs of step p are `columns[2·p·PANEL .. 2·(p+1)·PANEL]`, inside its
            // k·PANEL elements (p < k/2, asserted above); each load reads 32 u16 (64 bytes).
            let (b0, b1) = unsafe {
                let pairs = columns.add(p * 2 * PANEL);
                (_mm512_loadu_si512(pairs.cast()), _mm512_loadu_si512(pairs.add(PANEL).cast()))
            };
            // SAFETY: both are 512 bits of plain integers; every bit pattern is a vector of
            // 32 bf16 (the instruction reads them as such).
            let (b0, b1): (__m512bh, __m512bh) =
                unsafe { (transmute::<__m512i, __m512bh>(b0), transmute::<__m512i, __m512bh>(b1)) };
            for r in 0..R {
                // SAFETY: `a[r·k + 2p]` and the u16 after it: r < R and 2p + 1 < k, inside the
                // R·k elements asserted above; read unaligned as one i32.
                let pair = unsafe { a.add(r * k + 2 * p).cast::<i32>().read_unaligned() };
                // SAFETY: as above, a plain 512-bit vector read as 32 bf16.
                let av: __m512bh = unsafe { transmute::<__m512i, __m512bh>(_mm512_set1_epi32(pair)) };
                low[r] = _mm512_dpbf16_ps(low[r], av, b0);
                high[r] = _mm512_dpbf16_ps(high[r], av, b1);
            }
        }
        for r in 0..R {
            // SAFETY: row r's 32 outputs are `out[r·n .. r·n + 32]`, inside the (R−1)·n + 32
            // elements asserted above; each store writes 16 f32.
            unsafe {
                _mm512_storeu_ps(out.add(r * n), low[r]);
                _mm512_storeu_ps(out.add(r * n + 16), high[r]);
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A repeatable pseudo-random matrix in [-1, 1) (a 64-bit LCG; no test dependency).
    pub(crate) fn random(len: usize, seed: u64) -> Vec<f32> {
        let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (0..len)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    }

    /// `bias + a · b` in f64 from the f32 inputs: the exact product the bf16 ones approximate.
    pub(crate) fn reference(a: &[f32], m: usize, k: usize, b: &[f32], n: usize, bias: &[f32]) -> Vec<f64> {
        let mut out = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                out[i * n + j] =
                    bias[j] as f64 + (0..k).map(|t| a[i * k + t] as f64 * b[t * n + j] as f64).sum::<f64>();
            }
        }
        out
    }

    #[test]
    fn bf16_rounds_to_nearest_even() {
        assert_eq!(from_bf16(to_bf16(1.0)), 1.0);
        assert_eq!(from_bf16(to_bf16(-2.5)), -2.5);
        // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1).
        assert_eq!(from_bf16(to_bf16(1.0 + 1.0 / 256.0)), 1.0);
        assert_eq!(from_bf16(to_bf16(1.0 + 3.0 / 256.0)), 1.0 + 4.0 / 256.0);
        for x in random(1000, 7) {
            let relative = ((from_bf16(to_bf16(x)) - x) / x).abs();
            assert!(relative <= 1.0 / 256.0, "{x}: {relative}");
        }
    }

    /// Every row count a tile handles (1–8), several blocks, two panels and more, and the
    /// model's own shapes' depths (384, 1536): the kernel in use on this CPU and the scalar one
    /// both within bf16's error of the exact product, and within f32 rounding of each other.
    #[test]
    fn both_kernels_match_the_exact_product_within_bf16_error() {
        for (m, k, n) in [(1, 2, 32), (7, 384, 64), (13, 384, 96), (70, 1536, 32), (131, 64, 128)] {
            let (a, b, bias) = (random(m * k, 1), random(k * n, 2), random(n, 3));
            let want = reference(&a, m, k, &b, n, &bias);
            let packed = pack(&b, k, n);
            let mut fast = vec![0.0; m * n];
            matmul(&a, m, k, &packed, n, &bias, &mut fast);
            let a16: Vec<u16> = a.iter().map(|&x| to_bf16(x)).collect();
            let mut scalar = vec![0.0; m * n];
            matmul_scalar(&a16, m, k, &packed, n, &bias, &mut scalar);
            // Each product carries a relative error ≤ 2^-8 from each operand's rounding;
            // random signs make the sum's error grow like √k, bounded here by 4·√k / 256
            // times the largest term (1).
            let bound = 4.0 * (k as f64).sqrt() / 256.0;
            for i in 0..m * n {
                assert!(
                    (fast[i] as f64 - want[i]).abs() <= bound,
                    "{m}×{k}×{n} [{i}]: {} vs {}",
                    fast[i],
                    want[i]
                );
                let f32_rounding = 1e-5 * (k as f32).max(1.0);
                assert!(
                    (fast[i] - scalar[i]).abs() <= f32_rounding,
                    "{m}×{k}×{n} [{i}]: kernel {} scalar {}",
                    fast[i],
                    scalar[i]
                );
            }
        }
    }
}
