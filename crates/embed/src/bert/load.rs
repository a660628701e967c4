//! Loading the encoder's weights: the packed model beside `model.safetensors` when it is there
//! and fresh (mapped: a few milliseconds), else made from `model.safetensors` and written there
//! for the next load (or kept in memory when the folder is read-only, e.g. a pip package's).

use super::pack::{self, Packed, Stamp};
use super::raw::Bytes;
use super::weights::{self, Config, Weights};
use crate::precision::Resolved;
use std::path::{Path, PathBuf};

pub const SOURCE: &str = "model.safetensors";

/// Where the packed model of `precision` lives for the model in `dir`.
pub fn packed_path(dir: &Path, precision: Resolved) -> PathBuf {
    dir.join(pack::file_name(precision))
}

/// The weights of the model in `dir` in `precision`.
pub fn load(dir: &Path, config: &Config, precision: Resolved) -> Result<Weights, String> {
    let source = dir.join(SOURCE);
    let stamp = Stamp::of(&source).map_err(|e| format!("{}: {e}", source.display()))?;
    let path = packed_path(dir, precision);
    if let Some(packed) = Packed::open(&path, precision, &stamp)? {
        return Weights::from_packed(packed, config, precision);
    }
    let bytes = make(dir, config, precision, &stamp)?;
    let packed = match pack::write(&path, &bytes) {
        Ok(()) => Packed::open(&path, precision, &stamp)?,
        Err(e) => {
            tracing::info!(path = %path.display(), error = %e, "cannot keep the packed model; it is made again at every load");
            None
        }
    };
    let packed = match packed {
        Some(packed) => packed,
        None => Packed::parse(Bytes::owned(&bytes), precision, &stamp)?,
    };
    Weights::from_packed(packed, config, precision)
}

/// Makes (or remakes) the packed model of `precision` in `dir` and writes it there.
pub fn pack_into(dir: &Path, config: &Config, precision: Resolved) -> Result<PathBuf, String> {
    let source = dir.join(SOURCE);
    let stamp = Stamp::of(&source).map_err(|e| format!("{}: {e}", source.display()))?;
    let path = packed_path(dir, precision);
    let bytes = make(dir, config, precision, &stamp)?;
    pack::write(&path, &bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

fn make(dir: &Path, config: &Config, precision: Resolved, stamp: &Stamp) -> Result<Vec<u8>, String> {
    let source = dir.join(SOURCE);
    let bytes = std::fs::read(&source).map_err(|e| format!("{}: {e}", source.display()))?;
    let tensors = weights::from_safetensors(&bytes, config)?;
    Ok(pack::encode(&tensors, precision, stamp.clone()))
}
