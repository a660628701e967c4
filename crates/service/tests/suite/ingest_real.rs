//! `cortex ingest` through `MemoryService` on real files of public repositories
//! (`tests/fixtures/ingest`, sources and licences in its README), on each backend: decision
//! records of five projects and formats, changelogs of three styles, and keep-a-changelog's
//! whole history rebuilt from its `git log`. The counts and fields were read off the files.

use crate::common::{Memory, ingested, memory};
use cortex_service::ingest::Selection;
use cortex_service::ingest::report::IngestReport;
use cortex_service::scope_inference::InferredScope;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Config, MemoryService};
use cortex_store::{Filters, StoredItem};
use cortex_testdb::git::{git_output, read_log, rebuild};
use cortex_testdb::{TestDb, per_backend};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;

per_backend!(
    decision_records_of_five_projects_with_their_statuses_dates_and_supersedes,
    changelogs_of_three_styles_and_recent_is_the_newest_release,
    a_real_history_titled_and_dated_like_git_log,
    a_run_deletes_only_what_its_own_root_made,
    a_run_deletes_nothing_of_another_project,
    items_an_older_version_made_are_adopted_and_never_deleted,
);

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/ingest");

/// Copies `from` (a fixture folder or file) to `to` under `dir`.
fn copy(dir: &Path, from: &str, to: &str) {
    let source = Path::new(FIXTURES).join(from);
    let target = dir.join(to);
    if source.is_file() {
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(&source, &target).unwrap();
        return;
    }
    std::fs::create_dir_all(&target).unwrap();
    for entry in std::fs::read_dir(&source).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), target.join(entry.file_name())).unwrap();
        }
    }
}

/// A checkout (its `.git` makes it one): paths are relative to its top.
fn checkout() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    dir
}

fn ingest(m: &Memory, paths: &[&Path]) -> IngestReport {
    let paths: Vec<_> = paths.iter().map(|p| p.to_path_buf()).collect();
    m.service.ingest().files(&paths, false, &|_, _| {}).unwrap()
}

fn audit_count(m: &Memory) -> usize {
    m.service.audit().records(None, None, 1_000_000).unwrap().len()
}

fn statuses<'a>(items: impl Iterator<Item = &'a StoredItem>) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for item in items {
        *out.entry(item.record.status.clone().unwrap_or_default()).or_default() += 1;
    }
    out
}

