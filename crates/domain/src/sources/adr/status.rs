//! A decision record's status and its supersede links, wherever a team writes them: a
//! `status:` in the front matter, a `Status: x` line (`* Status:`, `**Status:**`, a badge whose
//! text says it), a `## Status` section's first line or a `| Status | x |` table row; with an
//! emoji or in bold (`✅ Accepted`, `**Rejected**`). Links: "Supersedes …", "Superseded by …"
//! (and "⌛️ Superseded [0019](…)" in a superseded status), `superseded-by:` / `supersedes:`
//! front matter keys; each target a file or an ADR number.

use super::super::markdown::{FrontValue, link_targets, plain};

/// Which way a supersede link points from the record that holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// This record replaces the target.
    Supersedes,
    /// The target replaces this record.
    SupersededBy,
}

/// The record a link names: a file relative to the record's folder, or an ADR number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkTarget {
    Path(String),
    Number(u32),
}

/// As a person names it in `cortex ingest`'s report: the file, or the record's number.
impl std::fmt::Display for LinkTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinkTarget::Path(path) => f.write_str(path),
            LinkTarget::Number(n) => write!(f, "decision record {n}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SupersedeLink {
    pub direction: Direction,
    pub target: LinkTarget,
}

/// Our decision status for a status as records write it ("Accepted", "✅ Accepted",
/// "superseded by ADR-7", "accepted; supersedes ADR-45", "On hold", "Draft"). Anything
/// unknown, or no status at all, is `proposed`: not in force.
pub fn decision_status(written: &str) -> &'static str {
    let lower = plain(written).to_lowercase();
    let first = lower.split(|c: char| !c.is_alphanumeric() && c != '-').find(|w| !w.is_empty()).unwrap_or("");
    match first {
        "superseded" | "replaced" | "superceded" => "superseded",
        "accepted" | "approved" | "adopted" | "agreed" | "decided" | "done" | "implemented" | "enforced"
        | "active" | "final" => "accepted",
        "rejected" | "declined" | "refused" | "withdrawn" => "rejected",
        "deprecated" | "obsolete" | "retired" | "abandoned" => "deprecated",
        _ => "proposed",
    }
}

/// The status text of a `Key: value` line (`Status: x`, `* Status: x`, `**Status:** x`,
/// `- **Status**: x`, a badge `![Status: x](…)`), when the line names `field`.
/// The value is the line's Markdown after the colon, so the links in it stay (a badge's,
/// whose colon is in its text, gives its text).
pub fn field_line(line: &str, field: &str) -> Option<String> {
    let text = plain(line);
    let (key, value) = text.split_once(':')?;
    let key = key.trim().trim_start_matches(|c: char| !c.is_alphanumeric());
    if !key.eq_ignore_ascii_case(field) || value.trim().is_empty() {
        return None;
    }
    let raw = line.split_once(':').map(|(_, rest)| rest.trim_start_matches(['*', '_', ' ']).trim());
    Some(match raw {
        Some(raw) if plain(raw) == value.trim() => raw.to_string(),
        _ => value.trim().to_string(),
    })
}

/// The supersede links a status names: "superseded by X", "supersedes X" anywhere in it, and
/// the targets of a status that is itself "superseded" ("⌛️ Superseded [0019](…)").
pub fn status_links(status: &str) -> Vec<SupersedeLink> {
    let mut links = phrase_links(status, true);
    if links.is_empty() && decision_status(status) == "superseded" {
        let lower = status.to_lowercase();
        let after = lower.find("supersede").or_else(|| lower.find("replaced")).map_or(0, |at| at + 9);
        links.extend(
            targets(status.get(after..).unwrap_or(""))
                .into_iter()
                .map(|target| SupersedeLink { direction: Direction::SupersededBy, target }),
        );
    }
    links
}

