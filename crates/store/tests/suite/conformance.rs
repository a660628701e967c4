//! The store conformance suite: every test runs against every backend through the `Store`
//! trait (`per_backend!` makes `<test>::sqlite` and `<test>::postgres`). A new backend adds one
//! arm to `cortex_testdb::per_backend!` and must pass all of it. One file on purpose, past 500
//! lines: it is the whole contract a backend signs, read in one place.

use cortex_domain::dedupe;
use cortex_domain::graph::Cascade;
use cortex_domain::query::parse_query;
use cortex_domain::{Kind, Scope};
use cortex_store::*;
use cortex_testdb::{TestDb, per_backend};
use serde_json::json;
use uuid::Uuid;

per_backend!(
    recent_items_pass_the_filters_newest_first,
    inserted_items_read_back_whole,
    exact_duplicates_in_the_same_scope_are_reported,
    duplicates_in_another_branch_are_not_duplicates,
    idempotency_key_yields_one_item_per_project,
    update_keeps_id_created_at_and_unnamed_scope,
    update_of_missing_or_other_kind_is_refused,
    deleted_items_vanish_from_search_but_stay_readable,
    search_ranks_better_matches_first_and_honours_filters,
    expired_items_are_hidden,
    counts_and_vocabulary,
    a_batch_is_atomic_per_call,
    vectors_follow_their_items,
    metadata_round_trips,
    links_are_found_by_either_end_and_die_with_their_item,
    new_vectors_change_nothing_else,
    live_items_without_vectors_are_listed_until_embedded,
    chunk_vectors_are_kept_searched_and_replaced_with_their_item,
    a_supersede_writes_only_the_status_it_is_given,
    a_batch_checked_against_a_changed_item_writes_nothing,
    session_neighbours_are_the_nearest_of_the_session_on_either_side,
);

const NOW: i64 = 1_800_000_000_000;

fn scope(branch: &str) -> Scope {
    Scope {
        org: Some("acme".into()),
        project: Some("api".into()),
        branch: Some(branch.into()),
        ..Scope::default()
    }
}

fn record(title: &str, body: &str, branch: &str) -> Record {
    Record {
        id: Uuid::now_v7(),
        kind: Kind::Section,
        scope: scope(branch),
        title: title.into(),
        body: body.into(),
        content: Some(body.into()),
        data: json!({}),
        metadata: Some(json!({"k": 1})),
        source: None,
        tags: vec!["ops".into()],
        status: None,
        content_hash: cortex_domain::text::content_hash(&format!("{title}\n{body}")),
        idempotency_key: None,
        ttl: None,
        created_at: NOW,
        updated_at: NOW,
        expires_at: None,
        vector: None,
        chunks: Vec::new(),
    }
}

fn insert(store: &dyn Store, r: &Record) -> WriteOutcome {
    store.write_batch(&[WriteOp::Insert { record: r.clone(), checks: dedupe::INSERT }]).unwrap().remove(0)
}

fn query(text: &str, filters: Filters) -> LexicalQuery {
    LexicalQuery { query: parse_query(text), combine: Combine::Any, filters, pool: 100 }
}

fn filters() -> Filters {
    Filters { now: NOW, ..Filters::default() }
}

fn ids(matches: &[LexicalMatch]) -> Vec<Uuid> {
    matches.iter().map(|m| m.id).collect()
}

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

fn search_ranks_better_matches_first_and_honours_filters(db: &TestDb) {
    let store = db.open();
    let both = record("Redis sessions", "We dropped redis for sessions", "main");
    let one = record("Cache notes", "redis is used as a cache", "main");
    let other_branch = record("Redis sessions again", "redis sessions on a branch", "feature");
    let decision = Record {
        kind: Kind::Decision,
        status: Some("accepted".into()),
        tags: vec!["db".into()],
        ..record("Sessions in postgres", "sessions move to postgres", "main")
    };
    for r in [&both, &one, &other_branch, &decision] {
        insert(&*store, r);
    }
    let all = store.search_lexical(&query("redis sessions", filters())).unwrap();
    assert_eq!(all.len(), 4);
    let conjunctive = LexicalQuery { combine: Combine::All, ..query("redis sessions", filters()) };
    let every_term = ids(&store.search_lexical(&conjunctive).unwrap());
    assert_eq!(every_term.len(), 2, "only items holding both words");
    assert!(every_term.contains(&both.id) && every_term.contains(&other_branch.id));
    assert!(!every_term.contains(&decision.id));
    assert!(all.windows(2).all(|w| w[0].score >= w[1].score), "best first");
    assert!(all.iter().position(|m| m.id == both.id) < all.iter().position(|m| m.id == one.id));

    let main_only = Filters { scope_equals: vec![("branch", "main".into())], ..filters() };
    assert!(!ids(&store.search_lexical(&query("redis", main_only)).unwrap()).contains(&other_branch.id));

    let decisions = Filters { kinds: vec![Kind::Decision], ..filters() };
    assert_eq!(ids(&store.search_lexical(&query("sessions", decisions)).unwrap()), vec![decision.id]);

    let tagged = Filters { tags: vec!["db".into()], status: Some("accepted".into()), ..filters() };
    assert_eq!(ids(&store.search_lexical(&query("sessions", tagged)).unwrap()), vec![decision.id]);

    let later = Filters { since: Some(NOW + 1), ..filters() };
    assert!(store.search_lexical(&query("sessions", later)).unwrap().is_empty());

    let excluded = store.search_lexical(&query("sessions -postgres", filters())).unwrap();
    assert!(!ids(&excluded).contains(&decision.id));
}

