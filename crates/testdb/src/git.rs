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
