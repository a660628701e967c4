//! `cortex ingest` driven as a user would, on each backend: a decision folder and a git
//! history written by the test, the summary, a second run that writes nothing, and exit 2
//! when an accepted decision's text was edited; `cortex export --markdown` read back by
//! `cortex ingest`.

use cortex_testdb::git::{commit, git};
use cortex_testdb::{TestDb, per_backend};
use std::path::Path;
use std::process::{Command, Output};

per_backend!(
    ingest_summarises_reruns_quietly_and_exits_2_on_a_refusal,
    ingest_git_adds_only_new_commits,
    the_readme_command_works_in_a_repository_without_a_changelog,
    export_markdown_reads_back_unchanged_and_a_dry_run_foresees_a_refusal,
);

const ACCEPTED: &str = "# 1. Use PostgreSQL\n\nDate: 2024-01-02\n\n## Status\n\nAccepted\n\n## Context\n\nWe need one database.\n\n## Decision\n\nPostgreSQL for everything.\n\n## Consequences\n\nOne backup to run.\n";

/// `cortex ARGS` in `dir` on `db`, at acme/api@main.
pub fn cortex(db: &TestDb, dir: &Path, args: &[&str]) -> Output {
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

fn the_readme_command_works_in_a_repository_without_a_changelog(db: &TestDb) {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    git(repo, &["init", "-q", "-b", "main"]);
    std::fs::create_dir(repo.join("docs")).unwrap();
    std::fs::write(repo.join("docs/guide.md"), "# Guide\n\n## Install\n\nRun make.\n\n## Deploy\n\nPush.\n")
        .unwrap();
    git(repo, &["add", "docs"]);
    git(repo, &["commit", "-q", "-m", "docs: the guide"]);
    commit(repo, "a.txt", "feat: orders");

    // As the README writes it; there is no CHANGELOG.md here.
    let out = cortex(db, repo, &["ingest", "docs", "CHANGELOG.md", "--git"]);
    assert!(out.status.success(), "{out:?}");
    let (text, errors) = (stdout(&out), String::from_utf8_lossy(&out.stderr).into_owned());
    assert!(errors.contains("CHANGELOG.md") && errors.contains("the other paths were read"), "{errors}");
    assert!(text.contains("section: 2 inserted"), "{text}");
    assert!(text.contains("change: 2 inserted"), "{text}");
    assert!(text.contains("missing: CHANGELOG.md"), "{text}");
    // Not a terminal: the progress is counts on stderr, not a bar.
    assert!(errors.contains("writing commits: 2/2 items"), "{errors}");

    let json = cortex(db, repo, &["ingest", "docs", "CHANGELOG.md", "--json"]);
    assert!(json.status.success(), "{json:?}");
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(report["files"]["missing"][0]["path"], "CHANGELOG.md", "{report}");
    assert_eq!(report["files"]["kinds"]["section"]["unchanged"], 2, "{report}");

    // Nothing that exists: nothing read, exit 2.
    let none = cortex(db, repo, &["ingest", "CHANGELOG.md", "NEWS.md"]);
    assert_eq!(none.status.code(), Some(2), "{none:?}");

    // Outside any repository, the docs are still read and --git is named as missing.
    let plain = tempfile::tempdir().unwrap();
    std::fs::create_dir(plain.path().join("docs")).unwrap();
    std::fs::write(plain.path().join("docs/notes.md"), "# Notes\n\n## Deploy\n\nPush.\n").unwrap();
    let out = cortex(db, plain.path(), &["ingest", "docs", "CHANGELOG.md", "--git"]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("not in a git repository"), "{out:?}");
    assert!(stdout(&out).contains("section: 1 inserted"), "{}", stdout(&out));
    let alone = cortex(db, plain.path(), &["ingest", "--git"]);
    assert_eq!(alone.status.code(), Some(2), "{alone:?}");
}

fn audit_records(db: &TestDb, dir: &Path) -> usize {
    let out = cortex(db, dir, &["audit", "--json"]);
    let audit: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    audit["records"].as_array().unwrap().len()
}

fn export_markdown_reads_back_unchanged_and_a_dry_run_foresees_a_refusal(db: &TestDb) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    std::fs::create_dir_all(dir.path().join("docs/adr")).unwrap();
    std::fs::write(dir.path().join("docs/adr/0001-use-postgresql.md"), ACCEPTED).unwrap();
    assert!(cortex(db, dir.path(), &["ingest", "docs"]).status.success());
    let todo =
        r#"{"kind": "todo", "data": {"title": "Rotate keys", "status": "open"}, "tags": ["security"]}"#;
    assert!(cortex(db, dir.path(), &["store", todo]).status.success());

    let out = dir.path().join("memory");
    let export = cortex(db, dir.path(), &["export", "--markdown", "memory"]);
    assert!(export.status.success(), "{export:?}");
    let report: serde_json::Value = serde_json::from_slice(&export.stdout).unwrap();
    assert_eq!((report["files"].as_i64(), report["written"].as_i64()), (Some(2), Some(2)), "{report}");
    let decision = std::fs::read_to_string(out.join("decisions/0001-use-postgresql.md")).unwrap();
    assert!(decision.contains("status: \"accepted\"") && decision.contains("# Use PostgreSQL"), "{decision}");
    assert!(out.join("todos/0001-rotate-keys.md").is_file());
    let again = cortex(db, dir.path(), &["export", "--markdown", "memory"]);
    let report: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!((report["written"].as_i64(), report["unchanged"].as_i64()), (Some(0), Some(2)), "{report}");

    let audit = audit_records(db, dir.path());
    let back = cortex(db, dir.path(), &["ingest", "memory"]);
    assert!(back.status.success(), "{back:?}");
    let text = stdout(&back);
    assert!(text.contains("decision: 1 unchanged") && text.contains("todo: 1 unchanged"), "{text}");
    assert_eq!(audit_records(db, dir.path()), audit, "the round trip writes nothing");

    let edited = decision.replace("We need one database.", "We need two databases.");
    std::fs::write(out.join("decisions/0001-use-postgresql.md"), edited).unwrap();
    let dry = cortex(db, dir.path(), &["ingest", "memory", "--dry-run"]);
    assert_eq!(dry.status.code(), Some(2), "{dry:?}");
    let text = stdout(&dry);
    assert!(text.contains("refused: memory/decisions/0001-use-postgresql.md"), "{text}");
    assert_eq!(audit_records(db, dir.path()), audit, "a dry run writes nothing");

    // An item deleted since: its file goes on the next export, so ingesting the folder
    // cannot bring it back.
    let todo = std::fs::read_to_string(out.join("todos/0001-rotate-keys.md")).unwrap();
    let id = todo.lines().find_map(|l| l.strip_prefix("cortex_id: ")).unwrap();
    let delete = format!(r#"{{"operation": "delete", "id": "{id}", "kind": "todo"}}"#);
    assert!(cortex(db, dir.path(), &["store", &delete]).status.success());
    let after = cortex(db, dir.path(), &["export", "--markdown", "memory"]);
    let report: serde_json::Value = serde_json::from_slice(&after.stdout).unwrap();
    assert_eq!(report["removed"].as_i64(), Some(1), "{report}");
    assert!(!out.join("todos/0001-rotate-keys.md").exists());
}
