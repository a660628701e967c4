//! Text rules shared by validation, hashing and response budgeting.

use crate::error::{ErrorCode, ValidationError};
use sha2::{Digest, Sha256};

/// Refuses NUL bytes, which some clients use to smuggle truncation past other checks.
pub fn reject_nul(field: &str, text: &str) -> Result<(), ValidationError> {
    if text.contains('\0') {
        return Err(ValidationError::new(
            ErrorCode::ControlCharacter,
            field,
            format!("`{field}` contains a NUL byte"),
            "remove the \\u0000 characters; binary data cannot be stored as text",
        ));
    }
    Ok(())
}

/// The normalized form the content hash is taken over: trimmed, runs of whitespace collapsed
/// to one space, lowercased. Two texts that differ only in spacing or case are duplicates.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
    out
}

/// SHA-256 of the normalized text, hex encoded.
pub fn content_hash(text: &str) -> String {
    let digest = Sha256::digest(normalize(text).as_bytes());
    let mut hex = String::with_capacity(64);
    for byte in digest {
        hex.push_str(&format!("{byte:02x}"));
    }
    hex
}

/// Cuts `text` to at most `max_chars` characters on a character boundary.
/// Returns the text and whether anything was cut.
pub fn truncate_chars(text: &str, max_chars: usize) -> (&str, bool) {
    match text.char_indices().nth(max_chars) {
        Some((byte_index, _)) => (&text[..byte_index], true),
        None => (text, false),
    }
}

/// The first non-empty line of `text`, cut to `max_chars`; used as a title when no structured
/// title exists.
pub fn first_line(text: &str, max_chars: usize) -> String {
    let line =
        text.lines().map(|l| l.trim().trim_start_matches('#').trim()).find(|l| !l.is_empty()).unwrap_or("");
    let (cut, was_cut) = truncate_chars(line, max_chars);
    if was_cut { format!("{cut}…") } else { cut.to_string() }
}

/// Bytes as a person reads them (`512 bytes`, `12 kB`, `2.5 MB`, `1.2 GB`), for every size a
/// page or a command shows.
pub fn byte_size(bytes: u64) -> String {
    let b = bytes as f64;
    match b {
        b if b >= 1e9 => format!("{:.1} GB", b / 1e9),
        b if b >= 1e6 => format!("{:.1} MB", b / 1e6),
        b if b >= 1e3 => format!("{:.0} kB", b / 1e3),
        _ => format!("{bytes} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalization_ignores_case_and_spacing() {
        assert_eq!(normalize("  Hello\n\tWORLD  "), "hello world");
        assert_eq!(content_hash("Hello world"), content_hash(" hello   WORLD\n"));
        assert_ne!(content_hash("hello world"), content_hash("hello worlds"));
    }

    #[test]
    fn hash_is_sha256_hex_of_normalized_text() {
        // sha256("abc")
        assert_eq!(content_hash(" ABC "), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        assert_eq!(truncate_chars("héllo", 2), ("hé", true));
        assert_eq!(truncate_chars("hé", 5), ("hé", false));
        assert_eq!(truncate_chars("🙂🙂", 1), ("🙂", true));
    }

    #[test]
    fn first_line_skips_blank_lines_and_heading_marks() {
        assert_eq!(first_line("\n\n## Deploy steps\nbody", 50), "Deploy steps");
        assert_eq!(first_line("abcdef", 3), "abc…");
    }

    #[test]
    fn sizes_read_in_the_unit_that_fits() {
        let read: Vec<String> = [512, 12_345, 2_500_000, 1_234_000_000].map(byte_size).into();
        assert_eq!(read, ["512 bytes", "12 kB", "2.5 MB", "1.2 GB"]);
    }
}
