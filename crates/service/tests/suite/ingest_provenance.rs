//! Ingested documents follow the code: in a git repository the test makes, each item `cortex
//! ingest` makes from a file names that file, so a later commit changing the file flags its
//! items (a renamed and a deleted file named as such), one of an untouched file stays clear,
//! and ingesting again brings the items of the changed file to the current commit. Commits
//! ingested with `--git` name their own files and commit. Both backends.

use crate::common::*;
use crate::provenance::{commit_all, head, write};
use cortex_service::ingest::Selection;
use cortex_service::scope_inference::InferredScope;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Config, MemoryService};
use cortex_testdb::git::git;
use cortex_testdb::{TestDb, per_backend};
use serde_json::json;
use std::path::{Path, PathBuf};

per_backend!(
    an_ingested_docs_folder_names_its_files_and_follows_their_changes,
    ingested_commits_name_their_files_and_commit_and_other_folders_name_none,
);

fn in_checkout(db: &TestDb, repo: &Path) -> MemoryService {
    let scope = InferredScope::fixed("acme", "api", "main").in_checkout(repo);
    MemoryService::open(&Config::new(db.target().clone(), scope, EmbedderChoice::None)).unwrap()
}

fn ingest(s: &MemoryService, paths: &[PathBuf]) -> cortex_service::ingest::report::IngestReport {
    let report = s.ingest().files(paths, false, &|_, _| {}).unwrap();
    assert!(report.refused.is_empty(), "{report:?}");
    report
}

/// The live item titled `title`, by id.
fn item(s: &MemoryService, kinds: &[&str], title: &str) -> cortex_service::response::Hit {
    let found = s.find_args(&json!({"types": kinds, "limit": 100})).unwrap();
    let id = found
        .hits
        .iter()
        .find(|h| h.title == title)
        .unwrap_or_else(|| {
            panic!("no item titled {title}: {:?}", found.hits.iter().map(|h| &h.title).collect::<Vec<_>>())
        })
        .id;
    s.find_args(&json!({"ids": [id.to_string()]})).unwrap().hits.remove(0)
}

const GUIDE: &str = "# Guide\n\n## Install\n\nRun the installer.\n\n## Upgrade\n\nStop the server first.\n";

