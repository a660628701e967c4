//! An exported file read back into the items it shows (see the parent module for the form).
//! Only the files `render` writes are read here: a file is one when its front matter names
//! a `cortex_id`, or when it holds a release's `<!-- cortex: {…} -->` comment.

use super::nesting::{Fences, unnest};
use super::{COMMENT_END, COMMENT_START, CONTENT_LABEL, ID_KEY, is_top_heading, label, title_field};
use crate::kind::{FieldType, Kind};
use serde_json::{Map, Value};
use uuid::Uuid;

/// One item of an exported file.
#[derive(Debug, Clone, PartialEq)]
pub struct Exported {
    pub id: Uuid,
    pub kind: Kind,
    pub data: Map<String, Value>,
    pub content: Option<String>,
    pub tags: Vec<String>,
    /// The file of the record that replaces this one (a decision's `superseded_by`).
    pub superseded_by: Option<String>,
}

/// Why an exported file cannot be read back; each message names the place in the file to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    #[error("{at}: `{ID_KEY}` must be the item's id as exported (a UUID), not {text:?}")]
    BadId { at: String, text: String },
    #[error("the front matter's `kind: {0}` is not a kind: one of {names}", names = Kind::names())]
    UnknownKind(String),
    #[error(
        "the version `## {0}` has no `{COMMENT_START}{{…}}{COMMENT_END}` line under it: \
         a release is added to the memory with memory_store, not in an exported changelog"
    )]
    NoComment(String),
    #[error("the comment under `## {0}` is not a JSON object as exported")]
    CommentNotObject(String),
}

/// Front matter keys that are not `data` fields: written for people (`date`, `deciders`)
/// or holding the item's other parts.
const NOT_DATA: &[&str] = &[ID_KEY, "kind", "date", "deciders", "superseded_by", "tags", "content"];

/// Whether `text` is a file `cortex export --markdown` wrote.
pub fn is_exported(text: &str) -> bool {
    let mut lines = text.lines();
    let front = lines.next() == Some("---")
        && lines.take_while(|l| *l != "---").any(|l| l.starts_with(&format!("{ID_KEY}:")));
    front || text.lines().any(|l| l.starts_with(COMMENT_START))
}

/// The items of an exported file, or what keeps it from being read.
pub fn read(text: &str) -> Result<Vec<Exported>, ReadError> {
    if text.lines().next() == Some("---") {
        read_item(text).map(|item| vec![item])
    } else {
        read_changelog(text)
    }
}

/// A front matter value: JSON (what export writes), else the text as written.
fn value(raw: &str) -> Value {
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.trim_matches(['"', '\'']).to_string()))
}

fn id_of(value: Option<&Value>, at: &str) -> Result<Uuid, ReadError> {
    // A number or a list is shown as written, not as an empty text.
    let text = match value {
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    Uuid::parse_str(text.trim()).map_err(|_| ReadError::BadId { at: at.to_string(), text })
}

fn tags_of(value: Option<Value>) -> Vec<String> {
    match value {
        Some(Value::Array(tags)) => tags.into_iter().filter_map(|t| t.as_str().map(str::to_string)).collect(),
        Some(Value::String(tag)) if !tag.is_empty() => vec![tag],
        _ => Vec::new(),
    }
}

/// A `##` section of a file: the field it holds (none for the item's content) and its lines.
type Section<'a> = (Option<(&'static str, FieldType)>, Vec<&'a str>);

