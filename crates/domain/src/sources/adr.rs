//! Architecture decision records as `decision` items: adr-tools' Nygard form (`## Status`,
//! `## Context`, `## Decision`, `## Consequences`, a `Date:` line) and MADR (a YAML front
//! matter with `status`, or MADR 2's `* Status:` lines, and its sections).
//!
//! Where each part goes: the title without its number; the status mapped onto the decision
//! statuses; context, decision drivers, the outcome and the pros and cons into `rationale`
//! (what an accepted decision keeps); consequences, confirmation and the other sections into
//! `consequences` (which may still change); the considered options into
//! `alternatives_considered`; the date and deciders into metadata (the kind has no field for
//! them). "Supersedes" and "Superseded by" lines become links the service turns into a real
//! supersede.

use super::markdown::{
    FrontValue, Heading, front_matter, headings, link_targets, list_items, own_text, plain,
};
use crate::limits::{MAX_SHORT_TEXT_CHARS, MAX_TITLE_CHARS};
use crate::text::truncate_chars;
use serde_json::{Map, Value, json};

/// A decision record, read.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionRecord {
    pub title: String,
    /// One of the decision statuses.
    pub status: &'static str,
    /// The status as the file writes it.
    pub status_as_written: String,
    pub date: Option<String>,
    pub deciders: Vec<String>,
    /// `component:` in the front matter, when the record names one.
    pub component: Option<String>,
    pub rationale: String,
    pub consequences: Option<String>,
    pub alternatives: Vec<String>,
    pub links: Vec<SupersedeLink>,
}

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

/// Whether the text is a decision record by its form: a Nygard `## Status` with a context or
/// decision section, or a MADR status (front matter or `* Status:` line) with MADR sections.
pub fn looks_like_decision(text: &str) -> bool {
    let (front, start) = front_matter(text);
    let body = &text[start..];
    let names: Vec<String> = headings(body).iter().map(|h| h.text.to_lowercase()).collect();
    let has = |wanted: &[&str]| names.iter().any(|n| wanted.contains(&n.as_str()));
    let madr_sections = has(&["context and problem statement", "decision outcome", "considered options"]);
    let status_line = preamble_field(body, &headings(body), "status").is_some();
    (has(&["status"]) && has(&["context", "decision", "context and problem statement"]))
        || ((front.iter().any(|(k, _)| k == "status") || status_line) && madr_sections)
}

/// Reads a decision record. `file_name` gives a title when the text has no heading.
pub fn parse_decision(file_name: &str, text: &str) -> DecisionRecord {
    let (front, start) = front_matter(text);
    let body = &text[start..];
    let heads = headings(body);
    let front_get = |key: &str| front.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    let title_index = heads.iter().position(|h| h.level == 1);
    let title = title_index
        .map(|i| strip_number(&plain(&heads[i].text)))
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| title_from_file_name(file_name));

    let mut status_text = front_get("status").map(FrontValue::as_text);
    let mut date = front_get("date").map(FrontValue::as_text);
    let mut deciders = front_get("deciders").or(front_get("decision-makers")).map(FrontValue::as_list);
    if let Some(line) = preamble_field(body, &heads, "status") {
        status_text.get_or_insert(line);
    }
    if let Some(line) = preamble_field(body, &heads, "date") {
        date.get_or_insert(line);
    }
    if let Some(line) = preamble_field(body, &heads, "deciders") {
        deciders.get_or_insert(line.split(',').map(|s| s.trim().to_string()).collect());
    }

    let mut rationale = Vec::new();
    let mut consequences = Vec::new();
    let mut alternatives = Vec::new();
    let mut under_pros_and_cons = false;
    for (i, heading) in heads.iter().enumerate() {
        if Some(i) == title_index {
            continue;
        }
        let name = heading.text.to_lowercase();
        let own = own_text(body, &heads, i);
        if heading.level <= 2 {
            under_pros_and_cons = name.starts_with("pros and cons");
        }
        match name.as_str() {
            "status" => {
                status_text
                    .get_or_insert_with(|| own.lines().find(|l| !l.trim().is_empty()).unwrap_or("").into());
            }
            "context"
            | "context and problem statement"
            | "problem statement"
            | "decision drivers"
            | "decision"
            | "decision outcome" => push_part(&mut rationale, heading, &own),
            "considered options" | "options considered" | "alternatives" => {
                alternatives.extend(list_items(&own).into_iter().map(|a| short(&a, MAX_SHORT_TEXT_CHARS)));
                push_part(&mut rationale, heading, &own);
            }
            _ if under_pros_and_cons => push_part(&mut rationale, heading, &own),
            _ => push_part(&mut consequences, heading, &own),
        }
    }
    if rationale.is_empty() {
        rationale.push(without_title(body, &heads, title_index));
    }
    let mut rationale = rationale.join("\n\n").trim().to_string();
    if rationale.is_empty() {
        rationale = title.clone();
    }
    let status_as_written = plain(status_text.as_deref().unwrap_or("")).trim().to_string();
    DecisionRecord {
        status: decision_status(&status_as_written),
        links: supersede_links(text),
        title,
        status_as_written,
        date: date.map(|d| plain(&d)).filter(|d| !d.is_empty()),
        deciders: deciders.unwrap_or_default().into_iter().filter(|d| !d.is_empty()).collect(),
        component: front_get("component").map(FrontValue::as_text).filter(|c| !c.is_empty()),
        rationale,
        consequences: Some(consequences.join("\n\n")).filter(|c| !c.trim().is_empty()),
        alternatives,
    }
}

