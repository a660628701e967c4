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

/// A snippet for an item found without a lexical match: the first `max_chars` of the text
/// around the first query word it contains (or its start), with query words marked `**`.
pub fn marked_snippet(text: &str, words: &[&str], max_chars: usize) -> String {
    let lower = text.to_lowercase();
    let start_byte = words.iter().filter_map(|w| lower.find(&w.to_lowercase())).min().unwrap_or(0);
    // Back up a little for context, to a char boundary that the lowercase text shares.
    let start = text.char_indices().map(|(i, _)| i).filter(|i| *i <= start_byte).rev().nth(40).unwrap_or(0);
    let start = if lower.len() == text.len() { start } else { 0 };
    let (window, cut) = truncate_chars(&text[start..], max_chars);
    let mut out = String::with_capacity(window.len() + 16);
    if start > 0 {
        out.push('…');
    }
    for (i, token) in window.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let bare = token.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
        if !bare.is_empty() && words.iter().any(|w| w.eq_ignore_ascii_case(&bare)) {
            out.push_str("**");
            out.push_str(token);
            out.push_str("**");
        } else {
            out.push_str(token);
        }
    }
    if cut {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn marked_snippets_mark_query_words() {
        let s =
            super::marked_snippet("We moved sessions to Postgres last year.", &["sessions", "postgres"], 200);
        assert_eq!(s, "We moved **sessions** to **Postgres** last year.");
        let long = format!("{} needle here", "word ".repeat(100));
        let s = super::marked_snippet(&long, &["needle"], 60);
        assert!(s.starts_with('…') && s.contains("**needle**"), "{s}");
    }

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
}
