//! The model's configuration and weights, read from `config.json` and `model.safetensors`
//! (sentence-transformers' layout, with or without the `bert.` prefix), shapes checked, and
//! as the forward pass reads them from the packed model ([`super::pack`]).

use super::error::{ModelError, PackError, Result};
use super::int8;
use super::pack::{Dtype, Packed, Tensor, int8_parts, smooth_name};
use crate::precision::Resolved;
use safetensors::{Dtype as SafeDtype, SafeTensors};
use serde::Deserialize;
use std::ops::Range;

/// The fields of `config.json` the forward pass reads.
#[derive(Debug, Clone, Deserialize)]
pub struct Config {
    pub hidden_size: usize,
    pub num_attention_heads: usize,
    pub num_hidden_layers: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    pub vocab_size: usize,
    pub type_vocab_size: usize,
    pub layer_norm_eps: f32,
    pub hidden_act: String,
}

impl Config {
    /// Refuses what this encoder does not implement, rather than computing something else.
    pub fn check(&self) -> Result<()> {
        if self.hidden_act != "gelu" {
            return Err(ModelError::Activation(self.hidden_act.clone()));
        }
        if self.num_attention_heads == 0 || !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return Err(ModelError::Heads { hidden: self.hidden_size, heads: self.num_attention_heads });
        }
        if self.type_vocab_size == 0 {
            return Err(ModelError::NoTokenType);
        }
        Ok(())
    }
}

/// `x · weight + bias`: `weight` is `[in, out]` (PyTorch stores `[out, in]`): in f32,
/// row-major, since the matrix product copies (packs) its right operand row by row, which for a
/// query of ten tokens is most of the work; in bf16 or int8, in the kernel's order
/// ([`super::kernel::pack`], [`super::int8::quantize`]).
pub struct Linear {
    /// The weight's name in the packed model (`<layer>.<product>.weight`).
    pub name: String,
    /// Bytes of the weight in the packed model.
    pub weight: Range<usize>,
    pub format: Dtype,
    pub input: usize,
    pub output: usize,
    pub bias: Vec<f32>,
    /// int8 only: each output column's scale and sum of quantized values.
    pub column_scales: Vec<f32>,
    pub column_sums: Vec<i32>,
    /// int8 only: the activations' per-channel smoothing factors ([`super::calibrate`]), or
    /// empty.
    pub smooth: Vec<f32>,
}

pub struct Norm {
    pub weight: Vec<f32>,
    pub bias: Vec<f32>,
}

pub struct Layer {
    /// Query, key and value projections side by side: one `[hidden, 3·hidden]` product.
    pub qkv: Linear,
    pub attention_out: Linear,
    pub attention_norm: Norm,
    pub up: Linear,
    pub down: Linear,
    pub output_norm: Norm,
}

pub struct Weights {
    pub precision: Resolved,
    pub packed: Packed,
    /// Bytes of the word embedding table, `[vocab, hidden]` f32 (only the rows of the tokens
    /// seen are ever read, so a mapped table costs only those pages).
    pub word: Range<usize>,
    pub position: Vec<f32>,
    /// Row 0 of the token-type table: every token is of type 0 (single sentences).
    pub token_type: Vec<f32>,
    pub embedding_norm: Norm,
    pub layers: Vec<Layer>,
}

impl Weights {
    /// Row `id` of the word embedding table.
    pub fn word_row(&self, id: usize, hidden: usize) -> &[f32] {
        let table = self.packed.slice::<f32>(self.word.clone()).expect("checked at load");
        &table[id * hidden..(id + 1) * hidden]
    }

    pub fn f32_weight(&self, linear: &Linear) -> &[f32] {
        self.packed.slice::<f32>(linear.weight.clone()).expect("checked at load")
    }

    pub fn bf16_weight(&self, linear: &Linear) -> &[u16] {
        self.packed.slice::<u16>(linear.weight.clone()).expect("checked at load")
    }

    pub fn int8_weight<'a>(&'a self, linear: &'a Linear) -> int8::Weight<'a> {
        int8::Weight {
            values: self.packed.slice::<i8>(linear.weight.clone()).expect("checked at load"),
            scales: &linear.column_scales,
            sums: &linear.column_sums,
            smooth: &linear.smooth,
        }
    }

