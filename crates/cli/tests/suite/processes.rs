//! Many `cortex` processes on one database, as agents sharing a memory run them: eight
//! started at once on a file that does not exist yet, eight writers with shared idempotency
//! keys, writers killed with SIGKILL in the middle of batches, readers beside an open write
//! transaction, and a process that may only read the file. Counts are exact; nothing is timed.

use cortex_store::{AuditQuery, Store};
use cortex_testdb::{Backend, TestDb, per_backend};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

per_backend!(killed_writers_leave_whole_batches_and_a_sound_audit_trail);

fn cortex(db: &str, dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cortex"));
    cmd.env("CORTEX_DB", db)
        .env("CORTEX_ORG", "acme")
        .env("CORTEX_PROJECT", "api")
        .env("CORTEX_BRANCH", "main")
        .env("CORTEX_EMBEDDER", "none")
        .env("CORTEX_LOG", "warn")
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

fn spawn_store(db: &str, dir: &Path, file: &Path) -> Child {
    cortex(db, dir).args(["store", "--file"]).arg(file).spawn().unwrap()
}

fn finished(child: Child) -> Output {
    child.wait_with_output().unwrap()
}

fn assert_ok(out: &Output, what: &str) {
    assert!(out.status.success(), "{what} failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr));
}

fn write_batch(dir: &Path, name: &str, items: &[Value]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string(items).unwrap()).unwrap();
    path
}

fn section(title: &str, body: String, tag: &str) -> Value {
    json!({"kind": "section", "data": {"title": title, "body": body}, "tags": [tag]})
}

/// Items per tag, deleted ones too.
fn items_by_tag(store: &dyn Store) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    let mut after = None;
    loop {
        let page = store.export_page(after, 1_000).unwrap();
        let Some(last) = page.last() else { break };
        after = Some(last.item.record.id);
        for item in &page {
            for tag in &item.item.record.tags {
                *counts.entry(tag.clone()).or_default() += 1;
            }
        }
    }
    counts
}

fn insert_records(store: &dyn Store) -> usize {
    let records = store.audit(&AuditQuery { limit: usize::MAX >> 1, ..AuditQuery::default() }).unwrap();
    records.iter().filter(|r| r.operation == "insert").count()
}

/// A small deterministic sequence (xorshift), for kill points that vary but repeat.
struct Points(u64);

impl Points {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below
    }
}

/// The crash suite: 30 rounds, each a batch (100 small items, or 20 of 100 KB) whose writer
/// is killed at a varying point. Each batch is stored whole or not at all, every stored item
/// has its insert record, the file (or server) is sound and the audit chain verifies.
fn killed_writers_leave_whole_batches_and_a_sound_audit_trail(db: &TestDb) {
    let dir = tempfile::tempdir().unwrap();
    let url = db.db_arg();
    let mut points = Points(0x9e37_79b9_7f4a_7c15);
    let mut sizes = BTreeMap::new();
    for round in 0..30 {
        let tag = format!("batch-{round}");
        let items: Vec<Value> = if round % 2 == 0 {
            (0..100)
                .map(|i| section(&format!("small {round}.{i}"), format!("note {round} {i}"), &tag))
                .collect()
        } else {
            let filler = "lorem ipsum dolor sit amet ".repeat(100 * 1024 / 27);
            (0..20)
                .map(|i| section(&format!("large {round}.{i}"), format!("{round} {i} {filler}"), &tag))
                .collect()
        };
        sizes.insert(tag, items.len());
        let file = write_batch(dir.path(), &format!("b{round}.json"), &items);
        let mut child = spawn_store(&url, dir.path(), &file);
        // Up to about the writer's whole run: kills land before, during and after the commit.
        let span = if round % 2 == 0 { 800 } else { 1_500 };
        std::thread::sleep(std::time::Duration::from_millis(points.next(span)));
        child.kill().ok();
        child.wait().unwrap();
    }
    let store = db.open();
    let stored = items_by_tag(&*store);
    for (tag, n) in &stored {
        assert_eq!(Some(n), sizes.get(tag), "{tag}: a batch is stored whole or not at all");
    }
    let total: usize = stored.values().sum();
    assert_eq!(insert_records(&*store), total, "one insert record per stored item");
    eprintln!("{} of 30 batches were committed before the kill", stored.len());
    let out = finished(cortex(&url, dir.path()).args(["doctor", "--full"]).spawn().unwrap());
    assert_ok(&out, "doctor --full after the kills");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["integrity"]["ok"], true, "{report}");
    assert_eq!(report["audit"]["ok"], true, "{report}");
    if db.backend() == Backend::Sqlite {
        assert!(
            !stored.is_empty() && stored.len() < 30,
            "kills landed both before and after commits: {stored:?}"
        );
    }
}