fn decision_records_of_five_projects_with_their_statuses_dates_and_supersedes(db: &TestDb) {
    let m = memory(db, "main");
    let dir = checkout();
    let top = dir.path();
    copy(top, "adr+madr/docs/decisions", "madr/docs/decisions");
    copy(top, "npryce+adr-tools/doc/adr", "adr-tools/doc/adr");
    copy(top, "thomvaill+log4brains/docs/adr", "log4brains/docs/adr");
    copy(
        top,
        "ministryofjustice+modernisation-platform/architecture-decision-record",
        "mp/architecture-decision-record",
    );
    copy(top, "JabRef+jabref/docs/decisions", "jabref/docs/decisions");
    let report = ingest(&m, &[top]);
    assert_eq!(report.kinds["decision"].inserted, 19 + 9 + 9 + 45 + 70, "{report:?}");
    assert!(
        !report.kinds.contains_key("section"),
        "every file is a record, a template or an index: {report:?}"
    );
    assert_eq!(report.passed_over.len(), 2 + 3 + 1 + 2, "{:?}", report.passed_over);
    let items = ingested(db);
    let of = |prefix: &'static str| items.iter().filter(move |(k, _)| k.starts_with(prefix)).map(|(_, v)| v);
    let counts =
        |pairs: &[(&str, usize)]| pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect::<BTreeMap<_, _>>();
    assert_eq!(statuses(of("madr/")), counts(&[("proposed", 19)]));
    assert_eq!(statuses(of("adr-tools/")), counts(&[("accepted", 9)]));
    assert_eq!(statuses(of("log4brains/")), counts(&[("accepted", 8), ("superseded", 1)]));
    assert_eq!(
        statuses(of("mp/")),
        counts(&[("accepted", 35), ("proposed", 2), ("rejected", 6), ("superseded", 2)])
    );
    assert_eq!(statuses(of("jabref/")), counts(&[("accepted", 5), ("proposed", 64), ("superseded", 1)]));

    // Each named supersede made, whatever form it was written in.
    let id = |path: &str| items[path].record.id;
    for (old, new) in [
        (
            "jabref/docs/decisions/0045-use-input-flag-always-for-input-files.md",
            "jabref/docs/decisions/0057-allow-positional-input-file-argument.md",
        ),
        (
            "mp/architecture-decision-record/0004-use-bash-node-python-as-core-languages.md",
            "mp/architecture-decision-record/0019-use-bash-go-as-core-languages.md",
        ),
        (
            "log4brains/docs/adr/20200926-use-the-adr-number-as-its-unique-id.md",
            "log4brains/docs/adr/20201016-use-the-adr-slug-as-its-unique-id.md",
        ),
    ] {
        assert_eq!(items[old].superseded_by, Some(id(new)), "{old}");
    }
    assert_eq!(report.superseded.len(), 3, "{:?}", report.superseded);

    let velocity = &items["jabref/docs/decisions/0039-use-apache-velocity-as-template-engine.md"].record;
    assert_eq!(velocity.title, "Use Apache Velocity as template engine");
    let on_hold = &items["madr/docs/decisions/0003-provide-own-madr-tools.md"].record;
    assert_eq!(on_hold.metadata.as_ref().unwrap()["status_as_written"], "on hold");
    let iso = &items["adr-tools/doc/adr/0008-use-iso-8601-format-for-dates.md"].record;
    assert_eq!(iso.occurred_at, cortex_domain::time::parse_instant("2017-02-21").ok(), "the record's date");

    let before = audit_count(&m);
    let again = ingest(&m, &[top]);
    assert_eq!(
        (again.total().inserted, again.total().updated, again.total().deleted),
        (0, 0, 0),
        "{again:?}"
    );
    assert_eq!(audit_count(&m), before, "re-ingesting changes nothing");
}

