//! The index as a file: written whole, then mapped read-only by every process that searches
//! it, so a fresh process reaches a hundred thousand vectors with one system call instead of
//! reading and quantizing each from the database. Each entry carries a fixed-size record of
//! the caller's (what its filters read) and the file a header of the caller's (what the
//! records refer to, and whose and how current the file is); this crate does not read either.
//!
//! ```text
//! 0   "CXVECTR1"                        magic and format version
//! 8   dimension u32, count u32, record size u32, header length u32   (little-endian)
//! 24  values: count × dimension i8      each entry's int8 vector, back to back
//!     (zero padding to a multiple of 4)
//!     scales: count × f32
//!     records: count × record size bytes
//!     header: header length bytes
//! end "CXVECEND"                        written last: a file cut short lacks it
//! ```
//!
//! A file is never changed in place: a writer writes a new file beside it and renames it over
//! the old one, so a process that mapped the old one keeps reading whole, unchanging bytes.

use crate::Quantized;
use crate::scan::Slab;
use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"CXVECTR1";
const END: &[u8; 8] = b"CXVECEND";
const FIXED: usize = 24;

/// Why a file cannot be written or read.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("cannot {doing} the vector index file {path}: {source}")]
    Io { doing: &'static str, path: PathBuf, source: std::io::Error },
    #[error("the vector index file {path} is not a whole index of this version ({why}): it is written again")]
    Invalid { path: PathBuf, why: String },
}

fn io<'a>(doing: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> FileError + 'a {
    move |source| FileError::Io { doing, path: path.to_path_buf(), source }
}

/// What a finished write holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    pub entries: usize,
    pub bytes: u64,
}

/// A file being written: entries go in one by one (their values straight to disk), the
/// header last; [`FileWriter::finish`] renames it into place. Dropped unfinished, the partial
/// file is removed and the old one, if any, stays.
pub struct FileWriter {
    out: BufWriter<File>,
    temp: PathBuf,
    path: PathBuf,
    dimension: usize,
    record_size: usize,
    scales: Vec<f32>,
    records: Vec<u8>,
    finished: bool,
}

/// Starts a new file for `path`, of vectors of `dimension` values and records of
/// `record_size` bytes.
pub fn write_file(path: &Path, dimension: usize, record_size: usize) -> Result<FileWriter, FileError> {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(format!(".tmp-{}-{}", std::process::id(), nanos()));
    let temp = path.with_file_name(name);
    let file = File::create(&temp).map_err(io("create", &temp))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    out.write_all(&[0u8; FIXED]).map_err(io("write", &temp))?;
    Ok(FileWriter {
        out,
        temp,
        path: path.to_path_buf(),
        dimension,
        record_size,
        scales: Vec::new(),
        records: Vec::new(),
        finished: false,
    })
}

fn nanos() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
}

impl FileWriter {
    /// Adds an entry already quantized; `false` (nothing added) when its values or record have
    /// the wrong length.
    pub fn push(&mut self, values: &[i8], scale: f32, record: &[u8]) -> Result<bool, FileError> {
        if values.len() != self.dimension || record.len() != self.record_size {
            return Ok(false);
        }
        let bytes: Vec<u8> = values.iter().map(|v| *v as u8).collect();
        self.out.write_all(&bytes).map_err(io("write", &self.temp))?;
        self.scales.push(scale);
        self.records.extend_from_slice(record);
        Ok(true)
    }

    /// Adds an entry from its f32 vector, quantized as the in-memory index quantizes.
    pub fn push_f32(&mut self, vector: &[f32], record: &[u8]) -> Result<bool, FileError> {
        let q = Quantized::from_f32(vector);
        self.push(&q.values, q.scale, record)
    }

    pub fn len(&self) -> usize {
        self.scales.len()
    }

    pub fn is_empty(&self) -> bool {
        self.scales.is_empty()
    }

