//! When an item became governed (a decision accepted, a section approved), kept by the store
//! for good on every backend: set by the writes that make it so, kept through later status
//! changes and imports, refused to raw SQL that would clear it, and set by the migration for
//! items stored before it from their status and their trail.

use super::shared_database::record;
use cortex_domain::Kind;
use cortex_store::{Record, Store, StoredItem, WriteOp};
use cortex_testdb::{Backend, TestDb, per_backend};
use serde_json::json;
use uuid::Uuid;

per_backend!(
    a_write_that_governs_an_item_is_remembered_for_good,
    the_migration_finds_what_was_governed_before_it,
);

fn governed_since(store: &dyn Store, id: Uuid) -> Option<i64> {
    store.get(&[id]).unwrap().remove(0).governed_since
}

fn decision(status: &str, at: i64) -> Record {
    Record {
        kind: Kind::Decision,
        status: Some(status.into()),
        data: json!({"status": status, "title": "Queue on the database", "component": "jobs",
                     "rationale": "one system to run"}),
        updated_at: at,
        created_at: at,
        ..record(1, None)
    }
}

fn a_write_that_governs_an_item_is_remembered_for_good(db: &TestDb) {
    let store = db.open();
    let proposed = decision("proposed", 1_000);
    store.write_batch(&[WriteOp::Insert { record: proposed.clone(), checks: &[] }]).unwrap();
    assert_eq!(governed_since(&*store, proposed.id), None);
    let accepted = Record { id: proposed.id, ..decision("accepted", 2_000) };
    store.write_batch(&[WriteOp::Update { record: accepted }]).unwrap();
    assert_eq!(governed_since(&*store, proposed.id), Some(2_000));
    let back = Record { id: proposed.id, ..decision("proposed", 3_000) };
    store.write_batch(&[WriteOp::Update { record: back.clone() }]).unwrap();
    assert_eq!(governed_since(&*store, proposed.id), Some(2_000), "kept through the status flip");
    let again = Record { id: proposed.id, ..decision("accepted", 4_000) };
    store.write_batch(&[WriteOp::Update { record: again }]).unwrap();
    assert_eq!(governed_since(&*store, proposed.id), Some(2_000), "the first time stays");

    let id = proposed.id;
    let cleared = db.execute_raw(&format!("UPDATE items SET governed_since = NULL WHERE id = '{id}'"));
    assert!(cleared.unwrap_err().contains("kept for good"));
    assert_eq!(governed_since(&*store, id), Some(2_000));

    // An import keeps the exported fact, and derives it for an item exported without one.
    let other = TestDb::new(db.backend());
    let there = other.open();
    let exported = store.export_page(None, 10).unwrap().remove(0);
    let bare = StoredItem { governed_since: None, ..exported.item.clone() };
    let accepted_bare = StoredItem {
        record: decision("accepted", 5_000),
        deleted_at: None,
        superseded_by: None,
        governed_since: None,
        author: None,
    };
    there
        .write_batch(&[
            WriteOp::Import { item: Box::new(exported.item), vector: None, chunks: Vec::new() },
            WriteOp::Import { item: Box::new(accepted_bare.clone()), vector: None, chunks: Vec::new() },
        ])
        .unwrap();
    assert_eq!(governed_since(&*there, bare.record.id), Some(2_000));
    assert_eq!(governed_since(&*there, accepted_bare.record.id), Some(5_000));
}

/// A database of the version before the fact, holding items written then: the migration
/// reads what each item is and what its trail shows, and touches nothing else.
fn the_migration_finds_what_was_governed_before_it(db: &TestDb) {
    let before = match db.backend() {
        Backend::Sqlite => 14,
        Backend::Postgres => 16,
    };
    cortex_store::migrate_to(db.target(), before).unwrap();
    let item = |name: &str, kind: &str, status: &str, data: &str, at: i64| {
        let id = Uuid::now_v7();
        db.execute_raw(&format!(
            "INSERT INTO items (id, kind, org, project, branch, title, body, data, status, content_hash, \
             created_at, updated_at) VALUES ('{id}', '{kind}', 'acme', 'api', 'main', '{name}', '', \
             '{data}', '{status}', 'h-{name}', {at}, {at})"
        ))
        .unwrap();
        id
    };
    let accepted = item("accepted", "decision", "accepted", r#"{"status": "accepted"}"#, 1_000);
    let deprecated = item("deprecated", "decision", "deprecated", r#"{"status": "deprecated"}"#, 2_000);
    let flipped = item("flipped", "decision", "proposed", r#"{"status": "proposed"}"#, 9_000);
    let never = item("never", "decision", "proposed", r#"{"status": "proposed"}"#, 3_000);
    let dated = item("dated", "section", "draft", r#"{"approved_at": "2026-01-01"}"#, 4_000);
    let draft = item("draft", "section", "draft", r#"{"approved_at": null}"#, 5_000);
    let accepted_risk = item("risk", "risk", "accepted", r#"{"status": "accepted"}"#, 6_000);
    // The flipped decision's trail holds an edit refused while it was accepted.
    let refusal = format!(
        "(at, operation, item_id, kind, org, project, branch, summary) VALUES (7000, 'blocked', \
         '{flipped}', 'decision', 'acme', 'api', 'main', \
         'decision {flipped} is accepted: its `rationale` cannot change')"
    );
    let into = match db.backend() {
        Backend::Sqlite => "audit_append",
        Backend::Postgres => "audit_log",
    };
    db.execute_raw(&format!("INSERT INTO {into} {refusal}")).unwrap();

    let store = db.open();
    let records = store.audit(&cortex_store::AuditQuery { limit: 100, ..Default::default() }).unwrap();
    let found: Vec<(Option<i64>, i64)> = [accepted, deprecated, flipped, never, dated, draft, accepted_risk]
        .iter()
        .map(|id| {
            let item = store.get(&[*id]).unwrap().remove(0);
            (item.governed_since, item.record.updated_at)
        })
        .collect();
    assert_eq!(
        found,
        [
            (Some(1_000), 1_000),
            (Some(2_000), 2_000),
            (Some(7_000), 9_000),
            (None, 3_000),
            (Some(4_000), 4_000),
            (None, 5_000),
            (None, 6_000)
        ],
        "governed as found, and not one updated_at moved"
    );
    assert_eq!(records.len(), 8, "seven inserts and the refusal: the migration recorded nothing");
}
