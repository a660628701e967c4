//! The change log on every backend: each insert, update, delete, import,
//! re-embedding and purge of an item, by any process, names the item to `changes_since`;
//! readers page through it; the log is bounded and a reader left behind is told to reload;
//! on PostgreSQL a change committed out of seq order is not skipped.

use cortex_domain::graph::Cascade;
use cortex_domain::{Kind, Scope, dedupe};
use cortex_store::{
    CHANGE_LOG_RETENTION, ChangeCursor, ItemVectors, Record, Store, StoredItem, WriteOp, WriteOutcome,
};
use cortex_testdb::{Backend, TestDb, per_backend};
use serde_json::json;
use uuid::Uuid;

per_backend!(
    every_change_of_an_item_or_its_vectors_is_in_the_log,
    the_log_is_read_a_page_at_a_time,
    a_reader_behind_the_pruned_log_is_told_to_reload,
);

const NOW: i64 = 1_800_000_000_000;

fn record(body: &str) -> Record {
    Record {
        id: Uuid::now_v7(),
        kind: Kind::Section,
        scope: Scope { org: Some("acme".into()), project: Some("api".into()), ..Scope::default() },
        title: body.into(),
        body: body.into(),
        content: Some(body.into()),
        data: json!({}),
        metadata: None,
        source: None,
        tags: vec![],
        status: None,
        content_hash: cortex_domain::text::content_hash(body),
        idempotency_key: None,
        ttl: None,
        created_at: NOW,
        updated_at: NOW,
        expires_at: None,
        occurred_at: None,
        vector: Some(vec![1.0, 0.0, 0.0]),
        chunks: Vec::new(),
    }
}

/// The items changed after `cursor`, read to the end; moves `cursor` on.
fn changed(store: &dyn Store, cursor: &mut ChangeCursor) -> Vec<Uuid> {
    let page = store.changes_since(*cursor, 1_000).unwrap();
    assert!(page.complete && !page.behind, "{page:?}");
    *cursor = page.next;
    page.items
}

/// `got` names `id`. On SQLite it names nothing else; on PostgreSQL changes of transactions
/// that were still running somewhere in the cluster (other tests') may be read again.
fn names(db: &TestDb, got: &[Uuid], id: Uuid, what: &str) {
    match db.backend() {
        Backend::Sqlite => assert_eq!(got, [id], "{what}"),
        Backend::Postgres => assert!(got.contains(&id), "{what}: {got:?}"),
    }
}

fn every_change_of_an_item_or_its_vectors_is_in_the_log(db: &TestDb) {
    let writer = db.open();
    let reader = db.open();
    let mut cursor = reader.change_head().unwrap();
    let mut seen = |expected: Uuid, what: &str| names(db, &changed(&*reader, &mut cursor), expected, what);
    let a = record("alpha");
    writer.write_batch(&[WriteOp::Insert { record: a.clone(), checks: dedupe::INSERT }]).unwrap();
    seen(a.id, "insert");

    // An import keeps its item's (old) timestamps: the log does not depend on them.
    let b = Record { created_at: 1, updated_at: 1, expires_at: Some(2), ..record("beta") };
    let imported = StoredItem {
        record: Record { vector: None, ..b.clone() },
        deleted_at: None,
        superseded_by: None,
        governed_since: None,
        author: None,
    };
    let out = writer
        .write_batch(&[WriteOp::Import { item: Box::new(imported), vector: None, chunks: Vec::new() }])
        .unwrap();
    assert_eq!(out, [WriteOutcome::Inserted { id: b.id }]);
    seen(b.id, "import");

    let update = Record { body: "alpha, changed".into(), updated_at: NOW + 1, ..a.clone() };
    writer.write_batch(&[WriteOp::Update { record: update }]).unwrap();
    seen(a.id, "update");

    // A re-embedding changes nothing but the vectors (not even updated_at).
    let chunks = vec![cortex_store::ChunkVector { start: 0, end: 2, vector: vec![0.0, 1.0, 0.0] }];
    writer.set_vectors(&[ItemVectors { id: b.id, vector: vec![0.0, 0.0, 1.0], chunks }]).unwrap();
    seen(b.id, "re-embedding");

    let delete = WriteOp::Delete { id: a.id, kind: None, at: NOW + 2, cascade: Cascade::DeleteLinks };
    writer.write_batch(&[delete]).unwrap();
    seen(a.id, "soft delete");

    // b expired long ago: a purge removes it for good, and the log says so.
    assert_eq!(
        writer.purge_expired(NOW, 100, false, Cascade::DeleteLinks, &Default::default()).unwrap(),
        [("section".to_string(), 1)]
    );
    seen(b.id, "purge");
    if db.backend() == Backend::Sqlite {
        assert_eq!(changed(&*reader, &mut cursor), Vec::<Uuid>::new(), "each change is read once");
    }
    assert!(reader.vector_rows(Some(&[b.id])).unwrap().is_empty(), "a purged item has no row");
}

