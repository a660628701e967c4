//! No tenant starves another: one tenant's stores use at most their share
//! of the database's connections, so another tenant's find is answered while that tenant's
//! writes are all stuck in the database — on every backend.

use crate::common::Tools;
use crate::common::{open_at, section};
use cortex_domain::tenant::Bound;
use cortex_service::Caller;
use cortex_service::lanes::shares;
use cortex_service::response::ItemStatus;
use cortex_testdb::{TestDb, per_backend};
use serde_json::json;
use std::sync::Arc;

per_backend!(a_tenant_finds_while_another_tenants_flood_of_stores_is_stuck_in_the_database);

/// Parallel stores of the flooding tenant: twice what the database serves at once.
fn flood_size(connections: usize) -> usize {
    connections * 2
}

fn tenant(org: &str) -> Caller {
    Caller::for_key(Bound { org: org.into(), projects: vec![] }, Some("api"), None).unwrap()
}

/// Waits (without a time limit of its own: the writers' busy timeout ends a stuck test) until
/// `ready` holds.
fn until(mut ready: impl FnMut() -> bool) {
    while !ready() {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

fn a_tenant_finds_while_another_tenants_flood_of_stores_is_stuck_in_the_database(db: &TestDb) {
    let local = open_at(db, "main");
    local
        .store_args(&json!({"items": [{"kind": "section", "scope": {"org": "globex", "project": "api"},
            "data": {"title": "Globex runbook", "body": "rotate the zebra certificates"}}]}))
        .unwrap();
    let connections = db.open().connections();
    let (lanes, per_tenant) = shares(connections);
    assert!(lanes < connections || connections == 1, "a connection is always left for finds");

    let flooder = Arc::new(local.for_caller(&tenant("acme")));
    let other = local.for_caller(&tenant("globex"));
    // A first find records the store's identity for the lexical index (a write): done before
    // the writes are blocked, as a serving process does at start.
    let query = json!({"query": "zebra certificates", "mode": "fast"});
    assert_eq!(other.find_args(&query).unwrap().hits.len(), 1);
    let blocked = db.block_writes();
    let writers: Vec<_> = (0..flood_size(connections))
        .map(|n| {
            let flooder = flooder.clone();
            std::thread::spawn(move || {
                flooder.store_args(&json!({"items": [section(&format!("Flood {n}"), "a flood of stores")]}))
            })
        })
        .collect();
    // The flooding tenant's share of lanes is taken (its stores wait in the database), the
    // rest of its stores wait for a lane, holding no connection.
    until(|| {
        let load = flooder.administration().write_load();
        load.taken == per_tenant && load.waiting == flood_size(connections) - per_tenant
    });
    if let Some(waiting) = db.sessions_waiting_on_locks() {
        until(|| db.sessions_waiting_on_locks() == Some(per_tenant as i64));
        assert!(waiting <= per_tenant as i64);
    }

    let found = other.find_args(&query).unwrap();
    assert_eq!(found.hits.len(), 1, "the other tenant's find is answered: {found:?}");
    assert_eq!(found.hits[0].title, "Globex runbook");
    assert_eq!(
        flooder.administration().write_load().taken,
        per_tenant,
        "no more of the flood reached the database"
    );
    if let Some(waiting) = db.sessions_waiting_on_locks() {
        assert_eq!(waiting, per_tenant as i64, "the flood holds only its share of connections");
    }

    drop(blocked);
    for writer in writers {
        let stored = writer.join().unwrap().unwrap();
        assert_eq!(stored.results[0].status, ItemStatus::Inserted, "{stored:?}");
    }
    let load = flooder.administration().write_load();
    assert_eq!((load.taken, load.waiting, load.total), (0, 0, lanes));
}