fn changelogs_of_three_styles_and_recent_is_the_newest_release(db: &TestDb) {
    let m = memory(db, "main");
    let dir = checkout();
    let top = dir.path();
    copy(top, "olivierlacan+keep-a-changelog/CHANGELOG.md", "CHANGELOG.md");
    copy(top, "conventional-changelog+standard-version/CHANGELOG.md", "tools/standard-version/CHANGELOG.md");
    copy(top, "pallets+flask/CHANGES.rst", "vendor-docs/flask/CHANGES.rst");
    let report = ingest(&m, &[top]);
    assert_eq!(report.kinds["release"].inserted, 16 + 37 + 62, "{report:?}");
    assert_eq!(report.kinds["section"].inserted, 1, "flask's unreleased 3.2.0");
    let items = ingested(db);
    let kac = &items["CHANGELOG.md#2.0.0"].record;
    assert_eq!(
        (kac.data["released_at"].as_str(), kac.occurred_at),
        (Some("2026-06-07"), cortex_domain::time::parse_instant("2026-06-07").ok())
    );
    assert_eq!(items["vendor-docs/flask/CHANGES.rst#3.2.0"].record.kind, cortex_domain::Kind::Section);

    // Newest first by release date, for a find by kind and in the briefing.
    let found = m.find(json!({"types": ["release"], "limit": 100}));
    let dates: Vec<String> = found
        .hits
        .iter()
        .map(|h| {
            items.values().find(|i| i.record.id == h.id).unwrap().record.data["released_at"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let mut sorted = dates.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(dates, sorted, "newest release first");
    assert_eq!(found.hits[0].title, "2.0.0 major", "Keep a Changelog's 2.0.0 (2026-06-07) is the newest");
    assert_eq!(found.hits[1].title, "3.1.3 patch", "then flask's 3.1.3 (2026-02-18)");
    let briefing = m.service.briefing().context(None, 1_500).unwrap();
    let recent: Vec<&str> =
        briefing.lines().skip_while(|l| !l.contains("Recent changes")).skip(1).take(2).collect();
    assert!(recent[0].contains("2.0.0") && recent[1].contains("3.1.3"), "{briefing}");
}

fn a_real_history_titled_and_dated_like_git_log(db: &TestDb) {
    let m = memory(db, "main");
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    let log = std::fs::read_to_string(Path::new(FIXTURES).join("olivierlacan+keep-a-changelog/history.log"))
        .unwrap();
    let commits = read_log(&log);
    assert_eq!(commits.len(), 632);
    rebuild(repo, &commits);

    let report = m.service.ingest().commits(repo, &Selection::default(), false, &|_, _| {}).unwrap();
    // 632 commits; 21 merges whose generated message has no body become no item.
    assert_eq!((report.files, report.merges_without_message), (632, 21), "{report:?}");
    assert_eq!(report.kinds["change"].inserted, 611);

    let items = ingested(db);
    let hashes: Vec<String> = git_output(repo, &["log", "--format=%H", "--topo-order", "--reverse"])
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(hashes.len(), 632);
    let commit = |hash: &str| &items[&format!("#{hash}")].record;
    let head = commit(&hashes[631]);
    let last = &commits[631];
    assert_eq!(head.title, last.subject(), "titled by its subject");
    assert_eq!(head.title, "Add routing tests for the v2 preview default (#720) (#721)");
    assert_eq!(head.data["author"], "Olivier Lacan <hi@olivierlacan.com>");
    assert!(
        !head.body.contains("olivierlacan.com") && !head.body.contains(&hashes[631][..12]),
        "{}",
        head.body
    );
    assert_eq!(head.occurred_at, Some(last.commit_seconds() * 1000));
    let meta = head.metadata.as_ref().unwrap();
    let files: Vec<(String, String)> = meta["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["status"].as_str().unwrap().to_string(), f["path"].as_str().unwrap().to_string()))
        .collect();
    let logged: Vec<(String, String)> = last.files.iter().map(|(s, p)| (s.to_string(), p.clone())).collect();
    assert_eq!(files, logged, "the files `git log --name-status` lists");
    let numstat = git_output(repo, &["show", "--numstat", "--format=", "HEAD"]);
    let added: u64 = numstat.lines().filter_map(|l| l.split('\t').next()?.parse::<u64>().ok()).sum();
    assert_eq!(meta["insertions"].as_u64(), Some(added), "the lines `git log --numstat` counts");

    // A pull request's merge is titled by the pull request.
    let merge = commits
        .iter()
        .position(|c| {
            c.parents.len() > 1 && c.subject().starts_with("Merge pull request #") && !c.body().is_empty()
        })
        .unwrap();
    let merged = commit(&hashes[merge]);
    assert_eq!(merged.title, commits[merge].body().lines().next().unwrap());
    assert_eq!(merged.metadata.as_ref().unwrap()["merge"], true);

    // No search finds a commit by its author's e-mail or its hash; the subject finds it.
    // (Other commits' own text holds "olivierlacan", from branch names: those may match.)
    let by_email = m.find(json!({"query": "hi@olivierlacan.com", "types": ["change"], "limit": 100}));
    assert!(!by_email.hits.iter().any(|h| h.id == head.id), "found by its author alone");
    let by_hash = m.find(json!({"query": &hashes[631][..12], "types": ["change"]}));
    assert!(!by_hash.hits.iter().any(|h| h.id == head.id), "found by its hash");
    let by_subject = m.find(json!({"query": "routing tests v2 preview default", "types": ["change"]}));
    assert!(by_subject.hits.iter().take(3).any(|h| h.id == head.id));

    // Newest first, by commit time, in a find by kind and in the briefing.
    let newest = m.find(json!({"types": ["change"], "limit": 20}));
    let times: Vec<i64> = newest
        .hits
        .iter()
        .map(|h| items.values().find(|i| i.record.id == h.id).unwrap().record.occurred_at.unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "{times:?}");
    assert_eq!(times[0], commits.iter().map(|c| c.commit_seconds() * 1000).max().unwrap());
    let briefing = m.service.briefing().context(None, 1_500).unwrap();
    assert!(briefing.contains(&newest.hits[0].title), "{briefing}");

    let before = audit_count(&m);
    let again = m.service.ingest().commits(repo, &Selection::default(), false, &|_, _| {}).unwrap();
    assert_eq!((again.kinds["change"].inserted, again.kinds["change"].unchanged), (0, 611));
    assert_eq!(audit_count(&m), before, "re-ingesting changes nothing");

    // Like `git log -n 10` and `git log --author`.
    let ten = Selection { max_commits: Some(10), ..Selection::default() };
    assert_eq!(m.service.ingest().commits(repo, &ten, true, &|_, _| {}).unwrap().files, 10);
    let by = Selection { author: Some("olivierlacan".into()), ..Selection::default() };
    let expected = git_output(repo, &["log", "--format=%H", "--author=olivierlacan", "-i"]).lines().count();
    assert_eq!(m.service.ingest().commits(repo, &by, true, &|_, _| {}).unwrap().files, expected);
}

/// A service standing at acme/`project`@main.
fn project(db: &TestDb, project: &str) -> Memory {
    let scope = InferredScope::fixed("acme", project, "main");
    Memory {
        service: MemoryService::open(&Config::new(db.target().clone(), scope, EmbedderChoice::None)).unwrap(),
    }
}

const CHANGELOG_A: &str = "# Changelog\n\n## [2.0.0] - 2024-02-01\n\n### Removed\n\n- v1 API.\n\n## [1.0.0] - 2024-01-01\n\n### Added\n\n- Orders.\n";
const CHANGELOG_B: &str = "# Changelog\n\n## [0.2.0] - 2023-06-01\n\n### Added\n\n- Reports.\n\n## [0.1.0] - 2023-05-01\n\n### Added\n\n- Billing.\n";

/// The versions of the live releases, each root's included.
fn versions(db: &TestDb) -> Vec<String> {
    let filters = Filters { kinds: vec![cortex_domain::Kind::Release], ..Filters::default() };
    let items = db.open().recent(&filters, 1_000).unwrap();
    items
        .iter()
        .filter_map(|i| i.record.data.get("version").and_then(Value::as_str).map(str::to_string))
        .collect()
}

fn a_run_deletes_only_what_its_own_root_made(db: &TestDb) {
    let m = memory(db, "main");
    // Two checkouts of two repositories ingested into one project, each with a root
    // CHANGELOG.md; and a folder that is no checkout, with one too.
    let (a, b, plain) = (checkout(), checkout(), tempfile::tempdir().unwrap());
    std::fs::write(a.path().join("CHANGELOG.md"), CHANGELOG_A).unwrap();
    std::fs::write(b.path().join("CHANGELOG.md"), CHANGELOG_B).unwrap();
    std::fs::write(plain.path().join("CHANGELOG.md"), CHANGELOG_B.replace("0.2.0", "0.9.0")).unwrap();
    for dir in [&a, &b, &plain] {
        assert_eq!(ingest(&m, &[dir.path()]).kinds["release"].inserted, 2);
    }
    let mut all = versions(db);
    all.sort();
    assert_eq!(all, ["0.1.0", "0.1.0", "0.2.0", "0.9.0", "1.0.0", "2.0.0"]);

    // Checkout A drops 1.0.0 and ingests its own file again: only its own release goes.
    std::fs::write(a.path().join("CHANGELOG.md"), CHANGELOG_A.split("## [1.0.0]").next().unwrap()).unwrap();
    let report = ingest(&m, &[&a.path().join("CHANGELOG.md")]);
    assert_eq!((report.kinds["release"].deleted, report.kinds["release"].unchanged), (1, 1), "{report:?}");
    let mut left = versions(db);
    left.sort();
    assert_eq!(left, ["0.1.0", "0.1.0", "0.2.0", "0.9.0", "2.0.0"], "B's and the folder's releases stay");

    // The folder's file gone: its releases go, and nothing of the checkouts.
    std::fs::remove_file(plain.path().join("CHANGELOG.md")).unwrap();
    std::fs::write(plain.path().join("notes.md"), "# Notes\n\nNothing yet.\n").unwrap();
    let report = ingest(&m, &[plain.path()]);
    assert_eq!(report.kinds["release"].deleted, 2, "{report:?}");
    let mut left = versions(db);
    left.sort();
    assert_eq!(left, ["0.1.0", "0.2.0", "2.0.0"]);
}

fn a_run_deletes_nothing_of_another_project(db: &TestDb) {
    let (api, web) = (project(db, "api"), project(db, "web"));
    let dir = checkout();
    std::fs::write(dir.path().join("CHANGELOG.md"), CHANGELOG_A).unwrap();
    assert_eq!(ingest(&api, &[dir.path()]).kinds["release"].inserted, 2);
    assert_eq!(ingest(&web, &[dir.path()]).kinds["release"].inserted, 2, "each project keeps its own");
    // An agent's own release in the api project, without any source.
    let agent = api.store(json!([{"kind": "release", "data": {"version": "9.9.9", "release_type": "major", "status": "planned"}}]));
    assert!(agent.results[0].id.is_some());

    std::fs::write(dir.path().join("CHANGELOG.md"), "# Changelog\n\nNothing released.\n").unwrap();
    let report = ingest(&api, &[dir.path()]);
    assert_eq!(report.kinds["release"].deleted, 2, "{report:?}");
    let filters = Filters { kinds: vec![cortex_domain::Kind::Release], ..Filters::default() };
    let left: Vec<(String, String)> = db
        .open()
        .recent(&filters, 100)
        .unwrap()
        .into_iter()
        .map(|i| {
            (
                i.record.scope.project.unwrap_or_default(),
                i.record.data["version"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut left = left;
    left.sort();
    assert_eq!(
        left,
        [("api".into(), "9.9.9".into()), ("web".into(), "1.0.0".into()), ("web".into(), "2.0.0".into())],
        "the web project's releases and the agent's stay"
    );
}

fn items_an_older_version_made_are_adopted_and_never_deleted(db: &TestDb) {
    let m = memory(db, "main");
    // What an ingest made before roots named the checkout: `root` empty.
    let legacy = |path: &str, version: &str| {
        json!({"kind": "release", "data": {"version": version, "release_type": "major", "status": "released"},
               "metadata": {"ingest": {"from": "files", "root": "", "path": path, "key": version, "hash": "old"}},
               "ttl": "permanent", "dedupe": false})
    };
    let stored = m.store(json!([legacy("CHANGELOG.md", "1.0.0"), legacy("OTHER.md", "0.1.0")]));
    let kept = stored.results[1].id.clone().unwrap();
    let dir = checkout();
    std::fs::write(dir.path().join("CHANGELOG.md"), CHANGELOG_A).unwrap();
    let report = ingest(&m, &[dir.path()]);
    let releases = &report.kinds["release"];
    assert_eq!((releases.inserted, releases.updated, releases.deleted), (1, 1, 0), "{report:?}");
    let adopted = &ingested(db)["CHANGELOG.md#1.0.0"];
    assert_ne!(adopted.record.metadata.as_ref().unwrap()["ingest"]["root"], "", "now this checkout's");
    assert!(m.find(json!({"ids": [kept]})).hits.len() == 1, "another checkout's, maybe: never deleted");
}
