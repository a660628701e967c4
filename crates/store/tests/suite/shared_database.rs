//! One database shared by several processes, and its guards, on every backend: the migration
//! checks at start-up, the search index kept by the database itself, concurrent writers, and
//! one process seeing another's writes. Each "process" is a store opened separately, with
//! connections of its own.

use super::conformance::{filters, query};
use cortex_domain::dedupe;
use cortex_domain::graph::Cascade;
use cortex_domain::{Kind, Scope};
use cortex_store::{AuditQuery, Record, Store, StoreError, StoredItem, WriteContext, WriteOp, WriteOutcome};
use cortex_testdb::{TestDb, per_backend};
use serde_json::json;
use std::sync::{Arc, Barrier};
use uuid::Uuid;

/// How many live items the database's own full-text search finds for `word`.
fn matches(store: &dyn Store, word: &str) -> usize {
    store.count_lexical(&query(word, filters()), 100).unwrap()
}

pub(crate) fn record(i: usize, key: Option<&str>) -> Record {
    Record {
        id: Uuid::now_v7(),
        kind: Kind::Todo,
        scope: Scope {
            org: Some("acme".into()),
            project: Some("api".into()),
            branch: Some("main".into()),
            ..Scope::default()
        },
        title: format!("task {i}"),
        body: format!("body of task {i}"),
        content: None,
        data: json!({}),
        metadata: None,
        source: None,
        tags: vec![],
        status: Some("open".into()),
        content_hash: format!("hash-{i}"),
        idempotency_key: key.map(str::to_string),
        ttl: None,
        created_at: 1,
        updated_at: 1,
        expires_at: None,
        occurred_at: None,
        vector: None,
        chunks: Vec::new(),
    }
}

per_backend!(
    a_changed_migration_stops_start_up,
    a_newer_schema_stops_start_up,
    the_search_index_follows_raw_sql_too,
    updated_at_is_kept_by_the_database,
    concurrent_writers_lose_nothing_and_share_one_idempotent_item,
    writers_bringing_the_first_vectors_at_once_all_succeed,
    the_change_counter_moves_when_another_process_writes,
    the_change_counter_moves_when_a_writer_running_at_its_read_commits,
    a_write_is_visible_to_another_process_at_once,
    every_change_is_audited_once_by_the_database,
    audit_records_cannot_be_changed_even_by_raw_sql,
);

fn a_changed_migration_stops_start_up(db: &TestDb) {
    let store = db.open();
    db.execute_raw("UPDATE schema_migrations SET checksum = 'tampered' WHERE version = 1").unwrap();
    drop(store);
    match cortex_store::open(db.target()) {
        Err(StoreError::MigrationChanged { version: 1, .. }) => {}
        other => panic!("expected MigrationChanged, got {:?}", other.err()),
    }
}

fn a_newer_schema_stops_start_up(db: &TestDb) {
    let store = db.open();
    db.execute_raw("INSERT INTO schema_migrations VALUES (99, 'future', 'x', 0)").unwrap();
    drop(store);
    assert!(matches!(cortex_store::open(db.target()), Err(StoreError::SchemaTooNew { found: 99, .. })));
}

fn the_search_index_follows_raw_sql_too(db: &TestDb) {
    // The database keeps the index in sync, not the Rust code: a raw UPDATE is indexed.
    let store = db.open();
    let r = record(1, None);
    store.write_batch(&[WriteOp::Insert { record: r.clone(), checks: dedupe::INSERT }]).unwrap();
    db.execute_raw(&format!("UPDATE items SET body = 'zebra crossing' WHERE id = '{}'", r.id)).unwrap();
    assert_eq!(matches(&*store, "zebra"), 1);
    assert_eq!(matches(&*store, "body"), 0, "the old body text left the index");
}

fn updated_at_is_kept_by_the_database(db: &TestDb) {
    // A raw UPDATE that forgets `updated_at` still moves it.
    let store = db.open();
    let r = record(1, None);
    store.write_batch(&[WriteOp::Insert { record: r.clone(), checks: dedupe::INSERT }]).unwrap();
    db.execute_raw(&format!("UPDATE items SET title = 'renamed' WHERE id = '{}'", r.id)).unwrap();
    let item = &store.get(&[r.id]).unwrap()[0];
    assert_eq!(item.record.title, "renamed");
    assert!(item.record.updated_at > r.updated_at, "updated_at moved: {}", item.record.updated_at);
}