impl DecisionRecord {
    /// The `data` of the decision item. `component` is used when the record names none.
    pub fn data(&self, component: &str) -> Map<String, Value> {
        let mut data = Map::new();
        data.insert("component".into(), json!(short(self.component.as_deref().unwrap_or(component), 512)));
        data.insert("status".into(), json!(self.status));
        data.insert("title".into(), json!(self.title));
        data.insert("rationale".into(), json!(self.rationale));
        if !self.alternatives.is_empty() {
            data.insert("alternatives_considered".into(), json!(self.alternatives));
        }
        if let Some(c) = &self.consequences {
            data.insert("consequences".into(), json!(c));
        }
        data
    }

    /// What the kind has no field for: date, deciders, the status as written.
    pub fn metadata(&self) -> Map<String, Value> {
        let mut meta = Map::new();
        if let Some(d) = &self.date {
            meta.insert("date".into(), json!(short(d, 64)));
        }
        if !self.deciders.is_empty() {
            let deciders: Vec<String> = self.deciders.iter().take(32).map(|d| short(d, 128)).collect();
            meta.insert("deciders".into(), json!(deciders));
        }
        if !self.status_as_written.is_empty() {
            meta.insert("status_as_written".into(), json!(short(&self.status_as_written, 256)));
        }
        meta
    }
}

fn push_part(parts: &mut Vec<String>, heading: &Heading, own: &str) {
    if !own.is_empty() {
        parts.push(format!("{} {}\n\n{own}", "#".repeat(heading.level.clamp(2, 6)), heading.text));
    }
}

fn without_title(body: &str, heads: &[Heading], title: Option<usize>) -> String {
    match title {
        Some(i) => format!("{}{}", &body[..heads[i].start], &body[heads[i].body_start..]).trim().to_string(),
        None => body.trim().to_string(),
    }
}

/// `Status: x` (also `* Status: x`, `**Status**: x`) between the title and the first section.
fn preamble_field(body: &str, heads: &[Heading], field: &str) -> Option<String> {
    let from = heads.first().filter(|h| h.level == 1).map_or(0, |h| h.body_start);
    let to = heads.iter().find(|h| h.start >= from && h.level >= 2).map_or(body.len(), |h| h.start);
    body.get(from..to)?.lines().find_map(|line| {
        let line = line.trim().trim_start_matches(['*', '-', '+']).trim().replace("**", "");
        let (key, value) = line.split_once(':')?;
        (key.trim().eq_ignore_ascii_case(field) && !value.trim().is_empty()).then(|| value.trim().to_string())
    })
}

