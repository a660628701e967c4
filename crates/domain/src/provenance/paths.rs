//! The paths an item concerns: those its `source` names (`source.files`, checked here) and
//! those its text mentions (found here; the service keeps the ones its repository has).
//! A path is kept relative to the repository's top, with `/` between its parts, and never
//! leaves the repository (no absolute path, no `..`).

use crate::error::{ErrorCode, ValidationError};
use serde_json::Value;

/// Files one item may name in `source.files`.
pub const MAX_CLAIMED_FILES: usize = 100;
/// Paths of a text kept as candidates (the first ones mentioned).
pub const MAX_MENTIONED_PATHS: usize = 20;
/// Bytes of one path.
pub const MAX_PATH_BYTES: usize = 1024;

/// What a request says of an item's provenance in its `source`: the files it concerns and
/// the commit it was written at. Kept out of the item's stored `source`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProvenanceClaim {
    pub files: Vec<String>,
    /// A full or abbreviated commit hash, lowercase.
    pub commit: Option<String>,
}

impl ProvenanceClaim {
    pub fn is_empty(&self) -> bool {
        self.files.is_empty() && self.commit.is_none()
    }

    /// `source.files`: an array of repository paths. `field` is the path errors name.
    pub fn parse_files(field: &str, value: &Value) -> Result<Vec<String>, ValidationError> {
        let Value::Array(list) = value else {
            return Err(ValidationError::wrong_type(
                field,
                "an array of paths relative to the repository, like [\"src/auth.rs\"]",
                value,
            ));
        };
        if list.len() > MAX_CLAIMED_FILES {
            return Err(ValidationError::new(
                ErrorCode::TooMany,
                field,
                format!("`{field}` names {} files, more than {MAX_CLAIMED_FILES}", list.len()),
                "name the files the item is about, not a whole tree",
            ));
        }
        let mut files = Vec::with_capacity(list.len());
        for (i, entry) in list.iter().enumerate() {
            let at = format!("{field}[{i}]");
            let Value::String(text) = entry else {
                return Err(ValidationError::wrong_type(at, "a path string", entry));
            };
            let path = normalize_path(text).map_err(|problem| {
                ValidationError::new(
                    ErrorCode::InvalidValue,
                    at.clone(),
                    format!("`{at}` {problem}"),
                    "give the path relative to the repository's top folder, like src/auth.rs",
                )
            })?;
            if !files.contains(&path) {
                files.push(path);
            }
        }
        Ok(files)
    }

    /// `source.commit`: a commit hash (4–64 hex digits).
    pub fn parse_commit(field: &str, value: &Value) -> Result<String, ValidationError> {
        let Value::String(text) = value else {
            return Err(ValidationError::wrong_type(field, "a commit hash string", value));
        };
        let hash = text.trim().to_ascii_lowercase();
        if !(4..=64).contains(&hash.len()) || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(ValidationError::new(
                ErrorCode::InvalidValue,
                field,
                format!("`{field}` is not a commit hash"),
                "give the hash `git rev-parse HEAD` prints, or leave it out (the server reads its checkout)",
            ));
        }
        Ok(hash)
    }
}

/// `text` as a repository path (`src/auth.rs`), or what is wrong with it.
pub fn normalize_path(text: &str) -> Result<String, PathProblem> {
    let text = text.trim();
    if text.is_empty() {
        return Err(PathProblem::Empty);
    }
    if text.len() > MAX_PATH_BYTES {
        return Err(PathProblem::TooLong);
    }
    if text.chars().any(char::is_control) {
        return Err(PathProblem::ControlCharacter);
    }
    let unified = text.replace('\\', "/");
    let absolute = unified.starts_with('/')
        || unified.starts_with('~')
        || unified.as_bytes().get(1) == Some(&b':') && unified.as_bytes()[0].is_ascii_alphabetic();
    if absolute {
        return Err(PathProblem::Absolute);
    }
    let mut parts = Vec::new();
    for part in unified.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(PathProblem::LeavesRepository),
            ".git" => return Err(PathProblem::InsideGit),
            part => parts.push(part),
        }
    }
    if parts.is_empty() {
        return Err(PathProblem::Repository);
    }
    Ok(parts.join("/"))
}

/// Why a text is not a repository path, said after the field that holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PathProblem {
    #[error("is empty")]
    Empty,
    #[error("is longer than {MAX_PATH_BYTES} bytes")]
    TooLong,
    #[error("contains a control character")]
    ControlCharacter,
    #[error("is absolute")]
    Absolute,
    #[error("leaves the repository (`..`)")]
    LeavesRepository,
    #[error("is inside .git")]
    InsideGit,
    #[error("names the repository itself, not a file")]
    Repository,
}

