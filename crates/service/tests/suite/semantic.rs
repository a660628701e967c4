//! Semantic memory through the service with the real all-MiniLM-L6-v2 (`scripts/test` installs
//! it and sets `CORTEX_MODEL_DIR`; without it these tests fail rather than skip).

use crate::common::Tools;
use cortex_service::config::embedder_from_env;
use cortex_service::response::{FindResponse, ItemStatus};
use cortex_service::scope_inference::InferredScope;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Config, MemoryService};
use cortex_testdb::{TestDb, per_backend};
use serde_json::{Value, json};

per_backend!(
    a_paraphrase_is_found_by_auto_but_not_by_fast,
    the_index_follows_updates_deletes_and_other_processes,
    the_index_sees_imports_reembeddings_and_purges_by_other_processes,
    the_dense_route_respects_scope_and_filters,
    the_none_embedder_works_end_to_end_and_says_so,
    a_missing_model_is_a_clear_note_not_a_crash,
    unrelated_queries_find_nothing_densely,
    a_paraphrase_of_a_stored_item_is_a_near_duplicate_and_unrelated_text_is_not,
    near_duplicates_inside_one_batch_are_caught,
    a_new_version_that_reads_like_the_item_it_supersedes_replaces_it,
    a_near_duplicate_of_a_batch_item_that_was_itself_a_duplicate_names_the_stored_item,
    a_find_past_its_deadline_answers_with_what_it_has_and_says_so,
    the_reply_to_a_matching_turn_comes_with_it_in_auto_not_in_fast,
);

/// A new service (as a new process would open it) on the test's database.
fn open(db: &TestDb, embedder: EmbedderChoice) -> MemoryService {
    let scope = InferredScope::fixed("acme", "api", "main");
    MemoryService::open(&Config::new(db.target().clone(), scope, embedder)).unwrap()
}

fn local() -> EmbedderChoice {
    let choice = embedder_from_env().unwrap();
    if let EmbedderChoice::Local { model_dir, .. } = &choice {
        assert!(
            model_dir.join("model.safetensors").is_file(),
            "model missing in {}: run scripts/test",
            model_dir.display()
        );
    }
    choice
}

fn ids(r: &FindResponse) -> Vec<String> {
    r.hits.iter().map(|h| h.id.to_string()).collect()
}

fn store(m: &MemoryService, items: Value) -> Vec<String> {
    let r = m.store_args(&json!({ "items": items })).unwrap();
    r.results.iter().map(|x| x.id.clone().unwrap_or_default()).collect()
}

const SESSIONS: &str =
    "We moved user sessions from Redis to PostgreSQL because running Redis cost more than it saved.";
const PARAPHRASE: &str = "why did we stop using the in-memory cache for login state";

fn a_paraphrase_is_found_by_auto_but_not_by_fast(db: &TestDb) {
    let m = open(db, local());
    let stored = store(
        &m,
        json!([
            {"kind": "decision", "data": {"component": "sessions", "status": "accepted", "title": "Sessions in Postgres", "rationale": SESSIONS}},
            {"kind": "section", "content": "The billing worker charges customers every night at 02:00 UTC."},
            {"kind": "runbook", "data": {"title": "Rotate TLS certificates", "service": "gateway", "steps": [{"description": "renew with certbot"}]}},
        ]),
    );
    let fast = m.find_args(&json!({"query": PARAPHRASE, "mode": "fast"})).unwrap();
    assert!(!ids(&fast).contains(&stored[0]), "lexical alone cannot see it");
    let auto = m.find_args(&json!({"query": PARAPHRASE})).unwrap();
    assert_eq!(auto.route_used, "hybrid");
    assert_eq!(
        auto.hits[0].id.to_string(),
        stored[0],
        "{:?}",
        auto.hits.iter().map(|h| &h.title).collect::<Vec<_>>()
    );
    assert!(auto.notes.is_empty(), "{:?}", auto.notes);
    assert!(!auto.hits[0].snippet.is_empty());
}

