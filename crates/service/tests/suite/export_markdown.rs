//! `cortex export --markdown` and the round trip back through `cortex ingest`, on each
//! backend: a memory holding several kinds, made by ingest and by agents, exported, ingested
//! again unchanged (no write, no audit record), then edited; and a supersede named between
//! two records stored before.

use crate::common::memory;
use cortex_domain::Scope;
use cortex_service::ingest::report::IngestReport;
use cortex_store::Filters;
use cortex_testdb::{TestDb, per_backend};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use uuid::Uuid;

per_backend!(
    export_then_ingest_changes_nothing_and_an_edit_updates_its_item,
    a_superseded_by_added_between_stored_records_becomes_a_supersede,
);

const ACCEPTED: &str = "# 1. Use PostgreSQL for orders\n\n## Status\n\nAccepted\n\n## Context\n\nOrders need JSONB.\n\n## Decision\n\nWe will use PostgreSQL.\n\n## Consequences\n\nOne migration.\n";
const OLD: &str = "# 2. Use MySQL for orders\n\n## Status\n\nSuperseded by [3. Use SQLite](0003-use-sqlite.md)\n\n## Context\n\nOrders need SQL.\n\n## Decision\n\nWe will use MySQL.\n";
const NEW: &str = "# 3. Use SQLite\n\n## Status\n\nAccepted\n\nSupersedes [2. Use MySQL for orders](0002-use-mysql-for-orders.md)\n\n## Context\n\nOne file is enough.\n\n## Decision\n\nWe will use SQLite.\n";
const CHANGELOG: &str = "# Changelog\n\nBased on [Keep a Changelog](https://keepachangelog.com/).\n\n## [Unreleased]\n\n### Added\n\n- Export.\n\n## [1.0.0] - 2024-03-01\n\n### Added\n\n- Everything.\n";
const GUIDE: &str =
    "# Guide\n\n## Install\n\nRun `make install`.\n\n### On macOS\n\nUse brew.\n\n## Use\n\nRun it.\n";

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

fn ingest(m: &crate::common::Memory, path: &Path, dry_run: bool) -> IngestReport {
    m.service.ingest().files(&[path.to_path_buf()], dry_run, &|_, _| {}).unwrap()
}

/// Every live item: `(kind, content hash, updated_at, data, superseded_by)` by id.
type Snapshot = BTreeMap<Uuid, (String, String, i64, Value, Option<Uuid>)>;

fn snapshot(db: &TestDb) -> Snapshot {
    let filters = Filters { include_superseded: true, include_expired: true, ..Filters::default() };
    let items = db.open().recent(&filters, 10_000).unwrap();
    items
        .into_iter()
        .map(|i| {
            let r = i.record;
            (r.id, (r.kind.as_str().to_string(), r.content_hash, r.updated_at, r.data, i.superseded_by))
        })
        .collect()
}

fn audit_count(m: &crate::common::Memory) -> usize {
    m.service.audit().records(None, None, 100_000).unwrap().len()
}

/// Exports into `dir` (a fresh folder each time) and returns the files by path.
fn export(m: &crate::common::Memory, dir: &Path) -> BTreeMap<String, String> {
    let files = m.service.ingest().export_markdown(&Scope::default()).unwrap();
    for f in &files {
        write(dir, &[(f.path.as_str(), f.text.as_str())]);
    }
    files.into_iter().map(|f| (f.path, f.text)).collect()
}

