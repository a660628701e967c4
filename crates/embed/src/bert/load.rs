//! Loading the encoder's weights: the packed model in Cortex's cache folder when it is there and
//! whole (mapped: a few milliseconds), else made from `model.safetensors` and written there for
//! the next load (or kept in memory when the cache folder cannot be written).
//!
//! The cache, not the model's folder: that folder may be read-only or owned by pip (the
//! `semantic` extra's package), and a pack written into it would be left behind by an
//! uninstall. Packs are named by a fingerprint of the model's files, so the same model in two
//! folders shares one pack and a changed model gets a new one.

use super::error::{ModelError, Result};
use super::pack::{self, Packed, Stamp};
use super::raw::Bytes;
use super::weights::{self, Config, Weights};
use super::{Calibration, Encoder, calibrate};
use crate::precision::Resolved;
use std::fs::File;
use std::hash::Hasher;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

pub const SOURCE: &str = "model.safetensors";

/// Where packs are kept: `<user cache dir>/cortex/packs`.
pub fn default_pack_dir() -> PathBuf {
    dirs::cache_dir().unwrap_or_else(|| PathBuf::from(".cache")).join("cortex").join("packs")
}

/// Bytes read from `model.safetensors` per sample, and samples taken.
const SAMPLE: usize = 64 * 1024;
const SAMPLES: u64 = 16;

/// A fingerprint of the model in `dir`: `config.json`, the length of `model.safetensors`, its
/// header (every tensor's name, type, shape and offset) and 16 samples of 64 KiB spread over
/// its weights. A full hash of the weights would cost more than the whole load it guards; a
/// different model (another training, another size) differs in every sample.
pub fn fingerprint(dir: &Path) -> std::io::Result<Stamp> {
    let mut hash = Fnv::default();
    hash.write(&std::fs::read(dir.join("config.json"))?);
    let mut file = File::open(dir.join(SOURCE))?;
    let len = file.metadata()?.len();
    hash.write_u64(len);
    let mut buffer = vec![0u8; SAMPLE];
    for i in 0..SAMPLES {
        // Sample 0 is the start of the file: the header.
        file.seek(SeekFrom::Start(len.saturating_sub(SAMPLE as u64) * i / (SAMPLES - 1)))?;
        let read = read_up_to(&mut file, &mut buffer)?;
        hash.write(&buffer[..read]);
    }
    Ok(Stamp { fingerprint: format!("{:016x}", hash.finish()) })
}

fn read_up_to(file: &mut File, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut read = 0;
    while read < buffer.len() {
        match file.read(&mut buffer[read..])? {
            0 => break,
            n => read += n,
        }
    }
    Ok(read)
}

/// FNV-1a over 8-byte words: stable across builds and platforms (unlike std's hasher, whose
/// algorithm may change between Rust releases and would orphan every pack), and quick enough
/// for the megabyte it reads.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            self.0 = (self.0 ^ u64::from_le_bytes(word.try_into().expect("8 bytes")))
                .wrapping_mul(0x100_0000_01b3);
        }
        for &byte in words.remainder() {
            self.0 = (self.0 ^ byte as u64).wrapping_mul(0x100_0000_01b3);
        }
        self.0 = (self.0 ^ bytes.len() as u64).wrapping_mul(0x100_0000_01b3);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The stamp a pack of `precision` is made and found under: the model's fingerprint, and for
/// int8 also the calibration text's, since its smoothing factors are measured on that text: a
/// changed text makes a new pack rather than reusing one calibrated on the old.
fn stamp(dir: &Path, precision: Resolved) -> Result<Stamp> {
    let model = fingerprint(dir).map_err(|e| ModelError::file(dir, e))?;
    Ok(match precision {
        Resolved::Int8 => with_calibration(model, calibrate::TEXT),
        Resolved::F32 | Resolved::Bf16 => model,
    })
}

fn with_calibration(model: Stamp, text: &str) -> Stamp {
    let mut hash = Fnv::default();
    hash.write(model.fingerprint.as_bytes());
    hash.write(text.as_bytes());
    Stamp { fingerprint: format!("{:016x}", hash.finish()) }
}

