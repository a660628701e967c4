//! What only the SQLite backend has: its migration guard and multi-process behaviour.

use cortex_domain::{Kind, Scope};
use cortex_store::{Record, SqliteStore, Store, StoreError, WriteOp, WriteOutcome};
use serde_json::json;
use std::sync::{Arc, Barrier};
use uuid::Uuid;

fn record(i: usize, key: Option<&str>) -> Record {
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
        vector: None,
    }
}

#[test]
fn a_changed_migration_stops_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    let store = SqliteStore::open(&path).unwrap();
    store.execute_raw("UPDATE schema_migrations SET checksum = 'tampered' WHERE version = 1").unwrap();
    drop(store);
    match SqliteStore::open(&path) {
        Err(StoreError::MigrationChanged { version: 1, .. }) => {}
        other => panic!("expected MigrationChanged, got {:?}", other.err()),
    }
}

#[test]
fn a_newer_schema_stops_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    let store = SqliteStore::open(&path).unwrap();
    store.execute_raw("INSERT INTO schema_migrations VALUES (99, 'future', 'x', 0)").unwrap();
    drop(store);
    assert!(matches!(SqliteStore::open(&path), Err(StoreError::SchemaTooNew { found: 99, .. })));
}

#[test]
fn the_fts_index_follows_raw_sql_too() {
    // The database keeps the index in sync, not the Rust code: a raw UPDATE is indexed.
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("m.db")).unwrap();
    let r = record(1, None);
    store.write_batch(&[WriteOp::Insert { record: r.clone(), dedupe: true }]).unwrap();
    store.execute_raw(&format!("UPDATE items SET body = 'zebra crossing' WHERE id = '{}'", r.id)).unwrap();
    assert!(store.knows_word("zebra").unwrap());
    assert!(!store.knows_word("body").unwrap(), "the old body text left the index");
}

/// Eight writers with their own connections (as separate processes would have) on one
/// file: nothing is lost, and one idempotency key sent by all of them yields one item.
#[test]
fn concurrent_writers_lose_nothing_and_share_one_idempotent_item() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    SqliteStore::open(&path).unwrap();
    let writers = 8;
    let batches = 20;
    let barrier = Arc::new(Barrier::new(writers));
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let path = path.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let store = SqliteStore::open(&path).unwrap();
                barrier.wait();
                let mut idempotent = Vec::new();
                for b in 0..batches {
                    let ops: Vec<WriteOp> = (0..10)
                        .map(|i| WriteOp::Insert {
                            record: record(w * 10_000 + b * 100 + i, None),
                            dedupe: true,
                        })
                        .chain(std::iter::once(WriteOp::Insert {
                            record: record(999_999, Some("same-key")),
                            dedupe: false,
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
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.stats().unwrap().items as usize, writers * batches * 10 + 1);
}

#[test]
fn the_change_counter_moves_when_another_process_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    let reader = SqliteStore::open(&path).unwrap();
    let writer = SqliteStore::open(&path).unwrap();
    let before = reader.change_counter().unwrap();
    assert_eq!(reader.change_counter().unwrap(), before, "stable without writes");
    writer.write_batch(&[WriteOp::Insert { record: record(1, None), dedupe: true }]).unwrap();
    assert_ne!(reader.change_counter().unwrap(), before);
}