    /// Writes the scales, records and `header`, makes the file durable, and renames it over
    /// `path`.
    pub fn finish(mut self, header: &[u8]) -> Result<Written, FileError> {
        let temp = self.temp.clone();
        let count = self.scales.len();
        let values = count * self.dimension;
        let pad = (4 - values % 4) % 4;
        let mut tail = Vec::with_capacity(pad + 4 * count + self.records.len() + header.len() + END.len());
        tail.extend(std::iter::repeat_n(0u8, pad));
        for s in &self.scales {
            tail.extend_from_slice(&s.to_le_bytes());
        }
        tail.extend_from_slice(&self.records);
        tail.extend_from_slice(header);
        tail.extend_from_slice(END);
        self.out.write_all(&tail).map_err(io("write", &temp))?;
        let mut fixed = Vec::with_capacity(FIXED);
        fixed.extend_from_slice(MAGIC);
        for n in [self.dimension, count, self.record_size, header.len()] {
            let n = u32::try_from(n).map_err(|_| FileError::Invalid {
                path: temp.clone(),
                why: format!("{n} does not fit the format's 32 bits"),
            })?;
            fixed.extend_from_slice(&n.to_le_bytes());
        }
        self.out.seek(SeekFrom::Start(0)).map_err(io("write", &temp))?;
        self.out.write_all(&fixed).map_err(io("write", &temp))?;
        self.out.flush().map_err(io("write", &temp))?;
        let file = self.out.get_ref();
        file.sync_all().map_err(io("sync", &temp))?;
        let bytes = file.metadata().map_err(io("read", &temp))?.len();
        std::fs::rename(&temp, &self.path).map_err(io("rename", &self.path))?;
        self.finished = true;
        Ok(Written { entries: count, bytes })
    }
}

impl Drop for FileWriter {
    fn drop(&mut self) {
        if !self.finished {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// A whole file, mapped read-only.
pub struct MappedFile {
    map: memmap2::Mmap,
    dimension: usize,
    count: usize,
    record_size: usize,
    scales_at: usize,
    records_at: usize,
    header_at: usize,
    header_len: usize,
}

impl MappedFile {
    /// Maps the file at `path` and checks it is whole: its magic at both ends, and a length
    /// that is what its counts say.
    pub fn open(path: &Path) -> Result<MappedFile, FileError> {
        let invalid = |why: String| FileError::Invalid { path: path.to_path_buf(), why };
        if cfg!(target_endian = "big") {
            return Err(invalid("written little-endian; this machine is big-endian".into()));
        }
        let file = File::open(path).map_err(io("open", path))?;
        let map = map(&file).map_err(io("map", path))?;
        if map.len() < FIXED + END.len() || &map[..8] != MAGIC || &map[map.len() - END.len()..] != END {
            return Err(invalid("its first or last bytes are not the format's".into()));
        }
        let word = |at: usize| u32::from_le_bytes([map[at], map[at + 1], map[at + 2], map[at + 3]]) as usize;
        let (dimension, count, record_size, header_len) = (word(8), word(12), word(16), word(20));
        let values = count.checked_mul(dimension).ok_or_else(|| invalid("its counts overflow".into()))?;
        let scales_at = FIXED + values + (4 - values % 4) % 4;
        let records_at = scales_at + 4 * count;
        let header_at = records_at + count * record_size;
        let expected = header_at + header_len + END.len();
        if dimension == 0 || expected != map.len() {
            return Err(invalid(format!("{} bytes where its counts say {expected}", map.len())));
        }
        Ok(MappedFile { map, dimension, count, record_size, scales_at, records_at, header_at, header_len })
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// The caller's header, as written.
    pub fn header(&self) -> &[u8] {
        &self.map[self.header_at..self.header_at + self.header_len]
    }

    /// Entry `i`'s record, as written.
    pub fn record(&self, i: usize) -> &[u8] {
        let at = self.records_at + i * self.record_size;
        &self.map[at..at + self.record_size]
    }

    /// The vectors, as a scan reads them.
    pub fn slab(&self) -> Slab<'_> {
        let values = as_i8(&self.map[FIXED..FIXED + self.count * self.dimension]);
        let scales = as_f32(&self.map[self.scales_at..self.records_at]);
        match scales.and_then(|scales| Slab::new(self.dimension, values, scales)) {
            Some(slab) => slab,
            // A mapping is page-aligned and scales start at a multiple of 4: not reached.
            None => Slab::EMPTY,
        }
    }
}

#[allow(unsafe_code)]
fn map(file: &File) -> std::io::Result<memmap2::Mmap> {
    // SAFETY: the mapping is read-only and a file is only ever replaced by a rename
    // (`FileWriter::finish`), never written in place, so its bytes do not change under us. A
    // user editing the file in place while a process has it mapped is the one way to break
    // this, as with any mapped file.
    unsafe { memmap2::Mmap::map(file) }
}

#[allow(unsafe_code)]
fn as_i8(bytes: &[u8]) -> &[i8] {
    // SAFETY: i8 has u8's size and alignment, and every bit pattern is an i8.
    unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<i8>(), bytes.len()) }
}

#[allow(unsafe_code)]
fn as_f32(bytes: &[u8]) -> Option<&[f32]> {
    // SAFETY: every bit pattern is an f32; align_to hands back only the aligned part, and the
    // slice is used only when nothing was left over at either end.
    let (head, middle, tail) = unsafe { bytes.align_to::<f32>() };
    (head.is_empty() && tail.is_empty()).then_some(middle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::UnitVectors;

    #[test]
    fn a_written_file_maps_back_and_scans_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.vectors");
        let vectors: Vec<Vec<f32>> = UnitVectors::new(7, 13).take(50).collect();
        let mut w = write_file(&path, 13, 3).unwrap();
        for (i, v) in vectors.iter().enumerate() {
            assert!(w.push_f32(v, &[i as u8, 0, 7]).unwrap());
        }
        assert!(!w.push_f32(&[1.0], &[0, 0, 0]).unwrap(), "another dimension is refused");
        assert!(!w.push_f32(&vectors[0], &[0]).unwrap(), "another record size is refused");
        let written = w.finish(b"{\"store\":\"x\"}").unwrap();
        assert_eq!(written.entries, 50);
        let mapped = MappedFile::open(&path).unwrap();
        assert_eq!((mapped.len(), mapped.dimension(), mapped.header()), (50, 13, &b"{\"store\":\"x\"}"[..]));
        assert_eq!(mapped.record(42), &[42, 0, 7]);
        let found = mapped.slab().search(&vectors[42], 3, |i| i != 41).unwrap();
        assert_eq!(found[0].1, 42);
        assert!(found[0].0 > 0.99);
        assert!(found.iter().all(|(_, i)| *i != 41), "the filter holds");
        let q = Quantized::from_f32(&vectors[9]);
        assert_eq!(mapped.slab().entry(9), (&q.values[..], q.scale));
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["index.vectors"], "no temporary file is left");
    }

