//! Symmetric int8 quantization and the integer dot product.

/// A vector as `i8` values and the scale that maps them back: `x ≈ value · scale`.
pub struct Quantized {
    pub values: Vec<i8>,
    pub scale: f32,
}

impl Quantized {
    pub fn from_f32(vector: &[f32]) -> Quantized {
        let max = vector.iter().fold(0.0_f32, |m, x| m.max(x.abs()));
        if max == 0.0 || !max.is_finite() {
            return Quantized { values: vec![0; vector.len()], scale: 0.0 };
        }
        let scale = max / 127.0;
        Quantized {
            values: vector.iter().map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8).collect(),
            scale,
        }
    }
}

/// `Σ aᵢ·bᵢ` in i32. Written over fixed chunks so the compiler emits SIMD multiply-adds for
/// whatever instructions the caller is compiled for (the index's scan: AVX-512, AVX2 or the
/// baseline, chosen at run time).
#[inline(always)]
pub fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    const LANES: usize = 32;
    let mut acc = [0i32; LANES];
    let chunks = a.len() / LANES;
    for c in 0..chunks {
        let (x, y) = (&a[c * LANES..(c + 1) * LANES], &b[c * LANES..(c + 1) * LANES]);
        for l in 0..LANES {
            acc[l] += x[l] as i32 * y[l] as i32;
        }
    }
    let mut total: i32 = acc.iter().sum();
    for i in chunks * LANES..a.len().min(b.len()) {
        total += a[i] as i32 * b[i] as i32;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_matches_the_plain_sum() {
        let a: Vec<i8> = (0..100).map(|i| (i * 7 % 255 - 127) as i8).collect();
        let b: Vec<i8> = (0..100).map(|i| (i * 13 % 255 - 127) as i8).collect();
        let plain: i32 = a.iter().zip(&b).map(|(x, y)| *x as i32 * *y as i32).sum();
        assert_eq!(dot_i8(&a, &b), plain);
    }

    #[test]
    fn quantization_round_trips_closely() {
        let v = [0.5, -0.25, 0.125, 0.0];
        let q = Quantized::from_f32(&v);
        for (x, qv) in v.iter().zip(&q.values) {
            assert!((x - *qv as f32 * q.scale).abs() < 0.5 / 127.0);
        }
        assert_eq!(Quantized::from_f32(&[0.0, 0.0]).scale, 0.0);
    }
}