fn the_index_follows_updates_deletes_and_other_processes(db: &TestDb) {
    let a = open(db, local());
    let b = open(db, local());
    let id = store(&a, json!([{"kind": "section", "content": SESSIONS}])).remove(0);
    // b warms its index, then a changes the item's meaning: b must see the new text.
    assert_eq!(b.find_args(&json!({"query": PARAPHRASE})).unwrap().hits[0].id.to_string(), id);
    a.store_args(&json!({"items": [{"kind": "section", "id": id, "content": "Quarterly budget planning happens in March."}]})).unwrap();
    let after_update = b.find_args(&json!({"query": "when do we plan the budget for the quarter"})).unwrap();
    assert_eq!(after_update.hits[0].id.to_string(), id);
    // A new item written by a, found by b's dense route.
    let new_id = store(
        &a,
        json!([{"kind": "section", "content": "Kubernetes pods restart when memory limits are exceeded."}]),
    )
    .remove(0);
    let found = b.find_args(&json!({"query": "containers get killed for using too much RAM"})).unwrap();
    assert_eq!(found.hits[0].id.to_string(), new_id);
    a.store_args(&json!({"items": [{"operation": "delete", "id": new_id}]})).unwrap();
    let gone = b.find_args(&json!({"query": "containers get killed for using too much RAM"})).unwrap();
    assert!(!ids(&gone).contains(&new_id));
}

/// How many vectors `m`'s in-process index holds (after bringing it up to date), as `doctor`
/// reports it.
fn vectors_indexed(m: &MemoryService) -> usize {
    let report = m.administration().doctor(&cortex_service::audit::VerifyOptions::default()).unwrap();
    let status = report.semantic_search;
    let (before, _) = status.split_once(" vectors indexed").unwrap_or_else(|| panic!("{status}"));
    before.rsplit(' ').next().unwrap().parse().unwrap()
}

const CERTS: &str = "Rotate the TLS certificates of the gateway with certbot every sixty days.";
const CERTS_QUERY: &str = "how often do we renew https certs";
/// Long before any item a running server has read: an import keeps its items' timestamps.
const LONG_AGO: i64 = 1_600_000_000_000;

/// The index re-read only rows updated since its watermark (minus 10 s), so
/// a running server never saw imported items (old timestamps), vectors rewritten by `cortex
/// reindex` (no timestamp change), nor purged items leaving. The change log names them all.
fn the_index_sees_imports_reembeddings_and_purges_by_other_processes(db: &TestDb) {
    // The items to import, exported from another memory and dated long ago.
    let source_db = TestDb::sqlite();
    let source = open(&source_db, local());
    store(
        &source,
        json!([{"kind": "section", "content": SESSIONS}, {"kind": "section", "content": CERTS}, {"kind": "section", "content": "Old release notes of version 1.2, expired long ago."}]),
    );
    let mut lines = source.transfer().export_page(None, 10).unwrap();
    lines.sort_by_key(|l| l.body.clone());
    let [expired, certs, sessions]: [_; 3] = lines.try_into().map_err(|_| "three lines").unwrap();
    assert!(expired.body.starts_with("Old release") && sessions.body.starts_with("We moved"));
    let dated = |mut line: cortex_service::transfer::ItemLine| {
        (line.created_at, line.updated_at) = (LONG_AGO, LONG_AGO);
        line
    };
    let sessions = dated(sessions);
    let certs = cortex_service::transfer::ItemLine { vector: None, chunks: Vec::new(), ..dated(certs) };
    let expired = cortex_service::transfer::ItemLine { expires_at: Some(LONG_AGO + 1), ..dated(expired) };
    let (sessions_id, certs_id) = (sessions.id.to_string(), certs.id.to_string());

    // A running server with a warm index.
    let server = open(db, local());
    let fresh = store(
        &server,
        json!([{"kind": "section", "content": "Kubernetes pods restart when memory limits are exceeded."}]),
    )
    .remove(0);
    assert_eq!(
        server.find_args(&json!({"query": "containers get killed for using too much RAM"})).unwrap().hits[0]
            .id
            .to_string(),
        fresh
    );
    assert_eq!(vectors_indexed(&server), 1);

    // Another process imports: the server finds the imported item by meaning.
    let other = open(db, local());
    let written = other.transfer().import_batch(vec![sessions, certs, expired]).unwrap();
    assert_eq!((written.imported, written.present), (3, 0));
    let found = server.find_args(&json!({"query": PARAPHRASE})).unwrap();
    // Not a word in common: only the dense route finds it (an old item, it may rank lower).
    assert!(ids(&found).contains(&sessions_id), "{:?}", ids(&found));
    assert_eq!(vectors_indexed(&server), 3, "the certificates item came without a vector");

    // Another process re-embeds: the item that had no vector is found by meaning.
    other.indexes().reindex_vectors(|_, _| {}).unwrap();
    let found = server.find_args(&json!({"query": CERTS_QUERY})).unwrap();
    assert!(ids(&found).contains(&certs_id), "{:?}", ids(&found));
    assert_eq!(vectors_indexed(&server), 4);

    // Another process purges the expired item: its vector leaves the server's index.
    assert_eq!(other.lifecycle().purge(false).unwrap().purged, 1);
    assert_eq!(vectors_indexed(&server), 3);
}

