//! Item and chunk vectors, and the list the background embedding works through.

use super::*;
use cortex_domain::Kind;
use cortex_domain::graph::Cascade;
use cortex_store::*;
use cortex_testdb::{TestDb, per_backend};
use uuid::Uuid;

per_backend!(
    vectors_follow_their_items,
    new_vectors_change_nothing_else,
    live_items_without_vectors_are_listed_until_embedded,
    chunk_vectors_are_kept_searched_and_replaced_with_their_item,
);

fn vectors_follow_their_items(db: &TestDb) {
    let store = db.open();
    let with_vector =
        Record { vector: Some(vec![0.5, -0.25, 1.0]), ..record("Embedded", "has a vector", "main") };
    let without = record("Plain", "has none", "main");
    insert(&*store, &with_vector);
    insert(&*store, &without);
    let rows = store.vector_rows(None).unwrap();
    let row = rows.iter().find(|r| r.id == with_vector.id).unwrap();
    assert_eq!(row.vector.as_deref(), Some(&[0.5, -0.25, 1.0][..]));
    assert_eq!((row.facts.kind, row.deleted), (Kind::Section, false));
    assert!(rows.iter().find(|r| r.id == without.id).unwrap().vector.is_none());
    assert_eq!(store.vector_rows(Some(&[without.id, Uuid::now_v7()])).unwrap().len(), 1);

    // New text without a vector drops the old vector; a delete is reported as such.
    let update = Record { body: "new text".into(), updated_at: NOW + 5, vector: None, ..with_vector.clone() };
    store.write_batch(&[WriteOp::Update { record: update }]).unwrap();
    store
        .write_batch(&[WriteOp::Delete {
            id: without.id,
            kind: None,
            at: NOW + 6,
            cascade: Cascade::DeleteLinks,
        }])
        .unwrap();
    let changed = store.vector_rows(Some(&[with_vector.id, without.id])).unwrap();
    assert_eq!(changed.len(), 2);
    assert!(changed.iter().find(|r| r.id == with_vector.id).unwrap().vector.is_none());
    assert!(changed.iter().find(|r| r.id == without.id).unwrap().deleted);
}

fn new_vectors_change_nothing_else(db: &TestDb) {
    let store = db.open();
    let r = Record { vector: Some(vec![1.0, 0.0, 0.0]), ..record("embedded", "text", "main") };
    insert(&*store, &r);
    let audited = store.audit(&AuditQuery { limit: 100, ..AuditQuery::default() }).unwrap().len();
    let again = |id, vector| ItemVectors { id, vector, chunks: Vec::new() };
    store
        .set_vectors(&[again(r.id, vec![0.0, 0.6, 0.8]), again(Uuid::now_v7(), vec![1.0, 0.0, 0.0])])
        .unwrap();
    let page = store.export_page(None, 10).unwrap();
    assert_eq!(page.len(), 1, "an unknown id is skipped");
    assert_eq!(page[0].vector.as_deref(), Some(&[0.0, 0.6, 0.8][..]));
    assert_eq!(page[0].item.record.updated_at, NOW, "a re-embedding is not an update");
    assert_eq!(store.audit(&AuditQuery { limit: 100, ..AuditQuery::default() }).unwrap().len(), audited);
    // Another dimension is searchable at once (PostgreSQL indexes each dimension apart).
    store.set_vectors(&[again(r.id, vec![0.6, 0.8])]).unwrap();
    if let Some(found) = store.search_dense(&[0.6, 0.8], &filters(), 5).unwrap() {
        assert_eq!(found.iter().map(|m| m.id).collect::<Vec<_>>(), [r.id]);
    }
}

/// What the background embedding reads: live items without a vector, by id, in
/// pages; embedded or deleted, an item leaves the list.
fn live_items_without_vectors_are_listed_until_embedded(db: &TestDb) {
    let store = db.open();
    let embedded = Record { vector: Some(vec![1.0, 0.0, 0.0]), ..record("embedded", "has one", "main") };
    insert(&*store, &embedded);
    let mut waiting: Vec<Uuid> = (0..5)
        .map(|i| {
            let r = record(&format!("waiting {i}"), &format!("stored without a model {i}"), "main");
            insert(&*store, &r);
            r.id
        })
        .collect();
    waiting.sort();
    assert_eq!(store.count_unembedded().unwrap(), 5);
    let first = store.unembedded(None, 3).unwrap();
    assert_eq!(first, waiting[..3], "by id, a page at a time");
    assert_eq!(store.unembedded(Some(first[2]), 3).unwrap(), waiting[3..]);
    store
        .set_vectors(&[ItemVectors { id: waiting[0], vector: vec![0.0, 1.0, 0.0], chunks: Vec::new() }])
        .unwrap();
    store
        .write_batch(&[WriteOp::Delete {
            id: waiting[1],
            kind: None,
            at: NOW + 1,
            cascade: Cascade::DeleteLinks,
        }])
        .unwrap();
    assert_eq!(store.unembedded(None, 10).unwrap(), waiting[2..], "embedded and deleted items leave");
    assert_eq!(store.count_unembedded().unwrap(), 3);
    // A database that searches its vectors itself counts those of live items; SQLite leaves
    // the counting to the process's own index.
    match (store.engine(), store.searched_vectors().unwrap()) {
        (cortex_store::Engine::Postgres, Some((vectors, bytes))) => {
            assert_eq!(vectors, 2, "the embedded item and the one embedded after; the deleted one not");
            assert!(bytes > 0, "the HNSW index's bytes");
        }
        (cortex_store::Engine::Sqlite, None) => {}
        other => panic!("{other:?}"),
    }
}