/// Our decision status for a status as records write it ("Accepted", "superseded by ADR-7",
/// "On hold", "Draft"). Anything unknown is `proposed`: not yet in force.
pub fn decision_status(written: &str) -> &'static str {
    let lower = written.trim().trim_start_matches(['*', '_', '-', ' ']).to_lowercase();
    let first = lower.split(|c: char| !c.is_alphanumeric() && c != '-').next().unwrap_or("");
    match first {
        "superseded" | "replaced" => "superseded",
        "accepted" | "approved" | "adopted" | "agreed" | "decided" | "done" | "implemented" => "accepted",
        "rejected" | "declined" | "refused" => "rejected",
        "deprecated" | "obsolete" | "retired" | "abandoned" => "deprecated",
        _ => "proposed",
    }
}

/// Every "Supersedes …" and "Superseded by …" line of the record (status section, front
/// matter, links section), each target a link or an ADR number.
pub fn supersede_links(text: &str) -> Vec<SupersedeLink> {
    let mut links = Vec::new();
    for line in text.lines() {
        let bare = line.trim().trim_start_matches(['*', '-', '+', ' ']).replace("**", "");
        let lower = bare.to_lowercase();
        let lower = lower.strip_prefix("status:").map(str::trim).unwrap_or(&lower);
        let (direction, rest) = if let Some(rest) = lower.strip_prefix("superseded by") {
            (Direction::SupersededBy, rest)
        } else if let Some(rest) = lower.strip_prefix("supersedes") {
            (Direction::Supersedes, rest)
        } else {
            continue;
        };
        let offset = bare.len() - rest.len();
        let rest = bare.get(offset..).unwrap_or(rest);
        let targets = link_targets(rest);
        if targets.is_empty()
            && let Some(n) = first_number(rest)
        {
            links.push(SupersedeLink { direction, target: LinkTarget::Number(n) });
        }
        for target in targets {
            let path = target.split('#').next().unwrap_or("").to_string();
            if !path.is_empty() && !path.contains("://") {
                links.push(SupersedeLink { direction, target: LinkTarget::Path(path) });
            }
        }
    }
    links.dedup();
    links
}

fn first_number(text: &str) -> Option<u32> {
    let start = text.find(|c: char| c.is_ascii_digit())?;
    let digits: String = text[start..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The number of a record from its file name: `0007-use-x.md`, `adr-007-x.md`, `ADR007.md`.
pub fn adr_number(file_name: &str) -> Option<u32> {
    let lower = file_name.to_lowercase();
    let rest = lower.strip_prefix("adr").map(|r| r.trim_start_matches(['-', '_', ' '])).unwrap_or(&lower);
    rest.starts_with(|c: char| c.is_ascii_digit()).then(|| first_number(rest)).flatten()
}

/// A heading without the record's number: "1. Record decisions", "ADR-0002: Use X",
/// "0003 Use Y", "[4] Z" all lose their number.
pub fn strip_number(heading: &str) -> String {
    let mut rest = heading.trim();
    if rest.len() > 3 && rest[..3].eq_ignore_ascii_case("adr") {
        let after = rest[3..].trim_start_matches(['-', '_', ' ', '#']);
        if after.starts_with(|c: char| c.is_ascii_digit()) {
            rest = after;
        }
    }
    let unbracketed = rest.trim_start_matches('[');
    let digits = unbracketed.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 {
        let after =
            unbracketed[digits..].trim_start_matches([']', '.', ':', ')', '-', ' ', '\u{2013}', '\u{2014}']);
        if after.len() < unbracketed[digits..].len() && !after.is_empty() {
            rest = after;
        }
    }
    short(rest.trim(), MAX_TITLE_CHARS)
}

fn title_from_file_name(file_name: &str) -> String {
    let stem = file_name.rsplit_once('.').map_or(file_name, |(s, _)| s);
    strip_number(&stem.replace(['-', '_'], " "))
}

fn short(text: &str, max: usize) -> String {
    truncate_chars(text.trim(), max).0.trim().to_string()
}

#[cfg(test)]
pub(crate) mod tests;
