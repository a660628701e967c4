use super::*;
use crate::sources::markdown::headings;

/// Keep a Changelog's own example, shortened.
const KEEP_A_CHANGELOG: &str = "# Changelog

All notable changes to this project will be documented in this file.

The format is based on [Keep a Changelog](https://keepachangelog.com/en/1.1.0/),
and this project adheres to [Semantic Versioning](https://semver.org/spec/v2.0.0.html).

## [Unreleased]

### Added

- v1.1 Brazilian Portuguese translation.

## [1.1.1] - 2023-03-05

### Fixed

- Improve French translation.

## [1.1.0] - 2019-02-15

### Added

- Danish translation.

## [1.0.0] - 2017-06-20

### Removed

- Section about \"changelog\" vs \"CHANGELOG\".

## [0.3.0] - 2015-12-03 [YANKED]

### Added

- RU translation.

## [0.0.1] - 2014-05-31

### Added

- This CHANGELOG file to hopefully serve as an evolving example.

[unreleased]: https://github.com/olivierlacan/keep-a-changelog/compare/v1.1.1...HEAD
[1.1.1]: https://github.com/olivierlacan/keep-a-changelog/compare/v1.1.0...v1.1.1
[0.0.1]: https://github.com/olivierlacan/keep-a-changelog/releases/tag/v0.0.1
";

fn parse(text: &str) -> Vec<Release> {
    parse_changelog(text, &headings(text))
}

#[test]
fn one_release_per_version_with_its_date_and_link() {
    assert!(looks_like_changelog("CHANGELOG.md", &headings(KEEP_A_CHANGELOG), KEEP_A_CHANGELOG));
    let releases = parse(KEEP_A_CHANGELOG);
    let shown: Vec<(&str, Option<&str>, &str, bool)> = releases
        .iter()
        .map(|r| (r.version.as_str(), r.date.as_deref(), r.release_type, r.unreleased))
        .collect();
    assert_eq!(
        shown,
        [
            ("Unreleased", None, "minor", true),
            ("1.1.1", Some("2023-03-05"), "patch", false),
            ("1.1.0", Some("2019-02-15"), "minor", false),
            ("1.0.0", Some("2017-06-20"), "major", false),
            ("0.3.0", Some("2015-12-03"), "minor", false),
            ("0.0.1", Some("2014-05-31"), "patch", false),
        ]
    );
    assert_eq!(releases[1].data()["status"], "released");
    assert_eq!(releases[4].data()["status"], "rolled_back");
    assert_eq!(releases[1].notes, "### Fixed\n\n- Improve French translation.");
    assert!(!releases[5].notes.contains("[0.0.1]:"), "{}", releases[5].notes);
    assert_eq!(releases[1].data()["released_at"], "2023-03-05");
    assert_eq!(
        releases[1].link.as_deref(),
        Some("https://github.com/olivierlacan/keep-a-changelog/compare/v1.1.0...v1.1.1")
    );
    assert_eq!(releases[2].link, None);
}

#[test]
fn other_heading_shapes() {
    let text = "# Changes\n\n## v2.0.0-rc.1 (2024-01-02)\n\n- new\n\n## 1.4 - 2023-12-01\n\n- old\n\n## 2.1.0 - Unreleased\n\n- soon\n\n## Notes\n\nnot a version\n";
    let releases = parse(text);
    assert_eq!(releases.len(), 3);
    assert_eq!((releases[0].version.as_str(), releases[0].release_type), ("v2.0.0-rc.1", "prerelease"));
    assert_eq!(releases[1].date.as_deref(), Some("2023-12-01"));
    assert!(releases[2].unreleased && releases[2].date.is_none());
    assert!(!releases[2].notes.contains("not a version"));
    let readme = "# Project\n\n## 1.0 features\n";
    assert!(!looks_like_changelog("README.md", &headings(readme), readme));
    let chapters = "# Architecture\n\nKeep a Changelog files become releases.\n\n## 1. Protocol\n\nx\n\n## 5b. Index\n\ny\n";
    assert!(!looks_like_changelog("ARCHITECTURE.md", &headings(chapters), chapters));
    assert!(parse(chapters).is_empty());
    let mentioned = "# Changes\n\nFollows Keep a Changelog.\n\n## [1.0.0] - 2024-01-01\n\n- first\n";
    assert!(looks_like_changelog("RELEASE-NOTES.md", &headings(mentioned), mentioned));
}

#[test]
fn patch_releases_a_level_down_end_the_release_above() {
    let text = "# Changelog\n\n## [9.4.0](https://x.test/c) (2021-12-31)\n\n### Features\n\n* a\n\n### [9.3.2](https://x.test/d) (2021-10-17)\n\n### Bug Fixes\n\n* b\n\n# [9.0.0](https://x.test/e) (2020-08-15)\n\n* c\n";
    let releases = parse(text);
    let versions: Vec<&str> = releases.iter().map(|r| r.version.as_str()).collect();
    assert_eq!(versions, ["9.4.0", "9.3.2", "9.0.0"]);
    assert_eq!(releases[0].notes, "### Features\n\n* a");
    assert_eq!(releases[1].notes, "### Bug Fixes\n\n* b");
    assert_eq!(releases[0].link.as_deref(), Some("https://x.test/c"));
    assert_eq!(releases[1].release_type, "minor", "9.3.2 after 9.0.0");
}