fn read_item(text: &str) -> Result<Exported, ReadError> {
    let mut lines = text.lines().skip(1);
    let mut front: Map<String, Value> = Map::new();
    for line in lines.by_ref() {
        if line == "---" {
            break;
        }
        if let Some((key, raw)) = line.split_once(':') {
            front.insert(key.trim().to_string(), value(raw.trim()));
        }
    }
    let id = id_of(front.get(ID_KEY), "the front matter")?;
    let kind_text = front.get("kind").and_then(Value::as_str).unwrap_or("");
    let kind = Kind::parse(kind_text).ok_or_else(|| ReadError::UnknownKind(kind_text.to_string()))?;
    let mut data: Map<String, Value> = front
        .iter()
        .filter(|(k, _)| !NOT_DATA.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut content = front.get("content").and_then(Value::as_str).map(str::to_string);
    // The body: the heading, then one `##` section per field.
    let sections: Vec<(&str, FieldType)> = kind
        .spec()
        .fields
        .iter()
        .filter(|f| matches!(f.ty, FieldType::Text | FieldType::ShortList))
        .map(|f| (f.name, f.ty))
        .collect();
    let mut current: Option<Section> = None;
    let mut done: Vec<Section> = Vec::new();
    let mut fences = Fences::default();
    for line in lines {
        if fences.inside(line) {
            if let Some((_, body)) = current.as_mut() {
                body.push(line);
            }
            continue;
        }
        if let Some(title) = line.strip_prefix("# ").filter(|_| current.is_none()) {
            if let Some(field) = title_field(kind) {
                data.insert(field.into(), Value::String(title.trim().to_string()));
            }
            continue;
        }
        if let Some(name) = line.strip_prefix("## ") {
            let name = name.trim();
            let field = sections.iter().copied().find(|(f, _)| label(kind, f).eq_ignore_ascii_case(name));
            if field.is_some() || name.eq_ignore_ascii_case(CONTENT_LABEL) {
                done.extend(current.take());
                current = Some((field, Vec::new()));
                continue;
            }
        }
        if let Some((_, body)) = current.as_mut() {
            body.push(line);
        }
    }
    done.extend(current);
    for (field, body) in done {
        let text = unnest(&body);
        match field {
            None => content = (!text.is_empty()).then_some(text),
            Some((name, FieldType::ShortList)) => {
                let items: Vec<Value> = body
                    .iter()
                    .filter_map(|l| l.trim_start().strip_prefix(['-', '*']))
                    .map(|l| Value::String(l.trim().to_string()))
                    .filter(|v| v.as_str().is_some_and(|s| !s.is_empty()))
                    .collect();
                if !items.is_empty() {
                    data.insert(name.into(), Value::Array(items));
                }
            }
            Some((name, _)) if !text.is_empty() => {
                data.insert(name.into(), Value::String(text));
            }
            Some(_) => {}
        }
    }
    Ok(Exported {
        id,
        kind,
        data,
        content,
        tags: tags_of(front.get("tags").cloned()),
        superseded_by: front.get("superseded_by").and_then(Value::as_str).map(str::to_string),
    })
}

fn read_changelog(text: &str) -> Result<Vec<Exported>, ReadError> {
    let mut out: Vec<Exported> = Vec::new();
    let mut notes: Vec<&str> = Vec::new();
    let mut lines = text.lines().peekable();
    let finish = |out: &mut Vec<Exported>, notes: &mut Vec<&str>| {
        let text = notes.join("\n").trim().to_string();
        if let Some(last) = out.last_mut()
            && !text.is_empty()
        {
            last.data.insert("notes".into(), Value::String(text));
        }
        notes.clear();
    };
    while let Some(line) = lines.next() {
        if let Some(heading) = line.strip_prefix("## ") {
            finish(&mut out, &mut notes);
            while lines.peek().is_some_and(|l| l.trim().is_empty()) {
                lines.next();
            }
            let comment = lines.next().unwrap_or("");
            let json = comment
                .strip_prefix(COMMENT_START)
                .and_then(|c| c.strip_suffix(COMMENT_END))
                .ok_or_else(|| ReadError::NoComment(heading.to_string()))?;
            let Ok(Value::Object(mut fields)) = serde_json::from_str::<Value>(json) else {
                return Err(ReadError::CommentNotObject(heading.to_string()));
            };
            let id = id_of(fields.get(ID_KEY), &format!("the comment under `## {heading}`"))?;
            fields.remove(ID_KEY);
            let tags = tags_of(fields.remove("tags"));
            let content = fields.remove("content").and_then(|c| c.as_str().map(str::to_string));
            out.push(Exported { id, kind: Kind::Release, data: fields, content, tags, superseded_by: None });
        } else if !out.is_empty() && !is_top_heading(line) {
            notes.push(line);
        }
    }
    finish(&mut out, &mut notes);
    Ok(out)
}
