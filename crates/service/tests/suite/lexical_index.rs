//! The lexical index is derived from the store and never disagrees with it. On every
//! backend: an index deleted or damaged is built again, one left behind while another process wrote is
//! caught up from the change log, two processes sharing one index folder each find the other's
//! writes, deletes and purges leave the hits at once, an index built from another database is
//! not trusted, and the index finds what the database's own full-text search finds.

use super::common::{section, stored_ids};
use crate::common::Tools;
use cortex_lexical::Place;
use cortex_service::scope_inference::InferredScope;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Config, MemoryService};
use cortex_testdb::{Backend, TestDb, per_backend};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::Path;

per_backend!(
    a_deleted_or_damaged_index_is_built_again,
    opening_an_index_reads_it_and_builds_nothing,
    an_index_left_behind_catches_up_from_the_change_log,
    two_processes_on_one_index_find_each_others_writes,
    an_index_of_another_database_is_not_trusted,
    the_index_finds_what_the_database_search_finds,
    a_closing_service_commits_what_its_finds_read,
    a_corrupted_index_never_answers_empty,
    a_readable_but_damaged_index_is_named_and_repaired,
    without_an_index_doctor_names_the_databases_own_search,
);

/// A service as a new process would open it, with the lexical index at `place` (`None`: the
/// database's own search).
fn open(db: &TestDb, place: Option<Place>) -> MemoryService {
    let mut config =
        Config::new(db.target().clone(), InferredScope::fixed("acme", "api", "main"), EmbedderChoice::None);
    config.lexical = place;
    MemoryService::open(&config).unwrap()
}

fn folder(dir: &Path) -> Option<Place> {
    Some(Place::Dir(dir.join("lexical")))
}

/// The ids found, as a set (ranking may differ between engines; membership may not).
fn found(service: &MemoryService, args: Value) -> BTreeSet<String> {
    let mut args = args;
    args["mode"] = json!("fast");
    args["limit"] = json!(50);
    service.find_args(&args).unwrap().hits.into_iter().map(|h| h.id.to_string()).collect()
}

fn set(ids: &[&String]) -> BTreeSet<String> {
    ids.iter().map(|s| s.to_string()).collect()
}

fn a_deleted_or_damaged_index_is_built_again(db: &TestDb) {
    let dir = tempfile::tempdir().unwrap();
    let first = open(db, folder(dir.path()));
    let ids = stored_ids(
        &first,
        json!([
            section("Webhook retries", "billing retries failed webhook deliveries"),
            section("Cache", "redis holds sessions")
        ]),
    );
    assert_eq!(found(&first, json!({"query": "webhook deliveries"})), set(&[&ids[0]]));
    drop(first);
    std::fs::remove_dir_all(dir.path().join("lexical")).unwrap();
    let second = open(db, folder(dir.path()));
    assert_eq!(found(&second, json!({"query": "webhook deliveries"})), set(&[&ids[0]]), "built again");
    assert_eq!(found(&second, json!({"query": "redis sessions"})), set(&[&ids[1]]));
    drop(second);
    // Damaged: its metadata is not JSON any more.
    let meta = dir.path().join("lexical").join("meta.json");
    std::fs::write(&meta, b"{not json").unwrap();
    let third = open(db, folder(dir.path()));
    assert_eq!(found(&third, json!({"query": "webhook deliveries"})), set(&[&ids[0]]), "built again");
    let rebuilt: Value = serde_json::from_slice(&std::fs::read(&meta).unwrap()).unwrap();
    assert!(rebuilt["payload"].is_string(), "a new commit: {rebuilt}");
}

