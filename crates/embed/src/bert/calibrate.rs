//! Smoothing for the int8 products (SmoothQuant, Xiao et al. 2023): a product's input
//! activations are quantized per row, and a few input channels that run much larger than the
//! rest (BERT's outlier dimensions) set the row's step, so the other channels lose most of their
//! precision. Each input channel `c` is divided by a factor `s[c]` and the weight's row `c`
//! multiplied by it, which leaves the product unchanged in exact arithmetic and moves part of
//! the channel's range into the weight, quantized per output column:
//!
//! `s[c] = max|x[·][c]|^α / max|w[c][·]|^(1−α)`, α = ½ (the paper's default: the range split
//! evenly between the two operands).
//!
//! `max|x[·][c]|` is measured once, at packing time, by the f32 forward pass over a small fixed
//! text that ships with the crate ([`TEXT`]: prose of the kinds Cortex stores, written for
//! this purpose, not taken from any evaluation set), so a pack is made again identically from
//! the model files alone.

use super::Encoder;
use super::pack::{Tensor, smooth_name};
use std::collections::HashMap;

/// The calibration text: one text per line.
pub const TEXT: &str = include_str!("calibration.txt");

const ALPHA: f32 = 0.5;
/// Floor of both maxima, so a channel that is always zero gets a factor of 1, not 0 or ∞.
const FLOOR: f32 = 1e-5;

/// Per product (by weight name), the largest magnitude each input channel took while
/// `encoder` (f32) embedded `texts`.
pub fn activation_maxima(encoder: &Encoder, texts: &[Vec<u32>]) -> HashMap<String, Vec<f32>> {
    let mut maxima: HashMap<String, Vec<f32>> = HashMap::new();
    let refs: Vec<&[u32]> = texts.iter().map(Vec::as_slice).collect();
    encoder.forward(&refs, &mut |name, x| {
        let max = maxima.entry(name.to_string()).or_insert_with(|| vec![0.0; x.ncols()]);
        for row in x.rows() {
            for (m, v) in max.iter_mut().zip(row) {
                *m = m.max(v.abs());
            }
        }
    });
    maxima
}

/// The products whose input is a LayerNorm's output, where the outlier channels are: the query,
/// key and value projection and the feed-forward's first product. The other two products take
/// inputs of another shape (attention averages, GELU outputs), not a norm's outlier channels,
/// and smoothing them as well moves the vectors further from f32 (BENCHMARKS.md).
fn fed_by_a_norm(weight: &str) -> bool {
    weight.ends_with(".qkv.weight") || weight.ends_with(".up.weight")
}

/// Multiplies the rows of each weight [`fed_by_a_norm`] by its factors and adds the factors' inverses as
/// `<name>_smooth` (what the activations are multiplied by before quantization).
pub fn smooth(tensors: &mut Vec<Tensor>, maxima: &HashMap<String, Vec<f32>>) {
    let mut added = Vec::new();
    for t in tensors.iter_mut().filter(|t| t.product && fed_by_a_norm(&t.name)) {
        let Some(activation) = maxima.get(&t.name) else { continue };
        let (k, n) = (t.shape[0], t.shape[1]);
        let factors: Vec<f32> = (0..k)
            .map(|c| {
                let weight = t.values[c * n..(c + 1) * n].iter().fold(0.0f32, |m, w| m.max(w.abs()));
                activation[c].max(FLOOR).powf(ALPHA) / weight.max(FLOOR).powf(1.0 - ALPHA)
            })
            .collect();
        for (row, f) in t.values.chunks_exact_mut(n).zip(&factors) {
            row.iter_mut().for_each(|w| *w *= f);
        }
        let inverse = factors.iter().map(|f| 1.0 / f).collect();
        added.push(Tensor { name: smooth_name(&t.name), shape: vec![k], values: inverse, product: false });
    }
    tensors.extend(added);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bert::int8::{self, Weight};
    use crate::bert::kernel::tests::{random, reference};

    /// A product whose input has two outlier channels, as LayerNorm outputs in BERT do: smoothed,
    /// the int8 product stays the same product (the factors cancel) and lands closer to the exact
    /// one than without smoothing.
    #[test]
    fn smoothing_keeps_the_product_and_shrinks_the_int8_error_on_outlier_channels() {
        let (m, k, n) = (24, 64, 32);
        let mut a = random(m * k, 5);
        for row in a.chunks_exact_mut(k) {
            row[3] *= 40.0;
            row[17] *= 25.0;
        }
        let (b, bias) = (random(k * n, 6), random(n, 7));
        let want = reference(&a, m, k, &b, n, &bias);
        let mut maxima = HashMap::new();
        maxima.insert(
            "0.up.weight".to_string(),
            (0..k).map(|c| (0..m).map(|i| a[i * k + c].abs()).fold(0.0, f32::max)).collect(),
        );
        let mut tensors =
            vec![Tensor { name: "0.up.weight".into(), shape: vec![k, n], values: b.clone(), product: true }];
        smooth(&mut tensors, &maxima);
        assert_eq!(tensors[1].name, smooth_name("0.up.weight"));
        assert!(tensors[1].values[3] < tensors[1].values[0], "the outlier channel is scaled down most");
        let error = |weights: &[f32], factors: &[f32]| {
            let q = int8::quantize(weights, k, n);
            let weight = Weight { values: &q.values, scales: &q.scales, sums: &q.sums, smooth: factors };
            let mut out = vec![0.0; m * n];
            int8::matmul(&a, m, k, weight, n, &bias, &mut out);
            out.iter().zip(&want).map(|(x, y)| (*x as f64 - y).powi(2)).sum::<f64>()
        };
        let (plain, smoothed) = (error(&b, &[]), error(&tensors[0].values, &tensors[1].values));
        let scale: f64 = want.iter().map(|y| y * y).sum();
        assert!(smoothed < scale * 1e-4, "the factors cancel: error {smoothed} of {scale}");
        assert!(smoothed < plain / 2.0, "smoothed {smoothed} vs plain {plain}");
    }

    #[test]
    fn the_calibration_text_is_prose_of_several_kinds_and_small() {
        let lines: Vec<&str> = TEXT.lines().filter(|l| !l.trim().is_empty()).collect();
        assert!(lines.len() >= 40 && TEXT.len() < 16 * 1024, "{} lines, {} bytes", lines.len(), TEXT.len());
    }
}