/// A memory of several kinds: decision records, a changelog and a guide ingested from a
/// checkout; a proposed and a rejected decision, a supersede pair, a todo, an issue with
/// tags, content and labels, and an entity with a relation, stored by agents.
fn several_kinds(m: &crate::common::Memory) -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir(repo.path().join(".git")).unwrap();
    write(
        repo.path(),
        &[
            ("doc/adr/0001-use-postgresql-for-orders.md", ACCEPTED),
            ("doc/adr/0002-use-mysql-for-orders.md", OLD),
            ("doc/adr/0003-use-sqlite.md", NEW),
            ("CHANGELOG.md", CHANGELOG),
            ("docs/guide.md", GUIDE),
        ],
    );
    let report = ingest(m, repo.path(), false);
    assert!(!report.any_refused() && report.superseded.len() == 1, "{report:?}");
    let decision = |title: &str, status: &str| {
        json!({"kind": "decision", "data": {"title": title, "status": status, "component": "api",
            "rationale": format!("Because {title}.\n\n### Details\n\n- one\n- two"), "consequences": "Some."}})
    };
    let stored = m.store(json!([
        decision("Cache sessions in Redis", "proposed"),
        decision("Write our own queue", "rejected"),
        decision("Log as JSON", "accepted"),
        {"kind": "todo", "data": {"title": "Rotate the keys", "status": "open", "priority": "high"},
         "tags": ["security"], "content": "Every 90 days."},
        {"kind": "issue", "data": {"tracker": "github", "external_id": "42", "title": "Export is slow",
         "status": "open", "labels": ["perf", "export"], "description": "## Steps\n\nRun export."}},
        {"kind": "decision", "content": "Deploy on Fridays only with a rollback plan.\n\n# Why\n\nWeekends are quiet.  "},
        {"kind": "entity", "data": {"entity_type": "service", "name": "orders"}},
        {"kind": "entity", "data": {"entity_type": "service", "name": "billing"}},
        {"kind": "release", "data": {"version": "0.9.0", "release_type": "minor", "status": "released",
         "released_at": "2023-12-01", "notes": "First cut."}},
    ]));
    assert!(stored.results.iter().all(|r| r.id.is_some()), "{stored:?}");
    let json_logs = stored.results[2].id.clone().unwrap();
    let replaced = m.store(json!([
        {"kind": "decision", "supersedes": json_logs, "data": {"title": "Log as OpenTelemetry", "status": "accepted",
         "component": "api", "rationale": "One format for traces and logs."}},
        {"kind": "relation", "data": {"from": {"entity_type": "service", "name": "orders"},
         "to": {"entity_type": "service", "name": "billing"}, "relation_type": "calls"}},
    ]));
    assert!(replaced.results.iter().all(|r| r.id.is_some()), "{replaced:?}");
    repo
}

fn export_then_ingest_changes_nothing_and_an_edit_updates_its_item(db: &TestDb) {
    let m = memory(db, "main");
    let _repo = several_kinds(&m);
    let before = snapshot(db);
    let kinds: std::collections::BTreeSet<&str> = before.values().map(|v| v.0.as_str()).collect();
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        ["decision", "entity", "issue", "relation", "release", "section", "todo"]
    );
    let audit_before = audit_count(&m);
    let out = tempfile::tempdir().unwrap();
    let files = export(&m, out.path());
    assert!(files.contains_key("CHANGELOG.md") && files.keys().any(|p| p.starts_with("decisions/0001-")));
    assert!(files.keys().all(|p| !p.contains("..")), "{:?}", files.keys());

    // The round trip: nothing written, nothing audited, nothing duplicated.
    let report = ingest(&m, out.path(), false);
    let total = report.total();
    assert_eq!(
        (total.inserted, total.updated, total.deleted, total.refused, total.unchanged),
        (0, 0, 0, 0, before.len() as i64),
        "{report:?}"
    );
    assert!(report.passed_over.is_empty() && report.unlinked.is_empty(), "{report:?}");
    assert_eq!(snapshot(db), before, "every item's hash and updated_at unchanged");
    assert_eq!(audit_count(&m), audit_before, "no audit record");
    let again = tempfile::tempdir().unwrap();
    assert_eq!(export(&m, again.path()), files, "the same memory gives the same files");

    // An edit of an agent's decision updates that item in place, keeping its tags.
    let (path, text) = files.iter().find(|(_, t)| t.contains("# Cache sessions in Redis")).unwrap();
    let id =
        before.iter().find(|(_, v)| v.3["title"] == "Cache sessions in Redis").map(|(id, _)| *id).unwrap();
    std::fs::write(out.path().join(path), text.replace("status: \"proposed\"", "status: \"accepted\""))
        .unwrap();
    let report = ingest(&m, out.path(), false);
    assert_eq!((report.kinds["decision"].updated, report.total().inserted), (1, 0), "{report:?}");
    let after = snapshot(db);
    assert_eq!(after[&id].3["status"], "accepted");
    assert_eq!(after.len(), before.len());

    // An accepted decision's context may not change: foreseen by a dry run, refused by a
    // real one, naming the file, with the way forward.
    let (path, text) = files.iter().find(|(_, t)| t.contains("# Use PostgreSQL for orders")).unwrap();
    std::fs::write(out.path().join(path), text.replace("Orders need JSONB.", "Orders need documents."))
        .unwrap();
    let audit_before = audit_count(&m);
    let dry = ingest(&m, out.path(), true);
    assert_eq!(dry.refused.len(), 1, "{dry:?}");
    assert_eq!(dry.refused[0].path, *path);
    assert_eq!(audit_count(&m), audit_before, "a dry run writes nothing");
    let real = ingest(&m, out.path(), false);
    assert_eq!((real.refused.len(), real.refused[0].path.as_str()), (1, path.as_str()), "{real:?}");
    assert_eq!(real.refused[0].code, "business_rule_blocked");
    assert!(real.refused[0].human_hint.contains("supersedes"), "{}", real.refused[0].human_hint);
    assert!(snapshot(db).values().any(|v| v.3["rationale"].as_str().is_some_and(|r| r.contains("JSONB"))));

    // A file that no longer reads back (its id mangled) is refused by name, nothing written.
    std::fs::write(out.path().join(path), text).unwrap();
    let changelog = out.path().join("CHANGELOG.md");
    let mangled =
        std::fs::read_to_string(&changelog).unwrap().replacen("\"cortex_id\":\"", "\"cortex_id\":\"x", 1);
    std::fs::write(&changelog, mangled).unwrap();
    let before = snapshot(db);
    let broken = ingest(&m, out.path(), false);
    assert_eq!(broken.refused.len(), 1, "{broken:?}");
    assert_eq!(broken.refused[0].path, "CHANGELOG.md");
    assert!(broken.refused[0].message.contains("cortex_id"), "{}", broken.refused[0].message);
    assert_eq!(snapshot(db), before);
}

