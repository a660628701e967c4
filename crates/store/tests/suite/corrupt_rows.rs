//! Damaged rows read back as errors that name what is wrong, never as
//! another value: an id that is no UUID is not the nil id, an unknown kind is not `section`,
//! a failing query is not "no result".

use cortex_domain::{Kind, Scope, dedupe};
use cortex_store::*;
use cortex_testdb::{TestDb, per_backend};
use serde_json::json;
use uuid::Uuid;

per_backend!(an_unknown_kind_is_an_error_naming_it);

fn record(body: &str) -> Record {
    Record {
        id: Uuid::now_v7(),
        kind: Kind::Section,
        scope: Scope { org: Some("acme".into()), project: Some("api".into()), ..Scope::default() },
        title: "Title".into(),
        body: body.into(),
        content: None,
        data: json!({"title": "Title", "body": body}),
        metadata: None,
        source: None,
        tags: vec![],
        status: None,
        content_hash: format!("hash of {body}"),
        idempotency_key: None,
        ttl: None,
        created_at: 1,
        updated_at: 1,
        expires_at: None,
        occurred_at: None,
        vector: None,
        chunks: Vec::new(),
    }
}

fn insert(store: &dyn Store, r: &Record) {
    let out = store.write_batch(&[WriteOp::Insert { record: r.clone(), checks: dedupe::INSERT }]).unwrap();
    assert_eq!(out, vec![WriteOutcome::Inserted { id: r.id }]);
}

fn an_unknown_kind_is_an_error_naming_it(db: &TestDb) {
    let store = db.open();
    let r = record("kept body");
    insert(&*store, &r);
    db.execute_raw("UPDATE items SET kind = 'bogus'").unwrap();
    let read = store.get(&[r.id]).unwrap_err().to_string();
    assert!(read.contains("\"bogus\""), "{read}");
    // An update naming the item's kind used to find a `section` there and report a kind
    // mismatch (or, for a section, go ahead).
    let mut update = r.clone();
    update.body = "new body".into();
    let write = store.write_batch(&[WriteOp::Update { record: update }]).unwrap_err().to_string();
    assert!(write.contains("\"bogus\""), "{write}");
}

#[test]
fn a_damaged_id_is_an_error_not_the_nil_id() {
    let db = TestDb::sqlite();
    let store = db.open();
    let r = record("some body");
    insert(&*store, &r);
    db.execute_raw("UPDATE items SET id = 'not-a-uuid'").unwrap();
    // The duplicate check finds the damaged row: it used to answer "duplicate of
    // 00000000-0000-0000-0000-000000000000".
    let again = Record { id: Uuid::now_v7(), ..r.clone() };
    let e = store
        .write_batch(&[WriteOp::Insert { record: again, checks: dedupe::INSERT }])
        .unwrap_err()
        .to_string();
    assert!(e.contains("\"not-a-uuid\""), "{e}");
    let keyed = Record { id: Uuid::now_v7(), idempotency_key: Some("k".into()), ..record("other") };
    insert(&*store, &keyed);
    db.execute_raw(&format!("UPDATE items SET id = 'also-damaged' WHERE id = '{}'", keyed.id)).unwrap();
    let e = store.idempotency_owner(&keyed.scope, "k").unwrap_err().to_string();
    assert!(e.contains("\"also-damaged\""), "{e}");
}