fn recent_items_pass_the_filters_newest_first(db: &TestDb) {
    let store = db.open();
    let older = Record { updated_at: NOW - 20, ..record("Older note", "first", "main") };
    let newer = Record { updated_at: NOW - 10, ..record("Newer note", "second", "main") };
    let elsewhere = Record { updated_at: NOW - 5, ..record("Other branch", "third", "feature") };
    let decision =
        Record { kind: Kind::Decision, updated_at: NOW - 1, ..record("A decision", "fourth", "main") };
    for r in [&older, &newer, &elsewhere, &decision] {
        insert(&*store, r);
    }
    let main_sections = Filters {
        kinds: vec![Kind::Section],
        scope_equals: vec![("branch", "main".to_string())],
        ..filters()
    };
    let found: Vec<Uuid> = store.recent(&main_sections, 10).unwrap().iter().map(|i| i.record.id).collect();
    assert_eq!(found, vec![newer.id, older.id]);
    assert_eq!(store.recent(&main_sections, 1).unwrap().len(), 1, "the limit holds");
    assert_eq!(store.recent(&filters(), 10).unwrap().len(), 4);
}

fn expired_items_are_hidden(db: &TestDb) {
    let store = db.open();
    let r = Record { expires_at: Some(NOW + 10), ..record("Temp note", "ephemeral flag", "main") };
    insert(&*store, &r);
    assert_eq!(store.search_lexical(&query("ephemeral", filters())).unwrap().len(), 1);
    let later = Filters { now: NOW + 10, ..filters() };
    assert!(store.search_lexical(&query("ephemeral", later)).unwrap().is_empty());
}

