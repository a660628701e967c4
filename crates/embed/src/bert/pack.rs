//! The packed model: every weight the forward pass reads, already in the layout and number
//! format its matrix products take, in one file in Cortex's cache folder
//! (`<fingerprint>-<precision>.pack`, see [`super::load`]). Made once from the safetensors
//! file (parse, transpose, stack, round or quantize: most of a load's time otherwise), it is
//! then mapped at every load.
//!
//! Layout: `CORTEXPK`, the header's length (u64, little-endian), the header (JSON), then each
//! tensor's bytes at a 64-byte-aligned offset from the data's start, in this machine's byte
//! order (the file is a cache made where it is used; the header names the byte order). The
//! header also records the fingerprint of the model files it was made from and the file's
//! whole length: a pack of another model, or one cut short, is made again, never trusted.

use super::error::{ModelError, PackError, Result};
use super::raw::{Bytes, Plain, cast};
use super::{int8, kernel};
use crate::precision::Resolved;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"CORTEXPK";
/// Bumped whenever the layout of any tensor changes: an older file is then made again.
const FORMAT: u32 = 3;
const ALIGN: usize = 64;

/// How a tensor's numbers are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dtype {
    F32,
    /// bf16 in [`kernel::pack`]'s order; `shape` is the `[k, n]` of the product.
    Bf16Packed,
    /// int8 in [`int8::quantize`]'s order; `shape` is the `[k, n]` of the product. Its column
    /// scales and sums follow as `<name>_scale` (f32) and `<name>_sum` (i32).
    I8Packed,
    I32,
}

/// The names of an int8 weight's column scales and column sums in the packed model.
pub fn int8_parts(name: &str) -> (String, String) {
    (format!("{name}_scale"), format!("{name}_sum"))
}

/// The name of an int8 weight's smoothing factors ([`super::calibrate`]) in the packed model.
pub fn smooth_name(name: &str) -> String {
    format!("{name}_smooth")
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    pub dtype: Dtype,
    pub shape: Vec<usize>,
    pub offset: usize,
    pub len: usize,
}

/// Which model files a packed file was made from ([`super::load::fingerprint`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    pub fingerprint: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct Header {
    format: u32,
    little_endian: bool,
    precision: String,
    source: Stamp,
    /// The whole file's length in bytes: a file cut short is refused.
    file_len: usize,
    tensors: BTreeMap<String, Entry>,
}

/// A weight as read from the model, in the forward pass's orientation (a product's weight
/// `[in, out]`, row-major).
pub struct Tensor {
    pub name: String,
    pub shape: Vec<usize>,
    pub values: Vec<f32>,
    /// A matrix product's right operand: packed for the kernel under bf16.
    pub product: bool,
}

/// The packed file's name for the model of `source`.
pub fn file_name(source: &Stamp, precision: Resolved) -> String {
    format!("{}-{}.pack", source.fingerprint, precision.name())
}

/// The bytes of a packed file holding `tensors` in `precision`.
pub fn encode(tensors: &[Tensor], precision: Resolved, source: Stamp) -> Vec<u8> {
    let mut entries = BTreeMap::new();
    let mut blobs: Vec<(usize, Vec<u8>)> = Vec::new();
    let mut offset = 0;
    let mut add = |name: String, dtype: Dtype, shape: Vec<usize>, bytes: Vec<u8>| {
        entries.insert(name, Entry { dtype, shape, offset, len: bytes.len() });
        offset += bytes.len().next_multiple_of(ALIGN);
        blobs.push((bytes.len(), bytes));
    };
    let f32_bytes = |values: &[f32]| values.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>();
    for t in tensors {
        match (precision, t.product) {
            (Resolved::Int8, true) => {
                let q = int8::quantize(&t.values, t.shape[0], t.shape[1]);
                let (scale, sum) = int8_parts(&t.name);
                add(
                    t.name.clone(),
                    Dtype::I8Packed,
                    t.shape.clone(),
                    q.values.iter().map(|&v| v as u8).collect(),
                );
                add(scale, Dtype::F32, vec![q.scales.len()], f32_bytes(&q.scales));
                add(
                    sum,
                    Dtype::I32,
                    vec![q.sums.len()],
                    q.sums.iter().flat_map(|s| s.to_ne_bytes()).collect(),
                );
            }
            (Resolved::Bf16, true) => {
                let packed = kernel::pack(&t.values, t.shape[0], t.shape[1]);
                let bytes = packed.iter().flat_map(|h| h.to_ne_bytes()).collect();
                add(t.name.clone(), Dtype::Bf16Packed, t.shape.clone(), bytes);
            }
            _ => add(t.name.clone(), Dtype::F32, t.shape.clone(), f32_bytes(&t.values)),
        }
    }
    let mut header = Header {
        format: FORMAT,
        little_endian: cfg!(target_endian = "little"),
        precision: precision.name().to_string(),
        source,
        file_len: 0,
        tensors: entries,
    };
    // The file's length depends on the header's, which holds it: settle it by trying lengths
    // until the header's own length stops moving (twice at most: the number gains digits once).
    let mut json = serde_json::to_vec(&header).expect("the header is plain data");
    loop {
        let data_start = (MAGIC.len() + 8 + json.len()).next_multiple_of(ALIGN);
        if header.file_len == data_start + offset {
            break;
        }
        header.file_len = data_start + offset;
        json = serde_json::to_vec(&header).expect("the header is plain data");
    }
    let data_start = (MAGIC.len() + 8 + json.len()).next_multiple_of(ALIGN);
    let mut out = Vec::with_capacity(data_start + offset);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(json.len() as u64).to_le_bytes());
    out.extend_from_slice(&json);
    out.resize(data_start, b' ');
    // Offsets in the header are from the data's start; rebase them on the file's start once
    // read (see `Packed::parse`), so the header need not know its own length.
    for (len, bytes) in blobs {
        out.extend_from_slice(&bytes);
        out.resize(out.len() + len.next_multiple_of(ALIGN) - len, 0);
    }
    debug_assert_eq!(out.len(), header.file_len);
    out
}