/// The weights of the model in `dir` in `precision`, and the pack they were mapped from
/// (`None`: made in memory, the cache folder could not be written).
pub fn load(
    dir: &Path,
    packs: &Path,
    config: &Config,
    precision: Resolved,
    calibration: Calibration,
) -> Result<(Weights, Option<PathBuf>)> {
    let stamp = stamp(dir, precision)?;
    let path = packs.join(pack::file_name(&stamp, precision));
    if let Some(packed) = Packed::open(&path, precision, &stamp)? {
        return Ok((Weights::from_packed(packed, config, precision)?, Some(path)));
    }
    let bytes = make(dir, config, precision, &stamp, calibration)?;
    let packed = match std::fs::create_dir_all(packs).and_then(|()| pack::write(&path, &bytes)) {
        Ok(()) => Packed::open(&path, precision, &stamp)?,
        Err(e) => {
            tracing::info!(path = %path.display(), error = %e, "cannot keep the packed model; it is made again at every load");
            None
        }
    };
    match packed {
        Some(packed) => Ok((Weights::from_packed(packed, config, precision)?, Some(path))),
        None => {
            let packed = Packed::parse(Bytes::owned(&bytes), precision, &stamp)?;
            Ok((Weights::from_packed(packed, config, precision)?, None))
        }
    }
}

/// Makes (or remakes) the packed model of `precision` for the model in `dir` and writes it
/// under `packs`.
pub fn pack_into(
    dir: &Path,
    packs: &Path,
    config: &Config,
    precision: Resolved,
    calibration: Calibration,
) -> Result<PathBuf> {
    let stamp = stamp(dir, precision)?;
    let path = packs.join(pack::file_name(&stamp, precision));
    let bytes = make(dir, config, precision, &stamp, calibration)?;
    std::fs::create_dir_all(packs)
        .and_then(|()| pack::write(&path, &bytes))
        .map_err(|e| ModelError::file(&path, e))?;
    Ok(path)
}

fn make(
    dir: &Path,
    config: &Config,
    precision: Resolved,
    stamp: &Stamp,
    calibration: Calibration,
) -> Result<Vec<u8>> {
    let source = dir.join(SOURCE);
    let bytes = std::fs::read(&source).map_err(|e| ModelError::file(&source, e))?;
    let mut tensors = weights::from_safetensors(&bytes, config)?;
    if precision == Resolved::Int8 {
        // The activations' ranges come from the f32 forward pass over the calibration text.
        let exact = pack::encode(&tensors, Resolved::F32, stamp.clone());
        let exact = Packed::parse(Bytes::owned(&exact), Resolved::F32, stamp)?;
        let encoder = Encoder {
            config: config.clone(),
            weights: Weights::from_packed(exact, config, Resolved::F32)?,
            pack: None,
        };
        let maxima = calibrate::activation_maxima(&encoder, &calibration());
        calibrate::smooth(&mut tensors, &maxima);
    }
    Ok(pack::encode(&tensors, precision, stamp.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_follows_the_files_contents_not_their_place_or_time() {
        let root = tempfile::tempdir().unwrap();
        let (a, b) = (root.path().join("a"), root.path().join("b"));
        let weights: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for dir in [&a, &b] {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join("config.json"), b"{}").unwrap();
            std::fs::write(dir.join(SOURCE), &weights).unwrap();
        }
        assert_eq!(fingerprint(&a).unwrap(), fingerprint(&b).unwrap(), "the same files in two folders");
        let mut changed = weights.clone();
        changed[150_000] ^= 1;
        std::fs::write(b.join(SOURCE), &changed).unwrap();
        assert_ne!(fingerprint(&a).unwrap(), fingerprint(&b).unwrap(), "a byte in a sample changed");
        std::fs::write(b.join(SOURCE), &weights).unwrap();
        std::fs::write(b.join("config.json"), b"{ }").unwrap();
        assert_ne!(fingerprint(&a).unwrap(), fingerprint(&b).unwrap(), "another config");
    }

    #[test]
    fn an_int8_pack_is_stamped_with_its_calibration_text_too() {
        let model = Stamp { fingerprint: "1269e636997b06b9".into() };
        let shipped = with_calibration(model.clone(), calibrate::TEXT);
        assert_ne!(shipped, model, "an int8 pack's stamp differs from the model's");
        assert_eq!(shipped, with_calibration(model.clone(), calibrate::TEXT), "and is stable");
        let edited = format!("{}One more line of calibration.\n", calibrate::TEXT);
        assert_ne!(with_calibration(model, &edited), shipped, "an edited text makes another pack");
    }
}
