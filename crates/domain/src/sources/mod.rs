//! A project's existing knowledge read into items (`cortex ingest`): which form a file has,
//! and the items it becomes. Pure: the service reads the files and the repository, and
//! stores what these functions return.
//!
//! - [`adr`]: decision records (Nygard, MADR 2–4, log4brains, Y-statements) → `decision`
//! - [`changelog`]: a changelog → one `release` per version (what is unreleased: a `section`)
//! - [`sections`]: other Markdown → `section` per heading
//! - [`commits`]: a git commit → `change`
//! - [`export`]: the memory as Markdown files (`cortex export --markdown`), and those read back
//! - [`markdown`], [`rst`]: the documents' structure (pulldown-cmark, a YAML front matter)
//! - [`dates`]: dates as records and changelogs write them
//!
//! Every item carries a key that tells it from the file's other items (empty for a decision
//! record, the version for a release, the heading path for a section): with the file's path,
//! it is what a later run finds the item by. Each carries the time of what it records, when
//! the file says it (a decision's date, a release's): "recent" orders by it.

pub mod adr;
pub mod changelog;
pub mod commits;
pub mod dates;
pub mod export;
pub mod markdown;
pub mod rst;
pub mod sections;

#[cfg(test)]
mod real_files;

use crate::kind::Kind;
use adr::{LinkTarget, SupersedeLink};
use serde_json::{Map, Value, json};
use uuid::Uuid;

/// Raised whenever what a file becomes changes, so a new version updates items whose files
/// did not change (the source hash covers it).
pub const READER_VERSION: u32 = 2;

/// What a file was read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Decision,
    Changelog,
    Markdown,
    /// A file `cortex export --markdown` wrote.
    Exported,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Decision => "decision",
            Format::Changelog => "changelog",
            Format::Markdown => "markdown",
            Format::Exported => "exported",
        }
    }
}

/// Why a file becomes no item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    /// A decision record template (`template.md`, MADR's `{short title …}` placeholders).
    Template,
    /// The index page of a decision folder (`README.md`, `index.md`).
    Index,
    /// No text.
    Empty,
    /// A reStructuredText file that is not a changelog.
    NotAChangelog,
    /// An exported file that cannot be read back: what to fix.
    Exported(String),
}

impl Skip {
    pub fn reason(&self) -> String {
        match self {
            Skip::Template => "template".into(),
            Skip::Index => "index".into(),
            Skip::Empty => "empty".into(),
            Skip::NotAChangelog => "reStructuredText other than a changelog is not read".into(),
            Skip::Exported(problem) => format!("exported file not read: {problem}"),
        }
    }
}

/// One item a file becomes.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceItem {
    /// Tells the item from the file's others (see the module's doc).
    pub key: String,
    pub kind: Kind,
    pub data: Map<String, Value>,
    /// What the kind has no field for (a record's date and deciders, a commit's date).
    pub metadata: Map<String, Value>,
    /// A decision record's supersede links, to resolve against the run's other files.
    pub links: Vec<SupersedeLink>,
    /// The item an exported file names, with what the file says of its other parts: it is
    /// this item that the file updates, whoever stored it.
    pub exported: Option<ExportedParts>,
    /// When what the item records happened (epoch ms): a decision's date, a release's, a
    /// commit's time.
    pub occurred_at: Option<i64>,
}

impl SourceItem {
    pub fn new(key: String, kind: Kind, data: Map<String, Value>) -> SourceItem {
        SourceItem {
            key,
            kind,
            data,
            metadata: Map::new(),
            links: Vec::new(),
            exported: None,
            occurred_at: None,
        }
    }
}

/// The parts of an exported item besides its `data`.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportedParts {
    pub id: Uuid,
    pub content: Option<String>,
    pub tags: Vec<String>,
}

/// The folder names that hold decision records.
const DECISION_FOLDERS: &[&str] = &[
    "adr",
    "adrs",
    "decisions",
    "decision-records",
    "decision_records",
    "decision-record",
    "architecture-decisions",
    "architecture-decision-records",
    "architecture_decision_records",
    "architecture-decision-record",
    "architecture-decision-log",
    "decision-log",
    "adr-log",
];

/// Whether `path` (`/`-separated) lies in a decision folder.
pub fn in_decision_folder(path: &str) -> bool {
    let mut parts: Vec<&str> = path.split('/').collect();
    parts.pop();
    parts.iter().any(|p| DECISION_FOLDERS.contains(&p.to_lowercase().as_str()))
}

/// Words a template's file name is made of (`template.md`, `adr-template.md`,
/// `0000-adr-template-bare-minimal.md`), besides numbers.
const TEMPLATE_WORDS: &[&str] = &[
    "template",
    "templates",
    "adr",
    "madr",
    "nygard",
    "decision",
    "record",
    "default",
    "bare",
    "minimal",
    "full",
];

/// A template by its name, or by the placeholders it holds.
fn is_template(stem: &str, text: &str) -> bool {
    let words: Vec<&str> = stem
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && !w.bytes().all(|b| b.is_ascii_digit()))
        .collect();
    let named = words.contains(&"template") && words.iter().all(|w| TEMPLATE_WORDS.contains(w));
    named
        || ["{short title", "[short title", "# NUMBER. TITLE", "# {title}", "# [title]"]
            .iter()
            .any(|p| text.contains(p))
}

