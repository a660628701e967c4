//! The packed model's bytes: a file mapped into memory, or a buffer when it could not be
//! written, and the views of those bytes as numbers. One of the crate's three modules with
//! `unsafe` code (with the bf16 and int8 kernels, `kernel` and `int8`).

use std::fs::File;
use std::ops::Deref;

/// Bytes of a packed model, at least 8-byte aligned (a mapping is page-aligned).
pub enum Bytes {
    /// Read-only mapping: pages are read from the page cache when first touched, so a load
    /// costs a system call, not a copy of the whole file.
    Mapped(memmap2::Mmap),
    /// The file's bytes in memory, as 8-byte words for their alignment.
    Owned { words: Vec<u64>, len: usize },
}

impl Bytes {
    /// Maps `file` read-only.
    #[allow(unsafe_code)]
    pub fn map(file: &File) -> std::io::Result<Bytes> {
        // SAFETY: a mapping is sound while the file's bytes do not change under it. It is
        // read-only, and Cortex never writes a pack in place: `pack::write` writes a new file
        // and renames it over the old one, whose bytes live on, unchanged, for as long as a
        // process maps them. A user editing the packed file in place while a process has it
        // mapped is the one way to break this, as with any mapped file.
        unsafe { memmap2::Mmap::map(file) }.map(Bytes::Mapped)
    }

    pub fn owned(bytes: &[u8]) -> Bytes {
        let words = bytes
            .chunks(8)
            .map(|c| {
                let mut word = [0u8; 8];
                word[..c.len()].copy_from_slice(c);
                u64::from_ne_bytes(word)
            })
            .collect();
        Bytes::Owned { words, len: bytes.len() }
    }
}

impl Deref for Bytes {
    type Target = [u8];

    #[allow(unsafe_code)]
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(map) => map,
            Bytes::Owned { words, len } => {
                // SAFETY: every u64 is 8 initialized bytes and every byte is a u8, which needs
                // no alignment: the middle part is all of `words`. `len` is at most 8 bytes per
                // word (`owned` made them from it), and the indexing below checks it anyway.
                let (_, bytes, _) = unsafe { words.align_to::<u8>() };
                &bytes[..*len]
            }
        }
    }
}

/// Views `bytes` as numbers, when they are aligned and whole for them (every bit pattern of
/// `u16`, `f32`, `i8` and `i32` is a value, so only alignment and length matter).
#[allow(unsafe_code)]
pub fn cast<T: Plain>(bytes: &[u8]) -> Option<&[T]> {
    // SAFETY: T is u16, f32, i8 or i32 (`Plain` is sealed to those), for which every bit
    // pattern of the right size is a value; `align_to` hands back as `middle` only whole,
    // aligned elements, and the unaligned or ragged rest is refused just below.
    let (head, middle, tail) = unsafe { bytes.align_to::<T>() };
    (head.is_empty() && tail.is_empty()).then_some(middle)
}

/// The number types [`cast`] may produce.
pub trait Plain: private::Sealed + Copy {}
impl Plain for u16 {}
impl Plain for f32 {}
impl Plain for i8 {}
impl Plain for i32 {}
mod private {
    pub trait Sealed {}
    impl Sealed for u16 {}
    impl Sealed for f32 {}
    impl Sealed for i8 {}
    impl Sealed for i32 {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cast_refuses_misaligned_or_ragged_bytes() {
        let words = [1.0f32, -2.5, 3.0];
        let mut bytes = [0u8; 20];
        let start = (0..4).find(|o| (bytes[*o..].as_ptr() as usize).is_multiple_of(4)).unwrap();
        for (i, w) in words.iter().enumerate() {
            bytes[start + 4 * i..start + 4 * i + 4].copy_from_slice(&w.to_ne_bytes());
        }
        assert_eq!(cast::<f32>(&bytes[start..start + 12]), Some(&words[..]));
        assert!(cast::<f32>(&bytes[start + 1..start + 13]).is_none(), "misaligned");
        assert!(cast::<f32>(&bytes[start..start + 5]).is_none(), "5 bytes are not whole f32s");
    }

    #[test]
    fn owned_bytes_read_back_as_written_and_aligned() {
        let bytes: Vec<u8> = (0..21u8).collect();
        let owned = Bytes::owned(&bytes);
        assert_eq!(&owned[..], &bytes[..]);
        assert!((owned.as_ptr() as usize).is_multiple_of(8));
    }
}
