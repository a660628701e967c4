//! The BERT encoder of all-MiniLM-L6-v2 on plain matrices: ndarray for the matrix products
//! (matrixmultiply's SIMD kernels), [`math`] for the steps between them. Its reference is the
//! numpy forward pass in `tests/fixtures/minilm_reference.py`.
//!
//! Why not a framework: one forward pass here runs on one thread, and a batch is spread
//! over the cores as whole groups of texts ([`crate::LocalModel`]). candle split every
//! product and element-wise step of one pass across threads and ran GELU on one, which kept
//! two cores 1.4 busy; its padded batches also paid for padding tokens.
//!
//! Texts are never padded: the token-wise steps (projections, feed-forward, norms) run on
//! the tokens of all texts of a group stacked into one matrix, and attention, the only step
//! that mixes tokens, runs per text.
//!
//! The crate's `unsafe` code is in three modules below: [`raw`] (mapping the packed model,
//! viewing its bytes as numbers), [`kernel`] and [`int8`] (the AVX-512 products, called only
//! after checking the CPU has the instructions). Every block says why it is sound where it
//! stands; the kernels are checked against their scalar twins over random shapes
//! (`kernel_properties`).

mod calibrate;
mod error;
mod int8;
mod kernel;
#[cfg(test)]
mod kernel_properties;
mod load;
mod math;
mod pack;
mod raw;
mod weights;

use crate::precision::Resolved;
pub use error::{ModelError, PackError};
pub use int8::has_int8_kernel;
pub use kernel::has_bf16_kernel;
pub use load::default_pack_dir;
use ndarray::{Array2, ArrayView2, ArrayViewMut2, Axis, Slice, linalg::general_mat_mul};
use pack::Dtype;
use std::ops::Range;
use std::path::{Path, PathBuf};
pub use weights::Config;
use weights::{Linear, Norm, Weights};

/// The calibration text's token ids ([`calibrate::TEXT`], one list per line), asked for only
/// when an int8 pack is made.
pub type Calibration<'a> = &'a dyn Fn() -> Vec<Vec<u32>>;
pub use calibrate::TEXT as CALIBRATION_TEXT;

pub struct Encoder {
    config: Config,
    weights: Weights,
    /// The packed model it maps; `None` when it was made in memory.
    pack: Option<PathBuf>,
}

impl Encoder {
    /// Builds the encoder from `config.json`'s settings and the model in `dir`, computing in
    /// `precision`, its packed model kept in the folder `packs` (see [`load`]).
    pub fn load(
        config: Config,
        dir: &Path,
        packs: &Path,
        precision: Resolved,
        calibration: Calibration,
    ) -> error::Result<Encoder> {
        config.check()?;
        let (weights, pack) = load::load(dir, packs, &config, precision, calibration)?;
        Ok(Encoder { config, weights, pack })
    }

    /// Writes the packed model of `precision` for the model in `dir` into `packs` (`cortex
    /// model install` does, so that the first load is as quick as the others).
    pub fn pack(
        config: &Config,
        dir: &Path,
        packs: &Path,
        precision: Resolved,
        calibration: Calibration,
    ) -> error::Result<PathBuf> {
        config.check()?;
        load::pack_into(dir, packs, config, precision, calibration)
    }

    pub fn precision(&self) -> Resolved {
        self.weights.precision
    }

    pub fn pack_path(&self) -> Option<&Path> {
        self.pack.as_deref()
    }

    /// The longest text, in tokens, the position table covers.
    pub fn max_tokens(&self) -> usize {
        self.config.max_position_embeddings
    }

    /// One unit-length vector per text: the mean of its last hidden states. Each text is a
    /// non-empty list of token ids, at most [`Self::max_tokens`] long, within the vocabulary.
    pub fn encode(&self, texts: &[&[u32]]) -> Vec<Vec<f32>> {
        self.forward(texts, &mut |_, _| {})
    }

    /// [`Self::encode`], showing `observe` the input of every matrix product on the way
    /// (with the product's weight name), as calibration needs.
    fn forward(&self, texts: &[&[u32]], observe: &mut dyn FnMut(&str, &Array2<f32>)) -> Vec<Vec<f32>> {
        let mut spans = Vec::with_capacity(texts.len());
        let mut start = 0;
        for text in texts {
            spans.push(start..start + text.len());
            start += text.len();
        }
        let mut hidden = self.embed_tokens(texts, start);
        for layer in &self.weights.layers {
            self.layer(&mut hidden, layer, &spans, observe);
        }
        spans.into_iter().map(|span| mean_unit(hidden.slice_axis(Axis(0), Slice::from(span)))).collect()
    }

    /// Word + position + token-type embeddings of every token, normalized.
    fn embed_tokens(&self, texts: &[&[u32]], tokens: usize) -> Array2<f32> {
        let w = &self.weights;
        let size = self.config.hidden_size;
        let mut hidden = Array2::zeros((tokens, size));
        let mut rows = hidden.rows_mut().into_iter();
        for text in texts {
            for (position, &id) in text.iter().enumerate() {
                let mut row = rows.next().expect("one row per token");
                let out = row.as_slice_mut().expect("rows of a new matrix are contiguous");
                let word = w.word_row(id as usize, size);
                let place = &w.position[position * size..(position + 1) * size];
                for (((o, a), b), c) in out.iter_mut().zip(word).zip(place).zip(&w.token_type) {
                    *o = a + b + c;
                }
                norm(out, &w.embedding_norm, self.config.layer_norm_eps);
            }
        }
        hidden
    }

