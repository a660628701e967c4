//! What can be wrong with a model's files or its packed model, for the encoder to refuse them.
//! A packed model that fails its checks is made again from the model's files, so only what
//! the model's files themselves hold (or a pack that cannot be written or read at all) reaches
//! the user, wrapped in [`crate::EmbedError::ModelLoad`] with the model's folder.

use std::path::{Path, PathBuf};

pub type Result<T, E = ModelError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// `config.json` asks for an activation this encoder does not compute.
    #[error("hidden_act {0:?} is not supported (only \"gelu\")")]
    Activation(String),
    #[error("hidden_size {hidden} is not a multiple of num_attention_heads {heads}")]
    Heads { hidden: usize, heads: usize },
    #[error("type_vocab_size is 0: the model has no token-type embedding")]
    NoTokenType,
    /// A model file or a packed model that cannot be read, mapped or written.
    #[error("{}: {source}", path.display())]
    File { path: PathBuf, source: std::io::Error },
    /// `model.safetensors` is not a safetensors file.
    #[error("{0}")]
    Safetensors(#[from] safetensors::SafeTensorError),
    #[error("model.safetensors has no tensor {0}")]
    MissingTensor(String),
    /// A tensor of another number type or shape than the configuration implies.
    #[error("tensor {name} is {found}, expected {expected}")]
    WrongTensor { name: String, found: String, expected: String },
    /// A packed model that is not one, or not this build's for this model and precision.
    #[error(transparent)]
    Pack(#[from] PackError),
}

impl ModelError {
    pub fn file(path: &Path, source: std::io::Error) -> ModelError {
        ModelError::File { path: path.to_path_buf(), source }
    }

    /// A tensor whose number type and shape (`found`) are not `expected`.
    pub fn wrong_tensor(
        name: &str,
        found: (impl std::fmt::Debug, impl std::fmt::Debug),
        expected: (impl std::fmt::Debug, impl std::fmt::Debug),
    ) -> ModelError {
        ModelError::WrongTensor {
            name: name.to_string(),
            found: format!("{:?} {:?}", found.0, found.1),
            expected: format!("{:?} {:?}", expected.0, expected.1),
        }
    }
}

/// Why a packed model's bytes are not used as they are.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    #[error("not a packed model")]
    NotPacked,
    #[error("the header is cut short")]
    HeaderCut,
    #[error("{0}")]
    Header(#[from] serde_json::Error),
    #[error("made by another version, for another precision or from another model")]
    Stale,
    #[error("{len} bytes long, made as {made}")]
    Length { len: usize, made: usize },
    #[error("tensor {0} lies past the end of the file")]
    PastEnd(String),
    #[error("the packed model has no tensor {0}")]
    Missing(String),
    #[error("tensor {0} has the wrong length or alignment")]
    Misfit(String),
    #[error("tensor {0} is i32, not a weight")]
    NotAWeight(String),
}
