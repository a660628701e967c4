//! Where the model's files live and how to tell if they are all there.

use crate::EmbedError;
use std::path::{Path, PathBuf};

/// The files the local embedder needs, as shipped by sentence-transformers.
pub const MODEL_FILES: [&str; 3] = ["model.safetensors", "tokenizer.json", "config.json"];

#[derive(Debug, Clone)]
pub struct ModelLocation {
    pub dir: PathBuf,
    /// Where the location came from: `CORTEX_MODEL_DIR` or the user's cache dir.
    pub from: &'static str,
}

/// `<user cache dir>/cortex/models/all-MiniLM-L6-v2`.
pub fn default_model_dir() -> PathBuf {
    dirs::cache_dir()
        .unwrap_or_else(|| PathBuf::from(".cache"))
        .join("cortex")
        .join("models")
        .join("all-MiniLM-L6-v2")
}

/// The model folder to use: `CORTEX_MODEL_DIR` if set, else the default.
pub fn locate_model(env_dir: Option<PathBuf>) -> ModelLocation {
    match env_dir {
        Some(dir) => ModelLocation { dir, from: "CORTEX_MODEL_DIR" },
        None => ModelLocation { dir: default_model_dir(), from: "user cache dir" },
    }
}

/// Errors naming the first missing file.
pub fn check_files(dir: &Path) -> Result<(), EmbedError> {
    for file in MODEL_FILES {
        if !dir.join(file).is_file() {
            return Err(EmbedError::ModelMissing {
                dir: dir.display().to_string(),
                missing: file.to_string(),
            });
        }
    }
    Ok(())
}
