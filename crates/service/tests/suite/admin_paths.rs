//! What spans every tenant — counts, integrity, the audit chain, purge, export and import, the
//! embedding model, API keys, readiness — is refused to the holder of an API key, by type and
//! by role: its view of the store has no such part, and the service's admin paths ask for the
//! local user. No stubbed answer: a key's `doctor` cannot come back healthy on a damaged trail,
//! nor its `stats` with another tenant's counts (or with none). On every backend.

use crate::common::Tools;
use cortex_domain::tenant::Bound;
use cortex_service::audit::VerifyOptions;
use cortex_service::config::embedder_from_env;
use cortex_service::keys::KeySpec;
use cortex_service::scope_inference::InferredScope;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Caller, Config, MemoryService, ServiceError};
use cortex_testdb::{Backend, TestDb, per_backend};
use serde_json::{Value, json};

per_backend!(
    a_keys_view_cannot_report_a_damaged_store_healthy,
    a_keys_view_cannot_count_export_or_change_the_whole_store,
    readiness_is_the_schema_version_without_counting,
    the_in_process_index_is_kept_from_the_whole_store_whoever_finds,
);

fn open_with(db: &TestDb, embedder: EmbedderChoice) -> MemoryService {
    let scope = InferredScope::fixed("acme", "api", "main");
    MemoryService::open(&Config::new(db.target().clone(), scope, embedder)).unwrap()
}

fn at(org: &str) -> Value {
    json!({"org": org, "project": "api", "branch": "main"})
}

fn acme_key(local: &MemoryService) -> MemoryService {
    local.for_caller(
        &Caller::for_key(Bound { org: "acme".into(), projects: vec!["api".into()] }, None, None).unwrap(),
    )
}

/// Two tenants' items, stored by the local user; the service of a key bound to acme.
fn seeded(db: &TestDb) -> (MemoryService, MemoryService) {
    seeded_with(db, EmbedderChoice::None)
}

fn seeded_with(db: &TestDb, embedder: EmbedderChoice) -> (MemoryService, MemoryService) {
    let local = open_with(db, embedder);
    let stored = local
        .store_args(&json!({"items": [
            {"kind": "decision", "scope": at("acme"), "data": {"component": "webhooks", "status": "accepted", "title": "Acme retries webhooks", "rationale": "receivers recover"}},
            {"kind": "todo", "scope": at("globex"), "data": {"title": "Rotate the globex webhook secret", "status": "open"}},
            {"kind": "todo", "scope": at("globex"), "data": {"title": "Move globex billing to the new queue", "status": "open"}},
        ]}))
        .unwrap();
    assert!(stored.results.iter().all(|r| r.id.is_some()), "{stored:?}");
    let key = acme_key(&local);
    (local, key)
}

#[track_caller]
fn refused<T: std::fmt::Debug>(answer: Result<T, ServiceError>) {
    match answer {
        Err(e @ ServiceError::AdminOnly(_)) => {
            assert!(e.to_string().contains("run the `cortex` command on the server"), "{e}")
        }
        other => panic!("a key's holder was answered: {other:?}"),
    }
}

fn a_keys_view_cannot_report_a_damaged_store_healthy(db: &TestDb) {
    let (local, key) = seeded(db);
    match db.backend() {
        Backend::Sqlite => db.execute_raw("DROP TRIGGER audit_log_no_update").map(drop).unwrap(),
        Backend::Postgres => {
            db.execute_raw("ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only").map(drop).unwrap()
        }
    }
    db.execute_raw("UPDATE audit_log SET summary = 'inserted nothing' WHERE seq = 1").unwrap();

    let options = VerifyOptions { full: true, anchor: None };
    let report = local.administration().doctor(&options).unwrap();
    assert!(!report.healthy(), "the local user sees the damage: {:?}", report.audit.problems);
    assert!(!local.audit().verify(&options).unwrap().ok);
    refused(key.administration().doctor(&options));
    refused(key.administration().doctor(&VerifyOptions::default()));
    refused(key.audit().verify(&options));
}

fn a_keys_view_cannot_count_export_or_change_the_whole_store(db: &TestDb) {
    let (local, key) = seeded(db);
    let stats = local.administration().stats().unwrap();
    assert_eq!(stats.items, 3, "both tenants' items are counted for the local user");

    refused(key.administration().stats());
    refused(key.administration().ready());
    refused(key.transfer().export_page(None, 100));
    refused(key.lifecycle().purge(true));
    refused(key.lifecycle().purge(false));
    refused(key.indexes().reindex_vectors(|_, _| {}));
    refused(key.transfer().embedding_model());
    refused(key.transfer().accept_embedding_model(Some("m:3")));
    let lines = local.transfer().export_page(None, 100).unwrap();
    let ids: Vec<uuid::Uuid> = lines.iter().map(|l| l.id).collect();
    refused(key.transfer().count_present(&ids));
    refused(key.transfer().import_batch(lines));
    let spec = KeySpec { name: "eve".into(), org: "acme".into(), role: "admin".into(), ..KeySpec::default() };
    refused(key.keys().create(&spec));
    refused(key.keys().list());
    refused(key.keys().revoke(None, "eve"));
    refused(key.keys().any());
    refused(key.keys().authenticate("ctx_not_a_real_token"));

    // What the key may do it still does, inside its bound.
    let found = key.find_args(&json!({"query": "webhook", "widen": "all"})).unwrap();
    assert_eq!(found.hits.len(), 1, "{found:?}");
    // And nothing of the whole store changed.
    assert_eq!(local.administration().stats().unwrap().items, 3);
    assert!(local.keys().list().unwrap().is_empty());
}

fn readiness_is_the_schema_version_without_counting(db: &TestDb) {
    let (local, _) = seeded(db);
    let ready = local.administration().ready().unwrap();
    assert!(ready.schema_version > 0);
    assert_eq!(ready.schema_version, local.administration().stats().unwrap().schema_version);
}

/// A key's find brings the in-process vector index up to date from the whole store's change
/// feed, not from its own view: the index then holds every tenant's vectors (its bound is a
/// filter of each search), so the local user's next find and the key's both see what changed.
fn the_in_process_index_is_kept_from_the_whole_store_whoever_finds(db: &TestDb) {
    let (local, key) = seeded_with(db, embedder_from_env().unwrap());
    let found = key.find_args(&json!({"query": "webhook retries", "mode": "auto", "widen": "all"})).unwrap();
    assert!(found.hits.iter().any(|h| h.title.starts_with("Acme")), "{found:?}");
    assert!(found.hits.iter().all(|h| !h.title.contains("globex")), "{found:?}");
    if db.backend() == Backend::Sqlite {
        assert_eq!(local.indexes().vectors_in_process(), 3, "every tenant's item, read through a key's find");
    }
    local
        .store_args(&json!({"items": [{"kind": "todo", "scope": at("globex"),
            "data": {"title": "Retry the globex webhook deliveries by hand", "status": "open"}}]}))
        .unwrap();
    let seen = local
        .find_args(&json!({"query": "retry globex webhook deliveries", "mode": "auto", "widen": "all"}))
        .unwrap();
    assert!(seen.hits.iter().any(|h| h.title.contains("by hand")), "{seen:?}");
    let theirs = key
        .find_args(&json!({"query": "retry globex webhook deliveries", "mode": "auto", "widen": "all"}))
        .unwrap();
    assert!(theirs.hits.iter().all(|h| !h.title.contains("globex")), "{theirs:?}");
    if db.backend() == Backend::Sqlite {
        assert_eq!(local.indexes().vectors_in_process(), 4);
    }
}
