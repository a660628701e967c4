//! Checks read stored items before the write transaction opens, so another
//! process can change an item in between. The store writes a batch only over the state its
//! checks saw (compare-and-set); otherwise the service checks the request again. Each test
//! runs another process's write at exactly that point (`cortex_testdb::Interleaved`), on every
//! backend.

use crate::common::Tools;
use crate::common::{id_of, memory, open_at};
use cortex_service::response::ItemStatus;
use cortex_service::scope_inference::InferredScope;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Config, MemoryService};
use cortex_testdb::{Interleaved, TestDb, per_backend};
use serde_json::{Value, json};
use std::sync::Arc;

per_backend!(
    an_edit_checked_against_a_proposed_decision_cannot_change_it_once_accepted,
    an_entity_merge_does_not_lose_a_concurrent_update,
);

/// A service whose next write first lets `other_process` write.
fn interleaved(db: &TestDb) -> (MemoryService, Arc<Interleaved>) {
    let store = Interleaved::new(db.open());
    let config =
        Config::new(db.target().clone(), InferredScope::fixed("acme", "api", "main"), EmbedderChoice::None);
    (MemoryService::with_store(store.clone(), &config), store)
}

/// Stores `items` through a service of its own, as another process.
fn other_process_stores(db: &TestDb, items: Value) -> impl FnOnce() + Send + 'static {
    let other = open_at(db, "main");
    move || {
        let r = other.store_args(&json!({ "items": items })).unwrap();
        assert_eq!(r.results[0].status, ItemStatus::Updated, "{:?}", r.results);
    }
}

fn adr(status: &str, rationale: &str) -> Value {
    json!({"component": "sessions", "status": status, "title": "Sessions in Postgres", "rationale": rationale})
}

fn an_edit_checked_against_a_proposed_decision_cannot_change_it_once_accepted(db: &TestDb) {
    let m = memory(db, "main");
    let id =
        id_of(&m.store(json!([{"kind": "decision", "data": adr("proposed", "one database to run")}])), 0);
    let (service, store) = interleaved(db);
    // Checked against the proposed decision (any edit allowed); before it is written, another
    // process accepts the decision.
    store.before_next_write(other_process_stores(
        db,
        json!([{"kind": "decision", "id": id, "data": adr("accepted", "one database to run")}]),
    ));
    let edit = service
        .store_args(&json!({"items": [{"kind": "decision", "id": id, "data": adr("accepted", "we changed our minds")}]}))
        .unwrap();
    assert!(store.step_ran());
    let result = &edit.results[0];
    assert_eq!(result.status, ItemStatus::BusinessRuleBlocked, "{result:?}");
    assert_eq!(result.error.as_ref().unwrap().field, "items[0].data.rationale");
    let stored = &m.find(json!({"ids": [id]})).hits[0];
    assert_eq!(stored.data.as_ref().unwrap()["rationale"], "one database to run");
    assert_eq!(stored.data.as_ref().unwrap()["status"], "accepted");
    assert_eq!(m.operations(&id), ["insert", "update", "blocked"]);
}

fn an_entity_merge_does_not_lose_a_concurrent_update(db: &TestDb) {
    let m = memory(db, "main");
    let entity = |extra: Value| {
        let mut data = json!({"entity_type": "service", "name": "billing"});
        data.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        data
    };
    let first =
        m.store(json!([{"kind": "entity", "data": entity(json!({"description": "Charges cards nightly"}))}]));
    let id = id_of(&first, 0);
    let (service, store) = interleaved(db);
    // Merged with the stored entity (nightly); before it is written, another process
    // describes the entity anew.
    store.before_next_write(other_process_stores(
        db,
        json!([{"kind": "entity", "data": entity(json!({"description": "Charges cards hourly"}))}]),
    ));
    let tagged = service
        .store_args(&json!({"items": [{"kind": "entity", "tags": ["team-pay"], "data": entity(json!({}))}]}))
        .unwrap();
    assert!(store.step_ran());
    assert_eq!((tagged.results[0].status, id_of(&tagged, 0)), (ItemStatus::Updated, id.clone()));
    let stored = &m.find(json!({"ids": [id]})).hits[0];
    assert_eq!(
        stored.data.as_ref().unwrap()["description"],
        "Charges cards hourly",
        "the other update is kept"
    );
    assert_eq!(stored.tags, ["team-pay"], "and this one too");
    assert_eq!(m.operations(&id), ["insert", "update", "update"]);
}
