//! Items written, read back, updated, deleted and expired; duplicates and idempotency keys; batches.

use super::*;
use cortex_domain::dedupe;
use cortex_domain::graph::Cascade;
use cortex_domain::{Kind, Scope};
use cortex_store::*;
use cortex_testdb::{TestDb, per_backend};
use serde_json::json;
use uuid::Uuid;

per_backend!(
    inserted_items_read_back_whole,
    exact_duplicates_in_the_same_scope_are_reported,
    duplicates_in_another_branch_are_not_duplicates,
    idempotency_key_yields_one_item_per_project,
    update_keeps_id_created_at_and_unnamed_scope,
    update_of_missing_or_other_kind_is_refused,
    deleted_items_vanish_from_search_but_stay_readable,
    expired_items_are_hidden,
    a_batch_is_atomic_per_call,
    metadata_round_trips,
    a_supersede_writes_only_the_status_it_is_given,
    a_batch_checked_against_a_changed_item_writes_nothing,
);

fn inserted_items_read_back_whole(db: &TestDb) {
    let store = db.open();
    let r = record("Deploy guide", "Run make deploy", "main");
    assert_eq!(insert(&*store, &r), WriteOutcome::Inserted { id: r.id });
    let got = store.get(&[r.id]).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].record, r);
    assert_eq!(got[0].deleted_at, None);
}

fn exact_duplicates_in_the_same_scope_are_reported(db: &TestDb) {
    let store = db.open();
    let first = record("Deploy guide", "Run make deploy", "main");
    insert(&*store, &first);
    let again = Record { id: Uuid::now_v7(), ..first.clone() };
    assert_eq!(
        insert(&*store, &again),
        WriteOutcome::Duplicate { existing_id: first.id, reason: DuplicateReason::ContentHash }
    );
    // dedupe: false stores it anyway.
    let forced = store
        .write_batch(&[WriteOp::Insert { record: again.clone(), checks: dedupe::INSERT_ANYWAY }])
        .unwrap();
    assert_eq!(forced[0], WriteOutcome::Inserted { id: again.id });
}

fn duplicates_in_another_branch_are_not_duplicates(db: &TestDb) {
    let store = db.open();
    let first = record("Deploy guide", "Run make deploy", "main");
    insert(&*store, &first);
    let other = Record { id: Uuid::now_v7(), scope: scope("feature"), ..first };
    assert_eq!(insert(&*store, &other), WriteOutcome::Inserted { id: other.id });
}

fn idempotency_key_yields_one_item_per_project(db: &TestDb) {
    let store = db.open();
    let a = Record { idempotency_key: Some("req-1".into()), ..record("A", "first text", "main") };
    let b = Record { idempotency_key: Some("req-1".into()), ..record("B", "other text", "feature") };
    assert_eq!(store.idempotency_owner(&b.scope, "req-1").unwrap(), None);
    insert(&*store, &a);
    // What the service asks before a batch: the item an insert with this key would duplicate.
    assert_eq!(store.idempotency_owner(&b.scope, "req-1").unwrap(), Some(a.id));
    assert_eq!(store.idempotency_owner(&b.scope, "req-2").unwrap(), None);
    assert_eq!(
        insert(&*store, &b),
        WriteOutcome::Duplicate { existing_id: a.id, reason: DuplicateReason::IdempotencyKey }
    );
}

fn update_keeps_id_created_at_and_unnamed_scope(db: &TestDb) {
    let store = db.open();
    let r = record("Deploy guide", "Run make deploy", "feature");
    insert(&*store, &r);
    let update = Record {
        title: "Deploy guide v2".into(),
        body: "Run make release".into(),
        scope: Scope::default(),
        created_at: NOW + 5,
        updated_at: NOW + 5,
        ..r.clone()
    };
    assert_eq!(
        store.write_batch(&[WriteOp::Update { record: update }]).unwrap()[0],
        WriteOutcome::Updated { id: r.id }
    );
    let got = &store.get(&[r.id]).unwrap()[0].record;
    assert_eq!(got.title, "Deploy guide v2");
    assert_eq!(got.created_at, NOW);
    assert_eq!(got.updated_at, NOW + 5);
    assert_eq!(got.scope, scope("feature"));
    // The index follows the update.
    let found = store.search_lexical(&query("release", filters())).unwrap();
    assert_eq!(ids(&found), vec![r.id]);
    assert!(store.search_lexical(&query("deploy guide v1 make", filters())).unwrap().len() == 1);
}

