//! Markdown read as ingesting needs it, with pulldown-cmark (CommonMark: ATX and setext
//! headings, fences, lists, tables, reference links) and a YAML front matter read with saphyr.
//! Every heading keeps its byte range in the text, so the text under it is a slice of the file.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use saphyr::{LoadableYamlNode, Scalar, Yaml};

/// One heading, ATX (`## x`) or setext (`x` over `---`).
#[derive(Debug, Clone, PartialEq)]
pub struct Heading {
    pub level: usize,
    /// The heading's text without markup (a link's text, not its target).
    pub text: String,
    /// Byte offset where the heading starts.
    pub start: usize,
    /// Byte offset just after the heading (its underline included).
    pub body_start: usize,
}

fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

/// The headings of `text`, in order (none inside code blocks, quotes or HTML).
pub fn headings(text: &str) -> Vec<Heading> {
    let mut out = Vec::new();
    let mut open: Option<(usize, usize, String)> = None;
    let mut quoted = 0usize;
    for (event, range) in Parser::new_ext(text, options()).into_offset_iter() {
        match event {
            Event::Start(Tag::BlockQuote(_)) => quoted += 1,
            Event::End(TagEnd::BlockQuote(_)) => quoted = quoted.saturating_sub(1),
            Event::Start(Tag::Heading { level, .. }) if quoted == 0 => {
                open = Some((level as usize, range.start, String::new()));
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, start, heading)) = open.take() {
                    let body_start = line_end(text, range.end);
                    out.push(Heading { level, text: squeeze(&heading), start, body_start });
                }
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, _, heading)) = open.as_mut() {
                    heading.push_str(&t);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some((_, _, heading)) = open.as_mut() {
                    heading.push(' ');
                }
            }
            _ => {}
        }
    }
    out
}

/// Where the line after byte `at` starts (or the text's end), so a heading's body starts on
/// the line after it.
fn line_end(text: &str, at: usize) -> usize {
    let at = at.min(text.len());
    if at > 0 && text.as_bytes()[at - 1] == b'\n' {
        return at;
    }
    text[at..].find('\n').map_or(text.len(), |i| at + i + 1)
}

/// The text under heading `i` up to the next heading of any level, trimmed.
pub fn own_text(text: &str, headings: &[Heading], i: usize) -> String {
    let end = headings.get(i + 1).map_or(text.len(), |h| h.start);
    text.get(headings[i].body_start..end).unwrap_or("").trim().to_string()
}

/// The text under heading `i` with its subsections: up to the next heading of its level or
/// higher, trimmed.
pub fn section_text(text: &str, headings: &[Heading], i: usize) -> String {
    let level = headings[i].level;
    let end = headings[i + 1..].iter().find(|h| h.level <= level).map_or(text.len(), |h| h.start);
    text.get(headings[i].body_start..end).unwrap_or("").trim().to_string()
}

/// The link reference definitions of `text` (`[1.0.0]: https://…`): each label as written
/// (lowercase), its target and the byte range of the definition.
pub fn reference_links(text: &str) -> Vec<(String, String, std::ops::Range<usize>)> {
    let parser = Parser::new_ext(text, options()).into_offset_iter();
    let mut links: Vec<(String, String, std::ops::Range<usize>)> = parser
        .reference_definitions()
        .iter()
        .map(|(label, def)| (label.to_lowercase(), def.dest.to_string(), def.span.clone()))
        .collect();
    links.sort_by_key(|(_, _, span)| span.start);
    links
}

/// A value of the front matter: one text, or a list.
#[derive(Debug, Clone, PartialEq)]
pub enum FrontValue {
    Text(String),
    List(Vec<String>),
}

impl FrontValue {
    pub fn as_text(&self) -> String {
        match self {
            FrontValue::Text(t) => t.clone(),
            FrontValue::List(items) => items.join(", "),
        }
    }

    pub fn as_list(&self) -> Vec<String> {
        match self {
            FrontValue::List(items) => items.clone(),
            FrontValue::Text(t) => {
                t.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
            }
        }
    }
}

