//! Architecture decision records as `decision` items, recognised by their structure rather
//! than one template: Nygard's (adr-tools and hand-written: `## Status` as a heading, a line,
//! a table row or a badge), MADR 2, 3 and 4 (with or without a front matter, `status` in it or
//! in the body, `Decision Outcome` / `Chosen option`), log4brains, and Y-statements ("In the
//! context of …, facing …, we decided for …").
//!
//! Where each part goes: the title without its number; the status mapped onto the decision
//! statuses, as written kept in metadata (a record with no status is `proposed`, never in
//! force); context, decision drivers, the outcome and the pros and cons into `rationale`
//! (what an accepted decision keeps); consequences, confirmation and the other sections into
//! `consequences` (which may still change); the considered options into
//! `alternatives_considered`; the date and deciders into metadata (the kind has no field for
//! them). Supersede links ([`status`]) become a real supersede, made by the service.

mod status;

pub use status::{Direction, LinkTarget, SupersedeLink, decision_status};

use super::dates::{date_of_file_name, find_date};
use super::markdown::{FrontValue, Heading, front_matter, headings, list_items, own_text, plain, table_rows};
use crate::limits::{MAX_SHORT_TEXT_CHARS, MAX_TITLE_CHARS};
use crate::text::truncate_chars;
use serde_json::{Map, Value, json};
use status::{field_line, first_number, front_matter_links, line_links, status_links};

/// A decision record, read.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionRecord {
    pub title: String,
    /// One of the decision statuses.
    pub status: &'static str,
    /// The status as the file writes it (empty when it writes none).
    pub status_as_written: String,
    /// `YYYY-MM-DD` when the record's date reads as one, else as written.
    pub date: Option<String>,
    pub deciders: Vec<String>,
    /// `component:` in the front matter, when the record names one.
    pub component: Option<String>,
    pub rationale: String,
    pub consequences: Option<String>,
    pub alternatives: Vec<String>,
    pub links: Vec<SupersedeLink>,
}

/// Section names that hold the why: kept by an accepted decision.
const RATIONALE_SECTIONS: &[&str] = &[
    "context",
    "context and problem statement",
    "problem statement",
    "problem",
    "decision drivers",
    "decision",
    "decision outcome",
    "rationale",
];
const OPTION_SECTIONS: &[&str] = &["considered options", "options considered", "alternatives", "options"];
/// MADR's sections: with two of them a text is a record, with or without a status.
const MADR_SECTIONS: &[&str] = &["context and problem statement", "decision outcome", "considered options"];

/// A heading's name as compared: lowercase, without a leading emoji or number and a trailing
/// colon (`📋 Context`, `2. Decision:`).
fn section_name(heading: &str) -> String {
    heading.trim_start_matches(|c: char| !c.is_alphabetic()).trim_end_matches([':', ' ']).to_lowercase()
}

/// Whether the text is a decision record by its form: a status (section, line or front
/// matter) with a context or decision section, two of MADR's sections, or a Y-statement.
pub fn looks_like_decision(text: &str) -> bool {
    let (front, start) = front_matter(text);
    let body = &text[start..];
    let heads = headings(body);
    let names: Vec<String> = heads.iter().map(|h| section_name(&h.text)).collect();
    let has = |wanted: &[&str]| names.iter().any(|n| wanted.contains(&n.as_str()));
    let madr = names.iter().filter(|n| MADR_SECTIONS.contains(&n.as_str())).count() >= 2;
    let status = has(&["status"])
        || front.iter().any(|(k, _)| k == "status")
        || preamble_field(body, &heads, "status").is_some();
    (status && has(&["context", "decision", "context and problem statement", "decision outcome"]))
        || madr
        || y_statement(body).is_some()
}

