//! A git commit as a `change` item, as `git log` shows it: titled by its subject line, its
//! body as the summary (the subject when it has none). The author, the full hash, the dates,
//! the parents and the files it changed with their line counts are structured data — the
//! `author` and `commit` fields (kept out of the searchable text) and metadata — so a search
//! for what a commit did is not answered by who made it or its hash. The short hash is
//! `subject_ref` (what the change is about: this commit); the type comes from a Conventional
//! Commits prefix (`fix:` → bugfix).
//!
//! Merges: a merge whose message git or a forge generated ("Merge pull request #12 from
//! a/b", "Merge branch 'x'") is titled by the first line of its body (the pull request's
//! title, a maintainer's summary) and keeps its number; a body that is only `git merge --log`'s
//! list of commits (`* branch:`) leaves the subject as the title; with no body the merge says
//! nothing the merged commits do not, and becomes no item. Its files are those it brought in
//! (against its first parent).

use crate::limits::{MAX_DATA_TEXT_BYTES, MAX_METADATA_BYTES, MAX_SHORT_TEXT_CHARS};
use crate::text::truncate_chars;
use serde_json::{Map, Value, json};

/// A commit as read from the repository.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Commit {
    /// The full hash, hex.
    pub hash: String,
    pub parents: Vec<String>,
    pub message: String,
    pub author_name: String,
    pub author_email: String,
    /// Epoch milliseconds.
    pub author_time: i64,
    /// When it entered the history (committer time), epoch milliseconds: what `--since` and
    /// "recent" go by.
    pub commit_time: i64,
    /// The files it changed (against its first parent).
    pub files: Vec<FileChange>,
}

/// A file a commit added, modified or deleted, with its line counts (none for a binary file).
#[derive(Debug, Clone, PartialEq)]
pub struct FileChange {
    pub path: String,
    /// `A`, `M` or `D`, as `git log --name-status` writes it.
    pub status: char,
    pub added: Option<u32>,
    pub removed: Option<u32>,
}

/// What a commit message says, read: its title and the text under it.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub title: String,
    pub summary: String,
    /// The pull request a generated merge message names.
    pub pull_request: Option<u64>,
}

impl Commit {
    pub fn subject(&self) -> &str {
        self.message.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim()
    }

    pub fn is_merge(&self) -> bool {
        self.parents.len() > 1
    }

    /// The message as an item shows it; `None` for a merge whose generated message has no
    /// body (nothing to say).
    pub fn read_message(&self) -> Option<Message> {
        let subject = self.subject();
        let body = body_of(&self.message);
        if self.is_merge() && generated_merge(subject) {
            let mut lines = body.lines();
            let first = lines.next()?.trim();
            if first.starts_with("* ") {
                // Only the merged commits' list: the subject names the branch.
                return Some(Message { title: subject.to_string(), summary: body, pull_request: None });
            }
            let rest = lines.collect::<Vec<_>>().join("\n").trim().to_string();
            let title = first.to_string();
            let summary = if rest.is_empty() { title.clone() } else { rest };
            return Some(Message { title, summary, pull_request: pull_request(subject) });
        }
        let title = if subject.is_empty() { "(no commit message)".to_string() } else { subject.to_string() };
        let summary = if body.is_empty() { title.clone() } else { body };
        Some(Message { title, summary, pull_request: None })
    }

    /// The `data` of the change item, for a message read by [`Commit::read_message`].
    pub fn data(&self, message: &Message) -> Map<String, Value> {
        let mut data = Map::new();
        data.insert("change_type".into(), json!(change_type(&message.title)));
        data.insert("subject_ref".into(), json!(self.hash.get(..12).unwrap_or(&self.hash)));
        data.insert("title".into(), json!(short(&message.title, MAX_SHORT_TEXT_CHARS)));
        data.insert("summary".into(), json!(bytes(&message.summary, MAX_DATA_TEXT_BYTES)));
        let author = format!("{} <{}>", self.author_name.trim(), self.author_email.trim());
        if author != " <>" {
            data.insert("author".into(), json!(short(&author, MAX_SHORT_TEXT_CHARS)));
        }
        data.insert("commit".into(), json!(self.hash));
        data
    }

    /// What the kind has no field for: the dates, the parents, the files changed and their
    /// lines (as many files as fit the metadata's size; `files_changed` counts them all).
    pub fn metadata(&self, message: &Message) -> Map<String, Value> {
        let mut meta = Map::new();
        meta.insert("date".into(), json!(crate::time::format_instant(self.commit_time)));
        meta.insert("author_date".into(), json!(crate::time::format_instant(self.author_time)));
        meta.insert("parents".into(), json!(self.parents));
        if self.is_merge() {
            meta.insert("merge".into(), json!(true));
        }
        if let Some(n) = message.pull_request {
            meta.insert("pull_request".into(), json!(n));
        }
        meta.insert("files_changed".into(), json!(self.files.len()));
        let added: u64 = self.files.iter().filter_map(|f| f.added).map(u64::from).sum();
        let removed: u64 = self.files.iter().filter_map(|f| f.removed).map(u64::from).sum();
        meta.insert("insertions".into(), json!(added));
        meta.insert("deletions".into(), json!(removed));
        let mut files = Vec::new();
        // Room is kept for the rest of the metadata and the source `ingest` adds.
        let mut room = MAX_METADATA_BYTES / 2;
        for f in &self.files {
            let entry = json!({"path": short(&f.path, 300), "status": f.status.to_string(),
                               "added": f.added, "removed": f.removed});
            let size = entry.to_string().len() + 1;
            if size > room {
                break;
            }
            room -= size;
            files.push(entry);
        }
        meta.insert("files".into(), Value::Array(files));
        meta
    }
}