fn the_dense_route_respects_scope_and_filters(db: &TestDb) {
    let m = open(db, local());
    let other_branch =
        store(&m, json!([{"kind": "section", "content": SESSIONS, "scope": {"branch": "feature"}}]))
            .remove(0);
    let todo = store(
        &m,
        json!([{"kind": "todo", "data": {"title": "Move login sessions out of Redis", "status": "open"}}]),
    )
    .remove(0);
    let r = m.find_args(&json!({"query": PARAPHRASE})).unwrap();
    assert!(!ids(&r).contains(&other_branch), "branch isolation holds for dense hits");
    let decisions =
        m.find_args(&json!({"query": PARAPHRASE, "types": ["decision"], "widen": "project"})).unwrap();
    assert!(decisions.hits.is_empty(), "kind filter holds for dense hits");
    let widened = m.find_args(&json!({"query": PARAPHRASE, "widen": "project"})).unwrap();
    assert!(ids(&widened).contains(&other_branch) && ids(&widened).contains(&todo));
}

fn the_none_embedder_works_end_to_end_and_says_so(db: &TestDb) {
    let m = open(db, EmbedderChoice::None);
    let id = store(&m, json!([{"kind": "section", "content": SESSIONS}])).remove(0);
    let r = m.find_args(&json!({"query": "redis sessions"})).unwrap();
    assert_eq!((r.route_used.as_str(), r.hits[0].id.to_string()), ("lexical", id.clone()));
    assert!(r.notes.iter().any(|n| n.contains("CORTEX_EMBEDDER")), "{:?}", r.notes);
}

fn a_missing_model_is_a_clear_note_not_a_crash(db: &TestDb) {
    let dir = tempfile::tempdir().unwrap();
    let m = open(
        db,
        EmbedderChoice::Local { model_dir: dir.path().join("no-model"), precision: Default::default() },
    );
    let r = m.store_args(&json!({"items": [{"kind": "section", "content": SESSIONS}]})).unwrap();
    assert_eq!(r.results[0].status, ItemStatus::Inserted, "storing works without vectors");
    let found = m.find_args(&json!({"query": "redis sessions"})).unwrap();
    assert_eq!(found.hits.len(), 1);
    assert!(found.notes.iter().any(|n| n.contains("cortex model install")), "{:?}", found.notes);
}

