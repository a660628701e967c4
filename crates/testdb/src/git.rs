//! A git repository made by a test with the `git` binary (only tests run it; `cortex ingest
//! --git` reads repositories with a library): the same author and no user configuration, so
//! every run makes the same history.

use std::path::Path;
use std::process::Command;

/// Runs `git args` in `dir` as the author Ann, and fails the test if it fails.
pub fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "Ann")
        .env("GIT_AUTHOR_EMAIL", "ann@example.com")
        .env("GIT_COMMITTER_NAME", "Ann")
        .env("GIT_COMMITTER_EMAIL", "ann@example.com")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .status()
        .expect("the git binary runs");
    assert!(status.success(), "git {args:?} failed");
}

/// Writes `file` in the repository at `dir` and commits it with `message`.
pub fn commit(dir: &Path, file: &str, message: &str) {
    std::fs::write(dir.join(file), message).expect("the file is written");
    git(dir, &["add", file]);
    git(dir, &["commit", "-q", "-m", message]);
}

/// One commit of a history exported by `git log` (the format of
/// `tests/fixtures/ingest/*/history.log`, described in that folder's README).
#[derive(Debug, Clone)]
pub struct LoggedCommit {
    pub hash: String,
    pub parents: Vec<String>,
    /// `name\temail\tseconds zone`.
    pub author: String,
    pub committer: String,
    pub message: String,
    /// `(A|M|D, path as git quotes it)`, against the first parent.
    pub files: Vec<(char, String)>,
}

impl LoggedCommit {
    pub fn subject(&self) -> &str {
        self.message.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim()
    }

    pub fn body(&self) -> String {
        let mut lines = self.message.trim().lines();
        lines.next();
        lines.collect::<Vec<_>>().join("\n").trim().to_string()
    }

    /// `(name, email, epoch seconds)` of the author.
    pub fn author_parts(&self) -> (String, String, i64) {
        let mut parts = self.author.split('\t');
        let name = parts.next().unwrap_or("").to_string();
        let email = parts.next().unwrap_or("").to_string();
        let seconds = parts.next().and_then(|t| t.split(' ').next()?.parse().ok()).unwrap_or(0);
        (name, email, seconds)
    }

    /// Epoch seconds of the commit.
    pub fn commit_seconds(&self) -> i64 {
        self.committer.split('\t').nth(2).and_then(|t| t.split(' ').next()?.parse().ok()).unwrap_or(0)
    }
}

/// The commits of a `git log` export, oldest first.
pub fn read_log(text: &str) -> Vec<LoggedCommit> {
    text.split('\u{1e}')
        .filter(|r| !r.trim().is_empty())
        .map(|record| {
            let mut parts = record.splitn(3, '\u{1f}');
            let head = parts.next().unwrap_or("");
            let message = parts.next().unwrap_or("").to_string();
            let files = parts.next().unwrap_or("");
            let field = |name: &str| {
                head.lines()
                    .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(' ')))
                    .unwrap_or("")
                    .to_string()
            };
            LoggedCommit {
                hash: field("commit"),
                parents: field("parents").split_whitespace().map(str::to_string).collect(),
                author: field("author"),
                committer: field("committer"),
                message,
                files: files
                    .lines()
                    .filter_map(|l| {
                        let (status, path) = l.split_once('\t')?;
                        Some((status.chars().next()?, path.to_string()))
                    })
                    .collect(),
            }
        })
        .collect()
}

/// A repository at `dir` rebuilt from a `git log` export with `git fast-import`: the same
/// messages, authors, committers, times, merges and paths; each file's content a line
/// naming the commit that wrote it (the export holds no contents). Hashes differ from the
/// original's; `main` ends at the export's last commit.
pub fn rebuild(dir: &Path, commits: &[LoggedCommit]) {
    git(dir, &["init", "-q", "-b", "main"]);
    let mut stream = Vec::new();
    let marks: std::collections::HashMap<&str, usize> =
        commits.iter().enumerate().map(|(i, c)| (c.hash.as_str(), i + 1)).collect();
    let signature = |s: &str| {
        let mut parts = s.split('\t');
        let (name, email, when) =
            (parts.next().unwrap_or(""), parts.next().unwrap_or(""), parts.next().unwrap_or("0 +0000"));
        format!("{name} <{email}> {when}")
    };
    for (i, c) in commits.iter().enumerate() {
        if c.parents.is_empty() {
            stream.extend_from_slice(b"reset refs/heads/main\n");
        }
        stream.extend_from_slice(format!("commit refs/heads/main\nmark :{}\n", i + 1).as_bytes());
        stream.extend_from_slice(
            format!("author {}\ncommitter {}\n", signature(&c.author), signature(&c.committer)).as_bytes(),
        );
        stream.extend_from_slice(format!("data {}\n{}\n", c.message.len(), c.message).as_bytes());
        for (n, parent) in c.parents.iter().enumerate() {
            let mark = marks[parent.as_str()];
            let verb = if n == 0 { "from" } else { "merge" };
            stream.extend_from_slice(format!("{verb} :{mark}\n").as_bytes());
        }
        for (status, path) in &c.files {
            if *status == 'D' {
                stream.extend_from_slice(format!("D {path}\n").as_bytes());
            } else {
                let content = format!("{} {path}\n", c.hash);
                stream.extend_from_slice(
                    format!("M 100644 inline {path}\ndata {}\n{content}\n", content.len()).as_bytes(),
                );
            }
        }
        stream.push(b'\n');
    }
    let mut child = Command::new("git")
        .args(["fast-import", "--quiet", "--done"])
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("git fast-import runs");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("its input");
        stdin.write_all(&stream).expect("the stream is written");
        stdin.write_all(b"done\n").expect("the stream ends");
    }
    assert!(child.wait().expect("git fast-import ends").success(), "git fast-import failed");
    git(dir, &["checkout", "-q", "-f", "main"]);
}

/// What `git` says of the repository at `dir`: the output of `git args`.
pub fn git_output(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("the git binary runs");
    assert!(out.status.success(), "git {args:?} failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}
