//! Links planted around `cortex export --markdown` and `cortex ingest`: a link committed to a
//! repository must not turn a maintainer's export into a write, or a removal, outside the
//! folder, nor an ingest into a read of files elsewhere.

use super::ingest::cortex;
use cortex_testdb::{TestDb, per_backend};
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Output;

per_backend!(
    an_export_refuses_a_linked_file_and_leaves_its_target_alone,
    an_export_refuses_a_linked_folder_and_writes_nothing_into_it,
    an_export_never_removes_an_exported_file_behind_a_link,
    an_export_replaces_its_own_files_through_a_rename_and_removes_only_them,
    ingest_refuses_a_linked_path_unless_asked_and_never_follows_links_inside,
);

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A memory holding a todo, a section and an issue: one exported file per kind's folder.
fn memory(db: &TestDb, dir: &Path) {
    for item in [
        r#"{"kind": "todo", "data": {"title": "Rotate keys", "status": "open"}}"#,
        r#"{"kind": "section", "data": {"title": "Deploying", "body": "Run the pipeline."}}"#,
        r#"{"kind": "issue", "data": {"tracker": "github", "external_id": "12", "title": "Totals are off", "status": "open"}}"#,
    ] {
        let out = cortex(db, dir, &["store", item]);
        assert!(out.status.success(), "{out:?}");
    }
}

/// Exit 2, the link named, and nothing written: the export's own folders stay as they were.
fn refused(out: &Output, link: &Path) {
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let text = stderr(out);
    assert!(text.contains(&link.display().to_string()) && text.contains("symbolic link"), "{text}");
    assert!(out.stdout.is_empty(), "no report: nothing was written");
}

fn an_export_refuses_a_linked_file_and_leaves_its_target_alone(db: &TestDb) {
    let dir = tempfile::tempdir().unwrap();
    memory(db, dir.path());
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, "precious").unwrap();
    std::fs::create_dir_all(dir.path().join("out/todos")).unwrap();
    let link = dir.path().join("out/todos/0001-rotate-keys.md");
    symlink(&victim, &link).unwrap();

    refused(
        &cortex(db, dir.path(), &["export", "--markdown", "out"]),
        Path::new("out/todos/0001-rotate-keys.md"),
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink(), "the link itself is left as it was");
    assert!(!dir.path().join("out/sections").exists(), "refused before anything was written");
}

fn an_export_refuses_a_linked_folder_and_writes_nothing_into_it(db: &TestDb) {
    let dir = tempfile::tempdir().unwrap();
    memory(db, dir.path());
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::create_dir(dir.path().join("out")).unwrap();
    symlink(&elsewhere, dir.path().join("out/sections")).unwrap();

    refused(&cortex(db, dir.path(), &["export", "--markdown", "out"]), Path::new("out/sections"));
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0, "nothing written through the link");

    // The export folder itself a link: refused as well.
    symlink(&elsewhere, dir.path().join("linked-out")).unwrap();
    refused(&cortex(db, dir.path(), &["export", "--markdown", "linked-out"]), Path::new("linked-out"));
    // A relative folder below a link.
    refused(&cortex(db, dir.path(), &["export", "--markdown", "linked-out/below"]), Path::new("linked-out"));
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

