//! A find's `author`: the principal that wrote an item's current version, as the server
//! recorded it, or the agent its writer claimed. Each route that filters (the database's SQL,
//! the lexical index, the vector index; the newest listing) keeps exactly those items; a claim
//! of a principal's name as an agent never passes for the principal; an update names its own
//! writer; and a key-bound caller asking for another tenant's writer gets nothing of theirs.
//! On every backend.

use super::common::at;
use crate::common::Tools;
use cortex_domain::principal::Principal;
use cortex_domain::tenant::Bound;
use cortex_service::config::embedder_from_env;
use cortex_service::response::{FindResponse, StoreResponse};
use cortex_service::scope_inference::InferredScope;
use cortex_service::{Caller, Config, MemoryService};
use cortex_testdb::{TestDb, per_backend};
use serde_json::{Value, json};
use std::collections::BTreeSet;

per_backend!(
    each_route_keeps_what_the_author_wrote,
    an_update_is_written_by_its_own_principal,
    a_bound_key_asking_for_another_tenants_author_finds_nothing_of_theirs,
);

fn open(db: &TestDb) -> MemoryService {
    let scope = InferredScope::fixed("acme", "api", "main");
    MemoryService::open(&Config::new(db.target().clone(), scope, embedder_from_env().unwrap())).unwrap()
}

fn key(org: &str, name: &str, project: &str) -> Caller {
    Caller::for_key(Bound { org: org.into(), projects: vec![project.into()] }, None, None)
        .unwrap()
        .as_principal(Principal::Key { org: org.into(), name: name.into() })
}

fn store(service: &MemoryService, items: Value) -> Vec<String> {
    let r: StoreResponse = service.store_args(&json!({ "items": items })).unwrap();
    r.results.iter().map(|r| r.id.clone().unwrap_or_else(|| panic!("not stored: {r:?}"))).collect()
}

fn found(service: &MemoryService, args: Value) -> BTreeSet<String> {
    let r: FindResponse = service.find_args(&args).unwrap_or_else(|e| panic!("{args}: {e}"));
    r.hits.iter().map(|h| h.id.to_string()).collect()
}

fn set(ids: &[&String]) -> BTreeSet<String> {
    ids.iter().map(|s| s.to_string()).collect()
}

/// Three webhook notes alike in words: by the ci key, by the ci key claiming to be claude, and
/// by the docs key claiming to be the ci key.
fn seed(local: &MemoryService) -> [String; 3] {
    let ci = local.for_caller(&key("acme", "ci", "api"));
    let docs = local.for_caller(&key("acme", "docs", "api"));
    let [plain] = <[String; 1]>::try_from(store(
        &ci,
        json!([{"kind": "section", "data": {"title": "Webhook retries back off", "body": "Webhook retries back off exponentially."}}]),
    ))
    .unwrap();
    let [claimed] = <[String; 1]>::try_from(store(
        &ci,
        json!([{"kind": "section", "source": {"actor": "claude", "tool": "claude-code"},
                "data": {"title": "Webhook retries are capped", "body": "Webhook retries stop after eight tries."}}]),
    ))
    .unwrap();
    let [forged] = <[String; 1]>::try_from(store(
        &docs,
        json!([{"kind": "section", "source": {"actor": "key:acme/ci"},
                "data": {"title": "Webhook retries are logged", "body": "Webhook retries are logged per receiver."}}]),
    ))
    .unwrap();
    [plain, claimed, forged]
}

fn each_route_keeps_what_the_author_wrote(db: &TestDb) {
    let local = open(db);
    let [plain, claimed, forged] = seed(&local);
    let cases = [
        ("key:acme/ci", set(&[&plain, &claimed])),
        ("key:acme/docs", set(&[&forged])),
        ("claude", set(&[&claimed])),
        // A principal's name claimed as an agent is not that principal, nor an agent's name
        // a principal can be found by.
        ("key:acme/admin", BTreeSet::new()),
        ("ci", BTreeSet::new()),
    ];
    for (author, want) in &cases {
        for mode in ["fast", "auto", "deep"] {
            let args = json!({"query": "webhook retries", "mode": mode, "author": author, "limit": 50});
            assert_eq!(&found(&local, args), want, "{mode}, author {author}");
        }
        let newest = json!({"types": ["section"], "author": author, "limit": 50});
        assert_eq!(&found(&local, newest), want, "newest, author {author}");
    }
    // Without the filter every note is found, so the filter is what kept them out.
    assert_eq!(
        found(&local, json!({"query": "webhook retries", "limit": 50})),
        set(&[&plain, &claimed, &forged])
    );
    // Few hits with an author: the hint names what dropping it would find.
    let r = local.find_args(&json!({"query": "webhook retries", "author": "claude"})).unwrap();
    let hints = serde_json::to_string(&r.suggestions).unwrap();
    assert!(hints.contains("author"), "{hints}");
}

fn an_update_is_written_by_its_own_principal(db: &TestDb) {
    let local = open(db);
    let [plain, _, _] = seed(&local);
    let docs = local.for_caller(&key("acme", "docs", "api"));
    store(
        &docs,
        json!([{"id": plain, "kind": "section", "data": {"title": "Webhook retries back off", "body": "Webhook retries back off, jittered."}}]),
    );
    for mode in ["fast", "deep"] {
        let by_docs = found(
            &local,
            json!({"query": "webhook retries", "mode": mode, "author": "key:acme/docs", "limit": 50}),
        );
        assert!(by_docs.contains(&plain), "{mode}: the updater wrote the current version");
        let by_ci = found(
            &local,
            json!({"query": "webhook retries", "mode": mode, "author": "key:acme/ci", "limit": 50}),
        );
        assert!(!by_ci.contains(&plain), "{mode}: no longer the ci key's");
    }
}

fn a_bound_key_asking_for_another_tenants_author_finds_nothing_of_theirs(db: &TestDb) {
    let local = open(db);
    seed(&local);
    let globex = local.for_caller(&key("globex", "ops", "api"));
    let theirs = store(
        &globex,
        json!([{"kind": "section", "scope": at("globex", "api"), "source": {"actor": "claude"},
                "data": {"title": "Webhook retries at globex", "body": "Webhook retries for the globex gateway."}}]),
    );
    let acme = local.for_caller(&key("acme", "ci", "api"));
    for author in ["key:globex/ops", "claude"] {
        for widen in ["project", "org", "all"] {
            for mode in ["fast", "deep"] {
                let args = json!({"query": "webhook retries globex", "mode": mode, "widen": widen,
                                  "author": author, "limit": 50});
                let hits = found(&acme, args);
                assert!(!hits.contains(&theirs[0]), "{author}/{widen}/{mode}: another tenant's item");
            }
            let newest = found(&acme, json!({"types": ["section"], "widen": widen, "author": author}));
            assert!(!newest.contains(&theirs[0]), "{author}/{widen}: another tenant's item listed");
        }
    }
    // The local user, unbound, finds it by the same filter: the words and the author match.
    let all =
        found(&local, json!({"query": "webhook retries globex", "widen": "all", "author": "key:globex/ops"}));
    assert_eq!(all, theirs.into_iter().collect());
}
