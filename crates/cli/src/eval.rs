//! `cortex eval`: retrieval quality on a BEIR-layout dataset (corpus.jsonl, queries.jsonl,
//! qrels/<split>.tsv), loaded through the service as a user's items would be. Reports nDCG@10,
//! Recall@5, Recall@10, MRR@10 and latency per route. Tune on `train`, report on `test`.

use crate::output;
use cortex_domain::{FindRequest, Mode, ScopeLevel};
use cortex_service::scope_inference::InferredScope;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Config, MemoryService};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct EvalArgs {
    /// The dataset folder (BEIR layout).
    #[arg(long)]
    dataset: PathBuf,
    /// Which qrels to score against: test (report) or train (tune).
    #[arg(long, default_value = "test")]
    split: String,
    /// Lexical weights to try in hybrid fusion, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "0.5")]
    weights: Vec<f64>,
    /// Keep the loaded corpus in this SQLite file and reuse it on the next run [default: a
    /// temporary file]. Never the memory of `--db`/`CORTEX_DB`, which eval does not touch.
    #[arg(long)]
    corpus_db: Option<PathBuf>,
}

struct Judged {
    text: String,
    relevant: HashMap<String, f64>,
}

pub fn run(args: EvalArgs) -> Result<ExitCode, String> {
    let temp = std::env::temp_dir().join(format!("cortex-eval-{}.db", std::process::id()));
    let db = args.corpus_db.clone().unwrap_or_else(|| temp.clone());
    let fresh = !db.exists();
    let scope = InferredScope::fixed("eval", "beir", "main");
    let embedder = cortex_service::config::embedder_from_env().map_err(|e| e.to_string())?;
    if let EmbedderChoice::None = embedder {
        return Err(
            "cortex eval compares lexical, dense and hybrid routes: unset CORTEX_EMBEDDER=none".into()
        );
    }
    let service =
        MemoryService::open(&Config::new(cortex_store::DbTarget::Sqlite(db.clone()), scope, embedder))
            .map_err(|e| e.to_string())?;
    let id_map = PathBuf::from(format!("{}.ids.json", db.display()));
    let doc_of = if fresh || !id_map.exists() {
        let doc_of = load_corpus(&service, &args.dataset)?;
        std::fs::write(&id_map, serde_json::to_string(&doc_of).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
        doc_of
    } else {
        tracing::info!("reusing the corpus loaded in {}", db.display());
        let text = std::fs::read_to_string(&id_map).map_err(|e| e.to_string())?;
        serde_json::from_str(&text).map_err(|e| e.to_string())?
    };
    let queries = read_queries(&args.dataset, &args.split)?;
    output::line(&format!(
        "dataset {}, split {}, {} queries, {} documents",
        args.dataset.display(),
        args.split,
        queries.len(),
        doc_of.len()
    ));
    output::line("| route | lexical weight | nDCG@10 | Recall@5 | Recall@10 | MRR@10 | p50 | p95 |");
    output::line("|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut routes: Vec<(&str, Mode, f64)> =
        vec![("fast (lexical)", Mode::Fast, 1.0), ("dense only", Mode::Auto, 0.0)];
    routes.extend(args.weights.iter().map(|w| ("auto (hybrid)", Mode::Auto, *w)));
    for (name, mode, weight) in routes {
        let (scores, mut times) = evaluate(&service, &queries, &doc_of, mode, weight)?;
        times.sort();
        let pct = |p: f64| times[((p * times.len() as f64).ceil() as usize).clamp(1, times.len()) - 1];
        output::line(&format!(
            "| {name} | {weight:.2} | {:.4} | {:.4} | {:.4} | {:.4} | {:.1} ms | {:.1} ms |",
            scores[0],
            scores[1],
            scores[2],
            scores[3],
            ms(pct(0.5)),
            ms(pct(0.95))
        ));
    }
    if args.corpus_db.is_none() {
        for suffix in ["", "-wal", "-shm", ".ids.json"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", temp.display()));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The JSON objects of a JSON Lines file (a BEIR corpus or query file).
pub(crate) fn lines(path: &Path) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| e.to_string()))
        .collect()
}

/// Stores every document as a section (`title` as the first line) and returns item id → doc id.
fn load_corpus(service: &MemoryService, dataset: &Path) -> Result<HashMap<String, String>, String> {
    let docs = lines(&dataset.join("corpus.jsonl"))?;
    let started = Instant::now();
    let mut doc_of = HashMap::new();
    for batch in docs.chunks(100) {
        let items: Vec<Value> = batch
            .iter()
            .map(|d| {
                let content =
                    format!("{}\n{}", d["title"].as_str().unwrap_or(""), d["text"].as_str().unwrap_or(""))
                        .trim()
                        .to_string();
                json!({"kind": "section", "content": content, "dedupe": false,
                       "idempotency_key": format!("beir:{}", d["_id"].as_str().unwrap_or(""))})
            })
            .collect();
        let response = service.store(&json!({ "items": items })).map_err(|e| e.to_string())?;
        for (result, doc) in response.results.iter().zip(batch) {
            if let Some(id) = &result.id {
                doc_of.insert(id.clone(), doc["_id"].as_str().unwrap_or("").to_string());
            }
        }
        tracing::info!(
            stored = doc_of.len(),
            of = docs.len(),
            secs = started.elapsed().as_secs(),
            "loading corpus"
        );
    }
    tracing::info!(docs = doc_of.len(), secs = started.elapsed().as_secs(), "corpus loaded");
    Ok(doc_of)
}

fn read_queries(dataset: &Path, split: &str) -> Result<Vec<Judged>, String> {
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
            let id = q["_id"].as_str()?.to_string();
            let rel = relevant.remove(&id)?;
            Some((id, Judged { text: q["text"].as_str()?.to_string(), relevant: rel }))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out.into_iter().map(|(_, j)| j).collect())
}

/// Mean nDCG@10, Recall@5, Recall@10, MRR@10, and the time of each find.
fn evaluate(
    service: &MemoryService,
    queries: &[Judged],
    doc_of: &HashMap<String, String>,
    mode: Mode,
    weight: f64,
) -> Result<([f64; 4], Vec<Duration>), String> {
    let mut sums = [0.0; 4];
    let mut times = Vec::with_capacity(queries.len());
    for q in queries {
        let text: String = q.text.chars().take(1000).collect();
        let mut request = FindRequest::query(&text);
        request.mode = mode;
        request.lexical_weight = weight;
        request.widen = Some(ScopeLevel::All);
        request.max_content_chars = 0;
        // Every route's timing includes its own query embedding, as a fresh agent query would.
        service.forget_query_embeddings();
        let started = Instant::now();
        let response = service.find_request(&request).map_err(|e| e.to_string())?;
        times.push(started.elapsed());
        let ranked: Vec<&str> = response
            .hits
            .iter()
            .map(|h| doc_of.get(&h.id.to_string()).map(String::as_str).unwrap_or(""))
            .collect();
        let m = metrics(&ranked, &q.relevant);
        for (s, v) in sums.iter_mut().zip(m) {
            *s += v;
        }
    }
    let n = queries.len().max(1) as f64;
    Ok((sums.map(|s| s / n), times))
}

/// nDCG@10 (graded gains, log2 discount), Recall@5, Recall@10, MRR@10 for one ranked list.
pub fn metrics(ranked: &[&str], relevant: &HashMap<String, f64>) -> [f64; 4] {
    let gain = |d: &str| relevant.get(d).copied().unwrap_or(0.0);
    let dcg: f64 = ranked.iter().take(10).enumerate().map(|(i, d)| gain(d) / (i as f64 + 2.0).log2()).sum();
    let mut ideal: Vec<f64> = relevant.values().copied().filter(|g| *g > 0.0).collect();
    ideal.sort_by(|a, b| b.total_cmp(a));
    let idcg: f64 = ideal.iter().take(10).enumerate().map(|(i, g)| g / (i as f64 + 2.0).log2()).sum();
    let total = ideal.len().max(1) as f64;
    let recall = |k: usize| ranked.iter().take(k).filter(|d| gain(d) > 0.0).count() as f64 / total;
    let mrr = ranked.iter().take(10).position(|d| gain(d) > 0.0).map_or(0.0, |i| 1.0 / (i as f64 + 1.0));
    [if idcg > 0.0 { dcg / idcg } else { 0.0 }, recall(5), recall(10), mrr]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_of_known_rankings() {
        let relevant: HashMap<String, f64> = [("a".to_string(), 1.0), ("b".to_string(), 1.0)].into();
        assert_eq!(metrics(&["a", "b", "x"], &relevant), [1.0, 1.0, 1.0, 1.0]);
        let [ndcg, r5, r10, mrr] = metrics(&["x", "a"], &relevant);
        assert!((ndcg - (1.0 / 3f64.log2()) / (1.0 + 1.0 / 3f64.log2())).abs() < 1e-12);
        assert_eq!((r5, r10, mrr), (0.5, 0.5, 0.5));
        assert_eq!(metrics(&[], &relevant), [0.0, 0.0, 0.0, 0.0]);
    }
}
