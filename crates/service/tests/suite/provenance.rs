//! Memory that follows the code, on real git repositories the tests make (commits, branches,
//! merges, a squash, a rebase, a detached HEAD, a renamed path, a deleted file) and on this
//! repository's own history, on both backends: provenance recorded at store time, stale hits
//! with their files, confirm, items following merges, what a key's holder may reach.

use crate::common::Tools;
use crate::common::*;
use cortex_domain::provenance::{PathState, RepoBranch};
use cortex_service::scope_inference::InferredScope;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Caller, Config, MemoryService, RecallRequest};
use cortex_testdb::git::git;
use cortex_testdb::{TestDb, per_backend};
use serde_json::{Value, json};
use std::path::Path;

per_backend!(
    a_memory_about_a_changed_file_is_flagged_and_one_about_an_untouched_file_is_not,
    confirming_moves_the_commit_forward_and_clears_the_flag,
    a_renamed_path_and_a_deleted_file_are_named_and_confirm_follows_the_rename,
    an_item_written_on_uncommitted_changes_allows_their_commit,
    a_feature_branchs_items_are_seen_from_main_after_a_merge_commit_never_before,
    a_fast_forward_merge_and_a_rebase_are_seen,
    a_squash_merge_is_seen_while_the_branch_still_exists,
    a_detached_head_records_its_commit_and_updates_no_table,
    without_a_checkout_the_branch_table_stands_in,
    a_key_holder_reaches_no_other_tenants_provenance_tables_or_merges,
    this_repositorys_own_history_counts_as_git_does,
);

/// A repository made by the test, on `main`, with `files` committed.
fn repository(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    for (path, text) in files {
        write(dir.path(), path, text);
    }
    commit_all(dir.path(), "first");
    dir
}

pub(crate) fn write(repo: &Path, path: &str, text: &str) {
    let full = repo.join(path);
    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
    std::fs::write(full, text).unwrap();
}

pub(crate) fn commit_all(repo: &Path, message: &str) {
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", message]);
}