fn an_export_never_removes_an_exported_file_behind_a_link(db: &TestDb) {
    let dir = tempfile::tempdir().unwrap();
    memory(db, dir.path());
    // A real exported file, with its item's id, kept in a folder outside the export.
    let first = cortex(db, dir.path(), &["export", "--markdown", "scratch"]);
    assert!(first.status.success(), "{first:?}");
    let exported = std::fs::read_to_string(dir.path().join("scratch/issues/0001-totals-are-off.md")).unwrap();
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("0009-old.md"), &exported).unwrap();
    std::fs::create_dir(dir.path().join("out")).unwrap();
    symlink(&outside, dir.path().join("out/issues")).unwrap();

    refused(&cortex(db, dir.path(), &["export", "--markdown", "out"]), Path::new("out/issues"));
    assert_eq!(std::fs::read_to_string(outside.join("0009-old.md")).unwrap(), exported);
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);

    // A folder of files that only look exported, and a link where a stale file would be: kept.
    std::fs::remove_file(dir.path().join("out/issues")).unwrap();
    std::fs::create_dir(dir.path().join("out/notes")).unwrap();
    std::fs::write(dir.path().join("out/notes/0001-mine.md"), "---\ncortex_id: not-an-id\n---\n# Mine\n")
        .unwrap();
    symlink(outside.join("0009-old.md"), dir.path().join("out/notes/0002-link.md")).unwrap();
    let out = cortex(db, dir.path(), &["export", "--markdown", "out"]);
    assert!(out.status.success(), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((report["written"].as_i64(), report["removed"].as_i64()), (Some(3), Some(0)), "{report}");
    assert!(dir.path().join("out/notes/0001-mine.md").is_file());
    assert!(std::fs::symlink_metadata(dir.path().join("out/notes/0002-link.md")).unwrap().is_symlink());
    assert_eq!(std::fs::read_to_string(outside.join("0009-old.md")).unwrap(), exported);
}

fn an_export_replaces_its_own_files_through_a_rename_and_removes_only_them(db: &TestDb) {
    let dir = tempfile::tempdir().unwrap();
    memory(db, dir.path());
    let first = cortex(db, dir.path(), &["export", "--markdown", "out"]);
    assert!(first.status.success(), "{first:?}");
    // A hard link to an exported file elsewhere: a rename gives the folder a new file, so the
    // other name keeps the old text.
    let todo = dir.path().join("out/todos/0001-rotate-keys.md");
    let other_name = dir.path().join("other-name.md");
    std::fs::hard_link(&todo, &other_name).unwrap();
    let before = std::fs::read_to_string(&other_name).unwrap();
    std::fs::write(&todo, "edited by hand\n").unwrap();
    let before_edit = std::fs::read_to_string(&other_name).unwrap();
    assert_eq!(before_edit, "edited by hand\n", "a hard link shares the file");
    let again = cortex(db, dir.path(), &["export", "--markdown", "out"]);
    let report: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(report["written"].as_i64(), Some(1), "{report}");
    assert_eq!(std::fs::read_to_string(&todo).unwrap(), before, "the export's file is back");
    assert_eq!(std::fs::read_to_string(&other_name).unwrap(), "edited by hand\n", "never written through");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("out/todos"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(leftovers, ["0001-rotate-keys.md"], "no temporary file left");
}

fn ingest_refuses_a_linked_path_unless_asked_and_never_follows_links_inside(db: &TestDb) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(elsewhere.path().join("private.md"), "# Private\n\nNot the project's.\n").unwrap();
    std::fs::create_dir(dir.path().join("docs")).unwrap();
    std::fs::write(dir.path().join("docs/guide.md"), "# Guide\n\nHow to build.\n").unwrap();
    symlink(elsewhere.path().join("private.md"), dir.path().join("docs/private.md")).unwrap();
    symlink(elsewhere.path(), dir.path().join("docs/more")).unwrap();
    symlink(elsewhere.path().join("private.md"), dir.path().join("linked.md")).unwrap();

    let walked = cortex(db, dir.path(), &["ingest", "docs", "--json"]);
    assert!(walked.status.success(), "{walked:?}");
    let report: serde_json::Value = serde_json::from_slice(&walked.stdout).unwrap();
    assert_eq!(report["files"]["files"].as_i64(), Some(1), "only the real file: {report}");
    let found = cortex(db, dir.path(), &["find", "Private", "--json"]);
    let hits: serde_json::Value = serde_json::from_slice(&found.stdout).unwrap();
    assert_eq!(hits["hits"].as_array().map(Vec::len), Some(0), "{hits}");

    let refused = cortex(db, dir.path(), &["ingest", "linked.md"]);
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    assert!(stderr(&refused).contains("linked.md") && stderr(&refused).contains("--follow-links"));
    let below = cortex(db, dir.path(), &["ingest", "docs/more"]);
    assert_eq!(below.status.code(), Some(2), "{below:?}");

    let asked = cortex(db, dir.path(), &["ingest", "linked.md", "--follow-links", "--json"]);
    assert!(asked.status.success(), "{asked:?}");
}
