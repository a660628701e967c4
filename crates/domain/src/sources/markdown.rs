//! Markdown read as far as ingesting needs it: ATX headings outside code fences, the text
//! under each, a flat YAML front matter, and list items. Not a full CommonMark parser: the
//! documents ingested (decision records, changelogs, docs) use these forms.

/// One `#` heading.
#[derive(Debug, Clone, PartialEq)]
pub struct Heading {
    pub level: usize,
    pub text: String,
    /// Byte offset where the heading's line starts.
    pub start: usize,
    /// Byte offset just after the heading's line.
    pub body_start: usize,
}

/// The ATX headings of `text`, in order, leaving out lines inside ``` or ~~~ fences.
pub fn headings(text: &str) -> Vec<Heading> {
    let mut out = Vec::new();
    let mut fence: Option<&str> = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let trimmed = line.trim_end_matches(['\n', '\r']);
        let indent = trimmed.len() - trimmed.trim_start_matches(' ').len();
        let body = trimmed.trim_start_matches(' ');
        if indent <= 3 {
            let marker = if body.starts_with("```") {
                Some("```")
            } else if body.starts_with("~~~") {
                Some("~~~")
            } else {
                None
            };
            match (fence, marker) {
                (None, Some(m)) => {
                    fence = Some(m);
                    continue;
                }
                (Some(open), Some(m)) if open == m => {
                    fence = None;
                    continue;
                }
                _ => {}
            }
        }
        if fence.is_some() || indent > 3 {
            continue;
        }
        let level = body.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&level) {
            continue;
        }
        let rest = &body[level..];
        if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
            continue;
        }
        let text = rest.trim().trim_end_matches('#').trim_end().to_string();
        out.push(Heading { level, text, start, body_start: offset });
    }
    out
}

/// The text under heading `i` up to the next heading of any level, trimmed.
pub fn own_text(text: &str, headings: &[Heading], i: usize) -> String {
    let end = headings.get(i + 1).map_or(text.len(), |h| h.start);
    text[headings[i].body_start..end].trim().to_string()
}

/// The text under heading `i` with its subsections: up to the next heading of its level or
/// higher, trimmed.
pub fn section_text(text: &str, headings: &[Heading], i: usize) -> String {
    let level = headings[i].level;
    let end = headings[i + 1..].iter().find(|h| h.level <= level).map_or(text.len(), |h| h.start);
    text[headings[i].body_start..end].trim().to_string()
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

/// A YAML front matter's top-level keys (lowercased) and values, and the byte offset where
/// the document after it starts. Only the flat form decision records use: `key: value`,
/// `key: [a, b]` and `key:` followed by `- item` lines; nested maps are passed over.
pub fn front_matter(text: &str) -> (Vec<(String, FrontValue)>, usize) {
    let text_start = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let rest = &text[text_start..];
    let Some(first) = rest.split_inclusive('\n').next() else { return (Vec::new(), 0) };
    if first.trim_end() != "---" {
        return (Vec::new(), 0);
    }
    let mut offset = text_start + first.len();
    let mut entries: Vec<(String, FrontValue)> = Vec::new();
    for line in rest[first.len()..].split_inclusive('\n') {
        offset += line.len();
        let line = line.trim_end();
        if line == "---" || line == "..." {
            return (entries, offset);
        }
        if line.trim_start().starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if line.starts_with([' ', '\t', '-']) {
            let item = line.trim_start();
            if let (Some(item), Some((_, value))) = (item.strip_prefix('-'), entries.last_mut()) {
                let item = unquote(item.trim());
                match value {
                    FrontValue::List(items) => items.push(item),
                    FrontValue::Text(t) if t.is_empty() => *value = FrontValue::List(vec![item]),
                    FrontValue::Text(_) => {}
                }
            }
            continue;
        }
        let Some((key, value)) = line.split_once(':') else { continue };
        let value = value.trim();
        let value = match value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
            Some(inner) => FrontValue::List(
                inner.split(',').map(|s| unquote(s.trim())).filter(|s| !s.is_empty()).collect(),
            ),
            None => FrontValue::Text(unquote(value)),
        };
        entries.push((key.trim().to_lowercase(), value));
    }
    // No closing line: not a front matter.
    (Vec::new(), 0)
}

