//! A changelog as projects write it, one `release` per version: Keep a Changelog
//! (`## [1.2.0] - 2024-05-01`, link references, `[YANKED]`), conventional-changelog,
//! standard-version and release-please output (`## [1.2.3](compare link) (2024-01-01)` with
//! `### Bug Fixes`, patch releases a level down), plain `## v1.2.0 - date` and
//! `# 1.2.0 (July 20th, 2026)` headings, setext headings, and a reStructuredText
//! `CHANGES.rst` (`Version 3.1.3` underlined, `Released 2026-02-18`).
//!
//! A release's notes run to the next version heading at any level. What is not released yet
//! (`[Unreleased]`, `2.0.0 - Unreleased`, `(unreleased)`, an rST `Unreleased` line) is no
//! release: it is read as a section of the changelog. The release type comes from the
//! version step to the next older release (major, minor, patch, prerelease), or for a
//! version that is not semantic, from its sections as Keep a Changelog reads them
//! (`Removed` is breaking, `Added` a feature).

use super::dates::find_date;
use super::markdown::{Heading, link_targets, reference_links};
use serde_json::{Map, Value, json};

#[derive(Debug, Clone, PartialEq)]
pub struct Release {
    /// As the heading writes it, without brackets (`1.2.0`, `v2.0.0-rc.1`, `Unreleased`).
    pub version: String,
    /// `YYYY-MM-DD`.
    pub date: Option<String>,
    pub unreleased: bool,
    pub yanked: bool,
    pub release_type: &'static str,
    pub notes: String,
    /// The heading's link, or the link reference named by the version (a compare view or a
    /// tag's page).
    pub link: Option<String>,
}

/// What a heading says when it is a version's.
struct VersionHeading {
    version: String,
    rest: String,
    unreleased: bool,
}

/// `[1.0.0] - 2017-06-20`, `[Unreleased]`, `v1.2.3 (2020-01-01)`, `Version 3.1.3`,
/// `[0.3.0](https://…) - 2015-12-03 [YANKED]`, `2.0.0 - Unreleased`.
fn version_heading(heading: &str) -> Option<VersionHeading> {
    let mut text = heading.trim().trim_start_matches('[').trim_start();
    for prefix in ["version ", "release "] {
        if text.len() > prefix.len()
            && text.is_char_boundary(prefix.len())
            && text[..prefix.len()].eq_ignore_ascii_case(prefix)
        {
            text = text[prefix.len()..].trim_start();
        }
    }
    let end = text.find([']', ' ', '(', '\t']).unwrap_or(text.len());
    let token = text[..end].trim_end_matches([':', ',']);
    let rest = text[end..].to_string();
    let lower_rest = rest.to_lowercase();
    let pending = ["unreleased", "not released", "tbd", "tba", "upcoming", "in development"]
        .iter()
        .any(|w| lower_rest.contains(w));
    if token.eq_ignore_ascii_case("unreleased") {
        return Some(VersionHeading { version: "Unreleased".into(), rest, unreleased: true });
    }
    is_version(token).then(|| VersionHeading { version: token.to_string(), rest, unreleased: pending })
}

/// Whether a heading is a version heading.
pub fn is_version_heading(heading: &str) -> bool {
    version_heading(heading).is_some()
}

