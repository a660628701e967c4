//! `cortex context` run as an agent's session-start hook runs it: the
//! briefing on stdout within its budget, exit 0 — also when there is nothing to brief on or the
//! database cannot be read, since a failing hook must not break the session starting.

use std::path::Path;
use std::process::Output;

use crate::common::cortex;

/// The hook command.
fn hook(dir: &Path, db: &Path, args: &[&str]) -> Output {
    cortex(dir, db).arg("context").args(args).output().unwrap()
}

fn store(dir: &Path, db: &Path, items: &str) {
    let out = cortex(dir, db).args(["store", items]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn the_hook_prints_the_briefing_with_ids_within_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("memory.db");
    let empty = hook(dir.path(), &db, &[]);
    assert!(empty.status.success());
    assert!(String::from_utf8_lossy(&empty.stdout).contains("Nothing stored yet"));

    store(
        dir.path(),
        &db,
        r#"[{"kind": "decision", "data": {"title": "Sessions in Postgres", "component": "auth", "status": "accepted", "rationale": "one store"}},
            {"kind": "decision", "data": {"title": "Use Redis", "component": "auth", "status": "rejected", "rationale": "two stores"}},
            {"kind": "todo", "data": {"title": "Rotate gateway keys", "status": "open"}},
            {"kind": "todo", "data": {"title": "Old chore", "status": "done"}},
            {"kind": "incident", "data": {"title": "Ledger queue stalled", "severity": "high", "impact": "billing late", "resolution_status": "investigating"}}]"#,
    );
    let out = hook(dir.path(), &db, &[]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("# Project memory: acme/api @ main"), "{text}");
    for wanted in ["Sessions in Postgres", "Rotate gateway keys", "Ledger queue stalled"] {
        let line = text.lines().find(|l| l.contains(wanted)).unwrap_or_else(|| panic!("{wanted}: {text}"));
        let id = line.rsplit(' ').next().unwrap();
        assert!(uuid::Uuid::parse_str(id).is_ok(), "each line ends with the item's id: {line}");
    }
    assert!(
        !text.contains("Use Redis") && !text.contains("Old chore"),
        "only what is in force or open: {text}"
    );

    let many: Vec<String> = (0..60)
        .map(|i| format!(r#"{{"kind": "todo", "data": {{"title": "Open task number {i} with a longer title", "status": "open"}}}}"#))
        .collect();
    store(dir.path(), &db, &format!("[{}]", many.join(",")));
    let tight = hook(dir.path(), &db, &["--budget-tokens", "150"]);
    let text = String::from_utf8(tight.stdout).unwrap();
    assert!(text.len() <= 450, "{} characters for 150 tokens: {text}", text.len());
    assert!(text.contains("more: memory_find"), "{text}");
}

#[test]
fn an_unreadable_database_gives_a_note_on_stderr_and_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("memory.db");
    std::fs::write(&db, b"this is not a SQLite database, only text").unwrap();
    let out = hook(dir.path(), &db, &[]);
    assert!(out.status.success(), "a hook must not fail the session start");
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cortex context: no briefing"));
}
