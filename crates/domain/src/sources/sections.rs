//! Other Markdown as `section` items: one per heading at the level that divides the
//! document (a single `#` title divides nothing: its `##` headings do), each keeping its
//! heading path. Long sections are chunked by the store as any long section is.

use super::markdown::{Heading, front_matter, headings, section_text};
use crate::limits::MAX_TITLE_CHARS;
use crate::text::truncate_chars;
use serde_json::{Map, Value, json};

#[derive(Debug, Clone, PartialEq)]
pub struct DocSection {
    /// What tells this section from the file's others: its heading path, with `#2`, `#3`
    /// for a repeated one.
    pub key: String,
    pub title: String,
    pub heading_path: Vec<String>,
    pub body: String,
}

impl DocSection {
    /// The `data` of the section item; `document` is the file's path.
    pub fn data(&self, document: &str) -> Map<String, Value> {
        let mut data = Map::new();
        data.insert("title".into(), json!(self.title));
        if !self.heading_path.is_empty() {
            data.insert("heading".into(), json!(short(&self.heading_path.join(" > "), 512)));
        }
        data.insert("body".into(), json!(self.body));
        data.insert("document".into(), json!(short(document, 512)));
        data
    }
}

/// The sections of a Markdown document. `file_name` titles the text before any heading.
pub fn sections(file_name: &str, text: &str) -> Vec<DocSection> {
    let (_, start) = front_matter(text);
    let text = &text[start..];
    let heads = headings(text);
    let top = heads.iter().map(|h| h.level).min();
    let title: Option<&Heading> = match top {
        Some(level) if heads.iter().filter(|h| h.level == level).count() == 1 && heads[0].level == level => {
            Some(&heads[0])
        }
        _ => None,
    };
    let split_level = match title {
        Some(t) => heads.iter().map(|h| h.level).filter(|&l| l > t.level).min(),
        None => top,
    };
    let doc_title = title.map_or_else(|| file_title(file_name), |t| clean(&t.text));
    let mut out: Vec<DocSection> = Vec::new();
    let first_split = heads.iter().position(|h| Some(h.level) == split_level);
    // The text before the first dividing heading: the title's own text, or a preamble.
    let intro_from = title.map_or(0, |t| t.body_start);
    let intro_to = first_split.map_or(text.len(), |i| heads[i].start);
    let intro = text.get(intro_from..intro_to).unwrap_or("").trim();
    if !intro.is_empty() {
        out.push(section(&doc_title, vec![doc_title.clone()], intro));
    }
    for (i, heading) in heads.iter().enumerate() {
        if Some(heading.level) != split_level {
            continue;
        }
        let body = section_text(text, &heads, i);
        if body.is_empty() {
            continue;
        }
        let name = clean(&heading.text);
        let path = match title {
            Some(_) => vec![doc_title.clone(), name.clone()],
            None => vec![name.clone()],
        };
        out.push(section(&name, path, &body));
    }
    let mut seen: Vec<String> = Vec::new();
    for s in &mut out {
        let count = seen.iter().filter(|k| **k == s.key).count();
        seen.push(s.key.clone());
        if count > 0 {
            s.key = format!("{}#{}", s.key, count + 1);
        }
    }
    out
}

fn section(title: &str, heading_path: Vec<String>, body: &str) -> DocSection {
    DocSection {
        key: heading_path.join(" > "),
        title: if title.is_empty() { "Untitled".into() } else { title.to_string() },
        heading_path,
        body: body.to_string(),
    }
}

fn clean(heading: &str) -> String {
    short(&super::markdown::plain(heading), MAX_TITLE_CHARS)
}

fn file_title(file_name: &str) -> String {
    let stem = file_name.rsplit_once('.').map_or(file_name, |(s, _)| s);
    short(stem, MAX_TITLE_CHARS)
}

fn short(text: &str, max: usize) -> String {
    truncate_chars(text.trim(), max).0.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_titled_document_divides_at_its_second_level() {
        let text = "# Operations\n\nHow we run things.\n\n## Deploy\n\nRun `make deploy`.\n\n### Rollback\n\nRun `make rollback`.\n\n## On call\n\nPage the owner.\n";
        let s = sections("ops.md", text);
        let shown: Vec<(&str, &str)> = s.iter().map(|s| (s.key.as_str(), s.title.as_str())).collect();
        assert_eq!(
            shown,
            [
                ("Operations", "Operations"),
                ("Operations > Deploy", "Deploy"),
                ("Operations > On call", "On call")
            ]
        );
        assert!(s[1].body.contains("### Rollback") && s[1].body.contains("make rollback"));
        assert_eq!(s[1].data("docs/ops.md")["heading"], "Operations > Deploy");
    }

    #[test]
    fn untitled_text_and_repeated_headings() {
        let s = sections("notes.md", "Some words first.\n\n## Setup\n\none\n\n## Setup\n\ntwo\n\n## Empty\n");
        let keys: Vec<&str> = s.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(keys, ["notes", "Setup", "Setup#2"]);
        let plain = sections("plain.md", "---\ntitle: x\n---\nJust text.\n");
        assert_eq!(
            (plain.len(), plain[0].title.as_str(), plain[0].body.as_str()),
            (1, "plain", "Just text.")
        );
        assert!(sections("empty.md", "  \n").is_empty());
    }
}
