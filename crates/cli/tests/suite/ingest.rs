//! `cortex ingest` driven as a user would, on each backend: a decision folder and a git
//! history written by the test, the summary, a second run that writes nothing, and exit 2
//! when an accepted decision's text was edited.

use cortex_testdb::git::{commit, git};
use cortex_testdb::{TestDb, per_backend};
use std::path::Path;
use std::process::{Command, Output};

per_backend!(ingest_summarises_reruns_quietly_and_exits_2_on_a_refusal, ingest_git_adds_only_new_commits);

const ACCEPTED: &str = "# 1. Use PostgreSQL\n\nDate: 2024-01-02\n\n## Status\n\nAccepted\n\n## Context\n\nWe need one database.\n\n## Decision\n\nPostgreSQL for everything.\n\n## Consequences\n\nOne backup to run.\n";

fn cortex(db: &TestDb, dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cortex"))
        .args(args)
        .env("CORTEX_DB", db.db_arg())
        .env("CORTEX_ORG", "acme")
        .env("CORTEX_PROJECT", "api")
        .env("CORTEX_BRANCH", "main")
        .env("CORTEX_EMBEDDER", "none")
        .current_dir(dir)
        .output()
        .unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn ingest_summarises_reruns_quietly_and_exits_2_on_a_refusal(db: &TestDb) {
    let dir = tempfile::tempdir().unwrap();
    // A checkout (its `.git` makes it one): paths are relative to its top.
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let adr = dir.path().join("docs/adr");
    std::fs::create_dir_all(&adr).unwrap();
    std::fs::write(adr.join("0001-use-postgresql.md"), ACCEPTED).unwrap();
    std::fs::write(adr.join("README.md"), "# Decisions\n\n* [1. Use PostgreSQL](0001-use-postgresql.md)\n")
        .unwrap();

    let dry = cortex(db, dir.path(), &["ingest", "docs", "--dry-run"]);
    assert!(dry.status.success(), "{dry:?}");
    assert!(stdout(&dry).contains("decision: 1 would be inserted — accepted 1"), "{}", stdout(&dry));

    let first = cortex(db, dir.path(), &["ingest", "docs"]);
    assert!(first.status.success(), "{first:?}");
    let text = stdout(&first);
    assert!(text.contains("decision: 1 inserted — accepted 1"), "{text}");
    assert!(text.contains("passed over: docs/adr/README.md (index)"), "{text}");

    let again = cortex(db, dir.path(), &["ingest", "docs", "--json"]);
    assert!(again.status.success(), "{again:?}");
    let report: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(report["files"]["kinds"]["decision"]["unchanged"], 1, "{report}");
    assert_eq!(report["files"]["kinds"]["decision"]["inserted"], 0);

    std::fs::write(adr.join("0001-use-postgresql.md"), ACCEPTED.replace("one database", "two databases"))
        .unwrap();
    let refused = cortex(db, dir.path(), &["ingest", "docs"]);
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    let text = stdout(&refused);
    assert!(text.contains("refused: docs/adr/0001-use-postgresql.md"), "{text}");
    assert!(text.contains("supersedes"), "{text}");

    let missing = cortex(db, dir.path(), &["ingest", "no-such-folder"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no-such-folder"), "{missing:?}");
}

fn ingest_git_adds_only_new_commits(db: &TestDb) {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    git(repo, &["init", "-q", "-b", "main"]);
    commit(repo, "a", "feat: orders");
    commit(repo, "b", "fix: totals");
    let first = cortex(db, repo, &["ingest", "--git"]);
    assert!(first.status.success(), "{first:?}");
    assert!(stdout(&first).contains("change: 2 inserted"), "{}", stdout(&first));
    let again = cortex(db, repo, &["ingest", "--git", "."]);
    assert!(stdout(&again).contains("change: 2 unchanged"), "{}", stdout(&again));
}
