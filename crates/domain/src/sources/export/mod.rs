//! The memory as a folder of Markdown files (`cortex export --markdown`), and those files
//! read back (`cortex ingest`) into the items they show.
//!
//! Every item is written with its id (`cortex_id`), so reading a file back names the item it
//! came from, whoever stored it: unchanged files change nothing, an edited file updates its
//! item in place. A file must give back exactly the item it was written from, so each
//! field is written where it reads back whole: the title as the `#` heading, free texts as
//! `##` sections (their own headings nested beneath, see [`nesting`]) and short lists as
//! bullets when they survive that, everything else (and any text that would not) as a JSON
//! value in the front matter, which YAML reads too.
//!
//! - decisions: `decisions/NNNN-slug.md` in MADR form (`status`, `date`, `deciders` in the
//!   front matter; `superseded_by` naming the replacing record's file)
//! - releases: one Keep a Changelog `CHANGELOG.md`, newest first, each version's other fields
//!   in a `<!-- cortex: {…} -->` comment under its heading
//! - every other kind: `<kind>s/NNNN-slug.md`, as a decision without MADR's extras
//!
//! `NNNN` counts each folder's items in the order they were stored.
//! - [`read`]: an exported file read back

mod nesting;
pub mod read;
#[cfg(test)]
mod tests;

use crate::kind::{FieldType, Kind, TitleRule};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fmt::Write as _;
use uuid::Uuid;

/// The front matter key that marks an exported file and names its item.
pub const ID_KEY: &str = "cortex_id";
/// The comment that carries a release's fields in the exported changelog.
pub const COMMENT_START: &str = "<!-- cortex: ";
const COMMENT_END: &str = " -->";
/// The section of an item's free `content` (besides its `data`).
const CONTENT_LABEL: &str = "Content";

/// One item to export, as the store holds it.
#[derive(Debug, Clone)]
pub struct ExportItem {
    pub id: Uuid,
    pub kind: Kind,
    pub data: Map<String, Value>,
    pub content: Option<String>,
    pub tags: Vec<String>,
    pub metadata: Option<Value>,
    /// Unix milliseconds: orders the files and dates a decision.
    pub created_at: i64,
    pub superseded_by: Option<Uuid>,
}

/// One file of the export: its path under the folder (`/`-separated) and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportFile {
    pub path: String,
    pub text: String,
}

/// The files of `items`, sorted by path: the same items always give the same bytes.
pub fn render(items: &[ExportItem]) -> Vec<ExportFile> {
    let mut items: Vec<&ExportItem> = items.iter().collect();
    items.sort_by_key(|i| (i.created_at, i.id));
    let mut numbered: HashMap<Uuid, String> = HashMap::new();
    let mut counters: HashMap<Kind, usize> = HashMap::new();
    for item in items.iter().filter(|i| i.kind != Kind::Release) {
        let n = counters.entry(item.kind).or_default();
        *n += 1;
        let title = crate::kind::title_from_data(item.kind, &item.data)
            .or_else(|| item.content.as_deref().map(|c| crate::text::first_line(c, 80)))
            .unwrap_or_default();
        numbered.insert(item.id, format!("{:04}-{}.md", n, slug(&title)));
    }
    let mut files: Vec<ExportFile> = items
        .iter()
        .filter(|i| i.kind != Kind::Release)
        .map(|item| {
            let superseded_by = item.superseded_by.and_then(|by| numbered.get(&by).map(String::as_str));
            ExportFile {
                path: format!("{}/{}", folder(item.kind), numbered[&item.id]),
                text: item_file(item, superseded_by),
            }
        })
        .collect();
    let releases: Vec<&ExportItem> =
        items.iter().rev().copied().filter(|i| i.kind == Kind::Release).collect();
    if !releases.is_empty() {
        files.push(ExportFile { path: "CHANGELOG.md".into(), text: changelog(&releases) });
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files
}

/// The folder of a kind's files: its name in the plural.
pub fn folder(kind: Kind) -> String {
    let name = kind.as_str();
    match name.strip_suffix('y') {
        Some(stem) => format!("{stem}ies"),
        None => format!("{name}s"),
    }
}

/// A file name from a title: lowercase ASCII letters and digits joined by `-`, at most 60
/// characters; nothing else, so no title can name a path outside the folder.
pub fn slug(title: &str) -> String {
    let mut out = String::new();
    for c in title.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
        if out.len() >= 60 {
            break;
        }
    }
    let out = out.trim_end_matches('-');
    if out.is_empty() { "item".into() } else { out.to_string() }
}

/// The heading a `Text` or list field's section has.
pub(crate) fn label(kind: Kind, field: &str) -> String {
    match (kind, field) {
        (Kind::Decision, "rationale") => "Context and Decision".into(),
        (Kind::Decision, "alternatives_considered") => "Considered Options".into(),
        _ => {
            let mut label = field.replace('_', " ");
            if let Some(first) = label.get_mut(0..1) {
                first.make_ascii_uppercase();
            }
            label
        }
    }
}

/// The field whose value is the `#` heading, if the kind's title is one field.
pub(crate) fn title_field(kind: Kind) -> Option<&'static str> {
    match kind.spec().title {
        TitleRule::Field(field) => Some(field),
        TitleRule::Join(_) | TitleRule::FieldOr(..) => None,
    }
}

/// Whether a text reads back whole as a `#` heading.
pub(crate) fn heading_safe(text: &str) -> bool {
    !text.is_empty() && text == text.trim() && !text.contains(['\n', '\r']) && !text.starts_with('#')
}