fn update_of_missing_or_other_kind_is_refused(db: &TestDb) {
    let store = db.open();
    let r = record("Deploy guide", "Run make deploy", "main");
    insert(&*store, &r);
    let missing = Record { id: Uuid::now_v7(), ..r.clone() };
    let other_kind = Record { kind: Kind::Decision, ..r.clone() };
    let out = store
        .write_batch(&[WriteOp::Update { record: missing.clone() }, WriteOp::Update { record: other_kind }])
        .unwrap();
    assert_eq!(out[0], WriteOutcome::NotFound { id: missing.id });
    assert_eq!(out[1], WriteOutcome::KindMismatch { id: r.id, stored: Kind::Section });
}

fn deleted_items_vanish_from_search_but_stay_readable(db: &TestDb) {
    let store = db.open();
    let r = record("Rotate vault tokens", "Monthly rotation", "main");
    insert(&*store, &r);
    let out = store
        .write_batch(&[WriteOp::Delete { id: r.id, kind: None, at: NOW + 1, cascade: Cascade::DeleteLinks }])
        .unwrap();
    assert_eq!(out[0], WriteOutcome::Deleted { id: r.id, already: false, cascaded: 0 });
    assert!(store.search_lexical(&query("vault", filters())).unwrap().is_empty());
    assert_eq!(store.get(&[r.id]).unwrap()[0].deleted_at, Some(NOW + 1));
    let again = store
        .write_batch(&[WriteOp::Delete { id: r.id, kind: None, at: NOW + 2, cascade: Cascade::DeleteLinks }])
        .unwrap();
    assert_eq!(again[0], WriteOutcome::Deleted { id: r.id, already: true, cascaded: 0 });
    // A deleted item's text no longer blocks storing it again.
    let fresh = Record { id: Uuid::now_v7(), ..r };
    assert_eq!(insert(&*store, &fresh), WriteOutcome::Inserted { id: fresh.id });
}

fn expired_items_are_hidden(db: &TestDb) {
    let store = db.open();
    let r = Record { expires_at: Some(NOW + 10), ..record("Temp note", "ephemeral flag", "main") };
    insert(&*store, &r);
    assert_eq!(store.search_lexical(&query("ephemeral", filters())).unwrap().len(), 1);
    let later = Filters { now: NOW + 10, ..filters() };
    assert!(store.search_lexical(&query("ephemeral", later)).unwrap().is_empty());
}

fn a_batch_is_atomic_per_call(db: &TestDb) {
    let store = db.open();
    let a = record("One", "first", "main");
    let b = record("Two", "second", "main");
    let out = store
        .write_batch(&[
            WriteOp::Insert { record: a.clone(), checks: dedupe::INSERT },
            WriteOp::Insert { record: b.clone(), checks: dedupe::INSERT },
        ])
        .unwrap();
    assert_eq!(out.len(), 2);
    // A duplicate inside the same batch sees the first one.
    let c = Record { id: Uuid::now_v7(), ..a.clone() };
    let out = store.write_batch(&[WriteOp::Insert { record: c, checks: dedupe::INSERT }]).unwrap();
    assert!(matches!(out[0], WriteOutcome::Duplicate { existing_id, .. } if existing_id == a.id));
}

fn metadata_round_trips(db: &TestDb) {
    let store = db.open();
    assert_eq!(store.meta("embedding_model").unwrap(), None);
    store.set_meta("embedding_model", "m/1").unwrap();
    store.set_meta("embedding_model", "m/2").unwrap();
    assert_eq!(store.meta("embedding_model").unwrap().as_deref(), Some("m/2"));
}

