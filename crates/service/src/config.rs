//! The service's configuration, resolved once from flags and environment and passed down.

use crate::scope_inference::{self, InferredScope};
use crate::semantic::EmbedderChoice;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct Config {
    /// The SQLite file.
    pub db_path: PathBuf,
    pub scope: InferredScope,
    pub embedder: EmbedderChoice,
}

impl Config {
    /// `db` from `--db` (the CLI also reads `CORTEX_DB` into it); else the user's data dir.
    /// Scope from the environment and the git checkout around `workdir`.
    pub fn resolve(db: Option<PathBuf>, workdir: &Path) -> Config {
        let db_path = db.unwrap_or_else(default_db_path);
        let scope = scope_inference::infer(workdir, |k| std::env::var(k).ok());
        Config { db_path, scope, embedder: embedder_from_env() }
    }
}

/// `<data dir>/cortex/memory.db`: `~/.local/share/cortex/memory.db` on Linux,
/// `~/Library/Application Support/cortex/memory.db` on macOS.
pub fn default_db_path() -> PathBuf {
    dirs::data_dir().unwrap_or_else(|| PathBuf::from(".")).join("cortex").join("memory.db")
}

/// `CORTEX_EMBEDDER`: `local` (default) or `none`; the model folder from `CORTEX_MODEL_DIR`,
/// else the user's cache dir.
pub fn embedder_from_env() -> EmbedderChoice {
    match std::env::var("CORTEX_EMBEDDER").ok().as_deref().map(str::trim) {
        Some("none") => EmbedderChoice::None,
        _ => EmbedderChoice::Local {
            model_dir: cortex_embed::locate_model(std::env::var_os("CORTEX_MODEL_DIR").map(PathBuf::from))
                .dir,
        },
    }
}