/// Whether a release's notes read back whole under its version heading in the changelog:
/// trimmed, and no line of them could be taken for a heading that ends the version.
pub(crate) fn notes_safe(text: &str) -> bool {
    !text.is_empty()
        && text == text.trim()
        && !text.contains('\r')
        && text.lines().all(|line| !is_top_heading(line) && !line.starts_with(COMMENT_START))
}

/// A `#` or `##` heading line: what divides an exported file.
pub(crate) fn is_top_heading(line: &str) -> bool {
    line == "#" || line == "##" || line.starts_with("# ") || line.starts_with("## ")
}

/// Whether a list reads back whole as bullets.
pub(crate) fn list_safe(value: &Value) -> bool {
    value
        .as_array()
        .is_some_and(|items| !items.is_empty() && items.iter().all(|v| v.as_str().is_some_and(heading_safe)))
}

/// Where a field of `kind` goes: the heading, a section, bullets, or the front matter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    Heading,
    Section,
    Bullets,
    Front,
}

pub(crate) fn place(kind: Kind, field: &str, value: &Value) -> Place {
    let ty = kind.spec().fields.iter().find(|f| f.name == field).map(|f| f.ty);
    match (ty, value) {
        _ if title_field(kind) == Some(field) && value.as_str().is_some_and(heading_safe) => Place::Heading,
        (Some(FieldType::Text), Value::String(s)) if nesting::nestable(s) => Place::Section,
        (Some(FieldType::ShortList), v) if list_safe(v) => Place::Bullets,
        _ => Place::Front,
    }
}

fn json(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// One item's file: front matter, heading, sections.
fn item_file(item: &ExportItem, superseded_by: Option<&str>) -> String {
    let mut front = String::new();
    let _ = writeln!(front, "{ID_KEY}: {}", item.id);
    let _ = writeln!(front, "kind: {}", item.kind.as_str());
    let mut heading = None;
    let mut body = String::new();
    let spec_order: Vec<&str> = item.kind.spec().fields.iter().map(|f| f.name).collect();
    let mut fields: Vec<(&String, &Value)> = item.data.iter().collect();
    fields.sort_by_key(|(name, _)| (spec_order.iter().position(|f| f == name).unwrap_or(usize::MAX), *name));
    for (name, value) in fields {
        match place(item.kind, name, value) {
            Place::Heading => heading = value.as_str().map(str::to_string),
            Place::Section => {
                let text = nesting::nest(value.as_str().unwrap_or(""));
                let _ = write!(body, "\n## {}\n\n{text}\n", label(item.kind, name));
            }
            Place::Bullets => {
                let _ = writeln!(body, "\n## {}\n", label(item.kind, name));
                for entry in value.as_array().into_iter().flatten() {
                    let _ = writeln!(body, "- {}", entry.as_str().unwrap_or(""));
                }
            }
            Place::Front => {
                let _ = writeln!(front, "{name}: {}", json(value));
            }
        }
    }
    if item.kind == Kind::Decision {
        let meta = |key: &str| item.metadata.as_ref().and_then(|m| m.get(key)).cloned();
        let date =
            meta("date").filter(Value::is_string).unwrap_or_else(|| Value::String(day(item.created_at)));
        let _ = writeln!(front, "date: {}", json(&date));
        if let Some(deciders) = meta("deciders") {
            let _ = writeln!(front, "deciders: {}", json(&deciders));
        }
    }
    if let Some(by) = superseded_by {
        let _ = writeln!(front, "superseded_by: {}", json(&Value::String(by.to_string())));
    }
    if !item.tags.is_empty() {
        let _ = writeln!(front, "tags: {}", json(&Value::from(item.tags.clone())));
    }
    match item.content.as_deref() {
        Some(content) if nesting::nestable(content) => {
            let _ = write!(body, "\n## {CONTENT_LABEL}\n\n{}\n", nesting::nest(content));
        }
        Some(content) => {
            let _ = writeln!(front, "content: {}", json(&Value::String(content.to_string())));
        }
        None => {}
    }
    let heading = heading.map_or(String::new(), |h| format!("\n# {h}\n"));
    format!("---\n{front}---\n{heading}{body}")
}

/// The releases as a Keep a Changelog file, newest first.
fn changelog(releases: &[&ExportItem]) -> String {
    let mut out = String::from(
        "# Changelog\n\nAll notable changes to this project, as its memory holds them. Each version's \
         fields are in the comment under its heading.\n",
    );
    for item in releases {
        let text = |field: &str| item.data.get(field).and_then(Value::as_str).unwrap_or("");
        let version = text("version");
        let heading = match text("released_at") {
            "" => format!("[{version}]"),
            date => format!("[{version}] - {}", date.get(..10).unwrap_or(date)),
        };
        let mut fields = Map::new();
        fields.insert(ID_KEY.into(), Value::String(item.id.to_string()));
        let mut notes = None;
        for (name, value) in &item.data {
            match value {
                Value::String(s) if name == "notes" && notes_safe(s) => notes = Some(s.as_str()),
                _ => {
                    fields.insert(name.clone(), value.clone());
                }
            }
        }
        if !item.tags.is_empty() {
            fields.insert("tags".into(), Value::from(item.tags.clone()));
        }
        if let Some(content) = &item.content {
            fields.insert("content".into(), Value::String(content.clone()));
        }
        let _ = write!(out, "\n## {heading}\n{COMMENT_START}{}{COMMENT_END}\n", json(&Value::Object(fields)));
        if let Some(notes) = notes {
            let _ = write!(out, "\n{notes}\n");
        }
    }
    out
}

/// `YYYY-MM-DD` of Unix milliseconds (UTC).
fn day(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map_or_else(String::new, |t| t.format("%Y-%m-%d").to_string())
}