fn a_supersede_writes_only_the_status_it_is_given(db: &TestDb) {
    let store = db.open();
    let mut with_status = record("old plan", "kept as history", "main");
    with_status.status = Some("accepted".into());
    with_status.data = json!({"status": "accepted", "other": 1});
    let mut without = record("old note", "kept as is", "main");
    without.status = Some("open".into());
    let newer = record("new plan", "replaces both", "main");
    for r in [&with_status, &without, &newer] {
        assert!(matches!(insert(&*store, r), WriteOutcome::Inserted { .. }));
    }
    let status = Some(cortex_domain::lifecycle::StatusChange { field: "status", value: "superseded" });
    let out = store
        .write_batch(&[
            WriteOp::Supersede { id: with_status.id, by: newer.id, at: NOW + 1, status },
            WriteOp::Supersede { id: without.id, by: newer.id, at: NOW + 1, status: None },
        ])
        .unwrap();
    assert_eq!(
        out,
        vec![WriteOutcome::Updated { id: with_status.id }, WriteOutcome::Updated { id: without.id }]
    );
    let items = store.get(&[with_status.id, without.id]).unwrap();
    let read = |id: Uuid| items.iter().find(|i| i.record.id == id).unwrap();
    let changed = read(with_status.id);
    assert_eq!(changed.superseded_by, Some(newer.id));
    assert_eq!(changed.record.status.as_deref(), Some("superseded"));
    assert_eq!(changed.record.data, json!({"status": "superseded", "other": 1}));
    let kept = read(without.id);
    assert_eq!(kept.superseded_by, Some(newer.id));
    assert_eq!(kept.record.status.as_deref(), Some("open"));
    assert_eq!(kept.record.data, json!({}));
}

/// A batch carries the state its checks saw of the items it writes over;
/// when another writer changed one since, nothing of the batch is written.
fn a_batch_checked_against_a_changed_item_writes_nothing(db: &TestDb) {
    let store = db.open();
    let other = db.open();
    let item = record("Checked", "as first seen", "main");
    insert(&*store, &item);
    let seen = ExpectedState::of(&store.get(&[item.id]).unwrap()[0]);
    let edit = Record { body: "edited".into(), updated_at: NOW + 2, ..item.clone() };
    let newcomer = record("New", "inserted beside the edit", "main");
    let batch = [
        WriteOp::Insert { record: newcomer.clone(), checks: dedupe::INSERT },
        WriteOp::Update { record: edit.clone() },
    ];
    let checked = WriteContext { expected: vec![seen.clone()], ..WriteContext::default() };

    // Another process changes the item after the check.
    let meanwhile = Record { body: "changed meanwhile".into(), updated_at: NOW + 1, ..item.clone() };
    other.write_batch(&[WriteOp::Update { record: meanwhile }]).unwrap();
    match store.write_batch_as(&batch, &checked) {
        Err(StoreError::Conflict { id }) => assert_eq!(id, item.id),
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert!(store.get(&[newcomer.id]).unwrap().is_empty(), "nothing of the batch was written");
    assert_eq!(store.get(&[item.id]).unwrap()[0].record.body, "changed meanwhile");

    // Checked again against what is stored now, it goes through.
    let now_seen = ExpectedState::of(&store.get(&[item.id]).unwrap()[0]);
    assert_ne!(now_seen, seen);
    let rechecked = WriteContext { expected: vec![now_seen], ..WriteContext::default() };
    let out = store.write_batch_as(&batch, &rechecked).unwrap();
    assert_eq!(out[1], WriteOutcome::Updated { id: item.id });
    assert_eq!(store.get(&[item.id]).unwrap()[0].record.body, "edited");

    // A deleted item is a change too.
    let seen = ExpectedState::of(&store.get(&[item.id]).unwrap()[0]);
    other
        .write_batch(&[WriteOp::Delete {
            id: item.id,
            kind: None,
            at: NOW + 3,
            cascade: Cascade::DeleteLinks,
        }])
        .unwrap();
    let checked = WriteContext { expected: vec![seen], ..WriteContext::default() };
    assert!(matches!(
        store.write_batch_as(&[WriteOp::Update { record: edit }], &checked),
        Err(StoreError::Conflict { .. })
    ));
}