    #[test]
    fn a_file_cut_short_or_of_another_format_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.vectors");
        let mut w = write_file(&path, 4, 0).unwrap();
        for v in UnitVectors::new(3, 4).take(10) {
            w.push_f32(&v, &[]).unwrap();
        }
        w.finish(b"").unwrap();
        let whole = std::fs::read(&path).unwrap();
        for cut in [whole.len() - 1, whole.len() / 2, 10, 0] {
            std::fs::write(&path, &whole[..cut]).unwrap();
            let e = MappedFile::open(&path).err().expect("refused");
            assert!(matches!(e, FileError::Invalid { .. }), "{cut}: {e}");
        }
        let mut other = whole.clone();
        other[7] = b'2';
        std::fs::write(&path, &other).unwrap();
        assert!(MappedFile::open(&path).is_err(), "another version");
        let mut lying = whole.clone();
        lying[12] = 11;
        std::fs::write(&path, &lying).unwrap();
        assert!(MappedFile::open(&path).is_err(), "a count that does not match its length");
        let e = MappedFile::open(&dir.path().join("missing")).err().unwrap();
        assert!(matches!(e, FileError::Io { doing: "open", .. }), "{e}");
    }

    #[test]
    fn an_unfinished_write_leaves_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.vectors");
        let mut w = write_file(&path, 2, 0).unwrap();
        w.push_f32(&[0.6, 0.8], &[]).unwrap();
        w.finish(b"old").unwrap();
        let mut w = write_file(&path, 2, 0).unwrap();
        w.push_f32(&[1.0, 0.0], &[]).unwrap();
        drop(w);
        assert_eq!(MappedFile::open(&path).unwrap().header(), b"old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
