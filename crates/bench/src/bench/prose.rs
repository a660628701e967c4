//! `cortex-bench bench --prose DATASET`: lexical find on real prose with the queries agents ask.
//! The synthetic corpus of the store and find benchmark has a vocabulary of a few
//! hundred words and is queried with 2–3 of them; agents ask questions of 10–20 words over
//! text with a real vocabulary, which the lexical route answers very differently (few items
//! hold every word of a long question, many hold some). So: items of 3 sentences recombined
//! from a BEIR dataset's abstracts (`prose_corpus.rs`: real words, real term statistics, any
//! number of items), queried with the dataset's held-apart claims and with two-word queries
//! from the same vocabulary.
//!
//! At each size and backend the items are stored through `memory_store` in batches of 100
//! (no embedder: the store rate is the lexical index's), then the same `fast` finds are timed
//! in-process (`MemoryFind::find`) and through MCP, in a real `cortex serve` session over
//! stdio (`session.rs`), whose peak RSS is read afterwards. With `--semantic`, `auto`
//! (hybrid) finds are timed too, each paying for its query embedding; the items' vectors are
//! the normalized mean of their sentences' vectors (each distinct sentence embedded once by
//! the local model, cached in `--dir`), set directly in the store: embedding 100k items one by
//! one would take this machine most of an hour and measure the embedder, not the find.

use super::prose_corpus::{self, Picks, Prose};
use super::session::Session;
use super::{bench_scope, ms, on_each_backend, peak_rss_kib, percentile};
use crate::output;
use cortex_domain::Mode;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Config, MemoryService};
use cortex_store::DbTarget;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

/// Untimed finds before each timed series: pages the index (and the model) in.
const WARM_UP: usize = 20;

pub struct Options<'a> {
    pub dataset: &'a Path,
    pub sizes: &'a [usize],
    /// At most this many queries of each set.
    pub queries: usize,
    pub dir: &'a Path,
    pub postgres: Option<&'a str>,
    pub semantic: bool,
}

/// One query set in one mode at one size and backend.
struct Row {
    backend: &'static str,
    size: usize,
    set: &'static str,
    mode: Mode,
    queries: usize,
    in_process: Vec<Duration>,
    mcp: Vec<Duration>,
    mean_hits: f64,
    no_hit: usize,
}

/// What storing cost at one size and backend.
struct Build {
    backend: &'static str,
    size: usize,
    store_per_sec: f64,
    /// `cortex reindex --lexical` on the stored items: live items indexed per second.
    index_per_sec: f64,
    index_mib: f64,
    db_mib: f64,
    server_rss_kib: u64,
}

pub fn run(options: &Options) -> Result<(), String> {
    let prose = Prose::read(options.dataset)?;
    let claims = prose_corpus::claims(options.dataset, options.queries)?;
    let vectors = if options.semantic {
        let EmbedderChoice::Local { model_dir, .. } =
            cortex_service::config::embedder_from_env().map_err(|e| e.to_string())?
        else {
            return Err(
                "--prose --semantic embeds the sentences with the local model (CORTEX_EMBEDDER=local)".into(),
            );
        };
        Some(prose_corpus::sentence_vectors(&prose, &model_dir, options.dir)?)
    } else {
        None
    };
    let max = options.sizes.iter().copied().max().unwrap_or(0);
    let all_picks = prose.picks(max);
    let outcomes =
        on_each_backend("prose", options.sizes, options.dir, options.postgres, |backend, db, size| {
            let corpus = Corpus {
                prose: &prose,
                picks: &all_picks[..size],
                claims: &claims,
                vectors: vectors.as_deref(),
            };
            bench_one(backend, db, &corpus, options)
        })?;
    output::line(&format!(
        "{} sentences of {}; {} claims (test split) and {} two-word queries per size\n",
        prose.sentences.len(),
        options
            .dataset
            .file_name()
            .map_or_else(|| options.dataset.display().to_string(), |n| n.to_string_lossy().into()),
        claims.len(),
        options.queries,
    ));
    output::line(
        "| backend | items | queries | mode | in-process p50 | p95 | p99 | through MCP p50 | p95 | p99 | mean hits | queries with no hit |",
    );
    output::line("|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (_, rows) in &outcomes {
        for r in rows {
            output::line(&format!(
                "| {} | {} | {} ({}) | {} | {:.2} ms | {:.2} ms | {:.2} ms | {:.2} ms | {:.2} ms | {:.2} ms | {:.1} | {} |",
                r.backend,
                r.size,
                r.set,
                r.queries,
                r.mode.as_str(),
                ms(percentile(&r.in_process, 50.0)),
                ms(percentile(&r.in_process, 95.0)),
                ms(percentile(&r.in_process, 99.0)),
                ms(percentile(&r.mcp, 50.0)),
                ms(percentile(&r.mcp, 95.0)),
                ms(percentile(&r.mcp, 99.0)),
                r.mean_hits,
                r.no_hit,
            ));
        }
    }
    output::line(
        "\n| backend | items | store items/s (batches of 100) | lexical index build items/s | index size | db size | server RSS after finds |",
    );
    output::line("|---|---:|---:|---:|---:|---:|---:|");
    for (b, _) in &outcomes {
        output::line(&format!(
            "| {} | {} | {:.0} | {:.0} | {:.1} MiB | {:.1} MiB | {:.1} MiB |",
            b.backend,
            b.size,
            b.store_per_sec,
            b.index_per_sec,
            b.index_mib,
            b.db_mib,
            b.server_rss_kib as f64 / 1024.0
        ));
    }
    Ok(())
}