fn unrelated_queries_find_nothing_densely(db: &TestDb) {
    let m = open(db, local());
    store(&m, json!([{"kind": "section", "content": "kubernetes cluster upgrade procedure"}]));
    let r = m.find_args(&json!({"query": "zzqxw vlorp"})).unwrap();
    assert!(
        r.hits.is_empty(),
        "{:?}",
        r.hits.iter().map(|h| (&h.title, h.score_parts.as_ref().map(|p| p.relevance))).collect::<Vec<_>>()
    );
    assert!(!r.suggestions.is_empty());
}

fn a_paraphrase_of_a_stored_item_is_a_near_duplicate_and_unrelated_text_is_not(db: &TestDb) {
    let m = open(db, local());
    let first = store(
        &m,
        json!([{"kind": "decision", "content": "We moved user sessions from Redis to PostgreSQL."}]),
    )
    .remove(0);
    let r = m
        .store_args(&json!({"items": [
            {"kind": "decision", "content": "User sessions were moved from Redis to PostgreSQL."},
            {"kind": "decision", "content": "The billing worker runs every night at two."},
            {"kind": "section", "content": "User sessions were moved from Redis to PostgreSQL."},
            {"kind": "decision", "content": "User sessions were moved from Redis to PostgreSQL.", "dedupe": false},
        ]}))
        .unwrap();
    let statuses: Vec<ItemStatus> = r.results.iter().map(|x| x.status).collect();
    assert_eq!(
        statuses,
        vec![ItemStatus::SkippedDedupe, ItemStatus::Inserted, ItemStatus::Inserted, ItemStatus::Inserted],
        "paraphrase caught; unrelated, other kind, and dedupe:false stored"
    );
    assert_eq!(r.results[0].existing_id.as_deref(), Some(first.as_str()));
    assert!(r.results[0].similarity.unwrap() >= 0.85);
    assert!(r.results[0].reason.as_deref().unwrap().contains("near-duplicate"));
}

/// A new version is meant to read like the item it replaces: it is not that item's
/// near-duplicate, or the old version would stay in force.
fn a_new_version_that_reads_like_the_item_it_supersedes_replaces_it(db: &TestDb) {
    let m = open(db, local());
    let old = store(
        &m,
        json!([{"kind": "decision", "content": "We moved user sessions from Redis to PostgreSQL."}]),
    )
    .remove(0);
    let r = m
        .store_args(&json!({"items": [{"kind": "decision", "supersedes": old,
            "content": "User sessions were moved from Redis to PostgreSQL, with a one-day TTL."}]}))
        .unwrap();
    assert_eq!(r.results[0].status, ItemStatus::Inserted, "{:?}", r.results[0]);
    let new = r.results[0].id.clone().unwrap();
    // The old version left the live items: the next paraphrase duplicates the new one.
    let again = m
        .store_args(&json!({"items": [{"kind": "decision", "content": "User sessions were moved from Redis to PostgreSQL."}]}))
        .unwrap();
    assert_eq!(again.results[0].status, ItemStatus::SkippedDedupe);
    assert_eq!(again.results[0].existing_id.as_deref(), Some(new.as_str()));
}

fn near_duplicates_inside_one_batch_are_caught(db: &TestDb) {
    let m = open(db, local());
    let r = m
        .store_args(&json!({"items": [
            {"kind": "todo", "content": "Rotate the vault tokens every month."},
            {"kind": "todo", "content": "Every month, rotate the vault tokens."},
        ]}))
        .unwrap();
    assert_eq!(r.results[0].status, ItemStatus::Inserted);
    assert_eq!(r.results[1].status, ItemStatus::SkippedDedupe);
    assert_eq!(r.results[1].existing_id, r.results[0].id);
}

