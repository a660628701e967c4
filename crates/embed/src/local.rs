//! all-MiniLM-L6-v2 in-process.

use crate::EmbedError;
use crate::model_files::check_files;
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use std::path::Path;
use tokenizers::{Encoding, Tokenizer, TruncationParams};

/// The model's own limit is 512 positions; 256 is what it was trained with, and longer
/// inputs only dilute the mean.
pub const MAX_TOKENS: usize = 256;

/// Texts run through the model together, at most: texts of similar length are grouped so
/// that little time goes into padding (a batch costs as much as its longest text times its
/// size).
const GROUP_SIZE: usize = 16;

pub struct LocalModel {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
    /// Runs single queries on one thread: splitting the matrix products of a ten-token forward
    /// pass across cores costs more in hand-offs than it saves, and a find runs its lexical
    /// search beside the query's embedding (measured: 11 ms against 18 ms at p50).
    query_pool: rayon::ThreadPool,
}

fn load_error(dir: &Path, reason: impl std::fmt::Display) -> EmbedError {
    EmbedError::ModelLoad { dir: dir.display().to_string(), reason: reason.to_string() }
}

impl LocalModel {
    pub fn load(dir: &Path) -> Result<LocalModel, EmbedError> {
        check_files(dir)?;
        let device = Device::Cpu;
        let config: Config = std::fs::read_to_string(dir.join("config.json"))
            .map_err(|e| load_error(dir, e))
            .and_then(|text| serde_json::from_str(&text).map_err(|e| load_error(dir, e)))?;
        let mut tokenizer =
            Tokenizer::from_file(dir.join("tokenizer.json")).map_err(|e| load_error(dir, e))?;
        // The shipped tokenizer pads and truncates at 128: `embed` pads each group of texts to
        // its own longest instead, and truncation is at MAX_TOKENS.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams { max_length: MAX_TOKENS, ..Default::default() }))
            .map_err(|e| load_error(dir, e))?;
        // SAFETY-free: candle memory-maps through a safe wrapper when asked; reading the file
        // into memory keeps this crate free of `unsafe` at the cost of ~90 MB of reads once.
        let weights = std::fs::read(dir.join("model.safetensors")).map_err(|e| load_error(dir, e))?;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
            .map_err(|e| load_error(dir, e))?;
        let model = BertModel::load(vb, &config).map_err(|e| load_error(dir, e))?;
        let query_pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .thread_name(|_| "cortex-query-embed".into())
            .build()
            .map_err(|e| load_error(dir, e))?;
        Ok(LocalModel { model, tokenizer, device, query_pool })
    }

    /// The vector of one short text (a query), on one thread.
    pub fn embed_one(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let mut vectors = self.query_pool.install(|| self.embed(&[text]))?;
        vectors.pop().ok_or_else(|| EmbedError::Inference("no vector for the query".into()))
    }

    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let fail = |e: &dyn std::fmt::Display| EmbedError::Inference(e.to_string());
        let encodings = self.tokenizer.encode_batch(texts.to_vec(), true).map_err(|e| fail(&e))?;
        let mut order: Vec<usize> = (0..encodings.len()).collect();
        order.sort_by_key(|&i| encodings[i].get_ids().len());
        let mut vectors: Vec<Vec<f32>> = vec![Vec::new(); encodings.len()];
        for group in order.chunks(GROUP_SIZE) {
            let members: Vec<&Encoding> = group.iter().map(|&i| &encodings[i]).collect();
            let embedded = self.forward(&members).map_err(|e| fail(&e))?;
            for (&i, vector) in group.iter().zip(embedded) {
                vectors[i] = vector;
            }
        }
        Ok(vectors)
    }

    /// One forward pass over texts padded to the longest of them; L2-normalized mean pooling.
    fn forward(&self, encodings: &[&Encoding]) -> candle_core::Result<Vec<Vec<f32>>> {
        let longest = encodings.iter().map(|e| e.get_ids().len()).max().unwrap_or(0);
        let padded = |values: &[u32]| {
            let mut row = values.to_vec();
            row.resize(longest, 0);
            row
        };
        let ids: Vec<u32> = encodings.iter().flat_map(|e| padded(e.get_ids())).collect();
        let mask: Vec<u32> = encodings.iter().flat_map(|e| padded(e.get_attention_mask())).collect();
        let shape = (encodings.len(), longest);
        let ids = Tensor::from_vec(ids, shape, &self.device)?;
        let mask = Tensor::from_vec(mask, shape, &self.device)?;
        let token_types = ids.zeros_like()?;
        let hidden = self.model.forward(&ids, &token_types, Some(&mask))?;
        // Mean over real tokens only: padding must not pull the average.
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
        let counts = mask.sum(1)?;
        let mean = summed.broadcast_div(&counts)?;
        let norms = mean.sqr()?.sum_keepdim(1)?.sqrt()?;
        mean.broadcast_div(&norms)?.to_vec2::<f32>()
    }
}
