//! The model's configuration and weights, read from `config.json` and `model.safetensors`
//! (sentence-transformers' layout, with or without the `bert.` prefix), shapes checked.

use ndarray::{Array1, Array2, Axis, concatenate};
use safetensors::{Dtype, SafeTensors};
use serde::Deserialize;

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
    pub fn check(&self) -> Result<(), String> {
        if self.hidden_act != "gelu" {
            return Err(format!("hidden_act {:?} is not supported (only \"gelu\")", self.hidden_act));
        }
        if self.num_attention_heads == 0 || !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return Err(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            ));
        }
        if self.type_vocab_size == 0 {
            return Err("type_vocab_size is 0: the model has no token-type embedding".to_string());
        }
        Ok(())
    }
}

/// `x · weight + bias`. `weight` is `[in, out]`, row-major: PyTorch stores `[out, in]`, and
/// the matrix product copies (packs) its right operand row by row, which for a query of ten
/// tokens is most of the work: 6 ms a query from this layout, 10 ms from PyTorch's.
pub struct Linear {
    pub weight: Array2<f32>,
    pub bias: Array1<f32>,
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
    pub word: Array2<f32>,
    pub position: Array2<f32>,
    /// Row 0 of the token-type table: every token is of type 0 (single sentences).
    pub token_type: Vec<f32>,
    pub embedding_norm: Norm,
    pub layers: Vec<Layer>,
}

struct Tensors<'a>(SafeTensors<'a>);

impl Tensors<'_> {
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, String> {
        let view = self
            .0
            .tensor(name)
            .or_else(|_| self.0.tensor(&format!("bert.{name}")))
            .map_err(|_| format!("model.safetensors has no tensor {name}"))?;
        if view.dtype() != Dtype::F32 || view.shape() != shape {
            return Err(format!(
                "tensor {name} is {:?} {:?}, expected F32 {shape:?}",
                view.dtype(),
                view.shape()
            ));
        }
        Ok(view.data().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
    }

    fn matrix(&self, name: &str, rows: usize, cols: usize) -> Result<Array2<f32>, String> {
        Array2::from_shape_vec((rows, cols), self.get(name, &[rows, cols])?).map_err(|e| e.to_string())
    }

    fn linear(&self, prefix: &str, out: usize, input: usize) -> Result<Linear, String> {
        Ok(Linear {
            weight: self
                .matrix(&format!("{prefix}.weight"), out, input)?
                .reversed_axes()
                .as_standard_layout()
                .into_owned(),
            bias: Array1::from(self.get(&format!("{prefix}.bias"), &[out])?),
        })
    }

    fn norm(&self, prefix: &str, size: usize) -> Result<Norm, String> {
        Ok(Norm {
            weight: self.get(&format!("{prefix}.weight"), &[size])?,
            bias: self.get(&format!("{prefix}.bias"), &[size])?,
        })
    }
}

fn stack(parts: [Linear; 3]) -> Result<Linear, String> {
    let weights: Vec<_> = parts.iter().map(|p| p.weight.view()).collect();
    let biases: Vec<_> = parts.iter().map(|p| p.bias.view()).collect();
    Ok(Linear {
        weight: concatenate(Axis(1), &weights).map_err(|e| e.to_string())?.as_standard_layout().into_owned(),
        bias: concatenate(Axis(0), &biases).map_err(|e| e.to_string())?,
    })
}

/// Reads every weight the forward pass uses from the bytes of a safetensors file.
pub fn load(bytes: &[u8], config: &Config) -> Result<Weights, String> {
    let tensors = Tensors(SafeTensors::deserialize(bytes).map_err(|e| e.to_string())?);
    let (hidden, inner) = (config.hidden_size, config.intermediate_size);
    let layers = (0..config.num_hidden_layers)
        .map(|i| {
            let p = format!("encoder.layer.{i}");
            let attention =
                |part: &str| tensors.linear(&format!("{p}.attention.self.{part}"), hidden, hidden);
            Ok(Layer {
                qkv: stack([attention("query")?, attention("key")?, attention("value")?])?,
                attention_out: tensors.linear(&format!("{p}.attention.output.dense"), hidden, hidden)?,
                attention_norm: tensors.norm(&format!("{p}.attention.output.LayerNorm"), hidden)?,
                up: tensors.linear(&format!("{p}.intermediate.dense"), inner, hidden)?,
                down: tensors.linear(&format!("{p}.output.dense"), hidden, inner)?,
                output_norm: tensors.norm(&format!("{p}.output.LayerNorm"), hidden)?,
            })
        })
        .collect::<Result<Vec<Layer>, String>>()?;
    let token_type =
        tensors.get("embeddings.token_type_embeddings.weight", &[config.type_vocab_size, hidden])?;
    Ok(Weights {
        word: tensors.matrix("embeddings.word_embeddings.weight", config.vocab_size, hidden)?,
        position: tensors.matrix(
            "embeddings.position_embeddings.weight",
            config.max_position_embeddings,
            hidden,
        )?,
        token_type: token_type[..hidden].to_vec(),
        embedding_norm: tensors.norm("embeddings.LayerNorm", hidden)?,
        layers,
    })
}