fn an_ingested_docs_folder_names_its_files_and_follows_their_changes(db: &TestDb) {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    git(repo, &["init", "-q", "-b", "main"]);
    write(repo, "docs/guide.md", GUIDE);
    write(repo, "docs/ops.md", "# Ops\n\n## Backups\n\nNightly, kept a week.\n");
    write(repo, "docs/old.md", "# Old\n\n## Legacy port\n\nPort 8080 is kept for old clients.\n");
    write(repo, "docs/moved.md", "# Moved\n\n## Tracing\n\nSpans go to the collector.\n");
    write(
        repo,
        "docs/adr/0001-use-sqlite.md",
        "# 1. Use SQLite\n\nStatus: accepted\n\n## Context\n\nOne file.\n\n## Decision\n\nSQLite.\n",
    );
    write(repo, "CHANGELOG.md", "# Changelog\n\n## [1.0.0] - 2026-01-02\n\n### Added\n\n- First release.\n");
    commit_all(repo, "docs");
    let first = head(repo);
    let s = in_checkout(db, repo);
    let docs = [repo.join("docs"), repo.join("CHANGELOG.md")];
    ingest(&s, &docs);

    // Every item names the file it came from, at the commit it was read at.
    for (kinds, title, file) in [
        (&["section"][..], "Install", "docs/guide.md"),
        (&["section"], "Upgrade", "docs/guide.md"),
        (&["section"], "Backups", "docs/ops.md"),
        (&["decision"], "Use SQLite", "docs/adr/0001-use-sqlite.md"),
        (&["release"], "1.0.0 major", "CHANGELOG.md"),
    ] {
        let hit = item(&s, kinds, title);
        let p = hit.provenance.unwrap_or_else(|| panic!("{title} has no provenance"));
        assert_eq!((p.files, p.commit.as_deref()), (vec![file.to_string()], Some(first.as_str())), "{title}");
        assert!(hit.stale.is_none(), "{title}");
    }
    let backups = item(&s, &["section"], "Backups");

    // One section of the guide edited, a file deleted, one renamed, the path table brought along
    // as the git hook would.
    write(repo, "docs/guide.md", &GUIDE.replace("Stop the server first.", "Drain, then stop the server."));
    std::fs::remove_file(repo.join("docs/old.md")).unwrap();
    git(repo, &["mv", "docs/moved.md", "docs/tracing.md"]);
    commit_all(repo, "docs: upgrade drains first; old page gone; tracing page renamed");
    s.git().sync(repo).unwrap();

    let why = |title: &str| {
        let stale = item(&s, &["section"], title).stale.unwrap_or_else(|| panic!("{title} is not flagged"));
        (stale.files, stale.why)
    };
    let (files, said) = why("Upgrade");
    assert_eq!(files, ["docs/guide.md"]);
    assert!(said.starts_with("docs/guide.md changed in 1 commit"), "{said}");
    // The file changed, not this section: flagged until the file is read again.
    assert_eq!(why("Install").0, ["docs/guide.md"]);
    let (files, said) = why("Legacy port");
    assert_eq!(files, ["docs/old.md"]);
    assert!(said.starts_with("docs/old.md deleted"), "{said}");
    let (files, said) = why("Tracing");
    assert_eq!(files, ["docs/moved.md"]);
    assert!(said.starts_with("docs/moved.md renamed to docs/tracing.md"), "{said}");
    assert!(item(&s, &["section"], "Backups").stale.is_none(), "docs/ops.md did not change");
    assert!(item(&s, &["decision"], "Use SQLite").stale.is_none());
    assert!(item(&s, &["release"], "1.0.0 major").stale.is_none(), "a release records its moment");

    // Ingesting again: the edited section is updated, its untouched neighbour refreshed (same
    // id, same text), the deleted file's item gone, the renamed file's under its new path.
    let install = item(&s, &["section"], "Install");
    let report = ingest(&s, &docs);
    let sections = &report.kinds["section"];
    assert_eq!(
        (sections.inserted, sections.updated, sections.deleted, sections.unchanged),
        (1, 2, 2, 1),
        "{report:?}"
    );
    let second = head(repo);
    for title in ["Install", "Upgrade", "Tracing"] {
        let hit = item(&s, &["section"], title);
        assert!(hit.stale.is_none(), "{title}: {:?}", hit.stale);
        assert_eq!(hit.provenance.unwrap().commit.as_deref(), Some(second.as_str()), "{title}");
    }
    let refreshed = item(&s, &["section"], "Install");
    assert_eq!(refreshed.id, install.id);
    assert_eq!(item(&s, &["section"], "Tracing").provenance.unwrap().files, ["docs/tracing.md"]);
    let gone = s.find_args(&json!({"types": ["section"], "limit": 100})).unwrap();
    assert!(gone.hits.iter().all(|h| h.title != "Legacy port"));
    // An untouched file's item is not written again.
    let after = item(&s, &["section"], "Backups");
    assert_eq!(
        (after.updated_at, after.provenance.unwrap().commit),
        (backups.updated_at, Some(first.clone()))
    );

    // A third run over unchanged files writes nothing.
    let report = ingest(&s, &docs);
    assert!(report.kinds.values().all(|k| k.inserted + k.updated + k.deleted == 0), "{report:?}");
}

fn ingested_commits_name_their_files_and_commit_and_other_folders_name_none(db: &TestDb) {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    git(repo, &["init", "-q", "-b", "main"]);
    write(repo, "src/auth.rs", "fn check() {}\n");
    write(repo, "README.md", "# Api\n");
    commit_all(repo, "feat: sessions are checked");
    let first = head(repo);
    write(repo, "src/auth.rs", "fn check() { todo() }\n");
    commit_all(repo, "fix: check the expiry");
    let s = in_checkout(db, repo);
    let report = s.ingest().commits(repo, &Selection::default(), false, &|_, _| {}).unwrap();
    assert_eq!(report.kinds["change"].inserted, 2, "{report:?}");
    let feat = item(&s, &["change"], "feat: sessions are checked");
    let p = feat.provenance.expect("an ingested commit records its provenance");
    assert_eq!(
        (p.commit.as_deref(), p.files),
        (Some(first.as_str()), vec!["README.md".into(), "src/auth.rs".into()])
    );
    assert!(feat.stale.is_none(), "a change records its moment");

    // Files of a folder that is not the service's checkout have no repository path.
    let elsewhere = tempfile::tempdir().unwrap();
    write(elsewhere.path(), "notes.md", "# Notes\n\n## Deploys\n\nOn Tuesdays.\n");
    ingest(&s, &[elsewhere.path().to_path_buf()]);
    let deploys = item(&s, &["section"], "Deploys");
    assert!(deploys.provenance.is_none_or(|p| p.files.is_empty()), "no file of another folder is named");
}
