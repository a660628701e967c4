//! A BEIR-layout dataset read from its folder: `corpus.jsonl`, `queries.jsonl` and
//! `qrels/<split>.tsv`. A conversational set (LoCoMo) adds to each document and query the
//! `conversation` it belongs to, and to each query a `category_name`: a query is searched
//! against its own conversation only, and scored per category as well.

use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

/// One document to store.
pub struct Doc {
    pub id: String,
    /// `title` as the first line, then `text` (a conversational turn has no title).
    pub content: String,
    /// The conversation it belongs to, stored as its own project scope.
    pub conversation: Option<String>,
    /// The session of the conversation it was said in (`source.session`): a session's turns
    /// are stored together, in order, as an agent storing a conversation would.
    pub session: Option<String>,
}

/// One query with its judgments.
pub struct Judged {
    pub id: String,
    pub text: String,
    pub relevant: HashMap<String, f64>,
    /// Searched in this conversation's scope only.
    pub conversation: Option<String>,
    pub category: Option<String>,
}

/// The JSON objects of a JSON Lines file (a BEIR corpus or query file).
pub(crate) fn lines(path: &Path) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| e.to_string()))
        .collect()
}

fn text_of<'a>(value: &'a Value, field: &str) -> Option<&'a str> {
    value[field].as_str()
}

pub fn read_corpus(dataset: &Path) -> Result<Vec<Doc>, String> {
    Ok(lines(&dataset.join("corpus.jsonl"))?
        .iter()
        .map(|d| Doc {
            id: text_of(d, "_id").unwrap_or("").to_string(),
            content: format!("{}\n{}", text_of(d, "title").unwrap_or(""), text_of(d, "text").unwrap_or(""))
                .trim()
                .to_string(),
            conversation: text_of(d, "conversation").map(str::to_string),
            session: session_of(d),
        })
        .collect())
}

/// `conversation:D<session>` for a turn whose `session` is given (a number or a name).
fn session_of(d: &Value) -> Option<String> {
    let session = match &d["session"] {
        Value::Number(n) => format!("D{n}"),
        Value::String(s) => s.clone(),
        _ => return None,
    };
    Some(format!("{}:{session}", text_of(d, "conversation").unwrap_or("")))
}

/// The queries judged in `split`, in the order of their ids.
pub fn read_queries(dataset: &Path, split: &str) -> Result<Vec<Judged>, String> {
    let qrels_path = dataset.join("qrels").join(format!("{split}.tsv"));
    let qrels = std::fs::read_to_string(&qrels_path)
        .map_err(|e| format!("cannot read {}: {e}", qrels_path.display()))?;
    let mut relevant: HashMap<String, HashMap<String, f64>> = HashMap::new();
    for line in qrels.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        if let [q, d, score] = cols[..] {
            relevant
                .entry(q.to_string())
                .or_default()
                .insert(d.to_string(), score.trim().parse().unwrap_or(0.0));
        }
    }
    let mut out: Vec<(String, Judged)> = lines(&dataset.join("queries.jsonl"))?
        .into_iter()
        .filter_map(|q| {
            let id = text_of(&q, "_id")?.to_string();
            let rel = relevant.remove(&id)?;
            let judged = Judged {
                id: id.clone(),
                text: text_of(&q, "text")?.to_string(),
                relevant: rel,
                conversation: text_of(&q, "conversation").map(str::to_string),
                category: text_of(&q, "category_name").map(str::to_string),
            };
            Some((id, judged))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out.into_iter().map(|(_, j)| j).collect())
}
