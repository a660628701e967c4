//! The readers on real files of public repositories (`tests/fixtures/ingest`, sources and
//! licences in its README), held to counts and fields read off the files by hand.

use super::*;
use std::collections::BTreeMap;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/ingest");

fn fixture(path: &str) -> String {
    std::fs::read_to_string(format!("{FIXTURES}/{path}")).unwrap()
}

/// What each Markdown file of a fixture folder becomes, by file name.
fn folder(path: &str) -> BTreeMap<String, Result<(Format, Vec<SourceItem>), Skip>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(format!("{FIXTURES}/{path}")).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".md") {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).unwrap();
        let relative = format!("{path}/{name}");
        out.insert(name, read_file(&relative, &text, "web", in_decision_folder(&relative)));
    }
    out
}

fn decisions(
    files: &BTreeMap<String, Result<(Format, Vec<SourceItem>), Skip>>,
) -> BTreeMap<&str, &SourceItem> {
    files
        .iter()
        .filter_map(|(name, r)| match r {
            Ok((Format::Decision, items)) => Some((name.as_str(), &items[0])),
            _ => None,
        })
        .collect()
}

fn statuses(decisions: &BTreeMap<&str, &SourceItem>) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for d in decisions.values() {
        *out.entry(d.data["status"].as_str().unwrap().to_string()).or_default() += 1;
    }
    out
}