/// The message after its subject line, trimmed.
fn body_of(message: &str) -> String {
    let mut lines = message.trim_start().lines();
    lines.next();
    lines.collect::<Vec<_>>().join("\n").trim().to_string()
}

/// A merge message git or a forge wrote, not a person.
fn generated_merge(subject: &str) -> bool {
    [
        "Merge pull request ",
        "Merge branch ",
        "Merge remote-tracking branch ",
        "Merge tag ",
        "Merge commit ",
        "Merged in ",
        "Merge remote branch ",
    ]
    .iter()
    .any(|p| subject.starts_with(p))
}

/// `#12` of "Merge pull request #12 from a/b".
fn pull_request(subject: &str) -> Option<u64> {
    let rest = subject.strip_prefix("Merge pull request #")?;
    rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
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

fn short(text: &str, max: usize) -> String {
    truncate_chars(text.trim(), max).0.trim().to_string()
}

/// `text` cut to at most `max` bytes, on a character boundary.
fn bytes(text: &str, max: usize) -> String {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(message: &str, parents: usize) -> Commit {
        Commit {
            hash: "0123456789abcdef0123456789abcdef01234567".into(),
            parents: (0..parents).map(|i| format!("{i:040}")).collect(),
            message: message.into(),
            author_name: "Ann".into(),
            author_email: "ann@example.com".into(),
            author_time: 1_700_000_000_000,
            commit_time: 1_700_000_060_000,
            files: vec![
                FileChange { path: "src/api.rs".into(), status: 'M', added: Some(3), removed: Some(1) },
                FileChange { path: "logo.png".into(), status: 'A', added: None, removed: None },
            ],
        }
    }

    #[test]
    fn a_commit_is_titled_by_its_subject_with_its_body_as_summary() {
        let c = commit("fix(api): retry on 503\n\nThe gateway drops connections under load.\n", 1);
        let m = c.read_message().unwrap();
        let data = c.data(&m);
        assert_eq!(data["change_type"], "bugfix");
        assert_eq!(data["title"], "fix(api): retry on 503");
        assert_eq!(data["summary"], "The gateway drops connections under load.");
        assert_eq!(data["subject_ref"], "0123456789ab");
        assert_eq!(data["author"], "Ann <ann@example.com>");
        let meta = c.metadata(&m);
        assert_eq!(meta["date"], "2023-11-14T22:14:20.000Z");
        assert_eq!(meta["author_date"], "2023-11-14T22:13:20.000Z");
        assert_eq!((meta["files_changed"].as_u64(), meta["insertions"].as_u64()), (Some(2), Some(3)));
        assert_eq!(meta["files"][0]["path"], "src/api.rs");
        assert_eq!(meta["files"][1]["added"], Value::Null);
        let bare = commit("Bump version", 1);
        assert_eq!(bare.data(&bare.read_message().unwrap())["summary"], "Bump version");
    }

    #[test]
    fn author_and_hash_stay_out_of_the_searchable_text() {
        let c = commit("Add routing tests\n\nFor the v2 preview.", 1);
        let data = c.data(&c.read_message().unwrap());
        let derived = crate::item::derive(crate::Kind::Change, None, &data);
        assert_eq!(derived.title, "Add routing tests");
        assert!(
            !derived.body.contains("ann@example.com") && !derived.body.contains("0123456789ab"),
            "{}",
            derived.body
        );
        assert!(derived.body.contains("For the v2 preview."));
    }

    #[test]
    fn merges_by_their_pull_request_or_not_at_all() {
        let pr = commit(
            "Merge pull request #720 from owner/routing\n\nAdd routing tests for the v2 preview default\n",
            2,
        );
        let m = pr.read_message().unwrap();
        assert_eq!(
            (m.title.as_str(), m.pull_request),
            ("Add routing tests for the v2 preview default", Some(720))
        );
        assert_eq!(pr.metadata(&m)["merge"], true);
        assert_eq!(commit("Merge branch 'main' into feature", 2).read_message(), None);
        let shortlog =
            commit("Merge branch 'jc/foo'\n\n* jc/foo:\n  foo: fix a leak\n", 2).read_message().unwrap();
        assert_eq!(shortlog.title, "Merge branch 'jc/foo'");
        assert!(shortlog.summary.contains("foo: fix a leak"));
        let written =
            commit("Merge the two billing paths\n\nThey diverged in March.", 2).read_message().unwrap();
        assert_eq!(written.title, "Merge the two billing paths");
        // Not a merge: a subject that happens to start so is a commit like any other.
        assert!(commit("Merge branch handling into the CLI", 1).read_message().is_some());
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