fn a_superseded_by_added_between_stored_records_becomes_a_supersede(db: &TestDb) {
    let m = memory(db, "main");
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir(repo.path().join(".git")).unwrap();
    let old = OLD.replace("Superseded by [3. Use SQLite](0003-use-sqlite.md)", "Accepted");
    let new = NEW.replace("Supersedes [2. Use MySQL for orders](0002-use-mysql-for-orders.md)", "");
    write(repo.path(), &[("adr/0002-use-mysql-for-orders.md", &old), ("adr/0003-use-sqlite.md", &new)]);
    let first = ingest(&m, repo.path(), false);
    assert_eq!(first.kinds["decision"].inserted, 2);
    assert!(first.superseded.is_empty());

    // Someone marks the old record superseded: both are stored, and now linked.
    write(repo.path(), &[("adr/0002-use-mysql-for-orders.md", OLD)]);
    let dry = ingest(&m, repo.path(), true);
    assert_eq!(dry.superseded.len(), 1, "a dry run says so: {dry:?}");
    let report = ingest(&m, repo.path(), false);
    assert_eq!(
        report.superseded,
        [("adr/0003-use-sqlite.md".to_string(), "adr/0002-use-mysql-for-orders.md".to_string())],
        "{report:?}"
    );
    assert!(report.unlinked.is_empty() && !report.any_refused(), "{report:?}");
    let items = snapshot(db);
    let id_of = |title: &str| items.iter().find(|(_, v)| v.3["title"] == title).map(|(id, _)| *id).unwrap();
    let (mysql, sqlite) = (id_of("Use MySQL for orders"), id_of("Use SQLite"));
    assert_eq!(items[&mysql].4, Some(sqlite));
    assert_eq!(items[&mysql].3["status"], "superseded");
    let hits = m.find(json!({"query": "MySQL orders", "types": ["decision"]}));
    assert!(hits.hits.iter().all(|h| h.id != mysql), "a superseded record leaves finds");

    let audit = audit_count(&m);
    let again = ingest(&m, repo.path(), false);
    assert!(again.superseded.is_empty() && again.unlinked.is_empty(), "{again:?}");
    assert_eq!(again.total().unchanged, 2);
    assert_eq!(audit_count(&m), audit, "nothing more to do");
}