/// Reads one file at `path` (relative, `/`-separated) into its items. `component` is a
/// decision's component when the record names none; `decision_folder` says whether the file
/// lies in a decision folder (its path from above the ingest's root, which the root's own
/// name may be part of).
pub fn read_file(
    path: &str,
    text: &str,
    component: &str,
    decision_folder: bool,
) -> Result<(Format, Vec<SourceItem>), Skip> {
    if text.trim().is_empty() {
        return Err(Skip::Empty);
    }
    if export::read::is_exported(text) {
        let items = export::read::read(text).map_err(|e| Skip::Exported(e.to_string()))?;
        return Ok((Format::Exported, items.into_iter().map(exported_item).collect()));
    }
    let file_name = path.rsplit('/').next().unwrap_or(path);
    let stem = file_name.rsplit_once('.').map_or(file_name, |(s, _)| s).to_lowercase();
    let rst = file_name.to_lowercase().ends_with(".rst");
    let body = if rst { text } else { &text[markdown::front_matter(text).1..] };
    let heads = if rst { rst::headings(body) } else { markdown::headings(body) };
    if changelog::looks_like_changelog(file_name, &heads, body) {
        return Ok((Format::Changelog, changelog_items(path, &stem, body, &heads)));
    }
    if rst {
        return Err(Skip::NotAChangelog);
    }
    let decision = adr::looks_like_decision(text);
    if (decision_folder || decision) && is_template(&stem, text) {
        return Err(Skip::Template);
    }
    if decision_folder
        && ["readme", "index", "_index", "toc", "summary", "log"].contains(&stem.as_str())
        && !decision
    {
        return Err(Skip::Index);
    }
    if decision || (decision_folder && !heads.is_empty()) {
        let record = adr::parse_decision(file_name, text);
        let mut item = SourceItem::new(String::new(), Kind::Decision, record.data(component));
        item.metadata = record.metadata();
        item.occurred_at = record.occurred_at();
        item.links = record.links;
        return Ok((Format::Decision, vec![item]));
    }
    let items = sections::sections(file_name, text)
        .into_iter()
        .map(|s| SourceItem::new(s.key.clone(), Kind::Section, s.data(path)))
        .collect::<Vec<_>>();
    if items.is_empty() {
        return Err(Skip::Empty);
    }
    Ok((Format::Markdown, items))
}

/// A changelog's releases, and what it has not released yet as sections. Keys are the
/// versions, lowercase (`#2` for a version written twice).
fn changelog_items(path: &str, stem: &str, text: &str, heads: &[markdown::Heading]) -> Vec<SourceItem> {
    let doc_title = heads
        .iter()
        .find(|h| h.level == 1 && !changelog::is_version_heading(&h.text))
        .map_or_else(|| stem.to_string(), |h| h.text.clone());
    let mut items: Vec<SourceItem> = Vec::new();
    for r in changelog::parse_changelog(text, heads) {
        let mut key = r.version.to_lowercase();
        let repeats = items.iter().filter(|i| i.key == key || i.key.starts_with(&format!("{key}#"))).count();
        if repeats > 0 {
            key = format!("{key}#{}", repeats + 1);
        }
        if r.unreleased {
            if r.notes.is_empty() {
                continue;
            }
            let title = if r.version == "Unreleased" {
                r.version.clone()
            } else {
                format!("{} (unreleased)", r.version)
            };
            let mut data = Map::new();
            data.insert("title".into(), json!(title));
            data.insert("heading".into(), json!(format!("{doc_title} > {title}")));
            data.insert("body".into(), json!(r.notes));
            data.insert("document".into(), json!(path));
            items.push(SourceItem::new(key, Kind::Section, data));
            continue;
        }
        let mut item = SourceItem::new(key, Kind::Release, r.data());
        item.metadata = r.metadata();
        item.occurred_at = r.occurred_at();
        items.push(item);
    }
    items
}

/// An exported item as a source item: its id is its key within the file.
fn exported_item(e: export::read::Exported) -> SourceItem {
    let links = e
        .superseded_by
        .map(|file| SupersedeLink { direction: adr::Direction::SupersededBy, target: LinkTarget::Path(file) })
        .into_iter()
        .collect();
    SourceItem {
        key: e.id.to_string(),
        kind: e.kind,
        data: e.data,
        metadata: Map::new(),
        links,
        exported: Some(ExportedParts { id: e.id, content: e.content, tags: e.tags }),
        occurred_at: None,
    }
}

