//! A Keep a Changelog file as `release` items: one per version heading (`## [1.2.0] -
//! 2024-05-01`), its sections (`### Added`, `### Fixed`, …) as the notes. `[Unreleased]` is
//! in progress, not released; a `[YANKED]` version was rolled back. The release type comes
//! from the version step to the next older release (major, minor, patch, prerelease), or for
//! a version that is not semantic, from its sections as Keep a Changelog reads them
//! (`Removed` is breaking, `Added` a feature).

use super::markdown::{headings, section_text};
use serde_json::{Map, Value, json};

#[derive(Debug, Clone, PartialEq)]
pub struct Release {
    /// As the heading writes it, without brackets (`1.2.0`, `v2.0.0-rc.1`, `Unreleased`).
    pub version: String,
    pub date: Option<String>,
    pub unreleased: bool,
    pub yanked: bool,
    pub release_type: &'static str,
    pub notes: String,
}

/// Whether a level-2 heading is a version heading.
pub fn is_version_heading(heading: &str) -> bool {
    version_heading(heading).is_some()
}

/// Whether the text reads as a changelog: Keep a Changelog named, or a version heading in a
/// file whose name says changelog.
pub fn looks_like_changelog(file_name: &str, text: &str) -> bool {
    let stem = file_name.to_lowercase();
    let named = ["changelog", "changes", "history", "releases", "news"].iter().any(|n| stem.starts_with(n));
    let heads = headings(text);
    let second: Vec<&str> = heads.iter().filter(|h| h.level == 2).map(|h| h.text.as_str()).collect();
    let versions = second.iter().filter(|h| is_version_heading(h)).count();
    // A document that only mentions Keep a Changelog has other chapters than versions.
    versions > 0 && (named || (versions == second.len() && text.to_lowercase().contains("keep a changelog")))
}

/// The releases of a changelog, newest first as the file lists them.
pub fn parse_changelog(text: &str) -> Vec<Release> {
    let heads = headings(text);
    let mut releases: Vec<Release> = Vec::new();
    for (i, heading) in heads.iter().enumerate() {
        if heading.level != 2 {
            continue;
        }
        let Some((version, date, unreleased, yanked)) = version_heading(&heading.text) else { continue };
        let notes = section_text(text, &heads, i)
            .lines()
            .filter(|line| !is_link_definition(line))
            .collect::<Vec<_>>()
            .join("\n")
            .trim()
            .to_string();
        releases.push(Release { version, date, unreleased, yanked, release_type: "", notes });
    }
    // The type is the step from the next older release, known once all are read.
    for i in 0..releases.len() {
        let older = releases[i + 1..].iter().find(|r| !r.unreleased).map(|r| r.version.clone());
        let r = &releases[i];
        let step = release_type(&r.version, older.as_deref(), &r.notes, r.unreleased);
        releases[i].release_type = step;
    }
    releases
}

impl Release {
    /// The `data` of the release item.
    pub fn data(&self) -> Map<String, Value> {
        let status = if self.unreleased {
            "in_progress"
        } else if self.yanked {
            "rolled_back"
        } else {
            "released"
        };
        let mut data = Map::new();
        data.insert("version".into(), json!(self.version));
        data.insert("release_type".into(), json!(self.release_type));
        data.insert("status".into(), json!(status));
        if let Some(date) = &self.date {
            data.insert("released_at".into(), json!(date));
        }
        if !self.notes.is_empty() {
            data.insert("notes".into(), json!(self.notes));
        }
        data
    }
}

/// `(version, date, unreleased, yanked)` of a heading such as `[1.0.0] - 2017-06-20`,
/// `[Unreleased]`, `v1.2.3 (2020-01-01)`, `[0.3.0](https://…) - 2015-12-03 [YANKED]`.
fn version_heading(heading: &str) -> Option<(String, Option<String>, bool, bool)> {
    let yanked = heading.to_uppercase().contains("[YANKED]");
    let text = heading.trim().trim_start_matches('[');
    let end = text.find([']', ' ', '(', '\t']).unwrap_or(text.len());
    let version = text[..end].trim();
    let unreleased = version.eq_ignore_ascii_case("unreleased");
    if !unreleased && !is_version(version) {
        return None;
    }
    let date = find_date(&text[end..]);
    let version = if unreleased { "Unreleased".to_string() } else { version.to_string() };
    Some((version, date, unreleased, yanked))
}

