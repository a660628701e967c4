//! A git commit as a `change` item: the subject and body as the summary, the short hash as
//! `subject_ref` (what the change is about: this commit), the full hash as `commit`, the
//! author, and the type read from a Conventional Commits prefix (`fix:` → bugfix).

use crate::limits::MAX_SHORT_TEXT_CHARS;
use crate::text::truncate_chars;
use serde_json::{Map, Value, json};

/// A commit as read from the repository.
#[derive(Debug, Clone, PartialEq)]
pub struct Commit {
    /// The full hash, hex.
    pub hash: String,
    pub message: String,
    /// `Name <email>`.
    pub author: String,
    /// Author time, epoch milliseconds.
    pub time: i64,
}

impl Commit {
    pub fn subject(&self) -> &str {
        self.message.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim()
    }

    /// The `data` of the change item.
    pub fn data(&self) -> Map<String, Value> {
        let message = self.message.trim();
        let summary = if message.is_empty() { "(no commit message)" } else { message };
        let mut data = Map::new();
        data.insert("change_type".into(), json!(change_type(self.subject())));
        data.insert("subject_ref".into(), json!(self.hash.get(..12).unwrap_or(&self.hash)));
        data.insert("summary".into(), json!(summary));
        if !self.author.trim().is_empty() {
            data.insert("author".into(), json!(truncate_chars(self.author.trim(), MAX_SHORT_TEXT_CHARS).0));
        }
        data.insert("commit".into(), json!(self.hash));
        data
    }

    /// What the kind has no field for: the commit's date.
    pub fn metadata(&self) -> Map<String, Value> {
        let mut meta = Map::new();
        meta.insert("date".into(), json!(crate::time::format_instant(self.time)));
        meta
    }
}

/// The change type of a subject written as a Conventional Commit (`feat(api)!: …`); `other`
/// for any other subject.
pub fn change_type(subject: &str) -> &'static str {
    let Some((prefix, _)) = subject.split_once(':') else { return "other" };
    let word = prefix.split(['(', '!']).next().unwrap_or("").trim().to_lowercase();
    match word.as_str() {
        "feat" | "feature" => "feature",
        "fix" | "bugfix" | "hotfix" => "bugfix",
        "refactor" | "style" => "refactor",
        "docs" | "doc" => "docs",
        "perf" => "performance",
        "deps" | "build" => "dependency",
        "ci" | "chore" | "config" => "config",
        "security" | "sec" => "security",
        "schema" | "migration" => "schema",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_becomes_a_change() {
        let commit = Commit {
            hash: "0123456789abcdef0123456789abcdef01234567".into(),
            message: "fix(api): retry on 503\n\nThe gateway drops connections under load.\n".into(),
            author: "Ann <ann@example.com>".into(),
            time: 1_700_000_000_000,
        };
        let data = commit.data();
        assert_eq!(data["change_type"], "bugfix");
        assert_eq!(data["subject_ref"], "0123456789ab");
        assert_eq!(data["commit"], commit.hash.as_str());
        assert_eq!(data["summary"], "fix(api): retry on 503\n\nThe gateway drops connections under load.");
        assert_eq!(commit.metadata()["date"], "2023-11-14T22:13:20.000Z");
    }

    #[test]
    fn conventional_prefixes() {
        for (subject, kind) in [
            ("feat!: drop v1", "feature"),
            ("docs: typo", "docs"),
            ("perf(db): index", "performance"),
            ("build(deps): bump serde", "dependency"),
            ("Merge branch 'main'", "other"),
            ("Note: nothing", "other"),
        ] {
            assert_eq!(change_type(subject), kind, "{subject}");
        }
    }
}