pub(crate) fn head(repo: &Path) -> String {
    let out =
        std::process::Command::new("git").args(["rev-parse", "HEAD"]).current_dir(repo).output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A service standing in the checkout `repo`, at acme/api@`branch`.
fn in_checkout(db: &TestDb, repo: &Path, branch: &str) -> MemoryService {
    let scope = InferredScope::fixed("acme", "api", branch).in_checkout(repo);
    MemoryService::open(&Config::new(db.target().clone(), scope, EmbedderChoice::None)).unwrap()
}

fn store(service: &MemoryService, item: Value) -> cortex_service::response::ItemResult {
    let r = service.store_args(&json!({ "items": [item] })).unwrap();
    r.results.into_iter().next().unwrap()
}

fn stored(service: &MemoryService, item: Value) -> String {
    let r = store(service, item);
    r.id.unwrap_or_else(|| panic!("not stored: {:?}", r.error))
}

/// The hit for `id` (read by id, so its scope and provenance come whole).
fn hit(service: &MemoryService, id: &str) -> cortex_service::response::Hit {
    service.find_args(&json!({ "ids": [id] })).unwrap().hits.remove(0)
}

fn titles(service: &MemoryService, query: &str) -> Vec<String> {
    let r = service.find_args(&json!({ "query": query, "mode": "fast" })).unwrap();
    r.hits.into_iter().map(|h| h.title).collect()
}

fn a_memory_about_a_changed_file_is_flagged_and_one_about_an_untouched_file_is_not(db: &TestDb) {
    let dir = repository(&[("src/auth.rs", "fn check() {}\n"), ("src/db.rs", "fn open() {}\n")]);
    let repo = dir.path();
    let s = in_checkout(db, repo, "main");
    let about_auth = stored(&s, section("Sessions", "Sessions are validated in `src/auth.rs` by check()."));
    let about_db = stored(
        &s,
        json!({"kind": "section", "data": {"title": "Pool", "body": "One pool per process."},
               "source": {"actor": "ann", "files": ["src/db.rs"]}}),
    );
    let decided = stored(
        &s,
        json!({"kind": "decision", "data": {"component": "auth", "status": "accepted",
               "title": "Opaque session tokens", "rationale": "Revocable; checked in src/auth.rs."}}),
    );
    let written = head(repo);
    let p = hit(&s, &about_auth).provenance.unwrap();
    assert_eq!(
        (p.commit.as_deref(), p.branch.as_deref(), p.dirty),
        (Some(written.as_str()), Some("main"), false)
    );
    assert_eq!(p.files, vec!["src/auth.rs"]);
    assert_eq!(hit(&s, &about_db).provenance.unwrap().files, vec!["src/db.rs"]);
    // `files` and `commit` stay out of the item's stored source.
    let item = s.find_args(&json!({"ids": [about_db], "detail": "full"})).unwrap().hits.remove(0);
    assert!(item.metadata.is_none() && hit(&s, &about_db).stale.is_none());

    for n in 0..3 {
        write(repo, "src/auth.rs", &format!("fn check() {{ /* {n} */ }}\n"));
        commit_all(repo, &format!("auth {n}"));
    }
    s.git().sync(repo).unwrap();
    let stale = hit(&s, &about_auth).stale.expect("the memory about src/auth.rs is flagged");
    assert_eq!((stale.files, stale.commits), (vec!["src/auth.rs".to_string()], Some(3)));
    assert!(stale.why.starts_with("src/auth.rs changed in 3 commits since it was written"), "{}", stale.why);
    assert!(hit(&s, &about_db).stale.is_none(), "src/db.rs did not change");
    // A search's brief hits carry the flag too.
    let found = s.find_args(&json!({"query": "sessions validated", "mode": "fast"})).unwrap();
    assert!(found.hits[0].stale.is_some() && found.hits[0].provenance.is_none());
    // The session briefing and the recall hook say it in a few words after the title.
    let note = "(may be out of date: src/auth.rs changed in 3 commits)";
    let briefing = s.briefing().context(None, 4_000).unwrap();
    let line = briefing.lines().find(|l| l.contains(&decided)).unwrap_or_else(|| panic!("{briefing}"));
    assert!(line.contains(&format!("Opaque session tokens {note}")), "{briefing}");
    let ask = RecallRequest {
        prompt: "how are sessions validated by check".into(),
        budget_tokens: Some(2_000),
        floor: Some(0.0),
        session: None,
    };
    let recalled = s.briefing().recall(&ask).unwrap().injection.text;
    let line = recalled.lines().find(|l| l.contains(&about_auth)).unwrap_or_else(|| panic!("{recalled}"));
    assert!(line.contains(&format!("Sessions {note}")), "{recalled}");
    let pool = recalled.lines().find(|l| l.contains(&about_db));
    assert!(pool.is_none_or(|l| !l.contains("out of date")), "{recalled}");
}

fn confirming_moves_the_commit_forward_and_clears_the_flag(db: &TestDb) {
    let dir = repository(&[("src/auth.rs", "v1\n")]);
    let repo = dir.path();
    let s = in_checkout(db, repo, "main");
    let id = stored(&s, section("Tokens", "Tokens are checked in src/auth.rs."));
    write(repo, "src/auth.rs", "v2\n");
    commit_all(repo, "auth v2");
    s.git().sync(repo).unwrap();
    assert!(hit(&s, &id).stale.is_some());

    let r = store(&s, json!({"operation": "confirm", "id": id}));
    assert_eq!(r.status, cortex_service::response::ItemStatus::Updated, "{r:?}");
    let moved_to = head(repo);
    assert!(r.reason.as_deref().unwrap().starts_with(&format!("confirmed at {}", &moved_to[..12])), "{r:?}");
    let after = hit(&s, &id);
    assert!(after.stale.is_none(), "confirmed: {:?}", after.stale);
    assert_eq!(after.provenance.unwrap().commit.as_deref(), Some(moved_to.as_str()));
    let confirmed =
        s.audit().records(None, None, 1_000).unwrap().into_iter().find(|r| r.operation == "confirm");
    let confirmed = confirmed.expect("the confirm is audited");
    assert_eq!(confirmed.via.as_deref(), Some("memory_store"), "{confirmed:?}");
    assert!(confirmed.principal.as_deref().is_some_and(|p| p.starts_with("local")), "{confirmed:?}");
    let m = Memory { service: s };
    assert_eq!(m.operations(&id), vec!["insert", "confirm"]);
    // The flag comes back with the next change; the trail still verifies.
    write(repo, "src/auth.rs", "v3\n");
    commit_all(repo, "auth v3");
    m.service.git().sync(repo).unwrap();
    assert_eq!(hit(&m.service, &id).stale.unwrap().commits, Some(1));
    let v =
        m.service.audit().verify(&cortex_service::audit::VerifyOptions { full: true, anchor: None }).unwrap();
    assert!(v.ok, "{:?}", v.problems);
    // A confirm of nothing, or of a deleted item, says so per item.
    let missing = store(&m.service, json!({"operation": "confirm", "id": uuid::Uuid::now_v7().to_string()}));
    assert_eq!(missing.error.unwrap().code, "not_found");
    let no_id = m.service.store_args(&json!({"items": [{"operation": "confirm"}]})).unwrap();
    assert_eq!(no_id.results[0].error.as_ref().unwrap().field, "items[0].id");
}

fn a_renamed_path_and_a_deleted_file_are_named_and_confirm_follows_the_rename(db: &TestDb) {
    let dir = repository(&[("a.rs", "alpha content\n"), ("b.rs", "beta content\n"), ("c.rs", "gamma\n")]);
    let repo = dir.path();
    let s = in_checkout(db, repo, "main");
    let id = stored(
        &s,
        json!({"kind": "section", "data": {"title": "Layout", "body": "See a.rs, b.rs and c.rs."}}),
    );
    git(repo, &["mv", "a.rs", "lib.rs"]);
    git(repo, &["rm", "-q", "b.rs"]);
    commit_all(repo, "move a, drop b");
    s.git().sync(repo).unwrap();
    let stale = hit(&s, &id).stale.unwrap();
    assert!(
        stale.why.contains("a.rs renamed to lib.rs") && stale.why.contains("b.rs deleted"),
        "{}",
        stale.why
    );
    assert!(!stale.files.contains(&"c.rs".to_string()));
    store(&s, json!({"operation": "confirm", "id": id}));
    let after = hit(&s, &id);
    assert!(after.stale.is_none());
    assert_eq!(after.provenance.unwrap().files, vec!["lib.rs", "c.rs"]);
}

fn an_item_written_on_uncommitted_changes_allows_their_commit(db: &TestDb) {
    let dir = repository(&[("cache.rs", "v1\n")]);
    let repo = dir.path();
    let s = in_checkout(db, repo, "main");
    write(repo, "cache.rs", "v2, not committed yet\n");
    let id = stored(&s, section("Cache", "The cache lives in cache.rs and expires after a minute."));
    assert!(hit(&s, &id).provenance.unwrap().dirty);
    commit_all(repo, "cache v2");
    s.git().sync(repo).unwrap();
    assert!(hit(&s, &id).stale.is_none(), "the commit of what it was written on");
    write(repo, "cache.rs", "v3\n");
    commit_all(repo, "cache v3");
    s.git().sync(repo).unwrap();
    assert_eq!(hit(&s, &id).stale.unwrap().commits, Some(2));
}

fn decision(component: &str, title: &str) -> Value {
    json!({"kind": "decision", "data": {"component": component, "status": "accepted", "title": title,
        "rationale": "fewer moving parts"}})
}

fn a_feature_branchs_items_are_seen_from_main_after_a_merge_commit_never_before(db: &TestDb) {
    let dir = repository(&[("README.md", "hello\n")]);
    let repo = dir.path();
    git(repo, &["checkout", "-q", "-b", "feature/login"]);
    write(repo, "src/login.rs", "fn login() {}\n");
    commit_all(repo, "login");
    let on_feature = in_checkout(db, repo, "feature/login");
    on_feature.git().sync(repo).unwrap();
    let id = stored(&on_feature, decision("login", "Sign in with passkeys"));
    assert_eq!(hit(&on_feature, &id).scope.unwrap().branch.as_deref(), Some("feature/login"));

    git(repo, &["checkout", "-q", "main"]);
    let on_main = in_checkout(db, repo, "main");
    on_main.git().sync(repo).unwrap();
    assert!(titles(&on_main, "passkeys").is_empty(), "not before the merge");
    git(repo, &["merge", "-q", "--no-ff", "-m", "Merge branch 'feature/login'", "feature/login"]);
    let report = on_main.git().sync(repo).unwrap();
    assert_eq!(report.merges.len(), 1, "{report:?}");
    assert_eq!((report.merges[0].from.as_str(), report.merges[0].how), ("feature/login", "merge"));
    let found = on_main.find_args(&json!({"query": "passkeys", "mode": "fast"})).unwrap();
    assert_eq!(found.hits.len(), 1, "after the merge");
    assert_eq!(found.hits[0].scope_match, cortex_domain::ScopeMatch::Branch);
    // Linked, not moved: the feature still sees its item; a later one is not seen until merged.
    assert_eq!(titles(&on_feature, "passkeys"), vec!["Sign in with passkeys"]);
    let later = stored(&on_feature, decision("login", "Passkeys first, passwords after"));
    assert_eq!(titles(&on_main, "passkeys").len(), 1, "{later} stored after the merge");
    // A second sync records nothing again; undoing the record hides the items, audited.
    assert!(on_main.git().sync(repo).unwrap().merges.is_empty());
    assert_eq!(on_main.git().unmerge("feature/login", None).unwrap(), 1);
    assert!(titles(&on_main, "passkeys").is_empty());
    let records = on_main.audit().records(None, None, 1_000).unwrap();
    let ops: Vec<&str> = records.iter().map(|r| r.operation.as_str()).collect();
    assert!(ops.contains(&"branch_merge") && ops.contains(&"branch_unmerge"), "{ops:?}");
    // Each names who did it and what it came through; nothing is a client's claim.
    for (op, via) in [("branch_merge", "cortex git sync"), ("branch_unmerge", "cortex git unmerge")] {
        let r = records.iter().find(|r| r.operation == op).unwrap();
        assert_eq!(r.via.as_deref(), Some(via), "{r:?}");
        assert!(r.principal.as_deref().is_some_and(|p| p.starts_with("local")), "{r:?}");
        assert_eq!(r.claimed.actor, None, "{r:?}");
    }
    assert!(on_main.git().sync(repo).unwrap().merges.is_empty(), "an undone merge stays undone");
}

fn a_fast_forward_merge_and_a_rebase_are_seen(db: &TestDb) {
    let dir = repository(&[("README.md", "hello\n")]);
    let repo = dir.path();
    let on_main = in_checkout(db, repo, "main");
    on_main.git().sync(repo).unwrap();
    git(repo, &["checkout", "-q", "-b", "fix"]);
    write(repo, "fix.rs", "fixed\n");
    commit_all(repo, "the fix");
    let on_fix = in_checkout(db, repo, "fix");
    stored(&on_fix, decision("retries", "Retry twice on 503"));
    git(repo, &["checkout", "-q", "main"]);
    git(repo, &["merge", "-q", "--ff-only", "fix"]);
    let report = on_main.git().sync(repo).unwrap();
    assert_eq!(
        report.merges.iter().map(|m| (m.from.as_str(), m.how)).collect::<Vec<_>>(),
        vec![("fix", "fast_forward")]
    );
    assert_eq!(titles(&on_main, "retry"), vec!["Retry twice on 503"]);

    // main moves on; a branch rebased onto it sees main's items.
    git(repo, &["checkout", "-q", "-b", "topic", "HEAD~1"]);
    write(repo, "topic.rs", "topic\n");
    commit_all(repo, "topic work");
    let on_topic = in_checkout(db, repo, "topic");
    on_topic.git().sync(repo).unwrap();
    git(repo, &["checkout", "-q", "main"]);
    write(repo, "main.rs", "main\n");
    commit_all(repo, "main work");
    stored(&on_main, decision("logging", "Log as JSON lines"));
    git(repo, &["checkout", "-q", "topic"]);
    git(repo, &["rebase", "-q", "main"]);
    let report = on_topic.git().sync(repo).unwrap();
    assert!(report.merges.iter().any(|m| m.from == "main" && m.how == "fast_forward"), "{report:?}");
    assert_eq!(titles(&on_topic, "json lines"), vec!["Log as JSON lines"]);
}

fn a_squash_merge_is_seen_while_the_branch_still_exists(db: &TestDb) {
    let dir = repository(&[("README.md", "hello\n")]);
    let repo = dir.path();
    let on_main = in_checkout(db, repo, "main");
    on_main.git().sync(repo).unwrap();
    git(repo, &["checkout", "-q", "-b", "search"]);
    write(repo, "search.rs", "v1\n");
    commit_all(repo, "search 1");
    write(repo, "search.rs", "v2\n");
    write(repo, "index.rs", "idx\n");
    commit_all(repo, "search 2");
    let on_search = in_checkout(db, repo, "search");
    stored(&on_search, decision("search", "Rank with BM25"));
    git(repo, &["checkout", "-q", "main"]);
    git(repo, &["merge", "-q", "--squash", "search"]);
    commit_all(repo, "Search (squashed)");
    let report = on_main.git().sync(repo).unwrap();
    assert_eq!(
        report.merges.iter().map(|m| (m.from.as_str(), m.how)).collect::<Vec<_>>(),
        vec![("search", "squash")]
    );
    assert_eq!(titles(&on_main, "bm25"), vec!["Rank with BM25"]);
}

fn a_detached_head_records_its_commit_and_updates_no_table(db: &TestDb) {
    let dir = repository(&[("a.rs", "one\n")]);
    let repo = dir.path();
    write(repo, "a.rs", "two\n");
    commit_all(repo, "two");
    let first = {
        git(repo, &["checkout", "-q", "HEAD~1"]);
        head(repo)
    };
    let s = in_checkout(db, repo, "main");
    let report = s.git().sync(repo).unwrap();
    assert_eq!(report.branch, None);
    assert!(report.note.unwrap().contains("detached"));
    let id = stored(&s, section("Alpha", "a.rs says one."));
    let p = hit(&s, &id).provenance.unwrap();
    assert_eq!((p.commit.as_deref(), p.branch), (Some(first.as_str()), None));
    assert_eq!(p.files, vec!["a.rs"]);
}

fn without_a_checkout_the_branch_table_stands_in(db: &TestDb) {
    let dir = repository(&[("api/handler.rs", "v1\n")]);
    let repo = dir.path();
    in_checkout(db, repo, "main").git().sync(repo).unwrap();
    // A team server: no checkout, the table kept by a developer's hooks.
    let server = open_at(db, "main");
    let id = stored(&server, section("Handler", "Requests go through api/handler.rs first."));
    let p = hit(&server, &id).provenance.unwrap();
    assert_eq!(
        (p.commit.as_deref(), p.files),
        (Some(head(repo).as_str()), vec!["api/handler.rs".to_string()])
    );
    let unknown = stored(
        &server,
        json!({"kind": "section", "data": {"title": "Elsewhere", "body": "mentions not/here.rs"},
               "source": {"commit": "abcdef12"}}),
    );
    let q = hit(&server, &unknown).provenance.unwrap();
    assert_eq!((q.commit.as_deref(), q.files.len()), (Some("abcdef12"), 0));
    write(repo, "api/handler.rs", "v2\n");
    commit_all(repo, "handler v2");
    in_checkout(db, repo, "main").git().sync(repo).unwrap();
    assert_eq!(hit(&server, &id).stale.unwrap().commits, Some(1));
    // The table itself, as the store keeps it.
    let place = RepoBranch { org: "acme".into(), project: "api".into(), branch: "main".into() };
    let store = cortex_store::open(db.target()).unwrap();
    let rows = store.path_changes(&place, &["api/handler.rs".into()]).unwrap();
    assert_eq!(
        (rows[0].changes, &rows[0].state, rows[0].commit.as_str()),
        (2, &PathState::Present, head(repo).as_str())
    );
}

fn a_key_holder_reaches_no_other_tenants_provenance_tables_or_merges(db: &TestDb) {
    let dir = repository(&[("secret.rs", "v1\n")]);
    let repo = dir.path();
    let owner = in_checkout(db, repo, "main");
    let id = stored(&owner, section("Secret", "The key lives in secret.rs."));
    git(repo, &["checkout", "-q", "-b", "side"]);
    write(repo, "side.rs", "x\n");
    commit_all(repo, "side");
    git(repo, &["checkout", "-q", "main"]);
    git(repo, &["merge", "-q", "--no-ff", "-m", "Merge branch 'side'", "side"]);
    owner.git().sync(repo).unwrap();
    assert_eq!(owner.git().merges().unwrap().len(), 1);

    let bound = cortex_domain::tenant::Bound { org: "other".into(), projects: vec![] };
    let stranger = owner.for_caller(&Caller::for_key(bound, Some("api"), Some("main")).unwrap());
    let r = store(&stranger, json!({"operation": "confirm", "id": id}));
    assert_eq!(r.error.unwrap().code, "not_found", "another tenant's item is no item");
    let theirs = stranger.git().merges().unwrap();
    assert!(theirs.is_empty(), "{theirs:?} seen from {:?}", stranger.inferred_scope().scope);
    assert!(stranger.git().sync(repo).is_err(), "the tables are the operator's");
    assert!(stranger.git().unmerge("side", Some("main")).is_err());
    let found = stranger.find_args(&json!({"ids": [id]})).unwrap();
    assert_eq!(found.missing_ids, vec![id.clone()]);
    // A path the request names outside the repository is refused, per item.
    let r =
        store(&owner, json!({"kind": "section", "content": "x", "source": {"files": ["../../etc/passwd"]}}));
    assert_eq!(r.error.unwrap().field, "items[0].source.files[0]");
}

/// This repository's history: the table's count of each path is the number of commits git
/// itself lists as changing it — the non-merge ones `git rev-list --full-history` shows, and
/// the merges that differ from every parent (`git diff` against each) — and its last change's
/// time the newest of theirs.
fn this_repositorys_own_history_counts_as_git_does(db: &TestDb) {
    let top = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let s = in_checkout(db, &top, "main");
    let report = s.git().sync(&top).unwrap();
    let Some(branch) = report.branch.clone() else {
        panic!("this repository's checkout is on a detached HEAD: run the test on a branch ({report:?})")
    };
    assert!(report.rebuilt && report.commits_read > 100, "{report:?}");
    let place = RepoBranch { org: "acme".into(), project: "api".into(), branch };
    let store = cortex_store::open(db.target()).unwrap();
    let paths = ["Cargo.toml", "README.md", "crates/domain/src/scope.rs", "docs/ARCHITECTURE.md"];
    let rows = store.path_changes(&place, &paths.map(str::to_string)).unwrap();
    for path in paths {
        let row = rows.iter().find(|r| r.path == path).unwrap_or_else(|| panic!("no row for {path}"));
        let run = |args: &[&str]| {
            let out = std::process::Command::new("git").args(args).current_dir(&top).output().unwrap();
            String::from_utf8(out.stdout).unwrap().trim().to_string()
        };
        // Non-merge commits touching it, and the merges that differ from every parent.
        let mut touching: Vec<String> =
            run(&["rev-list", "--full-history", "--no-merges", "HEAD", "--", path])
                .lines()
                .map(str::to_string)
                .collect();
        for merge in run(&["rev-list", "--full-history", "--merges", "HEAD", "--", path]).lines() {
            let parents = run(&["rev-list", "--parents", "-n", "1", merge]);
            let differs_from_all = parents.split_whitespace().skip(1).all(|parent| {
                let status = std::process::Command::new("git")
                    .args(["diff", "--quiet", parent, merge, "--", path])
                    .current_dir(&top)
                    .status()
                    .unwrap();
                !status.success()
            });
            if differs_from_all {
                touching.push(merge.to_string());
            }
        }
        assert_eq!(row.changes, touching.len() as i64, "{path}");
        let newest: i64 = touching
            .iter()
            .map(|c| run(&["show", "-s", "--format=%ct", c]).parse::<i64>().unwrap())
            .max()
            .unwrap();
        assert_eq!(row.time, newest * 1000, "{path}");
    }
}
