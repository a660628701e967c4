//! `cortex ingest` through `MemoryService`, on each backend: decision record folders in both
//! formats, a Keep a Changelog file, docs and a git history written by the test, ingested,
//! ingested again, edited and removed.

use crate::common::{ingested, memory};
use cortex_service::ingest::Selection;
use cortex_service::ingest::report::IngestReport;
use cortex_store::StoredItem;
use cortex_testdb::git::{commit, git};
use cortex_testdb::{TestDb, per_backend};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;

per_backend!(
    adr_tools_records_become_decisions_and_a_second_run_writes_nothing,
    an_edited_record_updates_in_place_and_an_accepted_text_edit_is_refused,
    madr_records_a_changelog_and_docs,
    a_git_history_becomes_one_change_per_commit_and_only_new_ones_later,
);

const FIRST: &str = "# 1. Record architecture decisions

Date: 2016-02-12

## Status

Accepted

## Context

We need to record the architectural decisions made on this project.

## Decision

We will use Architecture Decision Records, as described by Michael Nygard.

## Consequences

See Michael Nygard's article.
";

const MYSQL: &str = "# 2. Use MySQL for orders

Date: 2016-02-13

## Status

Superseded by [3. Use PostgreSQL for orders](0003-use-postgresql-for-orders.md)

## Context

Orders need a relational store.

## Decision

We will use MySQL for the orders service.

## Consequences

Ops knows MySQL.
";

const POSTGRES: &str = "# 3. Use PostgreSQL for orders

Date: 2016-03-01

## Status

Accepted

Supersedes [2. Use MySQL for orders](0002-use-mysql-for-orders.md)

## Context

MySQL's JSON support fell short for order line items.

## Decision

We will use PostgreSQL for the orders service, with JSONB line items.

## Consequences

The existing orders move over in one migration.
";

const TEMPLATE: &str = "# NUMBER. TITLE\n\nDate: DATE\n\n## Status\n\nSTATUS\n\n## Context\n\nThe issue.\n\n## Decision\n\nThe change.\n\n## Consequences\n\nWhat becomes easier.\n";

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

/// A checkout (its `.git` is what makes it one): paths are relative to its top.
fn checkout() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    dir
}

fn adr_folder() -> tempfile::TempDir {
    let dir = checkout();
    write(
        dir.path(),
        &[
            ("doc/adr/0001-record-architecture-decisions.md", FIRST),
            ("doc/adr/0002-use-mysql-for-orders.md", MYSQL),
            ("doc/adr/0003-use-postgresql-for-orders.md", POSTGRES),
            (
                "doc/adr/README.md",
                "# Decisions\n\n* [1. Record architecture decisions](0001-record-architecture-decisions.md)\n",
            ),
            ("doc/adr/templates/template.md", TEMPLATE),
        ],
    );
    dir
}

fn ingest(m: &crate::common::Memory, path: &Path) -> IngestReport {
    m.service.ingest().files(&[path.to_path_buf()], false, &|_, _| {}).unwrap()
}

fn audit_count(m: &crate::common::Memory) -> usize {
    m.service.audit().records(None, None, 100_000).unwrap().len()
}