    /// Every weight of a packed model, shapes checked against `config`.
    pub fn from_packed(packed: Packed, config: &Config, precision: Resolved) -> Result<Weights> {
        let (hidden, inner) = (config.hidden_size, config.intermediate_size);
        let linear = |name: &str, input: usize, output: usize| -> Result<Linear> {
            let weight = format!("{name}.weight");
            // Each product in the format its pack records for it, so the pack alone decides.
            let format = packed.dtype(&weight)?;
            if format == Dtype::I32 {
                return Err(PackError::NotAWeight(weight).into());
            }
            let (column_scales, column_sums, smooth) = match format {
                Dtype::I8Packed => {
                    let (scale, sum) = int8_parts(&weight);
                    let smooth = smooth_name(&weight);
                    let smooth =
                        if packed.has(&smooth) { packed.vec(&smooth, &[input])? } else { Vec::new() };
                    (packed.vec(&scale, &[output])?, packed.vec_i32(&sum, &[output])?, smooth)
                }
                _ => (Vec::new(), Vec::new(), Vec::new()),
            };
            Ok(Linear {
                name: weight.clone(),
                smooth,
                weight: packed.range(&weight, format, &[input, output])?,
                format,
                input,
                output,
                bias: packed.vec(&format!("{name}.bias"), &[output])?,
                column_scales,
                column_sums,
            })
        };
        let norm = |name: &str| -> Result<Norm> {
            Ok(Norm {
                weight: packed.vec(&format!("{name}.weight"), &[hidden])?,
                bias: packed.vec(&format!("{name}.bias"), &[hidden])?,
            })
        };
        let layers = (0..config.num_hidden_layers)
            .map(|i| {
                Ok(Layer {
                    qkv: linear(&format!("{i}.qkv"), hidden, 3 * hidden)?,
                    attention_out: linear(&format!("{i}.attention_out"), hidden, hidden)?,
                    attention_norm: norm(&format!("{i}.attention_norm"))?,
                    up: linear(&format!("{i}.up"), hidden, inner)?,
                    down: linear(&format!("{i}.down"), inner, hidden)?,
                    output_norm: norm(&format!("{i}.output_norm"))?,
                })
            })
            .collect::<Result<Vec<Layer>>>()?;
        let word = packed.range("word", Dtype::F32, &[config.vocab_size, hidden])?;
        let position = packed.vec("position", &[config.max_position_embeddings, hidden])?;
        let token_type = packed.vec("token_type", &[hidden])?;
        let embedding_norm = norm("embedding_norm")?;
        Ok(Weights { precision, word, position, token_type, embedding_norm, layers, packed })
    }
}

struct Tensors<'a>(SafeTensors<'a>);

impl Tensors<'_> {
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        let view = self
            .0
            .tensor(name)
            .or_else(|_| self.0.tensor(&format!("bert.{name}")))
            .map_err(|_| ModelError::MissingTensor(name.to_string()))?;
        if view.dtype() != SafeDtype::F32 || view.shape() != shape {
            return Err(ModelError::wrong_tensor(
                name,
                (view.dtype(), view.shape()),
                (SafeDtype::F32, shape),
            ));
        }
        Ok(view.data().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
    }

    /// A PyTorch `[out, in]` weight as `[in, out]`.
    fn transposed(&self, name: &str, output: usize, input: usize) -> Result<Vec<f32>> {
        let w = self.get(name, &[output, input])?;
        let mut t = vec![0.0; w.len()];
        for o in 0..output {
            for i in 0..input {
                t[i * output + o] = w[o * input + i];
            }
        }
        Ok(t)
    }
}

fn tensor(name: String, shape: Vec<usize>, values: Vec<f32>, product: bool) -> Tensor {
    Tensor { name, shape, values, product }
}

