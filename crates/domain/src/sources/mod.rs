//! A project's existing knowledge read into items (`cortex ingest`): which form a file has,
//! and the items it becomes. Pure: the service reads the files and the repository, and
//! stores what these functions return.
//!
//! - [`adr`]: decision records (adr-tools/Nygard, MADR) → `decision`
//! - [`changelog`]: a Keep a Changelog file → one `release` per version
//! - [`sections`]: other Markdown → `section` per heading
//! - [`commits`]: a git commit → `change`
//! - [`export`]: the memory as Markdown files (`cortex export --markdown`), and those read back
//! - [`markdown`]: the little Markdown they share
//!
//! Every item carries a key that tells it from the file's other items (empty for a decision
//! record, the version for a release, the heading path for a section): with the file's path,
//! it is what a later run finds the item by.

pub mod adr;
pub mod changelog;
pub mod commits;
pub mod export;
pub mod markdown;
pub mod sections;

use crate::kind::Kind;
use adr::{LinkTarget, SupersedeLink};
use serde_json::{Map, Value};
use uuid::Uuid;

/// Raised whenever what a file becomes changes, so a new version updates items whose files
/// did not change (the source hash covers it).
pub const READER_VERSION: u32 = 1;

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
    /// An exported file that cannot be read back: what to fix.
    Exported(String),
}

impl Skip {
    pub fn reason(&self) -> String {
        match self {
            Skip::Template => "template".into(),
            Skip::Index => "index".into(),
            Skip::Empty => "empty".into(),
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
    "architecture-decisions",
    "architecture-decision-records",
    "decision-log",
];

/// Whether `path` (relative, `/`-separated) lies in a decision folder.
pub fn in_decision_folder(path: &str) -> bool {
    let mut parts: Vec<&str> = path.split('/').collect();
    parts.pop();
    parts.iter().any(|p| DECISION_FOLDERS.contains(&p.to_lowercase().as_str()))
}

/// Reads one Markdown file at `path` (relative, `/`-separated) into its items.
/// `component` is a decision's component when the record names none.
pub fn read_file(path: &str, text: &str, component: &str) -> Result<(Format, Vec<SourceItem>), Skip> {
    if text.trim().is_empty() {
        return Err(Skip::Empty);
    }
    if export::read::is_exported(text) {
        let items = export::read::read(text).map_err(|e| Skip::Exported(e.to_string()))?;
        return Ok((Format::Exported, items.into_iter().map(exported_item).collect()));
    }
    let file_name = path.rsplit('/').next().unwrap_or(path);
    let stem = file_name.rsplit_once('.').map_or(file_name, |(s, _)| s).to_lowercase();
    let in_folder = in_decision_folder(path);
    let decision = adr::looks_like_decision(text);
    if (in_folder || decision) && (stem.contains("template") || text.contains("{short title")) {
        return Err(Skip::Template);
    }
    if in_folder
        && ["readme", "index", "_index", "toc", "summary", "log"].contains(&stem.as_str())
        && !decision
    {
        return Err(Skip::Index);
    }
    if changelog::looks_like_changelog(file_name, text) {
        let items = changelog::parse_changelog(text)
            .into_iter()
            .map(|r| SourceItem {
                key: r.version.to_lowercase(),
                kind: Kind::Release,
                data: r.data(),
                metadata: Map::new(),
                links: Vec::new(),
                exported: None,
            })
            .collect();
        return Ok((Format::Changelog, items));
    }
    if decision || (in_folder && !markdown::headings(text).is_empty()) {
        let record = adr::parse_decision(file_name, text);
        let item = SourceItem {
            key: String::new(),
            kind: Kind::Decision,
            data: record.data(component),
            metadata: record.metadata(),
            links: record.links,
            exported: None,
        };
        return Ok((Format::Decision, vec![item]));
    }
    let items = sections::sections(file_name, text)
        .into_iter()
        .map(|s| SourceItem {
            data: s.data(path),
            key: s.key,
            kind: Kind::Section,
            metadata: Map::new(),
            links: Vec::new(),
            exported: None,
        })
        .collect::<Vec<_>>();
    if items.is_empty() {
        return Err(Skip::Empty);
    }
    Ok((Format::Markdown, items))
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

    #[test]
    fn each_form_becomes_its_kind() {
        let (format, items) =
            read_file("doc/adr/0001-record-architecture-decisions.md", adr::tests::NYGARD_FIRST, "web")
                .unwrap();
        assert_eq!((format, items.len(), items[0].kind), (Format::Decision, 1, Kind::Decision));
        assert_eq!(items[0].data["component"], "web");
        let (format, items) = read_file(
            "CHANGELOG.md",
            "# Changelog\n\n## [1.0.0] - 2024-01-01\n\n### Added\n\n- all\n",
            "web",
        )
        .unwrap();
        assert_eq!(
            (format, items[0].kind, items[0].key.as_str()),
            (Format::Changelog, Kind::Release, "1.0.0")
        );
        let (format, items) =
            read_file("docs/guide.md", "# Guide\n\n## Install\n\nRun it.\n", "web").unwrap();
        assert_eq!(
            (format, items[0].kind, items[0].key.as_str()),
            (Format::Markdown, Kind::Section, "Guide > Install")
        );
        assert_eq!(items[0].data["document"], "docs/guide.md");
    }

    #[test]
    fn a_record_anywhere_and_anything_in_a_decision_folder() {
        let (format, _) = read_file("notes/use-x.md", adr::tests::MADR_3, "web").unwrap();
        assert_eq!(format, Format::Decision, "recognised by its form");
        let (format, items) =
            read_file("docs/decisions/0004-cache.md", "# 4. Cache in Redis\n\nWe cache sessions.\n", "web")
                .unwrap();
        assert_eq!((format, items[0].data["status"].as_str()), (Format::Decision, Some("proposed")));
        assert_eq!(items[0].data["title"], "Cache in Redis");
    }

    #[test]
    fn templates_and_index_pages_are_not_decisions() {
        let index = "# Architecture Decision Records\n\n* [1. Record decisions](0001-record-architecture-decisions.md)\n";
        assert_eq!(read_file("doc/adr/README.md", index, "web"), Err(Skip::Index));
        assert_eq!(read_file("docs/decisions/index.md", index, "web"), Err(Skip::Index));
        let madr_template = "---\nstatus: \"{proposed | rejected | accepted | deprecated | … | superseded by [ADR-0005](0005-example.md)}\"\n---\n# {short title of solved problem and solution}\n\n## Context and Problem Statement\n\n{Describe the context}\n\n## Considered Options\n\n* {title of option 1}\n\n## Decision Outcome\n\nChosen option: \"{title of option 1}\"\n";
        assert_eq!(read_file("docs/decisions/adr-template.md", madr_template, "web"), Err(Skip::Template));
        assert_eq!(
            read_file("docs/decisions/template.md", "# Title\n\n## Status\n\n## Context\n", "web"),
            Err(Skip::Template)
        );
        assert_eq!(read_file("docs/x.md", " \n", "web"), Err(Skip::Empty));
        // An index page outside a decision folder is just a document.
        assert_eq!(read_file("README.md", index, "web").unwrap().0, Format::Markdown);
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