/// `1.2`, `1.2.3`, `v2.0.0-rc.1`: numbers joined by dots (two at least), then a pre-release or
/// build part. Not `1.` or `5b.`, the numbers of a document's chapters.
fn is_version(token: &str) -> bool {
    let token = token.strip_prefix(['v', 'V']).unwrap_or(token);
    let core = token.split(['-', '+']).next().unwrap_or("");
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() >= 2 && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether a file reads as a changelog: named like one (`CHANGELOG`, `CHANGES`, `HISTORY`,
/// `RELEASES`, `NEWS`, `RELEASE-NOTES`) with a version heading, or naming Keep a Changelog with
/// version headings for most of its sections.
pub fn looks_like_changelog(file_name: &str, heads: &[Heading], text: &str) -> bool {
    let stem = file_name.to_lowercase();
    let named = ["changelog", "changes", "history", "releases", "news", "release-notes", "release_notes"]
        .iter()
        .any(|n| stem.starts_with(n));
    let versions = heads.iter().filter(|h| is_version_heading(&h.text)).count();
    let Some(level) = heads.iter().filter(|h| is_version_heading(&h.text)).map(|h| h.level).min() else {
        return false;
    };
    // A document that only mentions Keep a Changelog has other chapters than versions.
    let at_level = heads.iter().filter(|h| h.level == level).count();
    named || (versions * 2 > at_level && text.to_lowercase().contains("keep a changelog"))
}

/// The releases of a changelog (and what is not released yet), in the file's order.
pub fn parse_changelog(text: &str, heads: &[Heading]) -> Vec<Release> {
    let references = reference_links(text);
    let is_definition = |line: &str| {
        let line = line.trim_start();
        references.iter().any(|(label, _, _)| {
            line.get(1..label.len() + 1).is_some_and(|l| l.eq_ignore_ascii_case(label))
                && line.starts_with('[')
                && line[label.len() + 1..].starts_with("]:")
        })
    };
    // Releases live at this level (and below, for patch releases one level down): another
    // chapter there ends the last release's notes.
    let top = heads.iter().filter(|h| is_version_heading(&h.text)).map(|h| h.level).min().unwrap_or(1);
    let mut releases: Vec<Release> = Vec::new();
    for (i, heading) in heads.iter().enumerate() {
        let Some(v) = version_heading(&heading.text) else { continue };
        let end = heads[i + 1..]
            .iter()
            .find(|h| is_version_heading(&h.text) || h.level <= top || h.level < heading.level)
            .map_or(text.len(), |h| h.start);
        let notes = text
            .get(heading.body_start..end)
            .unwrap_or("")
            .lines()
            .filter(|line| !is_definition(line))
            .collect::<Vec<_>>()
            .join("\n")
            .trim()
            .to_string();
        let first_line = notes.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim().to_lowercase();
        let unreleased = v.unreleased || first_line.starts_with("unreleased");
        let date = find_date(&v.rest).or_else(|| {
            (first_line.starts_with("released") || first_line.starts_with("release date"))
                .then(|| find_date(&first_line))
                .flatten()
        });
        let link = link_targets(text.get(heading.start..heading.body_start).unwrap_or(""))
            .into_iter()
            .next()
            .or_else(|| {
                let wanted = v.version.to_lowercase();
                references
                    .iter()
                    .find(|(label, _, _)| *label == wanted || label.strip_prefix('v') == Some(&wanted))
                    .map(|(_, dest, _)| dest.clone())
            });
        releases.push(Release {
            yanked: v.rest.to_uppercase().contains("YANKED"),
            version: v.version,
            date: if unreleased { None } else { date },
            unreleased,
            release_type: "",
            notes,
            link,
        });
    }
    // The type is the step from the next older release, known once all are read.
    for i in 0..releases.len() {
        let older = releases[i + 1..].iter().find(|r| !r.unreleased).map(|r| r.version.clone());
        let r = &releases[i];
        releases[i].release_type = release_type(&r.version, older.as_deref(), &r.notes, r.unreleased);
    }
    releases
}

impl Release {
    /// The `data` of the release item.
    pub fn data(&self) -> Map<String, Value> {
        let status = if self.yanked { "rolled_back" } else { "released" };
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

    /// What the kind has no field for: the release's link.
    pub fn metadata(&self) -> Map<String, Value> {
        let mut meta = Map::new();
        if let Some(link) = &self.link {
            meta.insert("link".into(), json!(crate::text::truncate_chars(link, 512).0));
        }
        meta
    }

    /// When it was released (epoch ms).
    pub fn occurred_at(&self) -> Option<i64> {
        self.date.as_deref().and_then(super::dates::date_ms)
    }
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
mod tests;