/// Every weight the forward pass uses, read from the bytes of `model.safetensors` and named
/// and shaped for the packed model: products' weights `[in, out]`, the query, key and value
/// projections side by side.
pub fn from_safetensors(bytes: &[u8], config: &Config) -> Result<Vec<Tensor>> {
    let t = Tensors(SafeTensors::deserialize(bytes)?);
    let (hidden, inner) = (config.hidden_size, config.intermediate_size);
    let mut out = Vec::new();
    // A bias or a norm's weights: a vector of `len`, as stored.
    let plain = |name: &str, from: &str, len: usize| -> Result<Tensor> {
        Ok(tensor(name.to_string(), vec![len], t.get(from, &[len])?, false))
    };
    let linear = |out: &mut Vec<Tensor>, name: String, from: &str, output: usize, input: usize| {
        let weight = t.transposed(&format!("{from}.weight"), output, input)?;
        out.push(tensor(format!("{name}.weight"), vec![input, output], weight, true));
        out.push(plain(&format!("{name}.bias"), &format!("{from}.bias"), output)?);
        Ok::<(), ModelError>(())
    };
    let norm = |out: &mut Vec<Tensor>, name: String, from: &str| {
        for part in ["weight", "bias"] {
            out.push(plain(&format!("{name}.{part}"), &format!("{from}.{part}"), hidden)?);
        }
        Ok::<(), ModelError>(())
    };
    for i in 0..config.num_hidden_layers {
        let p = format!("encoder.layer.{i}");
        let (mut weight, mut bias) = (vec![0.0; hidden * 3 * hidden], Vec::with_capacity(3 * hidden));
        for (part, name) in ["query", "key", "value"].iter().enumerate() {
            let from = format!("{p}.attention.self.{name}");
            let w = t.transposed(&format!("{from}.weight"), hidden, hidden)?;
            for row in 0..hidden {
                weight[row * 3 * hidden + part * hidden..][..hidden]
                    .copy_from_slice(&w[row * hidden..][..hidden]);
            }
            bias.extend(t.get(&format!("{from}.bias"), &[hidden])?);
        }
        out.push(tensor(format!("{i}.qkv.weight"), vec![hidden, 3 * hidden], weight, true));
        out.push(tensor(format!("{i}.qkv.bias"), vec![3 * hidden], bias, false));
        linear(
            &mut out,
            format!("{i}.attention_out"),
            &format!("{p}.attention.output.dense"),
            hidden,
            hidden,
        )?;
        norm(&mut out, format!("{i}.attention_norm"), &format!("{p}.attention.output.LayerNorm"))?;
        linear(&mut out, format!("{i}.up"), &format!("{p}.intermediate.dense"), inner, hidden)?;
        linear(&mut out, format!("{i}.down"), &format!("{p}.output.dense"), hidden, inner)?;
        norm(&mut out, format!("{i}.output_norm"), &format!("{p}.output.LayerNorm"))?;
    }
    let token_type = t.get("embeddings.token_type_embeddings.weight", &[config.type_vocab_size, hidden])?;
    out.push(tensor("token_type".into(), vec![hidden], token_type[..hidden].to_vec(), false));
    out.push(tensor(
        "word".into(),
        vec![config.vocab_size, hidden],
        t.get("embeddings.word_embeddings.weight", &[config.vocab_size, hidden])?,
        false,
    ));
    out.push(tensor(
        "position".into(),
        vec![config.max_position_embeddings, hidden],
        t.get("embeddings.position_embeddings.weight", &[config.max_position_embeddings, hidden])?,
        false,
    ));
    norm(&mut out, "embedding_norm".into(), "embeddings.LayerNorm")?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use safetensors::tensor::TensorView;

    fn config() -> Config {
        Config {
            hidden_size: 4,
            num_attention_heads: 2,
            num_hidden_layers: 1,
            intermediate_size: 8,
            max_position_embeddings: 8,
            vocab_size: 10,
            type_vocab_size: 1,
            layer_norm_eps: 1e-12,
            hidden_act: "gelu".into(),
        }
    }

    #[test]
    fn a_configuration_this_encoder_does_not_compute_is_refused() {
        assert!(config().check().is_ok());
        let relu = Config { hidden_act: "relu".into(), ..config() };
        assert_eq!(
            relu.check().unwrap_err().to_string(),
            "hidden_act \"relu\" is not supported (only \"gelu\")"
        );
        for heads in [0, 3] {
            let odd = Config { num_attention_heads: heads, ..config() };
            assert!(matches!(odd.check(), Err(ModelError::Heads { hidden: 4, heads: h }) if h == heads));
        }
        let untyped = Config { type_vocab_size: 0, ..config() };
        assert!(matches!(untyped.check(), Err(ModelError::NoTokenType)));
    }

    #[test]
    fn a_safetensors_file_without_a_tensor_or_of_another_shape_is_refused_by_name() {
        assert!(matches!(
            from_safetensors(b"not a safetensors file", &config()),
            Err(ModelError::Safetensors(_))
        ));
        let query = "encoder.layer.0.attention.self.query.weight";
        let bytes = vec![0u8; 4 * 3 * 4];
        let misshaped = safetensors::serialize(
            [(query, TensorView::new(SafeDtype::F32, vec![4, 3], &bytes).unwrap())],
            None,
        )
        .unwrap();
        assert_eq!(
            from_safetensors(&misshaped, &config()).err().map(|e| e.to_string()).as_deref(),
            Some("tensor encoder.layer.0.attention.self.query.weight is F32 [4, 3], expected F32 [4, 4]")
        );
        let other = safetensors::serialize(
            [("pooler.dense.bias", TensorView::new(SafeDtype::F32, vec![12], &bytes).unwrap())],
            None,
        )
        .unwrap();
        assert!(matches!(
            from_safetensors(&other, &config()),
            Err(ModelError::MissingTensor(name)) if name == query
        ));
    }
}