/// The items and queries of one size.
struct Corpus<'a> {
    prose: &'a Prose,
    picks: &'a [Picks],
    claims: &'a [String],
    vectors: Option<&'a [Vec<f32>]>,
}

fn bench_one(
    backend: &'static str,
    db: &str,
    corpus: &Corpus,
    options: &Options,
) -> Result<(Build, Vec<Row>), String> {
    let size = corpus.picks.len();
    tracing::info!(backend, size, "prose benchmark: storing");
    let target = DbTarget::parse(db);
    let store = cortex_store::open(&target).map_err(|e| e.to_string())?;
    let lexical = Config::new(target.clone(), bench_scope(), EmbedderChoice::None);
    let service = MemoryService::with_store(store.clone(), &lexical);
    let stored_time =
        prose_corpus::fill(&service, store.as_ref(), corpus.prose, corpus.picks, corpus.vectors)?;
    let service = if options.semantic {
        let embedder = cortex_service::config::embedder_from_env().map_err(|e| e.to_string())?;
        MemoryService::with_store(store.clone(), &Config::new(target, bench_scope(), embedder))
    } else {
        service
    };
    let two_words = corpus.prose.two_word_queries(corpus.picks, options.queries, 7);
    let warm_up = corpus.prose.two_word_queries(corpus.picks, WARM_UP, 99);
    let modes: &[Mode] = if options.semantic { &[Mode::Fast, Mode::Auto] } else { &[Mode::Fast] };
    let sets: [(&'static str, &[String]); 2] = [("claims", corpus.claims), ("two words", &two_words)];

    tracing::info!(backend, size, "prose benchmark: finding in-process");
    let mut rows = Vec::new();
    for &mode in modes {
        for q in &warm_up {
            super::find(&service, q, mode)?;
        }
        for (set, queries) in sets {
            let (mut timed, mut hits, mut no_hit) = (Vec::new(), 0, 0);
            for q in queries {
                service.lab().forget_query_embeddings();
                let t = Instant::now();
                let found = super::find(&service, q, mode)?;
                timed.push((t.elapsed(), q));
                hits += found.hits.len();
                no_hit += usize::from(found.hits.is_empty());
            }
            timed.sort();
            for (time, query) in timed.iter().rev().take(3) {
                tracing::info!(
                    backend,
                    size,
                    set,
                    mode = mode.as_str(),
                    ms = ms(*time),
                    query = query.as_str(),
                    "a slowest find"
                );
            }
            let times: Vec<Duration> = timed.into_iter().map(|(t, _)| t).collect();
            let mean_hits = hits as f64 / queries.len().max(1) as f64;
            let (queries, mcp) = (queries.len(), Vec::new());
            rows.push(Row { backend, size, set, mode, queries, in_process: times, mcp, mean_hits, no_hit });
        }
    }
    let db_mib =
        service.administration().stats().map_err(|e| e.to_string())?.bytes as f64 / (1024.0 * 1024.0);
    drop(service);
    drop(store);

    // The server's own index (for PostgreSQL, in its cache folder) is built before it starts,
    // as `cortex reindex --lexical` builds it: timed finds must not meet a build in progress
    // (finds then ask the database, as they should, but that is not what is measured here).
    tracing::info!(backend, size, "prose benchmark: building the server's lexical index");
    let (index_per_sec, index_mib) = super::build_index(db)?;
    tracing::info!(backend, size, "prose benchmark: finding through MCP");
    let mut session = Session::start(db, options.semantic)?;
    let mut row = rows.iter_mut();
    for &mode in modes {
        for q in &warm_up {
            session.find(&json!({"query": q, "mode": mode.as_str()}))?;
        }
        for (_, queries) in sets {
            let row = row.next().ok_or("a row for each set")?;
            for q in queries {
                row.mcp.push(session.find(&json!({"query": q, "mode": mode.as_str()}))?.0);
            }
            row.mcp.sort();
        }
    }
    let server_rss_kib = peak_rss_kib(session.pid());
    session.close()?;
    let store_per_sec = size as f64 / stored_time.as_secs_f64().max(f64::MIN_POSITIVE);
    Ok((Build { backend, size, store_per_sec, index_per_sec, index_mib, db_mib, server_rss_kib }, rows))
}