/// Reads a decision record. `file_name` gives a title when the text has no heading, and a
/// date when the name starts with one (`20201016-…`).
pub fn parse_decision(file_name: &str, text: &str) -> DecisionRecord {
    let (front, start) = front_matter(text);
    let body = &text[start..];
    let heads = headings(body);
    let front_get = |key: &str| front.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    let title_index = heads.iter().position(|h| h.level == 1);
    let title = title_index
        .map(|i| strip_number(&heads[i].text))
        .or_else(|| front_get("title").map(|t| strip_number(&t.as_text())))
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| title_from_file_name(file_name));

    let mut status_text = front_get("status").map(FrontValue::as_text).filter(|s| !s.is_empty());
    let mut date = front_get("date").map(FrontValue::as_text).filter(|d| !d.is_empty());
    let mut deciders = front_get("deciders").or(front_get("decision-makers")).map(FrontValue::as_list);
    status_text = status_text.or_else(|| preamble_field(body, &heads, "status"));
    date = date.or_else(|| preamble_field(body, &heads, "date"));
    if deciders.is_none() {
        deciders = preamble_field(body, &heads, "deciders")
            .or_else(|| preamble_field(body, &heads, "decision-makers"))
            .map(|line| line.split(',').map(|s| s.trim().to_string()).collect());
    }

    let mut rationale = Vec::new();
    let mut consequences = Vec::new();
    let mut alternatives = Vec::new();
    let mut links = Vec::new();
    let mut under_pros_and_cons = false;
    for (i, heading) in heads.iter().enumerate() {
        if Some(i) == title_index {
            continue;
        }
        let name = section_name(&heading.text);
        let own = own_text(body, &heads, i);
        if heading.level <= 2 {
            under_pros_and_cons = name.starts_with("pros and cons");
        }
        match name.as_str() {
            "status" => {
                status_text = status_text.or_else(|| status_of_section(&own));
                links.extend(line_links(&own));
            }
            "date" if date.is_none() => date = Some(plain(&own)),
            name if RATIONALE_SECTIONS.contains(&name) => push_part(&mut rationale, heading, &own),
            name if OPTION_SECTIONS.contains(&name) => {
                alternatives.extend(list_items(&own).into_iter().map(|a| short(&a, MAX_SHORT_TEXT_CHARS)));
                push_part(&mut rationale, heading, &own);
            }
            _ if under_pros_and_cons => push_part(&mut rationale, heading, &own),
            _ => {
                if name.starts_with("link") || name.starts_with("related") {
                    links.extend(line_links(&own));
                }
                push_part(&mut consequences, heading, &own);
            }
        }
    }
    if let Some(y) = y_statement(body).filter(|_| rationale.is_empty()) {
        alternatives.extend(y.neglected);
    }
    if rationale.is_empty() {
        rationale.push(without_title(body, &heads, title_index));
    }
    let mut rationale = rationale.join("\n\n").trim().to_string();
    if rationale.is_empty() {
        rationale = title.clone();
    }
    let status_raw = status_text.unwrap_or_default();
    let mut all_links = status_links(&status_raw);
    all_links.extend(front_matter_links(&front));
    all_links.extend(line_links(preamble(body, &heads)));
    all_links.extend(links);
    all_links.dedup();
    let mut unique: Vec<SupersedeLink> = Vec::new();
    for link in all_links {
        if !unique.contains(&link) {
            unique.push(link);
        }
    }
    let date = date
        .map(|d| plain(&d))
        .filter(|d| !d.is_empty())
        .map(|d| find_date(&d).unwrap_or(d))
        .or_else(|| date_of_file_name(file_name));
    DecisionRecord {
        status: decision_status(&status_raw),
        status_as_written: plain(&status_raw),
        links: unique,
        title,
        date,
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

    /// When the decision was made (epoch ms), when its date reads as one.
    pub fn occurred_at(&self) -> Option<i64> {
        self.date.as_deref().and_then(super::dates::date_ms)
    }
}

/// A `## Status` section's status: its first line, or a `| Status | x |` row.
fn status_of_section(own: &str) -> Option<String> {
    let first = own.lines().map(str::trim).find(|l| !l.is_empty())?;
    if first.starts_with('|') {
        return table_field(own, "status");
    }
    Some(field_line(first, "status").unwrap_or_else(|| first.to_string()))
}

/// The value of a `| Field | value |` row.
fn table_field(text: &str, field: &str) -> Option<String> {
    table_rows(text).into_iter().find_map(|row| {
        let key = row.first()?.trim_start_matches(|c: char| !c.is_alphanumeric()).trim_end_matches(':');
        (key.eq_ignore_ascii_case(field)).then(|| row.get(1).cloned()).flatten().filter(|v| !v.is_empty())
    })
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

/// The text between the title and the first section.
fn preamble<'a>(body: &'a str, heads: &[Heading]) -> &'a str {
    let from = heads.first().filter(|h| h.level == 1).map_or(0, |h| h.body_start);
    let to = heads.iter().find(|h| h.start >= from && h.level >= 2).map_or(body.len(), |h| h.start);
    body.get(from..to).unwrap_or("")
}

/// `Status: x` (also `* Status: x`, `**Status**: x`, a badge, a `| Status | x |` row)
/// between the title and the first section.
fn preamble_field(body: &str, heads: &[Heading], field: &str) -> Option<String> {
    let text = preamble(body, heads);
    text.lines().find_map(|line| field_line(line, field)).or_else(|| table_field(text, field))
}

/// A Y-statement: "In the context of …, facing …, we decided for … (and neglected …), to
/// achieve …, accepting …".
struct YStatement {
    neglected: Vec<String>,
}

fn y_statement(body: &str) -> Option<YStatement> {
    let text = plain(body).to_lowercase();
    let context = text.find("in the context of")?;
    let decided = text[context..].find("we decided")? + context;
    let tail = &text[decided..];
    if !(tail.contains("to achieve")
        || tail.contains("accepting")
        || text[context..decided].contains("facing"))
    {
        return None;
    }
    let plain_body = plain(body);
    let lower = plain_body.to_lowercase();
    let neglected = lower
        .find("and neglected")
        .map(|at| {
            let rest = &plain_body[at + "and neglected".len()..];
            let end = rest.to_lowercase().find("to achieve").unwrap_or(rest.len());
            rest[..end]
                .split([',', ';'])
                .flat_map(|part| part.split(" and "))
                .map(|o| short(o.trim_matches(|c: char| c.is_whitespace() || c == '.'), MAX_SHORT_TEXT_CHARS))
                .filter(|o| !o.is_empty())
                .collect()
        })
        .unwrap_or_default();
    Some(YStatement { neglected })
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
    if rest.len() > 3 && rest.is_char_boundary(3) && rest[..3].eq_ignore_ascii_case("adr") {
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