fn counts(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[test]
fn madr_4_records_with_front_matter_and_no_status() {
    let files = folder("adr+madr/docs/decisions");
    let d = decisions(&files);
    assert_eq!(d.len(), 19, "0000 to 0018: {:?}", files.keys());
    assert_eq!(files["adr-template.md"], Err(Skip::Template));
    assert_eq!(files["index.md"], Err(Skip::Index));
    // Only 0003 writes a status (`status: on hold`): none is in force.
    assert_eq!(statuses(&d), counts(&[("proposed", 19)]));
    let on_hold = d["0003-provide-own-madr-tools.md"];
    assert_eq!(on_hold.metadata["status_as_written"], "on hold");
    assert_eq!(on_hold.data["title"], "Write Own MADR Tooling");
    assert!(
        d["0000-use-markdown-architectural-decision-records.md"].metadata.get("status_as_written").is_none()
    );
    assert_eq!(d["0001-use-CC0-or-MIT-as-license.md"].data["title"], "Dual License the Work");
    let first = d["0000-use-markdown-architectural-decision-records.md"];
    assert_eq!(first.data["alternatives_considered"].as_array().unwrap().len(), 5);
    assert!(first.data["rationale"].as_str().unwrap().contains("Chosen option: \"MADR 4.0.0\""));
    assert!(d.values().all(|d| d.links.is_empty()));
}

#[test]
fn madr_records_found_outside_a_decision_folder_by_their_sections() {
    let text = fixture("adr+madr/docs/decisions/0005-use-dashes-in-filenames.md");
    let (format, _) = read_file("0005-use-dashes-in-filenames.md", &text, "web", false).unwrap();
    assert_eq!(format, Format::Decision);
}

#[test]
fn adr_tools_own_records() {
    let files = folder("npryce+adr-tools/doc/adr");
    let d = decisions(&files);
    assert_eq!(d.len(), 9);
    assert_eq!(statuses(&d), counts(&[("accepted", 9)]));
    let iso = d["0008-use-iso-8601-format-for-dates.md"];
    assert_eq!(
        (iso.data["title"].as_str(), iso.metadata["date"].as_str()),
        (Some("Use ISO 8601 Format for Dates"), Some("2017-02-21"))
    );
    assert_eq!(iso.occurred_at, dates::date_ms("2017-02-21"));
}

#[test]
fn log4brains_records_with_dated_names() {
    let files = folder("thomvaill+log4brains/docs/adr");
    let d = decisions(&files);
    assert_eq!(d.len(), 9);
    assert_eq!(
        (&files["README.md"], &files["index.md"], &files["template.md"]),
        (&Err(Skip::Index), &Err(Skip::Index), &Err(Skip::Template))
    );
    assert_eq!(statuses(&d), counts(&[("accepted", 8), ("superseded", 1)]));
    let old = d["20200926-use-the-adr-number-as-its-unique-id.md"];
    assert_eq!(
        old.links,
        [adr::SupersedeLink {
            direction: adr::Direction::SupersededBy,
            target: adr::LinkTarget::Path("20201016-use-the-adr-slug-as-its-unique-id.md".into())
        }]
    );
    assert_eq!(old.metadata["date"], "2020-09-26");

    let edge = folder("thomvaill+log4brains/packages/core/integration-tests/ro-project/docs/adr");
    let d = decisions(&edge);
    assert_eq!(d.len(), 15, "every file but the template: {:?}", edge.keys());
    assert_eq!(statuses(&d), counts(&[("accepted", 5), ("proposed", 8), ("rejected", 1), ("superseded", 1)]));
    assert_eq!(d["20201030-draft-adr.md"].metadata["status_as_written"], "draft");
    let untitled = d["20200102-adr-without-title.md"];
    assert_eq!(
        (untitled.data["title"].as_str(), untitled.metadata["date"].as_str()),
        (Some("adr without title"), Some("2020-01-02"))
    );
    assert_eq!(d["20201028-adr-with-no-metadata.md"].metadata.get("status_as_written"), None);
}

#[test]
fn hand_written_records_with_emoji_statuses() {
    let files = folder("ministryofjustice+modernisation-platform/architecture-decision-record");
    let d = decisions(&files);
    assert_eq!(d.len(), 45);
    assert_eq!(files["README.md"], Err(Skip::Index));
    // Counted off the `## Status` lines: ✅ 35, ❌ 6, ⌛ 2, 🤔 2.
    assert_eq!(
        statuses(&d),
        counts(&[("accepted", 35), ("proposed", 2), ("rejected", 6), ("superseded", 2)])
    );
    let languages = d["0004-use-bash-node-python-as-core-languages.md"];
    assert_eq!(languages.data["title"], "Use bash, nodejs, and python as core languages");
    assert_eq!(
        languages.links,
        [adr::SupersedeLink {
            direction: adr::Direction::SupersededBy,
            target: adr::LinkTarget::Path("0019-use-bash-go-as-core-languages.md".into())
        }]
    );
    assert_eq!(languages.metadata["date"], "2020-11-19");
    assert!(d.values().filter(|d| !d.links.is_empty()).count() == 1);
}

#[test]
fn jabref_records_with_front_matter_statuses_and_supersedes() {
    let files = folder("JabRef+jabref/docs/decisions");
    let d = decisions(&files);
    assert_eq!(d.len(), 70, "0000 to 0069");
    assert_eq!((&files["adr-template.md"], &files["index.md"]), (&Err(Skip::Template), &Err(Skip::Index)));
    assert_eq!(statuses(&d), counts(&[("accepted", 5), ("proposed", 64), ("superseded", 1)]));
    let velocity = d["0039-use-apache-velocity-as-template-engine.md"];
    assert_eq!(velocity.data["title"], "Use Apache Velocity as template engine");
    let positional = d["0057-allow-positional-input-file-argument.md"];
    assert_eq!(
        positional.links,
        [adr::SupersedeLink { direction: adr::Direction::Supersedes, target: adr::LinkTarget::Number(45) }]
    );
    let input = d["0045-use-input-flag-always-for-input-files.md"];
    assert_eq!(input.metadata["status_as_written"], "superseded by ADR-0057");
    assert_eq!(
        input.links,
        [adr::SupersedeLink { direction: adr::Direction::SupersededBy, target: adr::LinkTarget::Number(57) }]
    );
    assert_eq!(d["0049-hardcode-fieldnames.md"].metadata["date"], "2025-09-13");
}

/// A changelog's releases as `(version, date)`, the release items, and the keys of what it
/// has not released.
type Changelog = (Vec<(String, Option<String>)>, Vec<SourceItem>, Vec<String>);

fn changelog(path: &str) -> Changelog {
    let text = fixture(path);
    let (format, items) = read_file(path, &text, "web", false).unwrap();
    assert_eq!(format, Format::Changelog, "{path}");
    let releases: Vec<SourceItem> = items.iter().filter(|i| i.kind == Kind::Release).cloned().collect();
    let shown = releases
        .iter()
        .map(|r| {
            (
                r.data["version"].as_str().unwrap().to_string(),
                r.data.get("released_at").and_then(|d| d.as_str()).map(str::to_string),
            )
        })
        .collect();
    let sections = items.iter().filter(|i| i.kind == Kind::Section).map(|i| i.key.clone()).collect();
    (shown, releases, sections)
}

#[test]
fn keep_a_changelogs_own_changelog() {
    let (shown, releases, sections) = changelog("olivierlacan+keep-a-changelog/CHANGELOG.md");
    assert_eq!(shown.len(), 16, "[2.0.0] to [0.0.1]");
    assert_eq!(shown[0], ("2.0.0".into(), Some("2026-06-07".into())));
    assert_eq!(shown[15], ("0.0.1".into(), Some("2014-05-31".into())));
    assert!(sections.is_empty(), "its Unreleased section is empty");
    assert!(releases.iter().all(|r| r.data["status"] == "released"));
    assert_eq!(
        releases[0].metadata["link"],
        "https://github.com/olivierlacan/keep-a-changelog/compare/v1.1.2...v2.0.0"
    );
    assert!(
        releases.iter().all(|r| !r
            .data
            .get("notes")
            .and_then(|n| n.as_str())
            .unwrap_or("")
            .contains("]: https://"))
    );
    assert_eq!(releases[0].occurred_at, dates::date_ms("2026-06-07"));

    let (shown, _, sections) = changelog("adr+madr/CHANGELOG.md");
    assert_eq!(shown.len(), 19);
    assert_eq!(shown[0], ("4.0.0".into(), Some("2024-09-17".into())));
    assert_eq!(sections, ["unreleased"], "[unreleased] holds a change: a section, not a release");
}

#[test]
fn conventional_changelogs_with_releases_at_three_levels() {
    let (shown, releases, _) = changelog("conventional-changelog+standard-version/CHANGELOG.md");
    assert_eq!(shown.len(), 37, "14 under #, 16 under ##, 7 under ###");
    assert_eq!(shown[0], ("9.5.0".into(), Some("2022-05-15".into())));
    let patch = releases.iter().find(|r| r.data["version"] == "9.3.2").unwrap();
    assert_eq!(patch.data["release_type"], "patch");
    assert!(patch.data["notes"].as_str().unwrap().starts_with("### Bug Fixes"));
    let minor = releases.iter().find(|r| r.data["version"] == "9.4.0").unwrap();
    assert!(
        !minor.data["notes"].as_str().unwrap().contains("9.3.2"),
        "a patch a level down is its own release"
    );

    let (shown, releases, _) = changelog("googleapis+release-please/CHANGELOG.md");
    assert_eq!(shown.len(), 364, "258 under ##, 106 under ###");
    assert_eq!(shown[0], ("17.11.1".into(), Some("2026-07-31".into())));
    assert!(releases[0].metadata["link"].as_str().unwrap().contains("compare/v17.11.0...v17.11.1"));

    let (shown, _, _) = changelog("thomvaill+log4brains/CHANGELOG.md");
    assert_eq!(shown.len(), 15);
    assert_eq!(shown[1], ("1.0.0".into(), Some("2022-09-22".into())));
}

#[test]
fn plain_setext_month_name_and_restructuredtext_changelogs() {
    let (shown, _, _) = changelog("pre-commit+pre-commit/CHANGELOG.md");
    assert_eq!(shown.len(), 206);
    assert_eq!(shown[0], ("4.6.2".into(), Some("2026-08-10".into())));
    assert_eq!(shown[205], ("0.1.0".into(), Some("2014-06-07".into())));

    let (shown, _, _) = changelog("tokio-rs+tokio/tokio/CHANGELOG.md");
    assert_eq!(shown.len(), 178);
    assert_eq!(shown[0], ("1.53.1".into(), Some("2026-07-20".into())));
    assert_eq!(shown[177], ("0.1.0".into(), Some("2018-02-07".into())));

    let (shown, releases, sections) = changelog("pallets+flask/CHANGES.rst");
    assert_eq!(shown.len(), 62, "63 versions, 3.2.0 unreleased");
    assert_eq!(sections, ["3.2.0"]);
    assert_eq!(shown[0], ("3.1.3".into(), Some("2026-02-18".into())));
    assert!(shown.iter().all(|(_, date)| date.is_some()), "{shown:?}");
    assert!(releases[0].data["notes"].as_str().unwrap().contains("The session is marked as accessed"));
}