/// Writes `bytes` to `path` under a temporary name, then renames: a reader (or a process that
/// has the old file mapped) never sees half a file.
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let partial = PathBuf::from(format!("{}.partial-{}", path.display(), std::process::id()));
    std::fs::write(&partial, bytes)?;
    std::fs::rename(&partial, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&partial);
    })
}

/// A packed model, mapped or in memory, its header checked.
pub struct Packed {
    bytes: Bytes,
    data_start: usize,
    tensors: BTreeMap<String, Entry>,
}

impl Packed {
    /// Maps the packed file at `path` if it is there, of this format and precision, and made
    /// from `source`; `Ok(None)` if it is missing or stale.
    pub fn open(path: &Path, precision: Resolved, source: &Stamp) -> Result<Option<Packed>> {
        let file = match File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(ModelError::file(path, e)),
        };
        let bytes = Bytes::map(&file).map_err(|e| ModelError::file(path, e))?;
        Ok(Packed::parse(bytes, precision, source).ok())
    }

    /// Checks the header of `bytes` against what this build and model expect.
    pub fn parse(bytes: Bytes, precision: Resolved, source: &Stamp) -> Result<Packed, PackError> {
        if bytes.len() < 16 || &bytes[..8] != MAGIC {
            return Err(PackError::NotPacked);
        }
        let header_len = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes")) as usize;
        let json = bytes.get(16..16 + header_len).ok_or(PackError::HeaderCut)?;
        let header: Header = serde_json::from_slice(json)?;
        if header.format != FORMAT
            || header.little_endian != cfg!(target_endian = "little")
            || header.precision != precision.name()
            || &header.source != source
        {
            return Err(PackError::Stale);
        }
        if header.file_len != bytes.len() {
            return Err(PackError::Length { len: bytes.len(), made: header.file_len });
        }
        let data_start = (16 + header_len).next_multiple_of(ALIGN);
        for (name, entry) in &header.tensors {
            if data_start + entry.offset + entry.len > bytes.len() {
                return Err(PackError::PastEnd(name.clone()));
            }
        }
        Ok(Packed { bytes, data_start, tensors: header.tensors })
    }

    /// The byte range of tensor `name`, checked to be of `dtype` and `shape`.
    pub fn range(&self, name: &str, dtype: Dtype, shape: &[usize]) -> Result<Range<usize>> {
        let entry = self.tensors.get(name).ok_or_else(|| PackError::Missing(name.to_string()))?;
        if entry.dtype != dtype || entry.shape != shape {
            return Err(ModelError::wrong_tensor(name, (entry.dtype, &entry.shape), (dtype, shape)));
        }
        let start = self.data_start + entry.offset;
        let range = start..start + entry.len;
        let count = shape.iter().product::<usize>();
        let fits = match dtype {
            Dtype::F32 => self.slice::<f32>(range.clone()).map(<[f32]>::len),
            Dtype::Bf16Packed => self.slice::<u16>(range.clone()).map(<[u16]>::len),
            Dtype::I8Packed => self.slice::<i8>(range.clone()).map(<[i8]>::len),
            Dtype::I32 => self.slice::<i32>(range.clone()).map(<[i32]>::len),
        };
        if fits != Some(count) {
            return Err(PackError::Misfit(name.to_string()).into());
        }
        Ok(range)
    }

    pub fn has(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }

    /// How tensor `name` is stored.
    pub fn dtype(&self, name: &str) -> Result<Dtype, PackError> {
        self.tensors.get(name).map(|e| e.dtype).ok_or_else(|| PackError::Missing(name.to_string()))
    }

    /// The numbers at `range`, if aligned and whole.
    pub fn slice<T: Plain>(&self, range: Range<usize>) -> Option<&[T]> {
        cast(&self.bytes[range])
    }

    /// A tensor of f32 copied out (the small ones: biases, norms).
    pub fn vec(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        let range = self.range(name, Dtype::F32, shape)?;
        Ok(self.slice::<f32>(range).expect("checked by range").to_vec())
    }

    /// A tensor of i32 copied out (an int8 weight's column sums).
    pub fn vec_i32(&self, name: &str, shape: &[usize]) -> Result<Vec<i32>> {
        let range = self.range(name, Dtype::I32, shape)?;
        Ok(self.slice::<i32>(range).expect("checked by range").to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensors() -> Vec<Tensor> {
        vec![
            Tensor { name: "bias".into(), shape: vec![3], values: vec![1.0, 2.0, 3.0], product: false },
            Tensor {
                name: "w".into(),
                shape: vec![4, 32],
                values: (0..128).map(|i| i as f32 / 8.0).collect(),
                product: true,
            },
        ]
    }

    #[test]
    fn a_packed_file_reads_back_and_a_stale_one_is_refused() {
        let stamp = Stamp { fingerprint: "a1".into() };
        for precision in [Resolved::F32, Resolved::Bf16, Resolved::Int8] {
            let bytes = encode(&tensors(), precision, stamp.clone());
            let packed = Packed::parse(Bytes::owned(&bytes), precision, &stamp).unwrap();
            assert_eq!(packed.vec("bias", &[3]).unwrap(), vec![1.0, 2.0, 3.0]);
            let w = match precision {
                Resolved::F32 => {
                    packed.slice::<f32>(packed.range("w", Dtype::F32, &[4, 32]).unwrap()).unwrap().to_vec()
                }
                Resolved::Bf16 => {
                    let range = packed.range("w", Dtype::Bf16Packed, &[4, 32]).unwrap();
                    let h = packed.slice::<u16>(range).unwrap();
                    assert_eq!(h, &kernel::pack(&tensors()[1].values, 4, 32)[..]);
                    h.iter().map(|&x| kernel::from_bf16(x)).collect()
                }
                Resolved::Int8 => {
                    let q = int8::quantize(&tensors()[1].values, 4, 32);
                    let values =
                        packed.slice::<i8>(packed.range("w", Dtype::I8Packed, &[4, 32]).unwrap()).unwrap();
                    assert_eq!(values, &q.values[..]);
                    let (scale, sum) = int8_parts("w");
                    assert_eq!(packed.vec(&scale, &[32]).unwrap(), q.scales);
                    assert_eq!(packed.vec_i32(&sum, &[32]).unwrap(), q.sums);
                    values.iter().map(|&v| v as f32).collect()
                }
            };
            assert_eq!(w.len(), 128);
            let wrong = packed.range("bias", Dtype::F32, &[4]).unwrap_err();
            assert_eq!(
                wrong.to_string(),
                "tensor bias is F32 [3], expected F32 [4]",
                "a wrong shape is refused"
            );
            let missing = packed.range("missing", Dtype::F32, &[1]).unwrap_err();
            assert!(matches!(missing, ModelError::Pack(PackError::Missing(ref n)) if n == "missing"));
            let other = Stamp { fingerprint: "b2".into() };
            let stale = Packed::parse(Bytes::owned(&bytes), precision, &other).err();
            assert!(matches!(stale, Some(PackError::Stale)), "another model file");
        }
        let bf16 = encode(&tensors(), Resolved::Bf16, stamp.clone());
        let refused = |bytes: &[u8], precision| Packed::parse(Bytes::owned(bytes), precision, &stamp).err();
        assert!(matches!(refused(&bf16, Resolved::F32), Some(PackError::Stale)), "another precision");
        assert!(matches!(refused(&bf16[..40], Resolved::Bf16), Some(PackError::HeaderCut)), "cut short");
        assert!(matches!(refused(&bf16[..4], Resolved::Bf16), Some(PackError::NotPacked)), "no header");
        let padding_lost = &bf16[..bf16.len() - 1];
        let short = refused(padding_lost, Resolved::Bf16);
        assert!(
            matches!(short, Some(PackError::Length { len, made }) if len + 1 == made),
            "one byte short: {short:?}"
        );
    }

    #[test]
    fn a_written_file_is_mapped_back() {
        let dir = tempfile::tempdir().unwrap();
        let stamp = Stamp { fingerprint: "c3".into() };
        let path = dir.path().join(file_name(&stamp, Resolved::Bf16));
        assert!(Packed::open(&path, Resolved::Bf16, &stamp).unwrap().is_none(), "missing");
        write(&path, &encode(&tensors(), Resolved::Bf16, stamp.clone())).unwrap();
        let packed = Packed::open(&path, Resolved::Bf16, &stamp).unwrap().expect("fresh");
        assert_eq!(packed.vec("bias", &[3]).unwrap(), vec![1.0, 2.0, 3.0]);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no partial file left");
    }
}