fn chunk_vectors_are_kept_searched_and_replaced_with_their_item(db: &TestDb) {
    let store = db.open();
    let chunk = |start, end, vector: [f32; 3]| ChunkVector { start, end, vector: vector.to_vec() };
    let doc = Record {
        vector: Some(vec![1.0, 0.0, 0.0]),
        chunks: vec![chunk(0, 6, [0.0, 1.0, 0.0]), chunk(6, 12, [0.0, 0.0, 1.0])],
        ..record("Long doc", "part 1part 2", "main")
    };
    let plain = Record { vector: Some(vec![0.6, 0.8, 0.0]), ..record("Short", "no chunks", "main") };
    insert(&*store, &doc);
    insert(&*store, &plain);
    let rows = store.vector_rows(None).unwrap();
    assert_eq!(rows.iter().find(|r| r.id == doc.id).unwrap().chunks, doc.chunks);
    assert!(rows.iter().find(|r| r.id == plain.id).unwrap().chunks.is_empty());
    let exported = store.export_page(None, 10).unwrap();
    assert_eq!(exported.iter().find(|e| e.item.record.id == doc.id).unwrap().chunks, doc.chunks);
    let mut exact = store.vectors_of(&[doc.id, plain.id, Uuid::now_v7()]).unwrap();
    exact.sort_by_key(|v| v.id);
    let mut expected = vec![
        ItemVectors { id: doc.id, vector: vec![1.0, 0.0, 0.0], chunks: doc.chunks.clone() },
        ItemVectors { id: plain.id, vector: vec![0.6, 0.8, 0.0], chunks: Vec::new() },
    ];
    expected.sort_by_key(|v| v.id);
    assert_eq!(exact, expected, "an unknown id is left out");

    // A backend that searches vectors itself finds chunks, saying which.
    if let Some(found) = store.search_dense(&[0.0, 0.0, 1.0], &filters(), 5).unwrap() {
        assert_eq!((found[0].id, found[0].chunk), (doc.id, Some((6, 12))), "{found:?}");
        assert!(found.iter().any(|m| m.id == doc.id && m.chunk.is_none()), "the whole text too");
    }

    // A re-embedding replaces the chunk vectors; new text without them drops them.
    let new_chunks = vec![chunk(0, 12, [0.0, 0.6, 0.8])];
    store
        .set_vectors(&[ItemVectors { id: doc.id, vector: vec![1.0, 0.0, 0.0], chunks: new_chunks.clone() }])
        .unwrap();
    let exported = store.export_page(None, 10).unwrap();
    assert_eq!(exported.iter().find(|e| e.item.record.id == doc.id).unwrap().chunks, new_chunks);
    let update = Record { body: "short now".into(), updated_at: NOW + 5, chunks: Vec::new(), ..doc.clone() };
    store.write_batch(&[WriteOp::Update { record: update }]).unwrap();
    let changed = store.vector_rows(Some(&[doc.id])).unwrap();
    assert!(changed.iter().find(|r| r.id == doc.id).unwrap().chunks.is_empty());
    if let Some(found) = store.search_dense(&[0.0, 0.6, 0.8], &filters(), 5).unwrap() {
        assert!(found.iter().all(|m| m.chunk.is_none()), "{found:?}");
    }

    // An import brings its chunk vectors along.
    let imported = StoredItem {
        record: Record { vector: None, chunks: Vec::new(), ..record("Imported", "part 1part 2", "main") },
        deleted_at: None,
        superseded_by: None,
        governed_since: None,
        author: None,
    };
    let op = WriteOp::Import {
        item: Box::new(imported.clone()),
        vector: Some(vec![1.0, 0.0, 0.0]),
        chunks: doc.chunks.clone(),
    };
    store.write_batch(&[op]).unwrap();
    let exported = store.export_page(None, 10).unwrap();
    assert_eq!(exported.iter().find(|e| e.item.record.id == imported.record.id).unwrap().chunks, doc.chunks);
}