fn opening_an_index_reads_it_and_builds_nothing(db: &TestDb) {
    let dir = tempfile::tempdir().unwrap();
    let first = open(db, folder(dir.path()));
    let ids =
        stored_ids(&first, json!([section("Webhook retries", "billing retries failed webhook deliveries")]));
    assert_eq!(found(&first, json!({"query": "webhook"})), set(&[&ids[0]]));
    drop(first);
    let segments = || -> BTreeSet<String> {
        let meta: Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("lexical").join("meta.json")).unwrap())
                .unwrap();
        meta["segments"].as_array().unwrap().iter().map(|s| s["segment_id"].to_string()).collect()
    };
    let built = segments();
    let second = open(db, folder(dir.path()));
    assert_eq!(found(&second, json!({"query": "webhook"})), set(&[&ids[0]]));
    // A build starts from nothing, so the first segment would be gone. On PostgreSQL the log
    // may hand over again the items of transactions that were in flight anywhere on the
    // server when it was read (under a busy test run, often): replacing this one document
    // empties its segment, which tantivy then drops, without any build. So the check is
    // SQLite's, whose single writer's log never hands an item over twice.
    if db.backend() == Backend::Sqlite {
        assert!(segments().is_superset(&built), "the index was read, not built again");
    }
}

fn an_index_left_behind_catches_up_from_the_change_log(db: &TestDb) {
    let dir = tempfile::tempdir().unwrap();
    let indexed = open(db, folder(dir.path()));
    let ids = stored_ids(
        &indexed,
        json!([
            section("Kafka consumer lag", "the consumer falls behind"),
            section("Old runbook", "restart the gateway")
        ]),
    );
    assert_eq!(found(&indexed, json!({"query": "gateway"})), set(&[&ids[1]]));
    drop(indexed);
    // Another process, without the index, writes: an insert, an update that changes the
    // words, a delete.
    let other = open(db, None);
    let new = stored_ids(&other, json!([section("Gateway timeouts", "raise the gateway timeout to 30 s")]));
    other
        .store_args(&json!({"items": [{"operation": "upsert", "id": ids[0], "kind": "section",
            "data": {"title": "Kafka partitions", "body": "rebalance the partitions"}}]}))
        .unwrap();
    other.store_args(&json!({"items": [{"operation": "delete", "id": ids[1]}]})).unwrap();
    let reopened = open(db, folder(dir.path()));
    assert_eq!(found(&reopened, json!({"query": "gateway"})), set(&[&new[0]]), "insert in, delete out");
    assert_eq!(found(&reopened, json!({"query": "consumer"})), BTreeSet::new(), "the old words are gone");
    assert_eq!(found(&reopened, json!({"query": "partitions"})), set(&[&ids[0]]), "the new words are in");
}

fn two_processes_on_one_index_find_each_others_writes(db: &TestDb) {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (open(db, folder(dir.path())), open(db, folder(dir.path())));
    assert!(found(&a, json!({"query": "flamingo"})).is_empty());
    assert!(found(&b, json!({"query": "flamingo"})).is_empty());
    let first = stored_ids(&a, json!([section("Flamingo rollout", "the flamingo flag ships on Monday")]));
    assert_eq!(found(&b, json!({"query": "flamingo"})), set(&[&first[0]]), "b finds a's write");
    let second = stored_ids(&b, json!([section("Flamingo rollback", "how to turn the flamingo flag off")]));
    assert_eq!(found(&a, json!({"query": "flamingo"})), set(&[&first[0], &second[0]]), "a finds b's write");
    a.store_args(&json!({"items": [{"operation": "delete", "id": first[0]}]})).unwrap();
    assert_eq!(
        found(&b, json!({"query": "flamingo"})),
        set(&[&second[0]]),
        "a's delete leaves b's hits at once"
    );
    assert_eq!(found(&a, json!({"query": "flamingo"})), set(&[&second[0]]));
}

/// A find reads new writes into memory and leaves their commit to a fold a moment later; a
/// service that closes before it folds what is left, so the next process opens a commit that
/// holds every write.
fn a_closing_service_commits_what_its_finds_read(db: &TestDb) {
    let dir = tempfile::tempdir().unwrap();
    let service = open(db, folder(dir.path()));
    assert!(found(&service, json!({"query": "heron"})).is_empty());
    let ids = stored_ids(
        &service,
        json!([section("Heron queue", "the heron queue drains at night"), section("Egret", "egret heron")]),
    );
    assert_eq!(found(&service, json!({"query": "heron"})), set(&[&ids[0], &ids[1]]));
    service.store_args(&json!({"items": [{"operation": "delete", "id": ids[1]}]})).unwrap();
    assert_eq!(
        found(&service, json!({"query": "heron"})),
        set(&[&ids[0]]),
        "a delete leaves the hits at once"
    );
    drop(service);
    let index = cortex_lexical::LexicalIndex::open(&Place::Dir(dir.path().join("lexical"))).unwrap();
    assert_eq!(index.documents(), 1, "the last commit holds the live item");
}