fn counts_and_vocabulary(db: &TestDb) {
    let store = db.open();
    for i in 0..5 {
        insert(&*store, &record(&format!("Kubernetes note {i}"), "kubernetes cluster upgrade", "main"));
    }
    assert_eq!(store.count_lexical(&query("kubernetes", filters()), 1000).unwrap(), 5);
    assert_eq!(store.count_lexical(&query("kubernetes", filters()), 3).unwrap(), 3);
    assert!(store.knows_word("kubernetes").unwrap());
    assert!(!store.knows_word("zzqxw").unwrap());
    let stats = store.stats().unwrap();
    assert_eq!((stats.items, stats.schema_version), (5, db.target().latest_schema_version()));
    // A stem of SQLite's index reads back as a word as written, not as the stem searched whole
    // (which is stemmed again and finds nothing); PostgreSQL's terms are words as written.
    insert(&*store, &record("Decisions", "decisions decide the database", "main"));
    let sqlite = db.backend() == cortex_testdb::Backend::Sqlite;
    for (stem, word) in [("kubernet", "kubernetes"), ("decis", "decisions")] {
        assert_eq!(store.surface_word(if sqlite { stem } else { word }).unwrap(), word);
    }
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

fn metadata_round_trips(db: &TestDb) {
    let store = db.open();
    assert_eq!(store.meta("embedding_model").unwrap(), None);
    store.set_meta("embedding_model", "m/1").unwrap();
    store.set_meta("embedding_model", "m/2").unwrap();
    assert_eq!(store.meta("embedding_model").unwrap().as_deref(), Some("m/2"));
}

/// A relation or observation record whose ends are already ids (as the service writes them).
fn link(kind: Kind, data: serde_json::Value) -> Record {
    Record { kind, data, ..record("link", &Uuid::now_v7().to_string(), "main") }
}

fn links_are_found_by_either_end_and_die_with_their_item(db: &TestDb) {
    let store = db.open();
    let (a, b, c) = (record("a", "one", "main"), record("b", "two", "main"), record("c", "three", "main"));
    for r in [&a, &b, &c] {
        insert(&*store, r);
    }
    let ab = link(
        Kind::Relation,
        json!({"from": a.id.to_string(), "to": b.id.to_string(), "relation_type": "uses"}),
    );
    let cb = link(
        Kind::Relation,
        json!({"from": c.id.to_string(), "to": b.id.to_string(), "relation_type": "uses"}),
    );
    let obs = link(Kind::Observation, json!({"entity": a.id.to_string(), "text": "noted"}));
    for r in [&ab, &cb, &obs] {
        assert_eq!(insert(&*store, r), WriteOutcome::Inserted { id: r.id });
    }
    let ends = |ids: &[Uuid]| -> Vec<(Uuid, Uuid, Option<Uuid>)> {
        let mut got: Vec<_> = store.links(ids).unwrap().into_iter().map(|l| (l.id, l.from, l.to)).collect();
        got.sort();
        got
    };
    let mut from_a = vec![(ab.id, a.id, Some(b.id)), (obs.id, a.id, None)];
    from_a.sort();
    assert_eq!(ends(&[a.id]), from_a);
    let mut to_b = vec![(ab.id, a.id, Some(b.id)), (cb.id, c.id, Some(b.id))];
    to_b.sort();
    assert_eq!(ends(&[b.id]), to_b);
    assert_eq!(ends(&[obs.id]), vec![(obs.id, a.id, None)], "an observation finds itself");
    let link_of = store.links(&[b.id]).unwrap();
    assert!(link_of.iter().all(|l| l.title == "link" && l.facts.kind == Kind::Relation));
    assert_eq!(store.incoming_links(&[a.id, b.id], NOW).unwrap(), vec![(b.id, 2)]);

    let out = store
        .write_batch(&[WriteOp::Delete { id: a.id, kind: None, at: NOW + 1, cascade: Cascade::DeleteLinks }])
        .unwrap();
    assert_eq!(out[0], WriteOutcome::Deleted { id: a.id, already: false, cascaded: 2 });
    assert!(store.get(&[ab.id, obs.id]).unwrap().iter().all(|i| i.deleted_at == Some(NOW + 1)));
    assert_eq!(ends(&[b.id]), vec![(cb.id, c.id, Some(b.id))]);
    assert_eq!(store.incoming_links(&[b.id], NOW).unwrap(), vec![(b.id, 1)]);
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

/// Issue 15, item 12: a batch carries the state its checks saw of the items it writes over;
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

/// The items stored right before and after an item in its session: others' items in between
/// are skipped, filters hold, items without a session have none, the window bounds the look.
fn session_neighbours_are_the_nearest_of_the_session_on_either_side(db: &TestDb) {
    use cortex_domain::neighbours::Side;
    let store = db.open();
    let turn = |text: &str, session: Option<&str>, branch: &str| Record {
        source: session.map(|s| json!({ "session": s })),
        ..record(text, text, branch)
    };
    // Stored in this order (ids are UUIDv7: creation order).
    let a1 = turn("Ann asks whether Bob plays an instrument", Some("s1"), "main");
    let b1 = turn("Someone else talks in another session", Some("s2"), "main");
    let a2 = turn("Bob says he plays the clarinet", Some("s1"), "main");
    let a3 = turn("Ann says she loves clarinets", Some("s1"), "main");
    let x = turn("A note with no session", None, "main");
    let a4 = turn("Bob says goodbye from another branch", Some("s1"), "dev");
    let a5 = turn("Ann says goodbye", Some("s1"), "main");
    let all = [&a1, &b1, &a2, &a3, &x, &a4, &a5];
    let ops: Vec<WriteOp> =
        all.iter().map(|r| WriteOp::Insert { record: (*r).clone(), checks: dedupe::INSERT }).collect();
    store.write_batch(&ops).unwrap();
    let found = |ids: &[Uuid], filters: Filters, window: usize| -> Vec<(Uuid, Side, Uuid)> {
        let mut out: Vec<(Uuid, Side, Uuid)> = store
            .session_neighbours(ids, &filters, window)
            .unwrap()
            .into_iter()
            .map(|n| (n.of, n.side, n.id))
            .collect();
        out.sort_by_key(|(of, side, _)| (*of, *side == Side::After));
        out
    };
    assert_eq!(found(&[a2.id], filters(), 16), [(a2.id, Side::Before, a1.id), (a2.id, Side::After, a3.id)]);
    // The scope and facts come along, for the find's candidate.
    let n = store.session_neighbours(&[a1.id], &filters(), 16).unwrap();
    assert_eq!(n.len(), 1);
    assert_eq!((n[0].id, n[0].side, n[0].updated_at), (a2.id, Side::After, NOW));
    assert_eq!(n[0].scope, scope("main"));
    // After a3: the note has no session; a4 is the next of s1, unless the find is on main.
    assert_eq!(found(&[a3.id], filters(), 16)[1], (a3.id, Side::After, a4.id));
    let main = Filters { scope_equals: vec![("branch", "main".into())], ..filters() };
    assert_eq!(found(&[a3.id], main.clone(), 16)[1], (a3.id, Side::After, a5.id));
    // A deleted item is no neighbour.
    store
        .write_batch(&[WriteOp::Delete { id: a5.id, kind: None, at: NOW + 1, cascade: Cascade::DeleteLinks }])
        .unwrap();
    assert_eq!(found(&[a3.id], main, 16), [(a3.id, Side::Before, a2.id)]);
    // No session, no neighbours; an unknown id has none either.
    assert!(found(&[x.id, Uuid::now_v7()], filters(), 16).is_empty());
    // The window bounds the look: one item before a2 is b1, of another session.
    assert_eq!(found(&[a2.id], filters(), 1), [(a2.id, Side::After, a3.id)]);
}
