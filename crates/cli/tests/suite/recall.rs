//! `cortex recall` run as an agent's prompt-submit hook runs it: the hook's JSON on stdin (or
//! `--prompt`), the memories most relevant to the prompt on stdout with their real ids, nothing
//! at all for a prompt about nothing stored, and exit 0 with one line on stderr when the
//! database cannot be opened — a failing hook must not break the prompt.

use std::io::Write;
use std::path::Path;
use std::process::{Output, Stdio};

use crate::common::cortex;

/// The hook as Claude Code runs it: its JSON on stdin.
fn hook(dir: &Path, db: &Path, prompt: &str) -> Output {
    let input = serde_json::json!({
        "session_id": "s-1", "transcript_path": "/dev/null", "cwd": dir,
        "hook_event_name": "UserPromptSubmit", "prompt": prompt,
    });
    let mut child = cortex(dir, db)
        .arg("recall")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.to_string().as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Stores the items; their ids in order.
fn store(dir: &Path, db: &Path, items: &str) -> Vec<String> {
    let out = cortex(dir, db).args(["store", items]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let response: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    response["results"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_string()).collect()
}

const ITEMS: &str = r#"[
  {"kind": "runbook", "data": {"title": "Rotate the gateway TLS certificates", "service": "gateway", "steps": [{"description": "renew the certificate with certbot on the gateway host"}, {"description": "reload nginx", "command": "systemctl reload nginx"}, {"description": "check the expiry", "command": "openssl s_client -connect gw:443"}]}},
  {"kind": "decision", "data": {"title": "Sessions live in PostgreSQL", "component": "auth", "status": "accepted", "rationale": "one store to back up; Redis was a second moving part"}},
  {"kind": "issue", "data": {"title": "Ledger export times out on large invoices", "tracker": "github", "external_id": "412", "status": "open", "description": "the nightly ledger export stops after 30 seconds when an invoice has more than 10k lines"}},
  {"kind": "section", "content": "The staging database is refreshed from production every Sunday night."}
]"#;

#[test]
fn a_prompt_about_a_stored_runbook_recalls_it_with_its_real_id() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("memory.db");
    let ids = store(dir.path(), &db, ITEMS);

    let out = hook(dir.path(), &db, "The gateway TLS certificate expires tomorrow, how do I rotate it?");
    assert!(out.status.success());
    let recalled = text(&out);
    assert!(recalled.contains("Rotate the gateway TLS certificates"), "{recalled}");
    assert!(recalled.contains("[runbook]") && recalled.contains(&ids[0]), "kind and id: {recalled}");
    assert!(recalled.contains("memory_find"), "says how to read the whole item: {recalled}");
    assert!(!recalled.contains("Sessions live in PostgreSQL"), "only what bears on the prompt: {recalled}");
    // Every id printed is one of the stored items, which `memory_find {"ids": [...]}` reads.
    let printed: Vec<&str> =
        recalled.split_whitespace().filter(|w| uuid::Uuid::parse_str(w).is_ok()).collect();
    assert!(!printed.is_empty(), "{recalled}");
    for id in &printed {
        assert!(ids.contains(&id.to_string()), "{id} is a stored item: {recalled}");
    }

    let by_flag = cortex(dir.path(), &db)
        .args(["recall", "--prompt", "why does the ledger export time out on big invoices?"])
        .output()
        .unwrap();
    assert!(by_flag.status.success());
    let recalled = text(&by_flag);
    assert!(recalled.contains(&ids[2]) && recalled.contains("[issue]"), "{recalled}");
}

#[test]
fn an_unrelated_prompt_recalls_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("memory.db");
    store(dir.path(), &db, ITEMS);
    for prompt in [
        "what's the weather like today?",
        "write a haiku about the sea",
        "please write a python function that reverses a string",
        "explain the difference between a process and a thread",
        "thanks, that looks good",
    ] {
        let out = hook(dir.path(), &db, prompt);
        assert!(out.status.success(), "{prompt}");
        assert_eq!(text(&out), "", "{prompt} must not drag memories in");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{prompt}: nothing on stderr either");
    }
}

#[test]
fn the_budget_bounds_what_is_printed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("memory.db");
    let long = "the gateway certificate rotation needs care because ".repeat(60);
    let items: Vec<String> = (0..5)
        .map(|i| {
            format!(r#"{{"kind": "section", "content": "Gateway certificate rotation note {i}: {long}"}}"#)
        })
        .collect();
    store(dir.path(), &db, &format!("[{}]", items.join(",")));
    let out = cortex(dir.path(), &db)
        .args(["recall", "--prompt", "gateway certificate rotation", "--budget-tokens", "120"])
        .output()
        .unwrap();
    let recalled = text(&out);
    assert!(!recalled.is_empty());
    assert!(recalled.chars().count() <= 120 * 3 + 1, "{} characters: {recalled}", recalled.chars().count());
}

#[test]
fn a_broken_database_gives_one_line_on_stderr_and_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("memory.db");
    std::fs::write(&db, b"this is not a SQLite database, only text").unwrap();
    let out = hook(dir.path(), &db, "how do I rotate the gateway certificate?");
    assert!(out.status.success(), "a hook must not fail the prompt");
    assert_eq!(text(&out), "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.starts_with("cortex recall:"), "{stderr}");

    // A folder that cannot be made: its parent is a file.
    let unreachable = db.join("memory.db");
    let out = hook(dir.path(), &unreachable, "how do I rotate the gateway certificate?");
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);

    let garbled = cortex(dir.path(), &db)
        .arg("recall")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            child.stdin.take().unwrap().write_all(b"{not json")?;
            child.wait_with_output()
        })
        .unwrap();
    assert!(garbled.status.success());
    let stderr = String::from_utf8_lossy(&garbled.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("stdin"), "names what was wrong: {stderr}");
}