fn a_near_duplicate_of_a_batch_item_that_was_itself_a_duplicate_names_the_stored_item(db: &TestDb) {
    let m = open(db, local());
    let stored = store(
        &m,
        json!([{"kind": "todo", "content": "Upgrade the ingress controller.", "idempotency_key": "k"}]),
    )
    .remove(0);
    let r = m
        .store_args(&json!({"items": [
            // Unlike the stored text, so no near-duplicate; but its idempotency key is taken,
            // which only the write transaction finds out.
            {"kind": "todo", "content": "Rotate the vault tokens every month.", "idempotency_key": "k"},
            // A paraphrase of the item above: a near-duplicate within the batch.
            {"kind": "todo", "content": "Every month, rotate the vault tokens."},
        ]}))
        .unwrap();
    assert!(r.results[0].reason.as_deref().unwrap().contains("idempotency_key"));
    assert!(r.results[1].reason.as_deref().unwrap().contains("near-duplicate"));
    for result in &r.results {
        assert_eq!(result.status, ItemStatus::SkippedDedupe);
        assert_eq!(result.existing_id.as_deref(), Some(stored.as_str()), "{result:?}");
    }
}

/// Every find has a deadline. With none left (a zero budget, as a test sets
/// it), the dense route's answer is not awaited, optional stages are skipped, and `notes` says
/// what was left out; the lexical hits still come back.
fn a_find_past_its_deadline_answers_with_what_it_has_and_says_so(db: &TestDb) {
    let scope = InferredScope::fixed("acme", "api", "main");
    let mut config = Config::new(db.target().clone(), scope, local());
    let on_time = MemoryService::open(&config).unwrap();
    on_time
        .store_args(
            &json!({"items": [{"kind": "section", "content": "Rotate the TLS certificates with certbot"}]}),
        )
        .unwrap();
    let found = on_time.find_args(&json!({"query": "certbot certificates"})).unwrap();
    assert_eq!(found.route_used, "hybrid");
    assert!(found.notes.iter().all(|n| !n.contains("deadline")), "{:?}", found.notes);

    config.find_deadline = std::time::Duration::ZERO;
    let late = MemoryService::open(&config).unwrap();
    let found = late.find_args(&json!({"query": "certbot certificates", "expand": "all"})).unwrap();
    assert_eq!((found.hits.len(), found.route_used.as_str()), (1, "lexical"));
    let notes = found.notes.join(" | ");
    for left_out in ["semantic search did not finish", "no suggestions", "not expanded"] {
        assert!(notes.contains("0 ms find deadline") && notes.contains(left_out), "{notes}");
    }
}

/// Turns stored together in a session: the question's words match the turn that asks, the
/// answer is the reply stored right after it. `auto` brings the reply right behind the turn it
/// answers; `fast` (the lexical route alone) does not.
fn the_reply_to_a_matching_turn_comes_with_it_in_auto_not_in_fast(db: &TestDb) {
    let m = open(db, local());
    let turn = |text: &str, session: &str| {
        json!({"kind": "section", "content": text, "dedupe": false,
                                                   "source": {"session": session}})
    };
    store(
        &m,
        json!([
            turn("Cid: we played football all afternoon in the park", "s2"),
            turn("Cid: the lab instruments were calibrated again", "s2")
        ]),
    );
    let talk = store(
        &m,
        json!([
            turn("Ann: do you play any musical instruments?", "s1"),
            turn("Bob: yeah, since I was seven, every Sunday morning.", "s1"),
            turn("Ann: lovely, see you soon!", "s1")
        ]),
    );
    let query = "which musical instruments are played";
    let fast = m.find_args(&json!({"query": query, "mode": "fast"})).unwrap();
    assert_eq!(fast.hits[0].id.to_string(), talk[0]);
    assert!(!ids(&fast).contains(&talk[1]), "the reply shares no word with the question");
    let auto = m.find_args(&json!({"query": query})).unwrap();
    assert_eq!(&ids(&auto)[..2], &talk[..2], "{:?}", auto.hits.iter().map(|h| &h.title).collect::<Vec<_>>());
}