/// The links of front matter keys that name them (`superseded-by`, `supersedes`, …).
pub fn front_matter_links(front: &[(String, FrontValue)]) -> Vec<SupersedeLink> {
    let mut links = Vec::new();
    for (key, value) in front {
        let key = key.replace(['-', '_', ' '], "");
        let direction = match key.as_str() {
            "supersededby" | "replacedby" => Direction::SupersededBy,
            "supersedes" | "replaces" => Direction::Supersedes,
            _ => continue,
        };
        let values = match value {
            FrontValue::List(items) => items.clone(),
            FrontValue::Text(text) => vec![text.clone()],
        };
        for value in values {
            links.extend(targets(&value).into_iter().map(|target| SupersedeLink { direction, target }));
        }
    }
    links
}

/// "Supersedes …" and "Superseded by …" lines of a record's text (a status section, a links
/// section, a line of the preamble): each line that starts with the phrase.
pub fn line_links(text: &str) -> Vec<SupersedeLink> {
    text.lines().flat_map(|line| phrase_links(line, false)).collect()
}

/// The links of the phrases in `text`: anywhere in it (`anywhere`), or only at its start.
fn phrase_links(text: &str, anywhere: bool) -> Vec<SupersedeLink> {
    let lower = text.to_lowercase();
    let bare = plain(&lower);
    let bare = bare.trim_start_matches(|c: char| !c.is_alphanumeric());
    let bare = bare.strip_prefix("status:").map(str::trim_start).unwrap_or(bare);
    if !anywhere
        && !["supersedes", "superseded by", "replaces", "replaced by", "superseeds"]
            .iter()
            .any(|p| bare.starts_with(p))
    {
        return Vec::new();
    }
    let mut links = Vec::new();
    let mut from = 0;
    while let Some((at, len, direction)) = next_phrase(&lower[from..]) {
        let start = from + at + len;
        let end = next_phrase(&lower[start..]).map_or(text.len(), |(next, _, _)| start + next);
        let rest = text.get(start..end).unwrap_or("");
        // "supersedes" names one record: a list of several ("supersedes 3, 4") names each.
        links.extend(targets(rest).into_iter().map(|target| SupersedeLink { direction, target }));
        from = end;
        if !anywhere {
            break;
        }
    }
    links.dedup();
    links
}

/// The next supersede phrase in `lower`: (offset, length, direction).
fn next_phrase(lower: &str) -> Option<(usize, usize, Direction)> {
    [
        ("superseded by", Direction::SupersededBy),
        ("replaced by", Direction::SupersededBy),
        ("supersedes", Direction::Supersedes),
        ("superseeds", Direction::Supersedes),
        ("replaces", Direction::Supersedes),
    ]
    .iter()
    .filter_map(|(phrase, direction)| lower.find(phrase).map(|at| (at, phrase.len(), *direction)))
    .min_by_key(|(at, _, _)| *at)
}

/// The records a text after a phrase names: its links (files, not web pages), or else its
/// first ADR number (`ADR-0057`, `#12`, `0019`) up to the end of the clause.
fn targets(text: &str) -> Vec<LinkTarget> {
    let clause = text.split([';', '\n']).next().unwrap_or(text);
    let linked: Vec<LinkTarget> = link_targets(text)
        .into_iter()
        .filter(|t| !t.contains("://") && !t.starts_with('#'))
        .map(|t| t.split('#').next().unwrap_or("").to_string())
        .filter(|t| !t.is_empty())
        .map(LinkTarget::Path)
        .collect();
    if !linked.is_empty() {
        return linked;
    }
    let clause = if clause.trim().is_empty() { text } else { clause };
    bare_file(clause)
        .map(LinkTarget::Path)
        .or_else(|| first_number(clause).map(LinkTarget::Number))
        .into_iter()
        .collect()
}

/// A record's file named without a link: `0002-use-x.md`.
fn bare_file(text: &str) -> Option<String> {
    text.split_whitespace()
        .map(|w| w.trim_matches(|c: char| matches!(c, '`' | '"' | '\'' | '(' | ')' | ',')))
        .find(|w| w.ends_with(".md") && !w.contains("://"))
        .map(str::to_string)
}

pub(crate) fn first_number(text: &str) -> Option<u32> {
    let start = text.find(|c: char| c.is_ascii_digit())?;
    let digits: String = text[start..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}
