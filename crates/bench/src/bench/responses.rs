//! `cortex-bench bench --responses --dataset DIR`: what each kind of `memory_find` answer costs an
//! agent's context window, on real prose (a BEIR dataset's abstracts, e.g. SciFact) and the
//! dataset's own natural-language queries. Claude Code hands the model
//! `JSON.stringify(structuredContent)` and cuts tool output at 25,000 tokens, so the figure is
//! the characters of that JSON, and tokens counted conservatively as characters / 3. Each
//! case runs brief (the default for a search) and full (every field: the earlier shape).

use crate::eval::dataset::lines;
use crate::output;
use cortex_domain::FindRequest;
use cortex_service::scope_inference::InferredScope;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Config, MemoryService};
use cortex_store::DbTarget;
use serde_json::{Value, json};
use std::path::Path;

/// Abstracts stored: a memory of a few thousand items of a few hundred words.
const DOCS: usize = 2_000;

/// Sizes of one case over every query: characters of the compact JSON, and how many answers
/// were cut to the budget.
#[derive(Default)]
struct Sizes {
    chars: Vec<usize>,
    truncated: usize,
}

impl Sizes {
    fn add(&mut self, answer: &cortex_service::response::FindResponse) {
        self.chars.push(serde_json::to_string(answer).map_or(0, |s| s.len()));
        self.truncated += usize::from(answer.truncated);
    }

    fn row(&self, case: &str) -> String {
        let n = self.chars.len().max(1);
        let mean = self.chars.iter().sum::<usize>() / n;
        let max = self.chars.iter().copied().max().unwrap_or(0);
        format!("| {case} | {mean} | {max} | {} | {}/{} |", max / 3, self.truncated, self.chars.len())
    }
}

pub fn run(dataset: &Path, queries: usize, dir: &Path) -> Result<(), String> {
    let file = dir.join("bench-responses.db");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
    }
    // Sizes do not depend on the route: lexical only keeps the run short.
    let scope = InferredScope::fixed("bench", "responses", "main");
    let service = MemoryService::open(&Config::new(DbTarget::Sqlite(file), scope, EmbedderChoice::None))
        .map_err(|e| e.to_string())?;
    let docs = lines(&dataset.join("corpus.jsonl"))?;
    for batch in docs.iter().take(DOCS).collect::<Vec<_>>().chunks(100) {
        let items: Vec<Value> = batch
            .iter()
            .map(|d| {
                let title = d["title"].as_str().unwrap_or("");
                let text = d["text"].as_str().unwrap_or("");
                json!({"kind": "section", "data": {"title": title, "body": text}, "dedupe": false})
            })
            .collect();
        super::store_items(&service, &items)?;
    }
    let questions: Vec<String> = lines(&dataset.join("queries.jsonl"))?
        .iter()
        .filter_map(|q| q["text"].as_str().map(str::to_string))
        .take(queries)
        .collect();
    let cases = [
        ("default (10 hits)", json!({})),
        ("limit 100", json!({"limit": 100})),
        ("deep, limit 100, expand all", json!({"mode": "deep", "limit": 100, "expand": "all"})),
    ];
    let mut rows = Vec::new();
    for detail in ["brief", "full"] {
        for (case, extra) in &cases {
            let mut sizes = Sizes::default();
            for q in &questions {
                let mut args = json!({"query": q, "detail": detail});
                for (k, v) in extra.as_object().into_iter().flatten() {
                    args[k] = v.clone();
                }
                // The arguments as an agent sends them, parsed as the MCP edge parses them.
                let request = FindRequest::from_json(&args).map_err(|e| e.to_string())?;
                sizes.add(&service.memory_find().find(&request).map_err(|e| e.to_string())?);
            }
            rows.push(sizes.row(&format!("{case}, {detail}")));
        }
    }
    // Reads by 100 ids: the 100 best hits of each question, read whole.
    let mut by_ids = Sizes::default();
    for q in &questions {
        let request = FindRequest::query(q.as_str()).with_limit(100);
        let hits = service.memory_find().find(&request).map_err(|e| e.to_string())?.hits;
        if !hits.is_empty() {
            let read = FindRequest::ids(hits.iter().map(|h| h.id));
            by_ids.add(&service.memory_find().find(&read).map_err(|e| e.to_string())?);
        }
    }
    rows.push(by_ids.row("reads by up to 100 ids (full)"));
    output::line(&format!(
        "{} abstracts of {}, {} queries (lexical route; sizes do not depend on the route)\n",
        DOCS.min(docs.len()),
        dataset.display(),
        questions.len()
    ));
    output::line("| answer | mean chars | max chars | max tokens (chars/3) | cut to budget |");
    output::line("|---|---:|---:|---:|---:|");
    for row in rows {
        output::line(&row);
    }
    Ok(())
}
