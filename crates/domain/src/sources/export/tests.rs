use super::read::{ReadError, is_exported, read};
use super::*;
use serde_json::json;

fn item(kind: Kind, n: u128, data: Value) -> ExportItem {
    ExportItem {
        id: Uuid::from_u128(n),
        kind,
        data: data.as_object().cloned().unwrap(),
        content: None,
        tags: Vec::new(),
        metadata: None,
        created_at: 1_700_000_000_000 + n as i64,
        superseded_by: None,
    }
}

fn sample() -> Vec<ExportItem> {
    let mut old = item(
        Kind::Decision,
        1,
        json!({"title": "Use MySQL", "status": "superseded", "component": "db", "rationale": "We need SQL.\n\n### Why\n\nIt is known.",
               "alternatives_considered": ["SQLite", "PostgreSQL"], "consequences": "Ops learn it."}),
    );
    old.superseded_by = Some(Uuid::from_u128(2));
    old.metadata = Some(json!({"date": "2020-01-02", "deciders": ["Ann", "Bo"]}));
    let mut new = item(
        Kind::Decision,
        2,
        json!({"title": "Use ../../etc/passwd PostgreSQL!", "status": "accepted", "component": "db",
               "rationale": "## A heading inside\nkept whole\n\n```\n## in a fence\n```", "supersedes": Uuid::from_u128(1).to_string()}),
    );
    new.tags = vec!["db".into()];
    let mut todo =
        item(Kind::Todo, 3, json!({"title": "  padded title ", "status": "open", "priority": "high"}));
    todo.content = Some("Remember the cache.".into());
    let release = item(
        Kind::Release,
        4,
        json!({"version": "1.2.0", "release_type": "minor", "status": "released", "released_at": "2024-01-31",
               "notes": "### Added\n\n- export"}),
    );
    let unreleased = item(
        Kind::Release,
        5,
        json!({"version": "Unreleased", "release_type": "patch", "status": "in_progress"}),
    );
    let section = item(
        Kind::Section,
        6,
        json!({"title": "Install", "heading": "Guide > Install", "body": "Run it.\r\nTwice."}),
    );
    let mut open_fence = item(Kind::Section, 7, json!({"title": "Open", "body": "```\n## never closed"}));
    open_fence.content = Some("## Content\n\nlooks like a section".into());
    vec![release, old, todo, new, unreleased, section, open_fence]
}

#[test]
fn every_item_reads_back_as_it_was() {
    let items = sample();
    let files = render(&items);
    let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "CHANGELOG.md",
            "decisions/0001-use-mysql.md",
            "decisions/0002-use-etc-passwd-postgresql.md",
            "sections/0001-install.md",
            "sections/0002-open.md",
            "todos/0001-padded-title.md",
        ]
    );
    let mut read_back = Vec::new();
    for file in &files {
        assert!(is_exported(&file.text), "{}", file.path);
        read_back.extend(read(&file.text).unwrap());
    }
    assert_eq!(read_back.len(), items.len());
    for original in &items {
        let got = read_back.iter().find(|r| r.id == original.id).unwrap();
        assert_eq!(
            (got.kind, &got.data, &got.content, &got.tags),
            (original.kind, &original.data, &original.content, &original.tags)
        );
    }
    let old = read_back.iter().find(|r| r.id == Uuid::from_u128(1)).unwrap();
    assert_eq!(old.superseded_by.as_deref(), Some("0002-use-etc-passwd-postgresql.md"));
    assert_eq!(render(&items), files, "the same items give the same bytes");
}

#[test]
fn a_decision_is_madr_and_the_releases_a_changelog() {
    let files = render(&sample());
    let old = &files[1].text;
    assert!(
        old.starts_with("---\ncortex_id: 00000000-0000-0000-0000-000000000001\nkind: decision\n"),
        "{old}"
    );
    for line in [
        "status: \"superseded\"",
        "date: \"2020-01-02\"",
        "deciders: [\"Ann\",\"Bo\"]",
        "# Use MySQL",
        "## Context and Decision",
        "## Considered Options\n\n- SQLite\n- PostgreSQL",
        "## Consequences\n\nOps learn it.",
    ] {
        assert!(old.contains(line), "{line} in {old}");
    }
    let changelog = &files[0].text;
    let newest = changelog.find("## [Unreleased]").unwrap();
    assert!(newest < changelog.find("## [1.2.0] - 2024-01-31").unwrap(), "{changelog}");
    assert!(changelog.contains("### Added\n\n- export"));
}

#[test]
fn an_edited_file_reads_as_edited() {
    let files = render(&sample());
    let edited = files[1].text.replace("Ops learn it.", "Ops learn it well.").replace("- SQLite\n", "");
    let got = &read(&edited).unwrap()[0];
    assert_eq!(got.data["consequences"], "Ops learn it well.");
    assert_eq!(got.data["alternatives_considered"], json!(["PostgreSQL"]));
    let plain =
        "---\ncortex_id: 00000000-0000-0000-0000-000000000009\nkind: todo\nstatus: done\n---\n\n# Ship\n";
    let got = &read(plain).unwrap()[0];
    assert_eq!(got.data, json!({"status": "done", "title": "Ship"}).as_object().cloned().unwrap());
}

#[test]
fn a_broken_file_says_what_to_fix() {
    let bad_id = "---\ncortex_id: 12\nkind: todo\n---\n# x\n";
    assert_eq!(
        read(bad_id).unwrap_err().to_string(),
        "the front matter: `cortex_id` must be the item's id as exported (a UUID), not \"12\""
    );
    let bad_kind = "---\ncortex_id: 00000000-0000-0000-0000-000000000009\nkind: nope\n---\n";
    let e = read(bad_kind).unwrap_err();
    assert_eq!(e, ReadError::UnknownKind("nope".into()));
    assert!(e.to_string().starts_with("the front matter's `kind: nope` is not a kind: one of "), "{e}");
    let hand_added = "# Changelog\n\n## [2.0.0]\n\n- more\n\n<!-- cortex: {} -->\n";
    assert_eq!(
        read(hand_added).unwrap_err().to_string(),
        "the version `## [2.0.0]` has no `<!-- cortex: {…} -->` line under it: a release is added to the \
         memory with memory_store, not in an exported changelog"
    );
    let not_object = "# Changelog\n\n## [2.0.0]\n\n<!-- cortex: [1] -->\n";
    assert_eq!(read(not_object).unwrap_err(), ReadError::CommentNotObject("[2.0.0]".into()));
    assert!(!is_exported("# Guide\n\n## Install\n"));
}

#[test]
fn slugs_are_safe_file_names() {
    assert_eq!(slug("../../etc/passwd"), "etc-passwd");
    assert_eq!(slug("Ünïcode — only"), "n-code-only");
    assert_eq!(slug("///"), "item");
    assert!(slug(&"a".repeat(200)).len() <= 60);
    assert_eq!(folder(Kind::Entity), "entities");
    assert_eq!(folder(Kind::Decision), "decisions");
}
