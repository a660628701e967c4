//! The commands a person runs by hand, read as a person reads them: `show`, `find`'s filters
//! and hints, `stats` and `audit` as text, quiet one-shot commands, a dry run that makes no
//! database, and `cortex ui` on a busy port or a named host. Real SQLite files, the decision
//! records of adr-tools and the changelog of keep-a-changelog (tests/fixtures/ingest).

use crate::common::cortex;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/ingest").join(name)
}

/// A folder with a memory seeded from the fixtures.
struct Memory {
    dir: tempfile::TempDir,
    db: PathBuf,
}

impl Memory {
    fn seeded() -> Memory {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("memory.db");
        let memory = Memory { dir, db };
        let adr = fixture("npryce+adr-tools");
        let changelog = fixture("olivierlacan+keep-a-changelog");
        let out = memory.run(&["ingest", adr.to_str().unwrap(), changelog.to_str().unwrap()]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        memory
    }

    fn run(&self, args: &[&str]) -> Output {
        cortex(self.dir.path(), &self.db).args(args).output().unwrap()
    }

    /// The id of the first hit for `query`.
    fn id_of(&self, query: &str) -> String {
        let found: Value = serde_json::from_slice(&self.run(&["find", query, "--json"]).stdout).unwrap();
        found["hits"][0]["id"].as_str().unwrap().to_string()
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn show_prints_an_item_once_for_a_person_and_names_the_ids_it_cannot_show() {
    let memory = Memory::seeded();
    let id = memory.id_of("record architecture decisions");
    let unknown = "01a24d32-3268-737c-b925-000000000000";
    let out = memory.run(&["show", &id, unknown]);
    assert_eq!(out.status.code(), Some(1), "an id not shown fails the command");
    let shown = text(&out.stdout);
    assert!(shown.starts_with("Record architecture decisions\n"), "{shown}");
    assert!(shown.contains(&format!("  decision · accepted · {id}")), "{shown}");
    assert!(shown.contains("scope       org=acme project=api branch=main"), "{shown}");
    // Relative and exact.
    assert!(shown.contains("created     just now (") && shown.contains(" UTC)"), "{shown}");
    // The text once, not a second time as a field, and no JSON.
    assert_eq!(
        shown.matches("We need to record the architectural decisions made on this project.").count(),
        1
    );
    assert!(!shown.contains('{') && !shown.contains("\"rationale\""), "{shown}");
    let errors = text(&out.stderr);
    assert!(errors.contains(&format!("cortex show: `{unknown}` no such item")), "{errors}");

    let out = memory.run(&["show", "not-an-id", &id]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("`not-an-id` is not an item id"));
    assert!(text(&out.stdout).contains("Record architecture decisions"), "the good id is still shown");

    let out = memory.run(&["show", "--json", &id, unknown]);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["items"][0]["id"], id.as_str());
    assert_eq!(json["missing"][0]["id"], unknown);
}

#[test]
fn find_filters_by_author_the_principal_recorded_or_the_agent_claimed() {
    let memory = Memory::seeded();
    let lines = |args: &[&str]| text(&memory.run(args).stdout);
    let claimed = r#"{"kind": "section", "source": {"actor": "claude"}, "data": {"title": "Yanked releases", "body": "A yanked release is marked [YANKED] in the changelog."}}"#;
    let forged = r#"{"kind": "section", "source": {"actor": "key:acme/ci"}, "data": {"title": "Yanked tags", "body": "A yanked tag stays in the changelog."}}"#;
    for item in [claimed, forged] {
        assert!(memory.run(&["store", item]).status.success());
    }
    // Who this CLI writes as: the principal the trail recorded for the last write.
    let audit: Value =
        serde_json::from_slice(&memory.run(&["audit", "--json", "--limit", "1"]).stdout).unwrap();
    let me = audit["records"][0]["principal"].as_str().unwrap().to_string();
    assert!(me.starts_with("local"), "{me}");
    let mine = lines(&["find", "yanked", "--author", &me]);
    assert!(mine.contains("Yanked releases") && mine.contains("Yanked tags"), "{mine}");
    let agent = lines(&["find", "yanked", "--author", "claude"]);
    assert!(agent.contains("Yanked releases") && !agent.contains("Yanked tags"), "{agent}");
    // Claiming a key's name as the agent does not make the item the key's.
    let key = lines(&["find", "yanked", "--author", "key:acme/ci"]);
    assert!(key.starts_with("no hits") && key.contains("without --author"), "{key}");
    let empty = memory.run(&["find", "yanked", "--author", " "]);
    assert_eq!(empty.status.code(), Some(2));
    assert!(text(&empty.stderr).starts_with("cortex: --author: "), "{}", text(&empty.stderr));
}

#[test]
fn find_filters_by_status_tags_and_since_and_hints_in_the_commands_flags() {
    let memory = Memory::seeded();
    let lines = |args: &[&str]| text(&memory.run(args).stdout);
    assert!(lines(&["find", "decisions", "--status", "accepted"]).contains("Record architecture decisions"));
    let none = lines(&["find", "decisions", "--status", "proposed"]);
    assert!(none.starts_with("no hits") && none.contains("without --status"), "{none}");
    for age in ["7d", "2w", "36h", "2000-01-01", "2000-01-01T00:00:00Z"] {
        assert!(
            lines(&["find", "decisions", "--since", age]).contains("Record architecture decisions"),
            "{age}"
        );
    }
    let future = lines(&["find", "decisions", "--since", "2999-01-01"]);
    assert!(future.starts_with("no hits") && future.contains("without --since"), "{future}");
    let bad = memory.run(&["find", "decisions", "--since", "soon"]);
    assert_eq!(bad.status.code(), Some(2));
    let said = text(&bad.stderr);
    assert!(said.starts_with("cortex: --since: ") && said.contains("36h, 7d or 2w"), "{said}");

    let tagged = r#"{"kind": "section", "tags": ["release-process"], "data": {"title": "Yanked releases", "body": "A yanked release is marked [YANKED] in the changelog."}}"#;
    assert!(memory.run(&["store", tagged]).status.success());
    assert!(lines(&["find", "yanked", "--tag", "release-process"]).contains("Yanked releases"));
    assert!(lines(&["find", "yanked", "--tag", "release-process,elsewhere"]).starts_with("no hits"));

    // The service's hints, in the command's syntax.
    let other_kinds = lines(&["find", "changelog", "--kind", "decision"]);
    assert!(other_kinds.contains("of other kinds: drop --kind"), "{other_kinds}");
    let elsewhere = r#"{"kind": "section", "scope": {"org": "acme", "project": "web"}, "data": {"title": "Changelog at web", "body": "The web project keeps a changelog too."}}"#;
    assert!(memory.run(&["store", elsewhere]).status.success());
    let wider = lines(&["find", "web project changelog", "--kind", "section"]);
    assert!(wider.contains("add --widen project") || wider.contains("add --widen org"), "{wider}");
    assert!(!wider.contains("pass \"widen\"") && !wider.contains("`types`"), "{wider}");
}

#[test]
fn stats_and_audit_read_as_text_newest_first_and_as_json_on_request() {
    let memory = Memory::seeded();
    let stats = text(&memory.run(&["stats"]).stdout);
    assert!(stats.contains("items      25 live, 0 deleted"), "{stats}");
    assert!(stats.lines().any(|l| l.trim().starts_with("decision") && l.trim().ends_with(" 9")), "{stats}");
    let json: Value = serde_json::from_slice(&memory.run(&["stats", "--json"]).stdout).unwrap();
    assert_eq!(json["items"], 25);

    let trail: Value = serde_json::from_slice(&memory.run(&["audit", "--json"]).stdout).unwrap();
    let records = trail["records"].as_array().unwrap();
    assert!(records[0]["at"].is_i64(), "JSON keeps epoch milliseconds, oldest first");
    let newest = records.last().unwrap()["item_id"].as_str().unwrap();
    let shown = text(&memory.run(&["audit", "--limit", "3"]).stdout);
    let rows: Vec<&str> = shown.lines().collect();
    assert!(rows[0].starts_with("WHEN"), "{shown}");
    assert!(rows[1].contains(newest), "the newest record first:\n{shown}");
    assert!(rows[1].starts_with("just now") && rows[1].contains(" UTC "), "{shown}");
    assert_eq!(rows.len(), 5, "header, three records, and the note that more exist:\n{shown}");
    assert!(rows[4].contains("--limit"), "{shown}");
}

#[test]
fn one_shot_commands_are_quiet_and_a_dry_run_makes_no_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("data").join("memory.db");
    let adr = fixture("npryce+adr-tools");
    let dry = cortex(dir.path(), &db)
        .env_remove("CORTEX_LOG")
        .args(["ingest", "--dry-run", adr.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(dry.status.success(), "{}", text(&dry.stderr));
    assert!(text(&dry.stdout).contains("9 would be inserted"), "{}", text(&dry.stdout));
    assert_eq!(text(&dry.stderr), "", "no logs without -v");
    assert!(!dir.path().join("data").exists(), "no folder, no database, no index made");

    let verbose = cortex(dir.path(), &db).env_remove("CORTEX_LOG").args(["-v", "stats"]).output().unwrap();
    assert!(text(&verbose.stderr).contains("INFO") && text(&verbose.stderr).contains("applied migration"));
    let quiet = cortex(dir.path(), &db).env_remove("CORTEX_LOG").args(["stats"]).output().unwrap();
    assert_eq!(text(&quiet.stderr), "");
    assert!(text(&quiet.stdout).starts_with("database   "));
}

/// A `$BROWSER` that writes the URL it is given to `opened`.
fn browser(dir: &Path, opened: &Path) -> PathBuf {
    let script = dir.join("browser.sh");
    std::fs::write(&script, format!("#!/bin/sh\nprintf '%s' \"$1\" > '{}'\n", opened.display())).unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    script
}

#[test]
fn ui_on_a_busy_port_says_so_and_opens_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let busy = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port();
    let opened = dir.path().join("opened");
    let out = cortex(dir.path(), &dir.path().join("memory.db"))
        .env("BROWSER", browser(dir.path(), &opened))
        .args(["ui", &format!("127.0.0.1:{port}")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let said = text(&out.stderr);
    assert!(
        said.contains(&format!("port {port} of 127.0.0.1 is in use"))
            && said.contains("cortex ui 127.0.0.1:"),
        "{said}"
    );
    assert_eq!(text(&out.stdout), "", "no URL printed");
    std::thread::sleep(Duration::from_millis(300));
    assert!(!opened.exists(), "no browser started");
}

#[test]
fn ui_takes_a_host_name_and_opens_the_browser_on_its_own_server() {
    let dir = tempfile::tempdir().unwrap();
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let opened = dir.path().join("opened");
    let mut child = cortex(dir.path(), &dir.path().join("memory.db"))
        .env("BROWSER", browser(dir.path(), &opened))
        .args(["ui", &format!("localhost:{port}")])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !opened.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let url = std::fs::read_to_string(&opened).unwrap_or_default();
    assert!(url.starts_with("http://") && url.ends_with(&format!(":{port}/")), "{url}");
    assert!(first.contains(&url), "{first}");
    // What the browser was sent to answers as this server.
    let host = url.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = TcpStream::connect(host).unwrap();
    write!(stream, "GET /health HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    child.kill().unwrap();
    child.wait().unwrap();
}