/// A YAML front matter's top-level keys (lowercased) with their text or list values, and the
/// byte offset where the document after it starts. Nested maps are passed over. A block
/// between `---` lines that is not YAML is still the front matter (it is not the document),
/// with no values.
pub fn front_matter(text: &str) -> (Vec<(String, FrontValue)>, usize) {
    let text_start = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let rest = &text[text_start..];
    let Some(first) = rest.split_inclusive('\n').next() else { return (Vec::new(), 0) };
    if first.trim_end() != "---" {
        return (Vec::new(), 0);
    }
    let yaml_start = text_start + first.len();
    let mut offset = yaml_start;
    for line in text[yaml_start..].split_inclusive('\n') {
        let line_start = offset;
        offset += line.len();
        let trimmed = line.trim_end();
        if trimmed == "---" || trimmed == "..." {
            let yaml = &text[yaml_start..line_start];
            return match yaml_entries(yaml) {
                Some(entries) => (entries, offset),
                None if looks_like_yaml(yaml) => (Vec::new(), offset),
                None => (Vec::new(), 0),
            };
        }
    }
    // No closing line: not a front matter.
    (Vec::new(), 0)
}

fn yaml_entries(yaml: &str) -> Option<Vec<(String, FrontValue)>> {
    if yaml.trim().is_empty() {
        return Some(Vec::new());
    }
    let docs = Yaml::load_from_str(yaml).ok()?;
    let map = docs.into_iter().next()?;
    let map = map.as_mapping()?;
    Some(
        map.iter()
            .filter_map(|(key, value)| {
                let key = scalar_text(key)?.to_lowercase();
                let value = match value {
                    Yaml::Sequence(items) => FrontValue::List(items.iter().filter_map(scalar_text).collect()),
                    other => FrontValue::Text(scalar_text(other)?),
                };
                Some((key, value))
            })
            .collect(),
    )
}

fn scalar_text(value: &Yaml) -> Option<String> {
    match value {
        Yaml::Value(Scalar::String(s)) => Some(s.trim().to_string()),
        Yaml::Value(Scalar::Integer(n)) => Some(n.to_string()),
        Yaml::Value(Scalar::FloatingPoint(f)) => Some(f.to_string()),
        Yaml::Value(Scalar::Boolean(b)) => Some(b.to_string()),
        Yaml::Value(Scalar::Null) => Some(String::new()),
        Yaml::Representation(s, _, _) => Some(s.trim().to_string()),
        Yaml::Tagged(_, inner) => scalar_text(inner),
        _ => None,
    }
}

/// Whether a block that is not valid YAML still reads as a front matter: `key: value` lines.
fn looks_like_yaml(block: &str) -> bool {
    block.lines().filter(|l| !l.trim().is_empty()).all(|line| {
        line.starts_with([' ', '\t', '-', '#'])
            || line.split_once(':').is_some_and(|(key, _)| {
                !key.is_empty() && key.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-')
            })
    })
}

/// The items of the lists at the top of `text` (not nested ones), each item's first
/// paragraph without markup.
pub fn list_items(text: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut lists = 0usize;
    let mut current: Option<String> = None;
    // Once an item's first block ends, the rest of the item is not its title.
    let mut closed = false;
    for event in Parser::new_ext(text, options()) {
        match event {
            Event::Start(Tag::List(_)) => {
                lists += 1;
                if lists > 1 {
                    closed = true;
                }
            }
            Event::End(TagEnd::List(_)) => lists = lists.saturating_sub(1),
            Event::Start(Tag::Item) if lists == 1 => {
                current = Some(String::new());
                closed = false;
            }
            Event::End(TagEnd::Item) if lists == 1 => {
                if let Some(item) = current.take().map(|i| squeeze(&i)).filter(|i| !i.is_empty()) {
                    items.push(item);
                }
            }
            Event::End(TagEnd::Paragraph) if lists == 1 => closed = true,
            Event::Text(t) | Event::Code(t) if lists == 1 && !closed => {
                if let Some(item) = current.as_mut() {
                    item.push_str(&t);
                }
            }
            Event::SoftBreak | Event::HardBreak if lists == 1 && !closed => {
                if let Some(item) = current.as_mut() {
                    item.push(' ');
                }
            }
            _ => {}
        }
    }
    items
}

/// A short text without markup: links become their text, images their alternative text,
/// emphasis, code marks, HTML and list or quote markers go.
pub fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for event in Parser::new_ext(text, options()) {
        match event {
            Event::Text(t) | Event::Code(t) => out.push_str(&t),
            Event::SoftBreak | Event::HardBreak => out.push(' '),
            Event::End(TagEnd::Paragraph | TagEnd::Heading(_) | TagEnd::Item) => out.push(' '),
            _ => {}
        }
    }
    squeeze(&out)
}

/// The targets of the links and images in `text`, in order.
pub fn link_targets(text: &str) -> Vec<String> {
    Parser::new_ext(text, options())
        .filter_map(|event| match event {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                Some(dest_url.to_string()).filter(|d| !d.is_empty())
            }
            _ => None,
        })
        .collect()
}

