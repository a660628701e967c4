//! `cortex-bench eval`: retrieval quality on a BEIR-layout dataset (corpus.jsonl, queries.jsonl,
//! qrels/<split>.tsv), loaded through the service as a user's items would be. Reports nDCG@10,
//! Recall@5, Recall@10, MRR@10 and latency per route, overall and per query category. Tune on
//! `train` (and locomo-dev), report on `test`.
//!
//! A conversational set (documents and queries carry `conversation`, as locomo-dev's do) is
//! run as an agent's memory would hold it: each conversation in its own project scope, every
//! turn kept (`dedupe: false`), a session's turns stored together in order with their
//! `source.session`, each query searched in its own conversation's scope.

pub(crate) mod dataset;
mod metrics;
pub(crate) mod recall_hook;

use crate::output;
use cortex_domain::fusion::Fusion;
use cortex_domain::{FindRequest, Mode, Scope, ScopeLevel};
use cortex_service::scope_inference::InferredScope;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Config, MemoryService};
use dataset::{Doc, Judged};
use metrics::{RouteTally, Tally};
use serde_json::json;
use std::collections::HashMap;
use std::path::PathBuf;
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
    /// Routes to score, comma separated: fast (lexical), dense (dense only), auto, deep, and
    /// auto-alone (auto without session neighbours, to see what each part gives).
    #[arg(long, value_delimiter = ',', default_value = "fast,dense,auto,deep")]
    routes: Vec<RouteName>,
    /// Also score `auto` with each of these fixed lexical weights (0–1), comma separated: the
    /// earlier fusion (each list scaled by its best, no neighbours), to compare.
    #[arg(long, value_delimiter = ',')]
    weights: Vec<f64>,
    /// Keep the loaded corpus in this SQLite file and reuse it on the next run [default: a
    /// temporary file]. Never the memory `CORTEX_DB` names, which eval does not touch.
    #[arg(long)]
    corpus_db: Option<PathBuf>,
    /// Write each query's raw route lists (conjunctive and disjunctive BM25, cosine, and the
    /// cosine of every disjunctive lexical candidate; `auto`'s query, `--dump-pool` deep) to this JSON Lines file, to tune the fusion offline.
    #[arg(long)]
    dump: Option<PathBuf>,
    #[arg(long, default_value_t = 300)]
    dump_pool: usize,
    /// Write each query's ranked doc ids, metrics and notes per route to this JSON Lines file,
    /// to see which queries two routes rank differently (and what `deep` corrected).
    #[arg(long)]
    per_query: Option<PathBuf>,
    /// Instead of the routes: how `cortex recall` (the prompt-submit hook) chooses what to
    /// inject, lexical-only and hybrid (`recall_hook.rs`); `--dump` writes each prompt's
    /// candidates.
    #[arg(long)]
    recall_hook: bool,
    /// With `--recall-hook`: another dataset whose queries are asked as prompts about nothing
    /// this memory holds (SciFact's claims against locomo-dev, and the reverse).
    #[arg(long)]
    unrelated_dataset: Option<PathBuf>,
    /// The split of `--unrelated-dataset` whose queries are asked.
    #[arg(long, default_value = "train")]
    unrelated_split: String,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum RouteName {
    Fast,
    Dense,
    Auto,
    Deep,
    AutoAlone,
}

/// One row group of the report: how its finds are asked.
struct Route {
    name: String,
    mode: Mode,
    /// How its finds fuse their routes (the service's own rule is `Fusion::TUNED`).
    fusion: Fusion,
}

impl Route {
    fn of(name: RouteName) -> Route {
        let (label, mode, fusion) = match name {
            RouteName::Fast => ("fast", Mode::Fast, Fusion::TUNED),
            RouteName::Dense => ("dense", Mode::Auto, Fusion::fixed(0.0)),
            RouteName::Auto => ("auto", Mode::Auto, Fusion::TUNED),
            RouteName::Deep => ("deep", Mode::Deep, Fusion::TUNED),
            RouteName::AutoAlone => {
                ("auto without neighbours", Mode::Auto, Fusion { neighbours: false, ..Fusion::TUNED })
            }
        };
        Route { name: label.into(), mode, fusion }
    }
}