/// The path (among `known`) of the record a link from the record at `from` names: a link is
/// relative to `from`'s folder; a number names the record of that number in the same folder.
pub fn resolve_link<'a>(from: &str, target: &LinkTarget, known: &[&'a str]) -> Option<&'a str> {
    let folder = from.rsplit_once('/').map_or("", |(f, _)| f);
    match target {
        LinkTarget::Path(relative) => {
            let mut parts: Vec<&str> =
                if folder.is_empty() { Vec::new() } else { folder.split('/').collect() };
            for part in relative.split('/') {
                match part {
                    "" | "." => {}
                    ".." => {
                        parts.pop()?;
                    }
                    p => parts.push(p),
                }
            }
            let wanted = parts.join("/");
            known.iter().copied().find(|k| *k == wanted)
        }
        LinkTarget::Number(n) => known.iter().copied().find(|k| {
            let (dir, name) = k.rsplit_once('/').unwrap_or(("", k));
            dir == folder && adr::adr_number(name) == Some(*n)
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &str, text: &str) -> Result<(Format, Vec<SourceItem>), Skip> {
        read_file(path, text, "web", in_decision_folder(path))
    }

    #[test]
    fn templates_by_name_or_placeholders_but_not_a_record_about_templates() {
        assert!(is_template("adr-template", ""));
        assert!(is_template("0000-template-bare-minimal", ""));
        assert!(!is_template("0039-use-apache-velocity-as-template-engine", "# Use Apache Velocity"));
        assert!(is_template("0001-x", "# {short title of solved problem}"));
    }

    #[test]
    fn each_form_becomes_its_kind() {
        let (format, items) =
            read("doc/adr/0001-record-architecture-decisions.md", adr::tests::NYGARD_FIRST).unwrap();
        assert_eq!((format, items.len(), items[0].kind), (Format::Decision, 1, Kind::Decision));
        assert_eq!(items[0].data["component"], "web");
        let (format, items) =
            read("CHANGELOG.md", "# Changelog\n\n## [1.0.0] - 2024-01-01\n\n### Added\n\n- all\n").unwrap();
        assert_eq!(
            (format, items[0].kind, items[0].key.as_str()),
            (Format::Changelog, Kind::Release, "1.0.0")
        );
        let (format, items) = read("docs/guide.md", "# Guide\n\n## Install\n\nRun it.\n").unwrap();
        assert_eq!(
            (format, items[0].kind, items[0].key.as_str()),
            (Format::Markdown, Kind::Section, "Guide > Install")
        );
        assert_eq!(items[0].data["document"], "docs/guide.md");
    }

    #[test]
    fn a_record_anywhere_and_anything_in_a_decision_folder() {
        let (format, _) = read("notes/use-x.md", adr::tests::MADR_3).unwrap();
        assert_eq!(format, Format::Decision, "recognised by its form");
        let (format, items) =
            read("docs/decisions/0004-cache.md", "# 4. Cache in Redis\n\nWe cache sessions.\n").unwrap();
        assert_eq!((format, items[0].data["status"].as_str()), (Format::Decision, Some("proposed")));
        assert_eq!(items[0].data["title"], "Cache in Redis");
    }

    #[test]
    fn templates_and_index_pages_are_not_decisions() {
        let index = "# Architecture Decision Records\n\n* [1. Record decisions](0001-record-architecture-decisions.md)\n";
        assert_eq!(read("doc/adr/README.md", index), Err(Skip::Index));
        assert_eq!(read("docs/decisions/index.md", index), Err(Skip::Index));
        let madr_template = "---\nstatus: \"{proposed | rejected | accepted | deprecated | … | superseded by [ADR-0005](0005-example.md)}\"\n---\n# {short title of solved problem and solution}\n\n## Context and Problem Statement\n\n{Describe the context}\n\n## Considered Options\n\n* {title of option 1}\n\n## Decision Outcome\n\nChosen option: \"{title of option 1}\"\n";
        assert_eq!(read("docs/decisions/adr-template.md", madr_template), Err(Skip::Template));
        assert_eq!(
            read("docs/decisions/template.md", "# Title\n\n## Status\n\n## Context\n"),
            Err(Skip::Template)
        );
        assert_eq!(read("docs/x.md", " \n"), Err(Skip::Empty));
        // An index page outside a decision folder is just a document.
        assert_eq!(read("README.md", index).unwrap().0, Format::Markdown);
    }

    #[test]
    fn links_resolve_to_paths_of_the_run() {
        let known = ["doc/adr/0002-use-mysql.md", "doc/adr/0003-use-postgresql.md", "other/0002-x.md"];
        let path = LinkTarget::Path("0003-use-postgresql.md".into());
        assert_eq!(
            resolve_link("doc/adr/0002-use-mysql.md", &path, &known),
            Some("doc/adr/0003-use-postgresql.md")
        );
        let up = LinkTarget::Path("../adr/./0002-use-mysql.md".into());
        assert_eq!(
            resolve_link("doc/adr/0003-use-postgresql.md", &up, &known),
            Some("doc/adr/0002-use-mysql.md")
        );
        assert_eq!(
            resolve_link("doc/adr/0003-use-postgresql.md", &LinkTarget::Number(2), &known),
            Some("doc/adr/0002-use-mysql.md")
        );
        assert_eq!(resolve_link("doc/adr/0003-use-postgresql.md", &LinkTarget::Number(9), &known), None);
        assert_eq!(resolve_link("x.md", &LinkTarget::Path("../../y.md".into()), &known), None);
    }
}
