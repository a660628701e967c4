//! The `cortex` binary driven as a user would: subcommands, exit codes, and the rule that in
//! `serve` stdout carries only JSON-RPC.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Output, Stdio};

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        Env { dir: tempfile::tempdir().unwrap() }
    }

    fn cortex(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_cortex"));
        cmd.env("CORTEX_DB", self.dir.path().join("m.db"))
            .env("CORTEX_ORG", "acme")
            .env("CORTEX_PROJECT", "api")
            .env("CORTEX_BRANCH", "main")
            .env("CORTEX_LOG", "info")
            .current_dir(self.dir.path());
        cmd
    }

    fn run(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut child = self
            .cortex()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        if let Some(text) = stdin {
            input.write_all(text.as_bytes()).unwrap();
        }
        drop(input);
        child.wait_with_output().unwrap()
    }
}

fn stdout_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn store_from_stdin_then_find_as_json_and_as_a_table() {
    let env = Env::new();
    let out = env.run(
        &["store"],
        Some(r#"{"kind": "section", "data": {"title": "Backups", "body": "Nightly pgbackrest snapshots"}}"#),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout_json(&out)["results"][0]["status"], "inserted");

    let out = env.run(&["find", "pgbackrest", "--json", "--mode", "fast"], None);
    let found = stdout_json(&out);
    assert_eq!(found["hits"][0]["title"], "Backups");
    assert_eq!(found["searched_scope"]["branch"], "main");

    let out = env.run(&["find", "pgbackrest"], None);
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("Backups") && table.contains("**pgbackrest**"), "{table}");
}

#[test]
fn store_takes_an_argument_or_a_file_and_refusals_exit_2() {
    let env = Env::new();
    let file = env.dir.path().join("items.json");
    std::fs::write(&file, r#"[{"kind": "todo", "content": "one"}, {"kind": "todo", "content": "two"}]"#)
        .unwrap();
    let out = env.run(&["store", "--file", file.to_str().unwrap()], None);
    assert_eq!(stdout_json(&out)["summary"]["inserted"], 2);

    let out = env.run(&["store", r#"{"kind": "decision", "data": {"title": "x"}}"#], None);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stdout_json(&out)["results"][0]["status"], "validation_error");

    let out = env.run(&["store", "not json"], None);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not JSON"));
}

#[test]
fn stats_and_doctor_report_the_database_and_scope() {
    let env = Env::new();
    env.run(&["store", r#"{"kind": "todo", "content": "count me"}"#], None);
    let stats = stdout_json(&env.run(&["stats"], None));
    assert_eq!(stats["items"], 1);
    assert_eq!(stats["by_kind"][0]["kind"], "todo");
    let doctor = stdout_json(&env.run(&["doctor"], None));
    assert_eq!(doctor["schema_version"], cortex_store::sqlite::MIGRATIONS.len() as i64);
    assert_eq!(doctor["scope"]["scope"]["branch"], "main");
    assert_eq!(doctor["scope"]["branch_from"], "environment");
    let semantic = doctor["semantic_search"].as_str().unwrap();
    assert!(semantic.starts_with("enabled") || semantic.contains("cortex model install"), "{semantic}");
}

#[test]
fn serve_speaks_only_json_rpc_on_stdout_and_exits_cleanly_when_the_client_leaves() {
    let env = Env::new();
    let mut child = env
        .cortex()
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |v: Value| writeln!(stdin, "{v}").unwrap();
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "cli-test", "version": "1"}}}));
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let init: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "memory_store",
        "arguments": {"items": [{"kind": "todo", "content": "from serve"}]}}}));
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "exit status {status}");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    for l in rest.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("non-JSON on stdout ({e}): {l}"));
        assert_eq!(v["jsonrpc"], "2.0");
    }
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(stderr.contains("cortex serving MCP on stdio"), "logs go to stderr: {stderr}");
}

#[test]
fn a_tampered_database_is_refused_with_a_clear_message() {
    let env = Env::new();
    env.run(&["stats"], None);
    // Simulate a migration edited after it was applied.
    let store = cortex_store::SqliteStore::open(&env.dir.path().join("m.db")).unwrap();
    store.execute_raw("UPDATE schema_migrations SET checksum = 'edited'").unwrap();
    drop(store);
    let out = env.run(&["stats"], None);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("refusing to start"));
}