fn unquote(text: &str) -> String {
    let text = text.trim();
    for q in ['"', '\''] {
        if let Some(inner) = text.strip_prefix(q).and_then(|t| t.strip_suffix(q)) {
            return inner.to_string();
        }
    }
    text.to_string()
}

/// The items of a Markdown list (`*`, `-`, `+` or `1.`), first lines only, without markup.
pub fn list_items(text: &str) -> Vec<String> {
    text.lines()
        .filter(|line| !line.starts_with([' ', '\t']))
        .filter_map(|line| {
            let line = line.trim();
            let rest = line
                .strip_prefix("* ")
                .or_else(|| line.strip_prefix("- "))
                .or_else(|| line.strip_prefix("+ "))
                .or_else(|| {
                    let digits = line.chars().take_while(char::is_ascii_digit).count();
                    (digits > 0).then(|| line[digits..].strip_prefix(". ")).flatten()
                })?;
            let item = plain(rest);
            (!item.is_empty()).then_some(item)
        })
        .collect()
}

/// Inline markup taken off a short text: links become their text, emphasis and code marks go.
pub fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find("](").and_then(|close| after[close + 2..].find(')').map(|end| (close, end))) {
            Some((close, end)) if !after[..close].contains('[') => {
                out.push_str(&after[..close]);
                rest = &after[close + 2 + end + 1..];
            }
            _ => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out.replace(['*', '`'], "").replace("__", "").trim().to_string()
}

/// The targets of the Markdown links in `text` (`[text](target)`), in order.
pub fn link_targets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        let target = after[..end].split_whitespace().next().unwrap_or("");
        if !target.is_empty() {
            out.push(target.to_string());
        }
        rest = &after[end..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_skip_fences_and_need_a_space() {
        let text =
            "# Title #\n\nintro\n```sh\n# not a heading\n```\n## Part one\ntext\n#hashtag\n   ### Deep\n";
        let h = headings(text);
        let names: Vec<(usize, &str)> = h.iter().map(|h| (h.level, h.text.as_str())).collect();
        assert_eq!(names, [(1, "Title"), (2, "Part one"), (3, "Deep")]);
        assert_eq!(own_text(text, &h, 1), "text\n#hashtag");
        assert_eq!(section_text(text, &h, 1), "text\n#hashtag\n   ### Deep");
    }

    #[test]
    fn front_matter_in_the_flat_form_records_use() {
        let text = "---\nstatus: \"accepted\"\ndate: 2024-03-01\ndeciders: [Ann, 'Bo']\nconsulted:\n  - Cy\n  - Di\n# a comment\n---\n# Title\n";
        let (fm, end) = front_matter(text);
        assert_eq!(fm[0], ("status".into(), FrontValue::Text("accepted".into())));
        assert_eq!(fm[2].1.as_list(), ["Ann", "Bo"]);
        assert_eq!(fm[3].1, FrontValue::List(vec!["Cy".into(), "Di".into()]));
        assert_eq!(&text[end..], "# Title\n");
        assert_eq!(front_matter("---\nno end\n").1, 0);
        assert_eq!(front_matter("# Title\n---\n").0, Vec::new());
    }

    #[test]
    fn list_items_and_plain_text() {
        let items = list_items(
            "* [MADR](https://adr.github.io/madr/) 2.1.2\n- `plain`\n1. **first**\n  * nested\ntext",
        );
        assert_eq!(items, ["MADR 2.1.2", "plain", "first"]);
        assert_eq!(
            link_targets("Superseded by [2. Use X](0002-use-x.md) and [y](a.md#top)"),
            ["0002-use-x.md", "a.md#top"]
        );
    }
}
