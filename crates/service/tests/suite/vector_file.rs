//! The in-process vector index kept in a file beside a SQLite database (`<file>.vectors`): a
//! fresh process maps it instead of reading every vector, sees what changed since from the
//! change log, and writes it again when it is missing, cut short, of another database, or far
//! behind. (PostgreSQL searches its own vectors and keeps no file: `config.rs`'s tests.) With
//! the real model (`CORTEX_MODEL_DIR`, as `semantic.rs`).

use crate::common::Tools;
use cortex_service::response::FindResponse;
use cortex_service::scope_inference::InferredScope;
use cortex_service::transfer::ItemLine;
use cortex_service::{Config, MemoryService};
use cortex_testdb::TestDb;
use serde_json::json;
use std::path::PathBuf;

fn open(db: &TestDb) -> MemoryService {
    let scope = InferredScope::fixed("acme", "api", "main");
    let embedder = cortex_service::config::embedder_from_env().unwrap();
    MemoryService::open(&Config::new(db.target().clone(), scope, embedder)).unwrap()
}

fn file_of(db: &TestDb) -> PathBuf {
    let mut name = db.sqlite_path().unwrap().into_os_string();
    name.push(".vectors");
    PathBuf::from(name)
}

fn store(m: &MemoryService, content: &str) -> String {
    let r = m.store_args(&json!({"items": [{"kind": "section", "content": content}]})).unwrap();
    r.results[0].id.clone().unwrap()
}

fn auto(m: &MemoryService, query: &str) -> Vec<String> {
    let r: FindResponse = m.find_args(&json!({"query": query, "mode": "auto"})).unwrap();
    assert!(!r.notes.iter().any(|n| n.contains("semantic search")), "{:?}", r.notes);
    r.hits.iter().map(|h| h.id.to_string()).collect()
}

const SESSIONS: &str =
    "We moved user sessions from Redis to PostgreSQL because running Redis cost more than it saved.";
const PARAPHRASE: &str = "why did we stop using the in-memory cache for login state";
const PODS: &str = "Kubernetes pods restart when memory limits are exceeded.";
const PODS_QUERY: &str = "containers get killed for using too much RAM";

/// The file's identity on disk: a rewrite renames a new file into place.
fn inode(path: &PathBuf) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).unwrap().ino()
}

#[test]
fn a_fresh_process_maps_the_file_and_reads_what_changed_since_from_the_log() {
    let db = TestDb::sqlite();
    let file = file_of(&db);
    let sessions = store(&open(&db), SESSIONS);
    assert_eq!(auto(&open(&db), PARAPHRASE)[0], sessions);
    assert!(file.is_file(), "the first dense search wrote the file");
    let written = inode(&file);

    // Another process stores and deletes; a fresh one sees both without writing the file again.
    let writer = open(&db);
    let pods = store(&writer, PODS);
    writer.store_args(&json!({"items": [{"operation": "delete", "id": sessions}]})).unwrap();
    let fresh = open(&db);
    assert_eq!(auto(&fresh, PODS_QUERY)[0], pods);
    assert!(!auto(&fresh, PARAPHRASE).contains(&sessions), "a deleted item is masked in the file");
    assert_eq!(inode(&file), written, "a few changes are kept in memory, the file stays");
}

#[test]
fn a_damaged_or_foreign_file_is_written_again_and_finds_stay_right() {
    let db = TestDb::sqlite();
    let file = file_of(&db);
    let sessions = store(&open(&db), SESSIONS);
    assert_eq!(auto(&open(&db), PARAPHRASE)[0], sessions);

    // Cut short: refused, written again.
    let whole = std::fs::read(&file).unwrap();
    std::fs::write(&file, &whole[..whole.len() / 2]).unwrap();
    assert_eq!(auto(&open(&db), PARAPHRASE)[0], sessions);
    assert!(std::fs::read(&file).unwrap().ends_with(b"CXVECEND"), "written whole again");

    // Another database's file under this one's name: not trusted.
    let other = TestDb::sqlite();
    let pods = store(&open(&other), PODS);
    auto(&open(&other), PODS_QUERY);
    std::fs::copy(file_of(&other), &file).unwrap();
    let found = auto(&open(&db), PODS_QUERY);
    assert!(!found.contains(&pods), "another database's vectors are never used: {found:?}");
    assert_eq!(auto(&open(&db), PARAPHRASE)[0], sessions);
}

#[test]
fn many_changes_since_the_file_write_it_again_with_all_of_them() {
    let db = TestDb::sqlite();
    let file = file_of(&db);
    let m = open(&db);
    let sessions = store(&m, SESSIONS);
    assert_eq!(auto(&m, PARAPHRASE)[0], sessions);
    let before = inode(&file);

    // Another process imports far more items than are kept beside the file.
    let source_db = TestDb::sqlite();
    let source = open(&source_db);
    let pods = store(&source, PODS);
    let line = source.transfer().export_page(None, 1).unwrap().remove(0);
    let mut lines = vec![line];
    let template = source.transfer().export_page(None, 1).unwrap().remove(0);
    for (i, v) in cortex_vector::sample::UnitVectors::new(99, 384).take(2_500).enumerate() {
        let body = format!("filler item {i}");
        lines.push(ItemLine {
            id: uuid::Uuid::now_v7(),
            title: body.clone(),
            body: body.clone(),
            content: Some(body),
            content_hash: format!("{i:064x}"),
            vector: Some(v),
            ..clone_line(&template)
        });
    }
    for batch in lines.chunks_mut(500) {
        let batch: Vec<ItemLine> = batch.iter().map(clone_line).collect();
        open(&db).transfer().import_batch(batch).unwrap();
    }
    assert_eq!(auto(&m, PODS_QUERY)[0], pods, "the running process reads the import from the log");
    assert_ne!(inode(&file), before, "and wrote the file again, holding everything");
    let fresh = open(&db);
    assert_eq!(auto(&fresh, PODS_QUERY)[0], pods);
    // "in-memory" now matches the pods item's words too: the paraphrase's item is among the hits.
    assert!(auto(&fresh, PARAPHRASE).contains(&sessions));
    assert_eq!(inode(&file), inode(&file_of(&db)));
}

fn clone_line(l: &ItemLine) -> ItemLine {
    serde_json::from_value(serde_json::to_value(l).unwrap()).unwrap()
}