pub fn run(args: EvalArgs) -> Result<ExitCode, String> {
    let temp = std::env::temp_dir().join(format!("cortex-eval-{}.db", std::process::id()));
    let db = args.corpus_db.clone().unwrap_or_else(|| temp.clone());
    let fresh = !db.exists();
    let scope = InferredScope::fixed("eval", "beir", "main");
    let embedder = cortex_service::config::embedder_from_env().map_err(|e| e.to_string())?;
    if let EmbedderChoice::None = &embedder {
        return Err(
            "cortex-bench eval compares lexical, dense and hybrid routes: unset CORTEX_EMBEDDER=none".into(),
        );
    }
    let mut config = Config::new(cortex_store::DbTarget::Sqlite(db.clone()), scope, embedder);
    // A run on a shared machine can lift the deadline: a find whose process was paused
    // answered lexical only, and the figures moved with the machine's load.
    config.find_deadline = cortex_service::config::find_deadline_from_env().map_err(|e| e.to_string())?;
    config.lexical = cortex_service::config::lexical_from_env(&config.db).map_err(|e| e.to_string())?;
    let service = MemoryService::open(&config).map_err(|e| e.to_string())?;
    let id_map = PathBuf::from(format!("{}.ids.json", db.display()));
    let doc_of = if fresh || !id_map.exists() {
        let doc_of = load_corpus(&service, &dataset::read_corpus(&args.dataset)?)?;
        std::fs::write(&id_map, serde_json::to_string(&doc_of).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
        doc_of
    } else {
        tracing::info!("reusing the corpus loaded in {}", db.display());
        let text = std::fs::read_to_string(&id_map).map_err(|e| e.to_string())?;
        serde_json::from_str(&text).map_err(|e| e.to_string())?
    };
    let queries = dataset::read_queries(&args.dataset, &args.split)?;
    let conversations =
        queries.iter().filter_map(|q| q.conversation.as_deref()).collect::<std::collections::BTreeSet<_>>();
    output::line(&format!(
        "dataset {}, split {}, {} queries, {} documents{}",
        args.dataset.display(),
        args.split,
        queries.len(),
        doc_of.len(),
        if conversations.is_empty() {
            String::new()
        } else {
            format!(", queries of {} conversations, each searched in its own scope", conversations.len())
        }
    ));
    if args.recall_hook {
        let other = match &args.unrelated_dataset {
            Some(d) => dataset::read_queries(d, &args.unrelated_split)?,
            None => Vec::new(),
        };
        let measured = recall_hook::run(&service, &queries, &other, &doc_of, args.dump.as_deref());
        remove_temporary(&args, &temp);
        return measured.map(|()| ExitCode::SUCCESS);
    }
    output::line("| route | category | queries | nDCG@10 | Recall@5 | Recall@10 | MRR@10 | p50 | p95 |");
    output::line("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut routes: Vec<Route> = args.routes.iter().map(|r| Route::of(*r)).collect();
    routes.extend(args.weights.iter().map(|w| Route {
        name: format!("auto w={w:.2}"),
        mode: Mode::Auto,
        fusion: Fusion::fixed(*w),
    }));
    if let Some(path) = &args.dump {
        dump_routes(&service, &queries, &doc_of, args.dump_pool, path)?;
    }
    let mut per_query = String::new();
    for route in &routes {
        let tally = evaluate(&service, &queries, &doc_of, route, &mut per_query)?;
        row(&route.name, "all", &tally.all);
        for (category, t) in &tally.by_category {
            row(&route.name, category, t);
        }
    }
    if let Some(path) = &args.per_query {
        std::fs::write(path, per_query).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    remove_temporary(&args, &temp);
    Ok(ExitCode::SUCCESS)
}

/// The corpus database of this run, unless `--corpus-db` keeps it.
fn remove_temporary(args: &EvalArgs, temp: &std::path::Path) {
    if args.corpus_db.is_none() {
        // The database, and the vector index file the service wrote beside it.
        for suffix in ["", "-wal", "-shm", ".ids.json", ".vectors"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", temp.display()));
        }
        // The lexical index the service built beside the database.
        let _ = std::fs::remove_dir_all(format!("{}.lexical", temp.display()));
    }
}

fn row(route: &str, category: &str, t: &Tally) {
    let [ndcg, r5, r10, mrr] = t.means();
    output::line(&format!(
        "| {route} | {category} | {} | {ndcg:.4} | {r5:.4} | {r10:.4} | {mrr:.4} | {:.1} ms | {:.1} ms |",
        t.count(),
        ms(t.percentile(0.5)),
        ms(t.percentile(0.95))
    ));
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Stores every document as a section, a conversation's turns in that conversation's project
/// scope, a session's turns together and in order with their `source.session`; returns item
/// id → doc id.
fn load_corpus(service: &MemoryService, docs: &[Doc]) -> Result<HashMap<String, String>, String> {
    let started = Instant::now();
    let mut doc_of = HashMap::new();
    for batch in batches(docs) {
        let items: Vec<serde_json::Value> = batch
            .iter()
            .map(|d| {
                let mut item = json!({"kind": "section", "content": d.content, "dedupe": false,
                                      "idempotency_key": format!("beir:{}", d.id)});
                if let Some(conversation) = &d.conversation {
                    item["scope"] = json!({ "project": conversation });
                }
                if let Some(session) = &d.session {
                    item["source"] = json!({ "session": session });
                }
                item
            })
            .collect();
        let response = crate::bench::store_items(service, &items)?;
        for (result, doc) in response.results.iter().zip(batch) {
            match &result.id {
                Some(id) => {
                    doc_of.insert(id.clone(), doc.id.clone());
                }
                None => return Err(format!("document {} was not stored: {:?}", doc.id, result.error)),
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

/// Store calls of at most 100 documents, a session's documents in calls of their own.
fn batches(docs: &[Doc]) -> Vec<&[Doc]> {
    let mut out = Vec::new();
    for run in docs.chunk_by(|a, b| a.session == b.session) {
        out.extend(run.chunks(100));
    }
    out
}

/// The find an agent would send for this query on this route.
fn request_for(q: &Judged, route: &Route) -> FindRequest {
    let text: String = q.text.chars().take(1000).collect();
    let mut request = FindRequest::query(text).with_mode(route.mode);
    match &q.conversation {
        Some(conversation) => {
            request.scope = Some(Scope { project: Some(conversation.clone()), ..Scope::default() })
        }
        None => request.widen = Some(ScopeLevel::All),
    }
    // Full detail (scores), no content: what the metrics read.
    request.with_max_content_chars(0)
}

/// The route's metrics and find times over every query, overall and per category; one JSON
/// line per query appended to `per_query` (route, query, ranked docs, metrics, notes).
fn evaluate(
    service: &MemoryService,
    queries: &[Judged],
    doc_of: &HashMap<String, String>,
    route: &Route,
    per_query: &mut String,
) -> Result<RouteTally, String> {
    let mut tally = RouteTally::default();
    for q in queries {
        let request = request_for(q, route);
        // Every route's timing includes its own query embedding, as a fresh agent query would.
        service.lab().forget_query_embeddings();
        let started = Instant::now();
        let response = service.lab().find_with_fusion(&request, &route.fusion).map_err(|e| e.to_string())?;
        let elapsed = started.elapsed();
        let ranked: Vec<&str> = response
            .hits
            .iter()
            .map(|h| doc_of.get(&h.id.to_string()).map(String::as_str).unwrap_or(""))
            .collect();
        let scores = metrics::metrics(&ranked, &q.relevant);
        tally.add(q.category.as_deref(), scores, elapsed);
        let line = json!({"route": route.name, "id": q.id, "category": q.category, "ranked": ranked,
                          "metrics": scores, "notes": response.notes});
        per_query.push_str(&line.to_string());
        per_query.push('\n');
    }
    Ok(tally)
}

/// One JSON line per query: its judgments and each route's raw list, as doc ids and scores.
fn dump_routes(
    service: &MemoryService,
    queries: &[Judged],
    doc_of: &HashMap<String, String>,
    pool: usize,
    path: &std::path::Path,
) -> Result<(), String> {
    let auto = Route::of(RouteName::Auto);
    let mut out = String::new();
    for q in queries {
        let lists = service.lab().explain_routes(&request_for(q, &auto), pool).map_err(|e| e.to_string())?;
        let docs = |list: &[(uuid::Uuid, f64)]| -> Vec<serde_json::Value> {
            list.iter()
                .map(|(id, s)| json!([doc_of.get(&id.to_string()).map(String::as_str).unwrap_or(""), s]))
                .collect()
        };
        let line = json!({"id": q.id, "text": q.text, "category": q.category, "relevant": q.relevant,
                          "all": docs(&lists.lexical_all), "any": docs(&lists.lexical_any),
                          "dense": docs(&lists.dense), "lexcos": docs(&lists.lexical_cosines),
                          "qvec": lists.query_vector});
        out.push_str(&line.to_string());
        out.push('\n');
    }
    std::fs::write(path, out).map_err(|e| format!("cannot write {}: {e}", path.display()))
}