/// `1.2`, `1.2.3`, `v2.0.0-rc.1`: numbers joined by dots (two at least), then a pre-release or
/// build part. Not `1.` or `5b.`, the numbers of a document's chapters.
fn is_version(token: &str) -> bool {
    let token = token.strip_prefix(['v', 'V']).unwrap_or(token);
    let core = token.split(['-', '+']).next().unwrap_or("");
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() >= 2 && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// The first `YYYY-MM-DD` in the text.
fn find_date(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    (0..bytes.len().saturating_sub(9)).find_map(|i| {
        let candidate = text.get(i..i + 10)?;
        let shape = candidate.bytes().enumerate().all(|(j, b)| match j {
            4 | 7 => b == b'-',
            _ => b.is_ascii_digit(),
        });
        let bounded = i == 0 || !bytes[i - 1].is_ascii_digit();
        (shape && bounded && crate::time::parse_instant(candidate).is_ok()).then(|| candidate.to_string())
    })
}

/// `[1.0.0]: https://…`, the link definitions at a changelog's end.
fn is_link_definition(line: &str) -> bool {
    let line = line.trim();
    line.starts_with('[')
        && line.split_once("]:").is_some_and(|(label, _)| !label.contains(' ') || label.len() < 40)
}

fn semver(version: &str) -> Option<(u64, u64, u64, bool)> {
    let version = version.strip_prefix(['v', 'V']).unwrap_or(version);
    let (core, pre) = match version.split_once(['-', '+']) {
        Some((core, rest)) => (core, version.as_bytes()[core.len()] == b'-' && !rest.is_empty()),
        None => (version, false),
    };
    let mut parts = core.split('.').map(|p| p.parse::<u64>());
    let major = parts.next()?.ok()?;
    let minor = parts.next().transpose().ok()?.unwrap_or(0);
    let patch = parts.next().transpose().ok()?.unwrap_or(0);
    Some((major, minor, patch, pre))
}

fn release_type(version: &str, older: Option<&str>, notes: &str, unreleased: bool) -> &'static str {
    let by_sections = || {
        let lower = notes.to_lowercase();
        if lower.contains("### removed") || lower.contains("breaking") {
            "major"
        } else if lower.contains("### added") {
            "minor"
        } else {
            "patch"
        }
    };
    if unreleased {
        return by_sections();
    }
    let Some((major, minor, patch, pre)) = semver(version) else { return by_sections() };
    if pre {
        return "prerelease";
    }
    match older.and_then(semver) {
        Some((m, _, _, _)) if major != m => "major",
        Some((_, n, _, _)) if minor != n => "minor",
        Some(_) => "patch",
        None if minor == 0 && patch == 0 => "major",
        None if patch == 0 => "minor",
        None => "patch",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keep a Changelog's own example, shortened.
    pub(crate) const KEEP_A_CHANGELOG: &str = "# Changelog

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

    #[test]
    fn one_release_per_version_with_its_date() {
        assert!(looks_like_changelog("CHANGELOG.md", KEEP_A_CHANGELOG));
        let releases = parse_changelog(KEEP_A_CHANGELOG);
        let shown: Vec<(&str, Option<&str>, &str)> =
            releases.iter().map(|r| (r.version.as_str(), r.date.as_deref(), r.release_type)).collect();
        assert_eq!(
            shown,
            [
                ("Unreleased", None, "minor"),
                ("1.1.1", Some("2023-03-05"), "patch"),
                ("1.1.0", Some("2019-02-15"), "minor"),
                ("1.0.0", Some("2017-06-20"), "major"),
                ("0.3.0", Some("2015-12-03"), "minor"),
                ("0.0.1", Some("2014-05-31"), "patch"),
            ]
        );
        assert_eq!(releases[0].data()["status"], "in_progress");
        assert_eq!(releases[1].data()["status"], "released");
        assert_eq!(releases[4].data()["status"], "rolled_back");
        assert_eq!(releases[1].notes, "### Fixed\n\n- Improve French translation.");
        assert!(!releases[5].notes.contains("[0.0.1]:"), "{}", releases[5].notes);
        assert_eq!(releases[1].data()["released_at"], "2023-03-05");
    }

    #[test]
    fn other_heading_shapes() {
        let text = "# Changes\n\n## v2.0.0-rc.1 (2024-01-02)\n\n- new\n\n## 1.4 - 2023-12-01\n\n- old\n\n## Notes\n\nnot a version\n";
        let releases = parse_changelog(text);
        assert_eq!(releases.len(), 2);
        assert_eq!((releases[0].version.as_str(), releases[0].release_type), ("v2.0.0-rc.1", "prerelease"));
        assert_eq!(releases[1].date.as_deref(), Some("2023-12-01"));
        assert!(!looks_like_changelog("README.md", "# Project\n\n## 1.0 features\n"));
        let chapters = "# Architecture\n\nKeep a Changelog files become releases.\n\n## 1. Protocol\n\nx\n\n## 5b. Index\n\ny\n";
        assert!(!looks_like_changelog("ARCHITECTURE.md", chapters));
        assert!(parse_changelog(chapters).is_empty());
        let mentioned = "# Changes\n\nFollows Keep a Changelog.\n\n## [1.0.0] - 2024-01-01\n\n- first\n";
        assert!(looks_like_changelog("RELEASE-NOTES.md", mentioned));
    }
}