fn an_index_of_another_database_is_not_trusted(db: &TestDb) {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = TestDb::new(db.backend());
    let theirs = open(&elsewhere, folder(dir.path()));
    stored_ids(&theirs, json!([section("Platypus", "the platypus service of another database")]));
    assert_eq!(found(&theirs, json!({"query": "platypus"})).len(), 1);
    drop(theirs);
    // The same folder, now for this database: nothing of the other one may show.
    let ours = open(db, folder(dir.path()));
    assert!(found(&ours, json!({"query": "platypus"})).is_empty());
    let mine = stored_ids(&ours, json!([section("Platypus", "our own platypus")]));
    assert_eq!(found(&ours, json!({"query": "platypus"})), set(&[&mine[0]]));
}

fn the_index_finds_what_the_database_search_finds(db: &TestDb) {
    let dir = tempfile::tempdir().unwrap();
    let indexed = open(db, folder(dir.path()));
    let words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"];
    let mut items = Vec::new();
    for i in 0..60usize {
        let (w1, w2) = (words[i % 6], words[(i / 6) % 6]);
        let tags = [format!("t{}", i % 4)];
        let item = if i % 3 == 0 {
            json!({"kind": "decision", "tags": tags, "data": {"title": format!("{w1} decision {i}"),
                "component": "core", "rationale": format!("because of {w2}"),
                "status": if i % 2 == 0 { "accepted" } else { "proposed" }}})
        } else {
            json!({"kind": "section", "tags": tags,
                "data": {"title": format!("{w1} {w2}"), "body": format!("note number {i}")}})
        };
        let mut item = item;
        if i % 5 == 0 {
            item["scope"] = json!({"branch": "feature"});
        }
        items.push(item);
    }
    stored_ids(&indexed, Value::Array(items));
    let database = open(db, None);
    for args in [
        json!({"query": "alpha"}),
        json!({"query": "bravo charlie"}),
        json!({"query": "\"note number\" delta"}),
        json!({"query": "ech*"}),
        json!({"query": "alpha -bravo"}),
        json!({"query": "delta", "types": ["decision"]}),
        json!({"query": "echo", "tags": ["t1"]}),
        json!({"query": "decision", "status": "accepted"}),
        json!({"query": "alpha", "widen": "project"}),
        json!({"query": "charlie", "scope": {"branch": "feature"}}),
    ] {
        let (ours, theirs) = (found(&indexed, args.clone()), found(&database, args.clone()));
        assert!(!theirs.is_empty(), "{args}: the database finds something");
        assert_eq!(ours, theirs, "{args}");
    }
}

/// Overwrites the first 64 bytes of each of the index's segment files, as a disk error or a
/// stray process would, leaving tantivy's own bookkeeping (meta.json, .managed.json) intact.
fn corrupt_segments(index: &Path) -> usize {
    let mut corrupted = 0;
    for entry in std::fs::read_dir(index).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if name.ends_with(".json") || name.ends_with(".lock") {
            continue;
        }
        let mut bytes = std::fs::read(entry.path()).unwrap();
        let n = bytes.len().min(64);
        bytes[..n].fill(0xA5);
        // Written in place (not replaced), as the server's mapped files see it.
        use std::io::{Seek, Write};
        let mut file = std::fs::OpenOptions::new().write(true).open(entry.path()).unwrap();
        file.seek(std::io::SeekFrom::Start(0)).unwrap();
        file.write_all(&bytes[..n]).unwrap();
        corrupted += 1;
    }
    corrupted
}

/// A note about webhooks stored and found by a service that then closes: its index folder in
/// `dir` holds a commit with it, in segment files.
fn committed_note(db: &TestDb, dir: &Path) -> String {
    let first = open(db, folder(dir));
    let ids =
        stored_ids(&first, json!([section("Webhook retries", "billing retries failed webhook deliveries")]));
    assert_eq!(found(&first, json!({"query": "webhook"})), set(&[&ids[0]]));
    ids[0].clone()
}