/// The paths a text mentions, first mentioned first, each once: words with a `/` between
/// names (`src/auth.rs`, `crates/store/`), or a file name with an extension (`Cargo.toml`),
/// with quotes, backticks, brackets, a trailing `:line` and sentence punctuation taken off.
/// URLs and e-mail addresses are not paths. The service keeps only those its repository has.
pub fn mentioned_paths(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in text.split(|c: char| {
        c.is_whitespace()
            || matches!(c, ',' | ';' | '(' | ')' | '<' | '>' | '[' | ']' | '{' | '}' | '|' | '*')
    }) {
        if out.len() == MAX_MENTIONED_PATHS {
            break;
        }
        let Some(path) = path_in(word) else { continue };
        if !out.contains(&path) {
            out.push(path);
        }
    }
    out
}

/// The path a single word holds, if it looks like one.
fn path_in(word: &str) -> Option<String> {
    if word.contains("://") || word.contains('@') || word.starts_with("--") {
        return None;
    }
    let word = word.trim_matches(|c: char| matches!(c, '`' | '"' | '\'' | '“' | '”' | '‘' | '’'));
    let word = word.trim_end_matches(['.', ':', '!', '?']);
    let word = strip_line_suffix(word);
    let word = word.trim_start_matches("./");
    if word.len() < 3 || word.len() > MAX_PATH_BYTES || word.starts_with('/') || word.contains("..") {
        return None;
    }
    if !word.chars().all(|c| c.is_alphanumeric() || matches!(c, '/' | '.' | '_' | '-' | '+')) {
        return None;
    }
    let last = word.trim_end_matches('/').rsplit('/').next().unwrap_or(word);
    let has_dir = word.trim_end_matches('/').contains('/');
    let has_extension = last.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty() && (1..=10).contains(&ext.len()) && ext.chars().any(|c| c.is_ascii_alphabetic())
    });
    // A version (1.2.3) or a number is no file; a word with a folder or an extension is.
    if !(has_dir || has_extension) || last.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return None;
    }
    normalize_path(word.trim_end_matches('/')).ok()
}

/// `src/a.rs:42` or `src/a.rs:42:7` → `src/a.rs`.
fn strip_line_suffix(word: &str) -> &str {
    let mut word = word;
    for _ in 0..2 {
        match word.rsplit_once(':') {
            Some((head, tail)) if !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()) => word = head,
            _ => break,
        }
    }
    word
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_are_kept_relative_and_inside() {
        assert_eq!(normalize_path(" ./src//auth.rs ").unwrap(), "src/auth.rs");
        assert_eq!(normalize_path("src\\win\\file.rs").unwrap(), "src/win/file.rs");
        for bad in ["", "/etc/passwd", "C:\\x", "~/x", "../up", "a/../../b", ".git/config", ".", "a\nb"] {
            assert!(normalize_path(bad).is_err(), "{bad:?}");
        }
        assert!(normalize_path(&"a".repeat(2000)).is_err());
    }

    #[test]
    fn a_text_mentions_paths_and_file_names_not_urls_or_versions() {
        let text = "Sessions are checked in `src/auth.rs:42` (see crates/store/src/lib.rs, and Cargo.toml). \
                    Docs at https://example.com/a/b.html, mail ann@example.com, version 1.2.3, \
                    the flag --db/x, and/or the ratio 3/4, see docs/ and ../secret.txt.";
        assert_eq!(
            mentioned_paths(text),
            vec!["src/auth.rs", "crates/store/src/lib.rs", "Cargo.toml", "and/or"]
        );
    }

    #[test]
    fn claimed_files_are_checked_one_by_one() {
        let files =
            ProvenanceClaim::parse_files("source.files", &json!(["src/a.rs", "./src/a.rs", "b.md"])).unwrap();
        assert_eq!(files, vec!["src/a.rs", "b.md"]);
        let err = ProvenanceClaim::parse_files("source.files", &json!(["ok.rs", "/abs"])).unwrap_err();
        assert_eq!(err.field, "source.files[1]");
        assert!(err.message.contains("absolute"), "{}", err.message);
        let err = ProvenanceClaim::parse_files("source.files", &json!("src/a.rs")).unwrap_err();
        assert_eq!(err.code, ErrorCode::WrongType);
        let many: Vec<String> = (0..101).map(|i| format!("f{i}.rs")).collect();
        assert_eq!(
            ProvenanceClaim::parse_files("source.files", &json!(many)).unwrap_err().code,
            ErrorCode::TooMany
        );
        assert_eq!(ProvenanceClaim::parse_commit("source.commit", &json!(" ABCdef12 ")).unwrap(), "abcdef12");
        assert!(ProvenanceClaim::parse_commit("source.commit", &json!("xyz")).is_err());
    }
}