/// Eight processes started together on a file that does not exist yet
/// all succeed, round after round.
#[test]
fn eight_processes_starting_on_a_new_file_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for round in 0..50 {
        let db = dir.path().join(format!("fresh-{round}.db"));
        let db = db.to_str().unwrap();
        let files: Vec<PathBuf> = (0..8)
            .map(|p| {
                let item =
                    section(&format!("start {round}.{p}"), format!("process {p} of round {round}"), "start");
                write_batch(dir.path(), &format!("s{p}.json"), &[item])
            })
            .collect();
        let children: Vec<Child> = files.iter().map(|f| spawn_store(db, dir.path(), f)).collect();
        for out in children.into_iter().map(finished) {
            if !out.status.success() {
                failures.push(format!("round {round}: {}", String::from_utf8_lossy(&out.stderr)));
            }
        }
        if failures.is_empty() {
            let store = cortex_store::SqliteStore::open(Path::new(db)).unwrap();
            assert_eq!(items_by_tag(&store).get("start"), Some(&8), "round {round}");
        }
    }
    assert!(failures.is_empty(), "{} of 400 processes failed: {failures:#?}", failures.len());
}

/// Eight writer processes on one file: every unique item once, and items sharing an
/// idempotency key across processes stored once per key.
#[test]
fn eight_writers_on_one_file_store_exact_counts() {
    let db = TestDb::sqlite();
    let url = db.db_arg();
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = (0..8)
        .map(|p| {
            let mut items: Vec<Value> = (0..90)
                .map(|i| section(&format!("writer {p} item {i}"), format!("from {p}: {i}"), "unique"))
                .collect();
            for k in 0..10 {
                let mut shared =
                    section(&format!("shared {k}"), format!("writer {p}'s copy of {k}"), "shared");
                shared["idempotency_key"] = json!(format!("shared-key-{k}"));
                items.push(shared);
            }
            write_batch(dir.path(), &format!("w{p}.json"), &items)
        })
        .collect();
    let children: Vec<Child> = files.iter().map(|f| spawn_store(&url, dir.path(), f)).collect();
    for out in children.into_iter().map(finished) {
        assert_ok(&out, "a writer");
    }
    let store = db.open();
    let counts = items_by_tag(&*store);
    assert_eq!(counts.get("unique"), Some(&720));
    assert_eq!(counts.get("shared"), Some(&10), "one item per idempotency key");
    assert_eq!(insert_records(&*store), 730);
}

fn seed(db: &TestDb, dir: &Path) {
    let items: Vec<Value> = (0..50)
        .map(|i| section(&format!("Runbook {i}"), format!("restart the kappa service, step {i}"), "seed"))
        .collect();
    let file = write_batch(dir, "seed.json", &items);
    assert_ok(&finished(spawn_store(&db.db_arg(), dir, &file)), "seeding");
}

/// A find or stats in another process does not wait behind an open write
/// transaction (it used to wait the busy timeout, 10 s, then fail).
#[test]
fn reads_do_not_wait_behind_another_process_writing() {
    let db = TestDb::sqlite();
    let dir = tempfile::tempdir().unwrap();
    seed(&db, dir.path());
    let writer = rusqlite::Connection::open(db.sqlite_path().unwrap()).unwrap();
    writer.execute_batch("BEGIN IMMEDIATE").unwrap();
    for args in [&["find", "kappa", "--json", "--mode", "fast"][..], &["stats"], &["doctor"]] {
        let out = finished(cortex(&db.db_arg(), dir.path()).args(args).spawn().unwrap());
        assert_ok(&out, &args.join(" "));
    }
    writer.execute_batch("ROLLBACK").unwrap();
}