fn adr_tools_records_become_decisions_and_a_second_run_writes_nothing(db: &TestDb) {
    let m = memory(db, "main");
    let dir = adr_folder();
    let report = ingest(&m, &dir.path().join("doc"));
    let decisions = &report.kinds["decision"];
    assert_eq!((decisions.inserted, decisions.refused), (3, 0), "{report:?}");
    assert_eq!(decisions.statuses, BTreeMap::from([("accepted".into(), 2), ("superseded".into(), 1)]));
    let mut passed: Vec<(&str, &str)> =
        report.passed_over.iter().map(|p| (p.path.as_str(), p.reason.as_str())).collect();
    passed.sort();
    assert_eq!(passed, [("doc/adr/README.md", "index"), ("doc/adr/templates/template.md", "template")]);
    assert_eq!(
        report.superseded,
        [(
            "doc/adr/0003-use-postgresql-for-orders.md".to_string(),
            "doc/adr/0002-use-mysql-for-orders.md".to_string()
        )]
    );

    let items = ingested(db);
    assert_eq!(items.len(), 3, "{:?}", items.keys());
    let first = &items["doc/adr/0001-record-architecture-decisions.md"].record;
    assert_eq!(first.title, "Record architecture decisions");
    assert_eq!(first.data["status"], "accepted");
    assert_eq!(first.metadata.as_ref().unwrap()["date"], "2016-02-12");
    let mysql = &items["doc/adr/0002-use-mysql-for-orders.md"];
    let postgres = &items["doc/adr/0003-use-postgresql-for-orders.md"];
    assert_eq!(mysql.superseded_by, Some(postgres.record.id), "\"Superseded by\" is a real supersede");

    let hits = m.find(json!({"query": "which database for orders line items", "types": ["decision"]}));
    assert_eq!(hits.hits.first().map(|h| h.id), Some(postgres.record.id), "{:?}", hits.hits);

    let before = audit_count(&m);
    let again = ingest(&m, &dir.path().join("doc"));
    let decisions = &again.kinds["decision"];
    assert_eq!((decisions.inserted, decisions.updated, decisions.unchanged, decisions.deleted), (0, 0, 3, 0));
    assert!(again.superseded.is_empty() && again.unlinked.is_empty(), "{again:?}");
    assert_eq!(audit_count(&m), before, "an unchanged file writes nothing, not even an audit record");

    // A removed file's item goes; so does nothing else.
    std::fs::remove_file(dir.path().join("doc/adr/0001-record-architecture-decisions.md")).unwrap();
    let removed = ingest(&m, &dir.path().join("doc"));
    assert_eq!((removed.kinds["decision"].deleted, removed.kinds["decision"].unchanged), (1, 2));
    let items = ingested(db);
    assert!(!items.contains_key("doc/adr/0001-record-architecture-decisions.md"), "deleted: no longer live");
    assert_eq!(items.len(), 2);
}

fn an_edited_record_updates_in_place_and_an_accepted_text_edit_is_refused(db: &TestDb) {
    let m = memory(db, "main");
    let dir = adr_folder();
    let adr = dir.path().join("doc/adr");
    ingest(&m, &adr);
    let id = ingested(db)["doc/adr/0001-record-architecture-decisions.md"].record.id;

    // Consequences may change on an accepted decision: the same item is updated.
    let edited = FIRST.replace("See Michael Nygard's article.", "Every change of direction gets a record.");
    std::fs::write(adr.join("0001-record-architecture-decisions.md"), &edited).unwrap();
    let report = ingest(&m, &adr);
    assert_eq!((report.kinds["decision"].updated, report.kinds["decision"].unchanged), (1, 2), "{report:?}");
    let item = &ingested(db)["doc/adr/0001-record-architecture-decisions.md"];
    assert_eq!(item.record.id, id);
    assert!(item.record.data["consequences"].as_str().unwrap().contains("change of direction"));

    // Its context may not: refused for that file, with the way forward.
    let rewritten = edited.replace("We need to record", "We no longer need to record");
    std::fs::write(adr.join("0001-record-architecture-decisions.md"), rewritten).unwrap();
    let report = ingest(&m, &adr);
    assert!(report.any_refused());
    let refusal = &report.refused[0];
    assert_eq!(refusal.path, "doc/adr/0001-record-architecture-decisions.md");
    assert_eq!(refusal.code, "business_rule_blocked");
    assert!(refusal.human_hint.contains("supersedes"), "{}", refusal.human_hint);
    let item = &ingested(db)["doc/adr/0001-record-architecture-decisions.md"];
    assert!(item.record.data["rationale"].as_str().unwrap().contains("We need to record"));

    // A dry run says what would change and writes nothing.
    std::fs::write(
        adr.join("0004-cache-sessions.md"),
        "# 4. Cache sessions\n\n## Status\n\nProposed\n\n## Context\n\nSlow.\n",
    )
    .unwrap();
    let before = audit_count(&m);
    let dry = m.service.ingest().files(std::slice::from_ref(&adr), true, &|_, _| {}).unwrap();
    assert_eq!(dry.kinds["decision"].inserted, 1);
    assert_eq!(audit_count(&m), before);
}

