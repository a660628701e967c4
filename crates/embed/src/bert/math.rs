//! The element-wise steps of the encoder, on rows of plain `f32` slices: layer norm, GELU,
//! softmax. Written as simple loops over contiguous slices so the compiler vectorizes them.

/// Normalizes `row` to zero mean and unit variance, then scales by `weight` and shifts by
/// `bias` (BERT's LayerNorm over the hidden size).
pub fn layer_norm(row: &mut [f32], weight: &[f32], bias: &[f32], eps: f32) {
    let n = row.len() as f32;
    let mean = row.iter().sum::<f32>() / n;
    let variance = row.iter().map(|x| (x - mean) * (x - mean)).sum::<f32>() / n;
    let scale = 1.0 / (variance + eps).sqrt();
    for ((x, w), b) in row.iter_mut().zip(weight).zip(bias) {
        *x = (*x - mean) * scale * w + b;
    }
}

/// GELU with the exact (erf) form the model was trained with: `x/2 · (1 + erf(x/√2))`.
pub fn gelu(values: &mut [f32]) {
    for x in values {
        *x = 0.5 * *x * (1.0 + erf(*x * std::f32::consts::FRAC_1_SQRT_2));
    }
}

/// erf for f32: the rational approximation Eigen, XLA and TVM use (an odd polynomial of
/// degree 13 over an even one of degree 8, on [-4, 4], where erf reaches ±1 in f32). It is
/// within a few ulp of erf and, unlike a library call, vectorizes: the exact form spent a
/// tenth of the encoder's time in a scalar `erff`. (Plain `*` and `+`, not `mul_add`: built
/// for any x86-64, `mul_add` is a call to a software fma.)
pub fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = -2.726_142_3e-10_f32;
    for c in
        [2.770_681_4e-8, -2.101_024e-6, -5.692_506_4e-5, -7.349_906_3e-4, -2.954_600_1e-3, -1.609_603_3e-2]
    {
        p = p * x2 + c;
    }
    let mut q = -1.456_607_2e-5_f32;
    for c in [-2.133_740_6e-4, -1.682_827e-3, -7.373_329e-3, -1.426_474e-2] {
        q = q * x2 + c;
    }
    x * p / q
}

/// Softmax of `row` in place, shifted by its maximum so no exponent overflows.
pub fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for x in row.iter_mut() {
        *x = (*x - max).exp();
        sum += *x;
    }
    let inverse = 1.0 / sum;
    for x in row.iter_mut() {
        *x *= inverse;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// erf in f64 from its Maclaurin series, which converges for every |x| ≤ 4 used here
    /// (terms are summed until they no longer change the total).
    fn erf_series(x: f64) -> f64 {
        let mut term = x;
        let mut total = x;
        let mut n = 0.0;
        loop {
            n += 1.0;
            term *= -x * x / n;
            let next = total + term / (2.0 * n + 1.0);
            if next == total {
                break;
            }
            total = next;
        }
        total * 2.0 / std::f64::consts::PI.sqrt()
    }

    #[test]
    fn erf_is_within_a_few_ulp_of_the_series_over_its_whole_range() {
        let mut worst: f64 = 0.0;
        for i in -4000..=4000 {
            let x = i as f64 / 1000.0;
            worst = worst.max((erf(x as f32) as f64 - erf_series(x)).abs());
        }
        assert!(worst < 1e-6, "worst absolute error {worst}");
        assert_eq!(erf(0.0), 0.0);
        assert_eq!(erf(9.0), erf(4.0));
        assert!((erf(4.0) - 1.0).abs() < 1e-6 && (erf(-4.0) + 1.0).abs() < 1e-6);
    }

    #[test]
    fn layer_norm_gives_zero_mean_unit_variance_before_scaling() {
        let mut row = [1.0, 2.0, 3.0, 4.0];
        layer_norm(&mut row, &[1.0; 4], &[0.0; 4], 1e-12);
        let mean: f32 = row.iter().sum::<f32>() / 4.0;
        let variance: f32 = row.iter().map(|x| x * x).sum::<f32>() / 4.0;
        assert!(mean.abs() < 1e-6 && (variance - 1.0).abs() < 1e-5, "{row:?}");
        let mut shifted = [1.0, 2.0, 3.0, 4.0];
        layer_norm(&mut shifted, &[2.0; 4], &[1.0; 4], 1e-12);
        for (s, r) in shifted.iter().zip(row) {
            assert!((s - (2.0 * r + 1.0)).abs() < 1e-5);
        }
    }

    #[test]
    fn softmax_sums_to_one_and_survives_large_scores() {
        let mut row = [1000.0, 1000.0, 999.0];
        softmax(&mut row);
        assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!((row[0] - row[1]).abs() < 1e-7 && row[2] < row[0]);
        let e = std::f32::consts::E;
        assert!((row[0] / row[2] - e).abs() < 1e-4);
    }

    #[test]
    fn gelu_matches_its_definition() {
        let mut values = [-3.0, -1.0, 0.0, 0.5, 2.0];
        let want: Vec<f64> = values
            .iter()
            .map(|&x: &f32| 0.5 * x as f64 * (1.0 + erf_series(x as f64 / 2f64.sqrt())))
            .collect();
        gelu(&mut values);
        for (got, want) in values.iter().zip(want) {
            assert!((*got as f64 - want).abs() < 1e-6, "{got} vs {want}");
        }
    }
}