/// The index's segment files overwritten while the server runs. A find still
/// finds the stored word (the database answers), a new process opens the folder (built again),
/// and `reindex --lexical` rebuilds it whatever state it is in.
fn a_corrupted_index_never_answers_empty(db: &TestDb) {
    let dir = tempfile::tempdir().unwrap();
    let ids = [committed_note(db, dir.path())];
    let serving = open(db, folder(dir.path()));
    assert_eq!(found(&serving, json!({"query": "webhook"})), set(&[&ids[0]]), "read from its commit");
    assert!(corrupt_segments(&dir.path().join("lexical")) > 0, "the index has segment files");
    assert_eq!(found(&serving, json!({"query": "webhook"})), set(&[&ids[0]]), "while serving");
    let more = stored_ids(&serving, json!([section("Pangolin", "nightly pangolin snapshot")]));
    assert_eq!(found(&serving, json!({"query": "pangolin"})), set(&[&more[0]]), "a new write too");
    let rebuilt = serving.indexes().reindex_lexical(&mut |_, _| {}).unwrap();
    assert_eq!(rebuilt.items, 2, "reindex --lexical rebuilt it: {rebuilt:?}");
    assert_eq!(found(&serving, json!({"query": "webhook"})), set(&[&ids[0]]), "after the rebuild");
    drop(serving);
    corrupt_segments(&dir.path().join("lexical"));
    let restarted = open(db, folder(dir.path()));
    assert_eq!(found(&restarted, json!({"query": "webhook"})), set(&[&ids[0]]), "after a restart");
    assert_eq!(found(&restarted, json!({"query": "pangolin"})), set(&[&more[0]]));
}

/// Flips the first byte of the field norms (one byte per document and field, read only to
/// score): tantivy still opens the index, only the file's checksum tells.
fn flip_a_norm(index: &Path) {
    for entry in std::fs::read_dir(index).unwrap().flatten() {
        if entry.path().extension().is_some_and(|e| e == "fieldnorm") {
            let mut bytes = std::fs::read(entry.path()).unwrap();
            bytes[0] ^= 0xFF;
            std::fs::write(entry.path(), bytes).unwrap();
        }
    }
}

/// Damage that leaves the files readable. `doctor` names it by the files'
/// checksums with its fix, `serve`'s start sets such an index aside (finds ask the database,
/// and say so), and `reindex --lexical` repairs it.
fn a_readable_but_damaged_index_is_named_and_repaired(db: &TestDb) {
    let dir = tempfile::tempdir().unwrap();
    let ids = [committed_note(db, dir.path())];
    flip_a_norm(&dir.path().join("lexical"));
    let damaged = open(db, folder(dir.path()));
    let status = damaged.administration().doctor(&Default::default()).unwrap().lexical_search;
    assert!(status.starts_with("damaged:") && status.contains("fail their checksum"), "{status}");
    assert!(status.contains("cortex reindex --lexical"), "{status}");
    let rebuilt = damaged.indexes().reindex_lexical(&mut |_, _| {}).unwrap();
    assert_eq!(rebuilt.items, 1);
    let status = damaged.administration().doctor(&Default::default()).unwrap().lexical_search;
    assert!(status.starts_with("enabled: BM25 index"), "{status}");
    assert_eq!(found(&damaged, json!({"query": "webhook"})), set(&[&ids[0]]));
}

/// With no index, finds ask the database: `doctor` names that database's own search.
fn without_an_index_doctor_names_the_databases_own_search(db: &TestDb) {
    let status = open(db, None).administration().doctor(&Default::default()).unwrap().lexical_search;
    let (own, other) = match db.backend() {
        Backend::Sqlite => ("SQLite FTS5 BM25", "PostgreSQL"),
        Backend::Postgres => ("PostgreSQL tsvector, ts_rank", "SQLite"),
    };
    assert!(status.starts_with(&format!("enabled: {own}")), "{status}");
    assert!(!status.contains(other), "{status}");
}
