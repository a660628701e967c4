//! The service's configuration, resolved once from flags and environment and passed down.

use crate::scope_inference::{self, InferredScope};
use crate::semantic::EmbedderChoice;
use cortex_domain::near_duplicate::NearDuplicatePolicy;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct Config {
    /// The SQLite file.
    pub db_path: PathBuf,
    pub scope: InferredScope,
    pub embedder: EmbedderChoice,
    pub near_duplicates: NearDuplicatePolicy,
}

impl Config {
    /// A config given outright, with the default near-duplicate policy.
    pub fn new(db_path: PathBuf, scope: InferredScope, embedder: EmbedderChoice) -> Config {
        Config { db_path, scope, embedder, near_duplicates: NearDuplicatePolicy::default() }
    }

    /// `db` from `--db` (the CLI also reads `CORTEX_DB` into it); else the user's data dir.
    /// Scope from the environment and the git checkout around `workdir`.
    pub fn resolve(db: Option<PathBuf>, workdir: &Path) -> Config {
        let db_path = db.unwrap_or_else(default_db_path);
        let scope = scope_inference::infer(workdir, |k| std::env::var(k).ok());
        Config { db_path, scope, embedder: embedder_from_env(), near_duplicates: near_duplicates_from_env() }
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

/// `CORTEX_NEAR_DUP_THRESHOLD` (cosine, default 0.85) and `CORTEX_NEAR_DUP_WINDOW_DAYS`
/// (default 30); unparsable values fall back to the defaults with a warning.
pub fn near_duplicates_from_env() -> NearDuplicatePolicy {
    let mut policy = NearDuplicatePolicy::default();
    let read = |key: &str| std::env::var(key).ok().map(|v| v.trim().to_string());
    if let Some(v) = read("CORTEX_NEAR_DUP_THRESHOLD") {
        match v.parse::<f64>() {
            Ok(t) if (0.0..=1.0).contains(&t) => policy.threshold = t,
            _ => tracing::warn!(
                "CORTEX_NEAR_DUP_THRESHOLD={v} is not a number from 0 to 1; using {}",
                policy.threshold
            ),
        }
    }
    if let Some(v) = read("CORTEX_NEAR_DUP_WINDOW_DAYS") {
        match v.parse::<i64>() {
            Ok(d) if d >= 0 => policy.window_days = d,
            _ => tracing::warn!(
                "CORTEX_NEAR_DUP_WINDOW_DAYS={v} is not a whole number of days; using {}",
                policy.window_days
            ),
        }
    }
    policy
}