    fn layer(
        &self,
        hidden: &mut Array2<f32>,
        layer: &weights::Layer,
        spans: &[Range<usize>],
        observe: &mut dyn FnMut(&str, &Array2<f32>),
    ) {
        let eps = self.config.layer_norm_eps;
        let mut linear = |x: &Array2<f32>, linear: &Linear| {
            observe(&linear.name, x);
            self.linear(x, linear)
        };
        let qkv = linear(hidden, &layer.qkv);
        let context = self.attention(&qkv, spans);
        let attended = linear(&context, &layer.attention_out);
        add_and_norm(hidden, &attended, &layer.attention_norm, eps);
        let mut inner = linear(hidden, &layer.up);
        math::gelu(inner.as_slice_mut().expect("a new matrix is contiguous"));
        let out = linear(&inner, &layer.down);
        add_and_norm(hidden, &out, &layer.output_norm, eps);
    }

    /// Scaled dot-product attention of each head, within each text; `qkv` holds the
    /// queries, keys and values side by side.
    fn attention(&self, qkv: &Array2<f32>, spans: &[Range<usize>]) -> Array2<f32> {
        let size = self.config.hidden_size;
        let heads = self.config.num_attention_heads;
        let head = size / heads;
        let scale = 1.0 / (head as f32).sqrt();
        let mut context = Array2::zeros((qkv.nrows(), size));
        let longest = spans.iter().map(|s| s.len()).max().unwrap_or(0);
        let mut buffer = Array2::<f32>::zeros((longest, longest));
        for span in spans {
            let n = span.len();
            let mut scores = block_mut(&mut buffer, 0..n, 0..n);
            for h in 0..heads {
                let columns = |offset: usize| offset + h * head..offset + (h + 1) * head;
                let q = block(qkv, span.clone(), columns(0));
                let k = block(qkv, span.clone(), columns(size));
                let v = block(qkv, span.clone(), columns(2 * size));
                general_mat_mul(scale, &q, &k.t(), 0.0, &mut scores);
                for mut row in scores.rows_mut() {
                    math::softmax(row.as_slice_mut().expect("rows of the score buffer are contiguous"));
                }
                let mut out = block_mut(&mut context, span.clone(), columns(0));
                general_mat_mul(1.0, &scores, &v, 0.0, &mut out);
            }
        }
        context
    }
}

/// The rows × columns part of `m`. (ndarray's `s!` macro allows `unsafe` code inside, which
/// this workspace forbids.)
fn block(m: &Array2<f32>, rows: Range<usize>, columns: Range<usize>) -> ArrayView2<'_, f32> {
    m.slice_axis(Axis(0), Slice::from(rows)).slice_axis_move(Axis(1), Slice::from(columns))
}

fn block_mut(m: &mut Array2<f32>, rows: Range<usize>, columns: Range<usize>) -> ArrayViewMut2<'_, f32> {
    m.slice_axis_mut(Axis(0), Slice::from(rows)).slice_axis_move(Axis(1), Slice::from(columns))
}

impl Encoder {
    /// `x · weight + bias` in the weight's format. f32: the bias written first and
    /// matrixmultiply's product added onto it; bf16 and int8: their kernels
    /// ([`kernel::matmul`], [`int8::matmul`]).
    fn linear(&self, x: &Array2<f32>, linear: &Linear) -> Array2<f32> {
        let (m, k, n) = (x.nrows(), linear.input, linear.output);
        let mut out = Array2::zeros((m, n));
        let a = x.as_slice().expect("the encoder's matrices are contiguous");
        match linear.format {
            Dtype::F32 => {
                let weight = ArrayView2::from_shape((k, n), self.weights.f32_weight(linear))
                    .expect("shape checked at load");
                for mut row in out.rows_mut() {
                    row.assign(&ndarray::ArrayView1::from(&linear.bias));
                }
                general_mat_mul(1.0, x, &weight, 1.0, &mut out);
            }
            Dtype::Bf16Packed => kernel::matmul(
                a,
                m,
                k,
                self.weights.bf16_weight(linear),
                n,
                &linear.bias,
                out.as_slice_mut().expect("a new matrix is contiguous"),
            ),
            Dtype::I8Packed => int8::matmul(
                a,
                m,
                k,
                self.weights.int8_weight(linear),
                n,
                &linear.bias,
                out.as_slice_mut().expect("a new matrix is contiguous"),
            ),
            Dtype::I32 => unreachable!("a weight is never i32 (checked at load)"),
        }
        out
    }
}

/// `hidden = LayerNorm(hidden + residual)`, row by row.
fn add_and_norm(hidden: &mut Array2<f32>, residual: &Array2<f32>, weights: &Norm, eps: f32) {
    *hidden += residual;
    for mut row in hidden.rows_mut() {
        norm(row.as_slice_mut().expect("rows of a new matrix are contiguous"), weights, eps);
    }
}

fn norm(row: &mut [f32], weights: &Norm, eps: f32) {
    math::layer_norm(row, &weights.weight, &weights.bias, eps);
}

/// The mean of a text's token vectors, scaled to unit length.
fn mean_unit(tokens: ArrayView2<f32>) -> Vec<f32> {
    let mean = tokens.mean_axis(Axis(0)).expect("a text has at least one token");
    let length = mean.dot(&mean).sqrt();
    mean.iter().map(|x| x / length).collect()
}