/// A file and folder this process may only read: finds, stats, export,
/// audit and doctor work; a store says why it cannot.
#[test]
fn a_read_only_file_serves_every_read() {
    let db = TestDb::sqlite();
    let dir = tempfile::tempdir().unwrap();
    seed(&db, dir.path());
    let path = db.sqlite_path().unwrap();
    let folder = path.parent().unwrap().to_path_buf();
    let as_root = std::env::var("USER").is_ok_and(|u| u == "root") || is_root();
    // The reader runs from a copy of the binary it may execute, in a folder it may read.
    let work = tempfile::tempdir().unwrap();
    let binary = work.path().join("cortex");
    std::fs::copy(env!("CARGO_BIN_EXE_cortex"), &binary).unwrap();
    chmod(work.path(), 0o755);
    chmod(&binary, 0o755);
    chmod(&path, 0o444);
    chmod(&folder, 0o555);
    let run = |args: &[&str]| -> Output {
        let mut cmd = if as_root {
            // root writes whatever the modes say: read as nobody instead.
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]).arg(&binary);
            c
        } else {
            Command::new(&binary)
        };
        cmd.args(args)
            .env("CORTEX_DB", &path)
            .env("CORTEX_ORG", "acme")
            .env("CORTEX_PROJECT", "api")
            .env("CORTEX_BRANCH", "main")
            .env("CORTEX_EMBEDDER", "none")
            .env("HOME", work.path())
            .current_dir(work.path())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let found = run(&["find", "kappa", "--json", "--mode", "fast"]);
    assert_ok(&found, "find");
    let found: Value = serde_json::from_slice(&found.stdout).unwrap();
    assert!(found["hits"].as_array().is_some_and(|h| !h.is_empty()), "{found}");
    let stats = run(&["stats", "--json"]);
    assert_ok(&stats, "stats");
    assert_eq!(serde_json::from_slice::<Value>(&stats.stdout).unwrap()["items"], 50);
    let export = run(&["export"]);
    assert_ok(&export, "export");
    assert_eq!(String::from_utf8_lossy(&export.stdout).lines().count(), 52, "header, 50 items, end line");
    assert_ok(&run(&["audit"]), "audit");
    assert_ok(&run(&["audit", "--verify"]), "audit --verify");
    assert_ok(&run(&["doctor", "--full"]), "doctor --full");
    let store = run(&["store", r#"{"kind": "section", "data": {"title": "t", "body": "b"}}"#]);
    assert!(!store.status.success());
    let said = String::from_utf8_lossy(&store.stderr);
    assert!(said.contains("read-only") && said.contains("need write access"), "{said}");
    chmod(&folder, 0o755);
    chmod(&path, 0o644);
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A damaged page is reported by `doctor` (exit 1), not only by the next
/// write that happens to touch it.
#[test]
fn doctor_reports_a_damaged_page() {
    let db = TestDb::sqlite();
    let dir = tempfile::tempdir().unwrap();
    let items: Vec<Value> = (0..100)
        .map(|i| section(&format!("Page {i}"), format!("{i} {}", "words to fill pages ".repeat(100)), "fill"))
        .collect();
    let file = write_batch(dir.path(), "fill.json", &items);
    assert_ok(&finished(spawn_store(&db.db_arg(), dir.path(), &file)), "filling");
    let path = db.sqlite_path().unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    let page = 4096;
    let pages = bytes.len() / page;
    assert!(pages > 8, "the seeded file has pages to damage");
    // A page in the middle: a b-tree page of the items or their index, overwritten.
    let at = (pages / 2) * page;
    bytes[at..at + page].fill(0x5a);
    std::fs::write(&path, bytes).unwrap();
    let out = finished(cortex(&db.db_arg(), dir.path()).args(["doctor"]).spawn().unwrap());
    assert!(!out.status.success(), "doctor exits 1 on a damaged file");
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(report["integrity"]["ok"], false, "{report}");
    assert!(!report["integrity"]["problems"].as_array().unwrap().is_empty());
}