/// The rows of the tables in `text` (the header row first), each cell without markup.
pub fn table_rows(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row: Option<Vec<String>> = None;
    let mut cell: Option<String> = None;
    for event in Parser::new_ext(text, options()) {
        match event {
            Event::Start(Tag::TableHead | Tag::TableRow) => row = Some(Vec::new()),
            Event::End(TagEnd::TableHead | TagEnd::TableRow) => rows.extend(row.take()),
            Event::Start(Tag::TableCell) => cell = Some(String::new()),
            Event::End(TagEnd::TableCell) => {
                if let (Some(row), Some(cell)) = (row.as_mut(), cell.take()) {
                    row.push(squeeze(&cell));
                }
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some(cell) = cell.as_mut() {
                    cell.push_str(&t);
                }
            }
            _ => {}
        }
    }
    rows
}

/// Runs of white space as one space, trimmed.
fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_atx_and_setext_outside_fences() {
        let text = "# Title #\n\nintro\n```sh\n# not a heading\n```\n## Part one\ntext\n#hashtag\n   ### Deep\n\nVersion 2.0\n-----------\n\nnotes\n\n> # quoted\n";
        let h = headings(text);
        let names: Vec<(usize, &str)> = h.iter().map(|h| (h.level, h.text.as_str())).collect();
        assert_eq!(names, [(1, "Title"), (2, "Part one"), (3, "Deep"), (2, "Version 2.0")]);
        assert_eq!(own_text(text, &h, 1), "text\n#hashtag");
        assert_eq!(section_text(text, &h, 1), "text\n#hashtag\n   ### Deep");
        assert_eq!(own_text(text, &h, 3), "notes\n\n> # quoted");
        assert_eq!(&text[h[3].start..h[3].body_start], "Version 2.0\n-----------\n");
        let linked = headings("## [1.0.0](https://x.test/c) - 2024-01-02\n\n[2.0]: https://y\n");
        assert_eq!(linked[0].text, "1.0.0 - 2024-01-02");
    }

    #[test]
    fn front_matter_is_yaml() {
        let text = "---\nstatus: \"accepted\"\ndate: 2024-03-01\ndeciders: [Ann, 'Bo']\nconsulted:\n  - Cy\n  - Di\nnav:\n  order: 3\n# a comment\n---\n# Title\n";
        let (fm, end) = front_matter(text);
        assert_eq!(fm[0], ("status".into(), FrontValue::Text("accepted".into())));
        assert_eq!(fm[1], ("date".into(), FrontValue::Text("2024-03-01".into())));
        assert_eq!(fm[2].1.as_list(), ["Ann", "Bo"]);
        assert_eq!(fm[3].1, FrontValue::List(vec!["Cy".into(), "Di".into()]));
        assert_eq!(fm.len(), 4, "a nested map is passed over: {fm:?}");
        assert_eq!(&text[end..], "# Title\n");
        assert_eq!(front_matter("---\nno end\n").1, 0);
        assert_eq!(front_matter("# Title\n---\n").0, Vec::new());
        let folded = front_matter("---\ntitle: >\n  Use a\n  queue\n---\nx").0;
        assert_eq!(folded[0].1, FrontValue::Text("Use a queue".into()));
        // A thematic break and a paragraph are not a front matter.
        assert_eq!(front_matter("---\nJust a paragraph.\n---\n").1, 0);
    }

    #[test]
    fn lists_tables_links_and_plain_text() {
        let items = list_items(
            "* [MADR](https://adr.github.io/madr/) 2.1.2\n- `plain`\n\n1. **first**\n   * nested\n\n   more\n\ntext",
        );
        assert_eq!(items, ["MADR 2.1.2", "plain", "first"]);
        assert_eq!(
            link_targets("Superseded by [2. Use X](0002-use-x.md) and [y](a.md#top)"),
            ["0002-use-x.md", "a.md#top"]
        );
        assert_eq!(plain("**Status:** `accepted` <!-- c -->"), "Status: accepted");
        assert_eq!(plain("![Status: accepted](https://img.shields.io/badge/x.svg)"), "Status: accepted");
        let rows = table_rows("| Field | Value |\n|---|---|\n| **Status** | Draft |\n");
        assert_eq!(rows, [vec!["Field", "Value"], vec!["Status", "Draft"]]);
        let refs = reference_links("## [1.0.0]\n\n[1.0.0]: https://x.test/v1\n");
        assert_eq!(refs[0].0, "1.0.0");
        assert_eq!(refs[0].1, "https://x.test/v1");
    }
}