/// Eight writers with their own connections (as separate processes would have) on one
/// database: nothing is lost, and one idempotency key sent by all of them yields one item.
fn concurrent_writers_lose_nothing_and_share_one_idempotent_item(db: &TestDb) {
    db.open();
    let writers = 8;
    let batches = 20;
    let barrier = Arc::new(Barrier::new(writers));
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let target = db.target().clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let store = cortex_store::open(&target).unwrap();
                barrier.wait();
                let mut idempotent = Vec::new();
                for b in 0..batches {
                    let ops: Vec<WriteOp> = (0..10)
                        .map(|i| WriteOp::Insert {
                            record: record(w * 10_000 + b * 100 + i, None),
                            checks: dedupe::INSERT,
                        })
                        .chain(std::iter::once(WriteOp::Insert {
                            record: record(999_999, Some("same-key")),
                            checks: dedupe::INSERT_ANYWAY,
                        }))
                        .collect();
                    let out = store.write_batch(&ops).unwrap();
                    idempotent.push(out.last().unwrap().clone());
                }
                idempotent
            })
        })
        .collect();
    let outcomes: Vec<WriteOutcome> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
    let inserted = outcomes.iter().filter(|o| matches!(o, WriteOutcome::Inserted { .. })).count();
    assert_eq!(inserted, 1, "the shared key is stored once");
    assert_eq!(db.open().stats().unwrap().items as usize, writers * batches * 10 + 1);
}

/// Eight writers whose first batches carry vectors of a dimension the database has no index
/// for yet, all at once: none fails, whichever builds the index (PostgreSQL's `CREATE INDEX
/// CONCURRENTLY` waits for every open snapshot, and two builds on one table for each other),
/// and the index is there, valid, once they are done.
fn writers_bringing_the_first_vectors_at_once_all_succeed(db: &TestDb) {
    db.open();
    let writers = 8;
    let barrier = Arc::new(Barrier::new(writers));
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let target = db.target().clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let store = cortex_store::open(&target).unwrap();
                barrier.wait();
                let mut r = record(w, None);
                r.vector = Some(vec![1.0, w as f32, 0.5]);
                store.write_batch(&[WriteOp::Insert { record: r, checks: dedupe::INSERT }])
            })
        })
        .collect();
    for handle in handles {
        let out = handle.join().unwrap().unwrap();
        assert!(matches!(out[0], WriteOutcome::Inserted { .. }), "{out:?}");
    }
    let store = db.open();
    assert_eq!(store.stats().unwrap().items as usize, writers);
    if db.backend() == cortex_testdb::Backend::Postgres {
        // A write after them all makes sure of the index (a build that lost a collision left
        // it to this one).
        let mut r = record(writers, None);
        r.vector = Some(vec![0.0, 1.0, 0.5]);
        store.write_batch(&[WriteOp::Insert { record: r, checks: dedupe::INSERT }]).unwrap();
        let valid = db.execute_raw(
            "SELECT 1 FROM pg_index WHERE indexrelid IN ('items_embedding_3'::regclass, 'item_chunks_embedding_3'::regclass) AND indisvalid",
        );
        assert_eq!(valid, Ok(2), "both indexes of the dimension are there and valid");
    }
}