const MADR: &str = "---
status: accepted
date: 2022-08-04
deciders: Oliver Kopp, Olaf Zimmermann
---
# Use Markdown Any Decision Records

## Context and Problem Statement

Which format and structure should decision records follow?

## Considered Options

* MADR 3.0.0
* Formless

## Decision Outcome

Chosen option: \"MADR 3.0.0\", because it is lean.
";

const MADR_OLD: &str = "---
status: superseded by [ADR-0002](0002-use-madr.md)
date: 2021-01-01
---
# Use formless notes

## Context and Problem Statement

We write decisions down somewhere.

## Decision Outcome

Chosen option: \"Formless\".
";

const MADR_TEMPLATE: &str = "---
status: \"{proposed | rejected | accepted | deprecated | … | superseded by [ADR-0005](0005-example.md)}\"
---
# {short title of solved problem and solution}

## Context and Problem Statement

{Describe the context and problem statement}

## Considered Options

* {title of option 1}

## Decision Outcome

Chosen option: \"{title of option 1}\"
";

const CHANGELOG: &str = "# Changelog

All notable changes to this project will be documented in this file.
The format is based on [Keep a Changelog](https://keepachangelog.com/en/1.1.0/).

## [Unreleased]

### Added

- Bulk export.

## [1.1.0] - 2024-05-02

### Added

- Danish translation.

## [1.0.1] - 2024-04-10

### Fixed

- A crash on empty input.

## [1.0.0] - 2024-03-01

### Added

- Everything.

[unreleased]: https://example.com/compare/v1.1.0...HEAD
[1.1.0]: https://example.com/compare/v1.0.1...v1.1.0
";

fn madr_records_a_changelog_and_docs(db: &TestDb) {
    let m = memory(db, "main");
    let dir = checkout();
    write(
        dir.path(),
        &[
            ("docs/decisions/0001-use-formless-notes.md", MADR_OLD),
            ("docs/decisions/0002-use-madr.md", MADR),
            ("docs/decisions/adr-template.md", MADR_TEMPLATE),
            ("docs/decisions/index.md", "# Decision log\n\n- [ADR-0001](0001-use-formless-notes.md)\n"),
            (
                "docs/guide.md",
                "# Guide\n\nHow to work here.\n\n## Install\n\nRun `make install`.\n\n## Release\n\nTag and push.\n",
            ),
            ("CHANGELOG.md", CHANGELOG),
        ],
    );
    let paths = [dir.path().join("docs"), dir.path().join("CHANGELOG.md")];
    let report = m.service.ingest().files(&paths, false, &|_, _| {}).unwrap();
    assert_eq!(report.kinds["decision"].inserted, 2, "{report:?}");
    assert_eq!(report.kinds["release"].inserted, 3, "[Unreleased] is no release");
    assert_eq!(report.kinds["section"].inserted, 4, "the guide's three, and what is unreleased");
    let items = ingested(db);
    let old = &items["docs/decisions/0001-use-formless-notes.md"];
    let new = &items["docs/decisions/0002-use-madr.md"];
    assert_eq!(old.superseded_by, Some(new.record.id), "MADR's superseded-by reference is a supersede");
    assert_eq!(new.record.data["alternatives_considered"], json!(["MADR 3.0.0", "Formless"]));
    assert_eq!(new.record.metadata.as_ref().unwrap()["deciders"], json!(["Oliver Kopp", "Olaf Zimmermann"]));
    assert!(!items.keys().any(|k| k.contains("template") || k.contains("index")), "{:?}", items.keys());

    let release = |v: &str| &items[&format!("CHANGELOG.md#{v}")].record;
    assert_eq!(release("1.1.0").data["released_at"], "2024-05-02");
    assert_eq!(release("1.1.0").data["status"], "released");
    assert_eq!(release("1.0.1").data["release_type"], "patch");
    let unreleased = &items["CHANGELOG.md#unreleased"].record;
    assert_eq!((unreleased.kind, unreleased.title.as_str()), (cortex_domain::Kind::Section, "Unreleased"));
    assert!(unreleased.data["body"].as_str().unwrap().contains("Bulk export"));
    assert_eq!(release("1.1.0").occurred_at, cortex_domain::time::parse_instant("2024-05-02").ok());
    assert!(release("1.0.1").data["notes"].as_str().unwrap().contains("A crash on empty input"));
    let install = &items["docs/guide.md#Guide > Install"].record;
    assert_eq!(
        (install.title.as_str(), install.data["heading"].as_str()),
        ("Install", Some("Guide > Install"))
    );

    let again = m.service.ingest().files(&paths, false, &|_, _| {}).unwrap();
    let total = again.total();
    assert_eq!((total.inserted, total.updated, total.deleted, total.unchanged), (0, 0, 0, 9), "{again:?}");

    // Ingesting the changelog alone leaves the docs' items alone.
    let alone = m.service.ingest().files(&[dir.path().join("CHANGELOG.md")], false, &|_, _| {}).unwrap();
    assert_eq!(alone.total().deleted, 0);
}

fn since(rev: &str) -> Selection {
    Selection { since: Some(rev.into()), ..Selection::default() }
}

fn a_git_history_becomes_one_change_per_commit_and_only_new_ones_later(db: &TestDb) {
    let m = memory(db, "main");
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    git(repo, &["init", "-q", "-b", "main"]);
    commit(repo, "a.txt", "feat(api): add the orders endpoint\n\nOrders are created with POST /orders.");
    commit(repo, "b.txt", "fix: retry on 503");
    git(repo, &["tag", "v1"]);
    commit(repo, "c.txt", "docs: explain retries");

    let report = m.service.ingest().commits(repo, &Selection::default(), false, &|_, _| {}).unwrap();
    assert_eq!(report.kinds["change"].inserted, 3, "{report:?}");
    let items = ingested(db);
    let changes: Vec<&StoredItem> = items.values().collect();
    assert_eq!(changes.len(), 3);
    let feature = changes.iter().find(|c| c.record.data["change_type"] == "feature").unwrap();
    assert!(feature.record.data["summary"].as_str().unwrap().contains("POST /orders"));
    assert_eq!(feature.record.data["author"], "Ann <ann@example.com>");
    let hash = feature.record.data["commit"].as_str().unwrap();
    assert_eq!(hash.len(), 40);
    assert_eq!(feature.record.data["subject_ref"], &hash[..12]);

    let before = audit_count(&m);
    let again = m.service.ingest().commits(repo, &Selection::default(), false, &|_, _| {}).unwrap();
    assert_eq!((again.kinds["change"].inserted, again.kinds["change"].unchanged), (0, 3));
    assert_eq!(audit_count(&m), before, "nothing new on a re-run");

    commit(repo, "d.txt", "perf: cache the price list");
    let since_tag = m.service.ingest().commits(repo, &since("v1"), true, &|_, _| {}).unwrap();
    assert_eq!((since_tag.files, since_tag.kinds["change"].inserted), (2, 1), "{since_tag:?}");
    let later = m.service.ingest().commits(repo, &Selection::default(), false, &|_, _| {}).unwrap();
    assert_eq!((later.kinds["change"].inserted, later.kinds["change"].unchanged), (1, 3));
    let err = m.service.ingest().commits(repo, &since("no-such-ref"), false, &|_, _| {}).unwrap_err();
    assert!(err.to_string().contains("no-such-ref"), "{err}");
}
