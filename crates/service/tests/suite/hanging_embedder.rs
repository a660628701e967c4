//! A remote embedder that accepts connections and never answers (a real socket): finds still
//! answer by their deadline, with the lexical part and a note, and the dense routes they leave
//! behind hold no more than the service's pool of threads — one connection each to the
//! embedder — however many finds come.

use crate::common::Tools;
use cortex_embed::OpenAiConfig;
use cortex_service::memory_find::dense_route_threads;
use cortex_service::scope_inference::InferredScope;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Config, MemoryService};
use cortex_testdb::{TestDb, per_backend};
use serde_json::json;
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

per_backend!(a_hanging_embedder_holds_the_pool_at_most_however_many_finds_come);

/// The find's deadline here; a find answers within it and the time to finish the lexical part.
const DEADLINE: Duration = Duration::from_millis(200);
/// Room for the lexical part on a loaded machine.
const SLACK: Duration = Duration::from_secs(3);

fn a_hanging_embedder_holds_the_pool_at_most_however_many_finds_come(db: &TestDb) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counted = accepted.clone();
    std::thread::spawn(move || {
        // Accepted and held open, never answered.
        let mut held = Vec::new();
        for connection in listener.incoming().flatten() {
            counted.fetch_add(1, Ordering::SeqCst);
            held.push(connection);
        }
    });
    let scope = InferredScope::fixed("acme", "api", "main");
    // Stored without an embedder: a store would wait on the hanging one too.
    let writer =
        MemoryService::open(&Config::new(db.target().clone(), scope.clone(), EmbedderChoice::None)).unwrap();
    writer
        .store_args(
            &json!({"items": [{"kind": "section", "content": "Rotate the TLS certificates with certbot"}]}),
        )
        .unwrap();
    let embedder = EmbedderChoice::OpenAi(OpenAiConfig {
        base_url: format!("http://{address}/v1"),
        model: "never-answers".into(),
        api_key: None,
    });
    let mut config = Config::new(db.target().clone(), scope, embedder);
    config.find_deadline = DEADLINE;
    let finder = MemoryService::open(&config).unwrap();
    let threads = dense_route_threads();
    for n in 0..3 * threads {
        let started = Instant::now();
        let found = finder.find_args(&json!({"query": format!("certbot certificates {n}")})).unwrap();
        assert!(started.elapsed() < DEADLINE + SLACK, "find {n} took {:?}", started.elapsed());
        assert_eq!((found.hits.len(), found.route_used.as_str()), (1, "lexical"), "find {n}");
        let notes = found.notes.join(" | ");
        assert!(
            notes.contains("semantic search did not finish") || notes.contains("dense-search thread is busy"),
            "find {n}: {notes}"
        );
    }
    // The last routes' connections are made by now or never.
    std::thread::sleep(Duration::from_millis(300));
    let connections = accepted.load(Ordering::SeqCst);
    assert!(connections >= 1, "the embedder was asked");
    assert!(
        connections <= threads,
        "{connections} connections for {} finds and {threads} threads",
        3 * threads
    );
}