/// The change counter once two reads in a row agree; `None` if they never do. On PostgreSQL it
/// reads the whole server's running transactions, and the other tests' databases share the
/// server: while they run it takes a few tries.
fn stable_counter(store: &Arc<dyn Store>) -> Option<i64> {
    let mut last = store.change_counter().unwrap();
    for _ in 0..200 {
        let next = store.change_counter().unwrap();
        if next == last {
            return Some(next);
        }
        last = next;
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    None
}

fn the_change_counter_moves_when_another_process_writes(db: &TestDb) {
    let reader = db.open();
    let writer = db.open();
    let before = stable_counter(&reader).expect("stable without writes");
    writer.write_batch(&[WriteOp::Insert { record: record(1, None), checks: dedupe::INSERT }]).unwrap();
    assert_ne!(reader.change_counter().unwrap(), before);
}

/// PostgreSQL takes a change's sequence value when the transaction writes, not when it
/// commits: a reader whose counter did not move after an older writer committed would never
/// read that writer's entry (a find missed an item whose store had answered).
fn the_change_counter_moves_when_a_writer_running_at_its_read_commits(db: &TestDb) {
    let reader = db.open();
    let cortex_testdb::Backend::Postgres = db.backend() else {
        // SQLite writes one transaction at a time: its counter moves at the commit.
        return;
    };
    let url = db.db_arg();
    let mut writer = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let mut running = writer.transaction().unwrap();
    // Takes a transaction id, as an insert does: the transaction is now a running writer.
    running.query_typed_one("SELECT pg_current_xact_id()::text", &[]).unwrap();
    let while_running = stable_counter(&reader).expect("stable while nothing ends");
    running.commit().unwrap();
    assert_ne!(reader.change_counter().unwrap(), while_running, "the writer's end moves it");
}

fn a_write_is_visible_to_another_process_at_once(db: &TestDb) {
    let reader = db.open();
    let writer = db.open();
    let r = record(7, None);
    writer.write_batch(&[WriteOp::Insert { record: r.clone(), checks: dedupe::INSERT }]).unwrap();
    assert_eq!(reader.get(&[r.id]).unwrap().len(), 1);
    assert_eq!(matches(&*reader, "task"), 1);
}

fn every_change_is_audited_once_by_the_database(db: &TestDb) {
    let store = db.open();
    let context = WriteContext {
        request_id: Some("req-1".into()),
        principal: Some("key:acme/ci-agent".into()),
        via: Some("memory_store".into()),
        ..WriteContext::default()
    };
    let a = record(1, None);
    let b = Record { source: Some(json!({"actor": "alice"})), ..record(2, None) };
    let out = store
        .write_batch_as(
            &[
                WriteOp::Insert { record: a.clone(), checks: dedupe::INSERT },
                WriteOp::Insert { record: b.clone(), checks: dedupe::INSERT },
                // Not a change: no record.
                WriteOp::Insert {
                    record: Record { id: Uuid::now_v7(), ..a.clone() },
                    checks: dedupe::INSERT,
                },
            ],
            &context,
        )
        .unwrap();
    assert!(matches!(out[2], WriteOutcome::Duplicate { .. }));
    let changed =
        Record { title: "task 1 renamed".into(), content_hash: "hash-1b".into(), updated_at: 2, ..a.clone() };
    store.write_batch(&[WriteOp::Update { record: changed }]).unwrap();
    store
        .write_batch(&[WriteOp::Delete { id: a.id, kind: None, at: 3, cascade: Cascade::DeleteLinks }])
        .unwrap();
    store
        .write_batch(&[WriteOp::Delete { id: a.id, kind: None, at: 4, cascade: Cascade::DeleteLinks }])
        .unwrap(); // already: no record
    let imported = StoredItem {
        record: record(3, None),
        deleted_at: None,
        superseded_by: None,
        governed_since: None,
        author: None,
    };
    store
        .write_batch(&[WriteOp::Import {
            item: Box::new(imported.clone()),
            vector: None,
            chunks: Vec::new(),
        }])
        .unwrap();
    // Raw SQL is audited too: an edit, and a hard delete (a purge).
    db.execute_raw(&format!("UPDATE items SET status = 'done' WHERE id = '{}'", b.id)).unwrap();
    db.execute_raw(&format!("DELETE FROM items WHERE id = '{}'", imported.record.id)).unwrap();

    let all = store.audit(&AuditQuery { limit: 100, ..AuditQuery::default() }).unwrap();
    let ops: Vec<(&str, Option<Uuid>)> = all.iter().map(|r| (r.operation.as_str(), r.item_id)).collect();
    assert_eq!(
        ops,
        vec![
            ("insert", Some(a.id)),
            ("insert", Some(b.id)),
            ("update", Some(a.id)),
            ("delete", Some(a.id)),
            ("import", Some(imported.record.id)),
            ("update", Some(b.id)),
            ("purge", Some(imported.record.id)),
        ]
    );
    let (first, second) = (&all[0], &all[1]);
    assert_eq!(
        (first.request_id.as_deref(), first.principal.as_deref(), first.via.as_deref()),
        (Some("req-1"), Some("key:acme/ci-agent"), Some("memory_store"))
    );
    assert_eq!(first.claimed.actor, None, "the item claimed nothing");
    assert_eq!(
        (second.principal.as_deref(), second.claimed.actor.as_deref()),
        (Some("key:acme/ci-agent"), Some("alice")),
        "the item's claim is kept beside the principal, never in its place"
    );
    let raw = all.iter().find(|r| r.operation == "update" && r.item_id == Some(b.id)).unwrap();
    assert_eq!(raw.principal, None, "raw SQL has no principal: the record says so");
    assert_eq!(first.batch_id, second.batch_id, "one batch, one batch id");
    assert_ne!(all[2].batch_id, first.batch_id);
    assert_eq!(first.scope.branch.as_deref(), Some("main"));
    assert_eq!((first.hash_before.as_deref(), first.hash_after.as_deref()), (None, Some("hash-1")));
    assert_eq!(
        (all[2].hash_before.as_deref(), all[2].hash_after.as_deref()),
        (Some("hash-1"), Some("hash-1b"))
    );
    assert_eq!(all[2].summary, "changed title");
    assert_eq!(all[5].summary, "changed status");
    assert!(all[5].request_id.is_none(), "raw SQL after a batch is not attributed to it");
    assert!(all.windows(2).all(|w| w[0].seq < w[1].seq && w[0].at <= w[1].at));

    let history = store.audit(&AuditQuery { item: Some(a.id), limit: 100, ..AuditQuery::default() }).unwrap();
    assert_eq!(history.len(), 3);
    let later =
        store.audit(&AuditQuery { since: Some(all[4].at), limit: 100, ..AuditQuery::default() }).unwrap();
    assert!(later.len() >= 3 && later.iter().all(|r| r.at >= all[4].at));
}

fn audit_records_cannot_be_changed_even_by_raw_sql(db: &TestDb) {
    let store = db.open();
    store.write_batch(&[WriteOp::Insert { record: record(1, None), checks: dedupe::INSERT }]).unwrap();
    let before = store.audit(&AuditQuery { limit: 10, ..AuditQuery::default() }).unwrap();
    assert_eq!(before.len(), 1);
    let mut attempts = vec!["UPDATE audit_log SET summary = 'nothing happened'", "DELETE FROM audit_log"];
    if db.backend() == cortex_testdb::Backend::Postgres {
        attempts.push("TRUNCATE audit_log");
    }
    for sql in attempts {
        let err = db.execute_raw(sql).expect_err(sql).to_string();
        assert!(err.contains("append-only"), "{sql}: {err}");
    }
    assert_eq!(store.audit(&AuditQuery { limit: 10, ..AuditQuery::default() }).unwrap(), before);
}

/// The first HNSW index of a new dimension used to be built under the
/// store's mutex (and a plain CREATE INDEX, which blocks every writer). Here the build must
/// wait for a transaction holding the table, and a write without vectors goes through
/// meanwhile; the index is there once the transaction ends.
#[test]
fn building_a_vector_index_does_not_hold_up_other_writes() {
    let db = TestDb::postgres();
    let store = db.open();
    let mut blocker = postgres::Client::connect(&db.db_arg(), postgres::NoTls).unwrap();
    let mut watcher = postgres::Client::connect(&db.db_arg(), postgres::NoTls).unwrap();
    let mut tx = blocker.transaction().unwrap();
    tx.batch_execute("LOCK TABLE items IN ROW EXCLUSIVE MODE").unwrap();
    std::thread::scope(|s| {
        let with_vector = s.spawn(|| {
            let mut r = record(1, None);
            r.vector = Some(vec![0.6, 0.8, 0.0]);
            store.write_batch(&[WriteOp::Insert { record: r, checks: dedupe::INSERT }]).unwrap()
        });
        // Until the build is seen waiting for the blocking transaction.
        loop {
            let waiting: i64 = watcher
                .query_typed_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
                     AND query LIKE 'CREATE INDEX%' AND wait_event_type = 'Lock'",
                    &[],
                )
                .unwrap()
                .get(0);
            if waiting > 0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let other = store
            .write_batch(&[WriteOp::Insert { record: record(2, None), checks: dedupe::INSERT }])
            .unwrap();
        assert!(matches!(other[0], WriteOutcome::Inserted { .. }), "{other:?}");
        tx.commit().unwrap();
        assert!(matches!(with_vector.join().unwrap()[0], WriteOutcome::Inserted { .. }));
    });
    let valid: bool = watcher
        .query_typed_one(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = 'items_embedding_3'::regclass",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(valid, "the index was built, and is valid");
}

/// On a shared server, time is the server's. Every client (and so every
/// item time and purge) reads the same clock, whatever its own says.
#[test]
fn a_shared_servers_clock_is_the_one_clients_use() {
    let db = TestDb::postgres();
    let store = db.open();
    let mut raw = postgres::Client::connect(&db.db_arg(), postgres::NoTls).unwrap();
    let server_now = |c: &mut postgres::Client| -> i64 {
        c.query_typed_one("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint", &[])
            .unwrap()
            .get(0)
    };
    let before = server_now(&mut raw);
    let now = store.now().unwrap();
    let after = server_now(&mut raw);
    assert!(before <= now && now <= after, "{before} <= {now} <= {after}");
}