fn the_log_is_read_a_page_at_a_time(db: &TestDb) {
    let store = db.open();
    let start = store.change_head().unwrap();
    let records: Vec<Record> = (0..5).map(|i| record(&format!("item {i}"))).collect();
    let ops: Vec<WriteOp> =
        records.iter().map(|r| WriteOp::Insert { record: r.clone(), checks: dedupe::INSERT }).collect();
    store.write_batch(&ops).unwrap();
    let (mut cursor, mut seen, mut pages) = (start, Vec::new(), 0);
    loop {
        let mut page = store.changes_since(cursor, 2).unwrap();
        if !page.complete && page.next == cursor {
            // PostgreSQL only: a transaction older than these entries is still running
            // (somewhere in the cluster), so the cursor cannot pass them yet; a bigger page can.
            assert_eq!(db.backend(), Backend::Postgres, "a full page moves the cursor: {page:?}");
            page = store.changes_since(cursor, 1_000).unwrap();
        }
        seen.extend(page.items);
        cursor = page.next;
        pages += 1;
        if page.complete {
            break;
        }
    }
    seen.sort();
    seen.dedup();
    let mut expected: Vec<Uuid> = records.iter().map(|r| r.id).collect();
    expected.sort();
    assert_eq!(seen, expected);
    assert!(pages >= 3 || db.backend() == Backend::Postgres, "{pages} pages of at most 2 entries");
}

fn a_reader_behind_the_pruned_log_is_told_to_reload(db: &TestDb) {
    let store = db.open();
    let a = record("alpha");
    store.write_batch(&[WriteOp::Insert { record: a.clone(), checks: dedupe::INSERT }]).unwrap();
    let before = ChangeCursor::default();
    let up_to_date = store.change_head().unwrap();
    // More entries than the log keeps (what many writes would leave), written raw in two
    // transactions: the first one's entries are the oldest, and go.
    let fill = |entries: i64| match db.backend() {
        Backend::Sqlite => format!(
            "INSERT INTO change_log (item_id) WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {entries}) \
             SELECT '{}' FROM n",
            a.id
        ),
        Backend::Postgres => {
            format!("INSERT INTO change_log (item_id) SELECT '{}' FROM generate_series(1, {entries})", a.id)
        }
    };
    let (first, second) = (3_000, CHANGE_LOG_RETENTION + 1_000);
    assert_eq!(db.execute_raw(&fill(first)).unwrap(), first as u64);
    assert_eq!(db.execute_raw(&fill(second)).unwrap(), second as u64);
    let kept = db.execute_raw("UPDATE change_log SET item_id = item_id").unwrap() as i64;
    assert!(kept < first + second && kept >= CHANGE_LOG_RETENTION, "the log keeps {kept} entries");

    assert!(store.changes_since(before, 10).unwrap().behind, "entries after the cursor were pruned");
    assert!(store.changes_since(up_to_date, 10).unwrap().behind);
    let head = store.change_head().unwrap();
    let page = store.changes_since(head, 10).unwrap();
    assert!(!page.behind && page.complete && page.items.is_empty(), "{page:?}");
}

/// PostgreSQL takes sequence values when a row is written, not when it commits: a reader
/// that moved its cursor to the highest seq it saw would skip the entry of a transaction that
/// took a lower seq and committed later. Two connections interleave that deterministically.
#[test]
fn postgres_a_change_committed_out_of_seq_order_is_not_skipped() {
    let db = TestDb::postgres();
    let store = db.open();
    let (slow, quick) = (record("slow"), record("quick"));
    let mut cursor = store.change_head().unwrap();
    store.write_batch(&[WriteOp::Insert { record: slow.clone(), checks: dedupe::INSERT }]).unwrap();
    assert!(changed(&*store, &mut cursor).contains(&slow.id));

    // Connection 1: a re-embedding of `slow` in progress (its chunk vectors written, not
    // committed): it has taken its seq.
    let mut other = postgres::Client::connect(&db.db_arg(), postgres::NoTls).unwrap();
    let mut pending = other.transaction().unwrap();
    pending
        .execute(
            "INSERT INTO item_chunks (item_id, start_byte, end_byte, embedding) VALUES ($1, 0, 2, '[0,1,0]')",
            &[&slow.id],
        )
        .unwrap();
    let entry = pending
        .query_one("SELECT txn, seq FROM change_log WHERE txn = pg_current_xact_id()::text::bigint", &[])
        .unwrap();
    let late = ChangeCursor { txn: entry.get(0), seq: entry.get(1) };
    // Connection 2 (the store's): a write that takes a higher seq and commits first.
    store.write_batch(&[WriteOp::Insert { record: quick.clone(), checks: dedupe::INSERT }]).unwrap();
    assert!(changed(&*store, &mut cursor).contains(&quick.id), "the committed change is read");
    assert!(cursor < late, "the cursor stays before the running transaction's entry: {cursor:?} {late:?}");

    pending.commit().unwrap();
    let quick_seq: i64 = other
        .query_typed_one(
            "SELECT max(seq) FROM change_log WHERE item_id = $1",
            &[(&quick.id, postgres::types::Type::UUID)],
        )
        .unwrap()
        .get(0);
    assert!(late.seq < quick_seq, "the late commit holds the lower seq");
    assert!(changed(&*store, &mut cursor).contains(&slow.id), "the late commit is not skipped");
}
