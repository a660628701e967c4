//! `cortex recall` run as an agent's prompt-submit hook runs it: the hook's JSON on stdin (or
//! `--prompt`), the memories most relevant to the prompt on stdout with their real ids, nothing
//! at all for a prompt about nothing stored, nothing a session was shown already (by recall,
//! the session-start briefing or a `memory_find`) until it is compacted, the counts in `cortex
//! stats`, and exit 0 with one line on stderr when the database cannot be opened — a failing
//! hook must not break the prompt. Each test keeps the hooks' state in its own cache folder
//! (`XDG_CACHE_HOME`).

use std::io::Write;
use std::path::Path;
use std::process::{Output, Stdio};

use crate::common::cortex;

/// `cortex`, with the hooks' state in the test's folder.
fn cortex_at(dir: &Path, db: &Path) -> std::process::Command {
    let mut command = cortex(dir, db);
    command.env("XDG_CACHE_HOME", dir.join("cache"));
    command
}

/// The hook as Claude Code runs it: its JSON on stdin, in session `s-1`.
fn hook(dir: &Path, db: &Path, prompt: &str) -> Output {
    hook_in(dir, db, "s-1", prompt)
}

fn hook_in(dir: &Path, db: &Path, session: &str, prompt: &str) -> Output {
    let input = serde_json::json!({
        "session_id": session, "transcript_path": "/dev/null", "cwd": dir,
        "hook_event_name": "UserPromptSubmit", "prompt": prompt,
    });
    run_with(cortex_at(dir, db).arg("recall"), &input.to_string())
}

/// `command` given `input` on stdin.
fn run_with(command: &mut std::process::Command, input: &str) -> Output {
    let mut child =
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

/// Stderr less the once-per-session line saying the recall is lexical only (these tests run
/// without the model).
fn problems(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| !l.starts_with("cortex recall: recall is lexical only"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The memory ids a text holds, in order.
fn ids_in(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_ascii_hexdigit() || c == '-'))
        .filter(|w| w.len() == 36 && uuid::Uuid::parse_str(w).is_ok())
        .map(str::to_string)
        .collect()
}

/// Stores the items; their ids in order.
fn store(dir: &Path, db: &Path, items: &str) -> Vec<String> {
    let out = cortex_at(dir, db).args(["store", items]).output().unwrap();
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
    let printed = ids_in(&recalled);
    assert!(!printed.is_empty(), "{recalled}");
    for id in &printed {
        assert!(ids.contains(id), "{id} is a stored item: {recalled}");
    }

    let by_flag = cortex_at(dir.path(), &db)
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
        assert_eq!(problems(&out), "", "{prompt}: nothing on stderr either");
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
    let out = cortex_at(dir.path(), &db)
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

    let garbled = cortex_at(dir.path(), &db)
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

#[test]
fn a_session_is_not_shown_the_same_memory_twice_until_it_is_compacted() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("memory.db");
    let ids = store(dir.path(), &db, ITEMS);
    let prompt = "why does the ledger export time out on big invoices?";

    let first = hook_in(dir.path(), &db, "s-a", prompt);
    assert!(ids_in(&text(&first)).contains(&ids[2]), "{}", text(&first));
    let again = hook_in(dir.path(), &db, "s-a", prompt);
    assert!(again.status.success());
    assert_eq!(text(&again), "", "the same prompt in the same session re-injects nothing");
    assert_eq!(problems(&again), "");
    let told: usize = [&first, &again]
        .iter()
        .map(|o| String::from_utf8_lossy(&o.stderr).matches("recall is lexical only").count())
        .sum();
    assert_eq!(told, 1, "the session is told once that its recall is lexical only");

    let other = hook_in(dir.path(), &db, "s-b", prompt);
    assert!(ids_in(&text(&other)).contains(&ids[2]), "another session has its own ledger");

    // A compaction empties the context: the session-start hook after it lists the briefing,
    // and the memory may come again.
    let start = serde_json::json!({"session_id": "s-a", "cwd": dir.path(), "hook_event_name": "SessionStart", "source": "compact"});
    let briefing = run_with(cortex_at(dir.path(), &db).arg("context"), &start.to_string());
    assert!(briefing.status.success());
    let listed = ids_in(&text(&briefing));
    assert!(listed.contains(&ids[2]), "the open issue is in the briefing: {}", text(&briefing));
    assert_eq!(text(&hook_in(dir.path(), &db, "s-a", prompt)), "", "listed by the new briefing: not again");
    let runbook = "The gateway TLS certificate expires tomorrow, how do I rotate it?";
    assert!(ids_in(&text(&hook_in(dir.path(), &db, "s-a", runbook))).contains(&ids[0]), "not listed: shown");
}

#[test]
fn what_a_memory_find_returned_in_the_session_is_not_injected() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("memory.db");
    let ids = store(dir.path(), &db, ITEMS);
    // Claude Code's PostToolUse input for the MCP tool: the result's text blocks.
    let answer =
        serde_json::json!({"hits": [{"id": ids[2], "title": "Ledger export times out on large invoices"}]});
    let input = serde_json::json!({
        "session_id": "s-f", "cwd": dir.path(), "hook_event_name": "PostToolUse",
        "tool_name": "mcp__cortex__memory_find", "tool_input": {"query": "ledger export"},
        "tool_response": [{"type": "text", "text": answer.to_string()}],
    });
    let noted = run_with(cortex_at(dir.path(), &db).args(["hook", "post-tool-use"]), &input.to_string());
    assert!(noted.status.success());
    assert_eq!((text(&noted).as_str(), String::from_utf8_lossy(&noted.stderr).as_ref()), ("", ""));
    let out = hook_in(dir.path(), &db, "s-f", "why does the ledger export time out on big invoices?");
    assert!(!text(&out).contains(&ids[2]), "the find returned it already: {}", text(&out));

    // A hook input that is not JSON: one line, exit 0.
    let broken = run_with(cortex_at(dir.path(), &db).args(["hook", "post-tool-use"]), "{not json");
    assert!(broken.status.success());
    assert_eq!(String::from_utf8_lossy(&broken.stderr).lines().count(), 1);
}

#[test]
fn the_session_ceiling_stops_injections_and_stats_count_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("memory.db");
    let ids = store(dir.path(), &db, ITEMS);
    let ceiling = |c: &mut std::process::Command| {
        c.env("CORTEX_RECALL_SESSION_BUDGET_TOKENS", "150");
    };
    let ask = |prompt: &str| {
        let input = serde_json::json!({"session_id": "s-c", "cwd": dir.path(), "prompt": prompt});
        let mut command = cortex_at(dir.path(), &db);
        ceiling(command.arg("recall"));
        run_with(&mut command, &input.to_string())
    };
    let first = ask("why does the ledger export time out on big invoices?");
    assert!(ids_in(&text(&first)).contains(&ids[2]), "{}", text(&first));
    let second = ask("The gateway TLS certificate expires tomorrow, how do I rotate it?");
    assert_eq!(text(&second), "", "the session spent its 150 tokens");
    ask("what's the weather like today?");

    let shown = cortex_at(dir.path(), &db).arg("stats").output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("  acme/api: 3 prompts, 1 with memories (1 memories, "), "{shown}");
    // The search indexes as the status page shows them.
    assert!(shown.contains("\nlexical    sound: ") && shown.contains(" items embedded\n"), "{shown}");
    assert!(shown.contains("\nmodel      none: lexical search only\n"), "{shown}");
    assert!(shown.contains("items have no vectors") && shown.contains("`cortex reindex`"), "{shown}");
    let stats = cortex_at(dir.path(), &db).args(["stats", "--json"]).output().unwrap();
    assert!(stats.status.success());
    let stats: serde_json::Value = serde_json::from_slice(&stats.stdout).unwrap();
    let counts = &stats["recall"][0];
    assert_eq!((counts["org"].as_str(), counts["project"].as_str()), (Some("acme"), Some("api")), "{stats}");
    assert_eq!(counts["prompts"], 3, "{stats}");
    assert_eq!(counts["injections"], 1, "{stats}");
    assert_eq!(counts["memories"], 1, "{stats}");
    assert!(counts["tokens"].as_u64().unwrap() > 0 && counts["tokens"].as_u64().unwrap() <= 150, "{stats}");
    assert_eq!(counts["sessions_at_ceiling"], 1, "{stats}");
    let indexes = &stats["indexes"];
    assert_eq!(indexes["lexical"]["health"]["state"], "sound", "{stats}");
    assert_eq!(indexes["vectors"]["unembedded"], stats["items"], "no embedder: every item waits");
    assert_eq!(indexes["vectors"]["vectors"], 0, "{stats}");
}

#[test]
fn with_the_model_a_paraphrase_brings_the_runbook_and_an_unrelated_prompt_nothing() {
    let model = std::env::var_os("CORTEX_MODEL_DIR").expect("set CORTEX_MODEL_DIR to the model's folder");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("memory.db");
    let with_model = |c: &mut std::process::Command| {
        c.env("CORTEX_EMBEDDER", "local").env("CORTEX_MODEL_DIR", &model);
    };
    let mut command = cortex_at(dir.path(), &db);
    with_model(command.args(["store", ITEMS]));
    let stored = command.output().unwrap();
    assert!(stored.status.success(), "{}", String::from_utf8_lossy(&stored.stderr));
    let response: serde_json::Value = serde_json::from_slice(&stored.stdout).unwrap();
    let runbook = response["results"][0]["id"].as_str().unwrap().to_string();
    let ask = |session: &str, prompt: &str| {
        let input = serde_json::json!({"session_id": session, "cwd": dir.path(), "prompt": prompt});
        let mut command = cortex_at(dir.path(), &db);
        with_model(command.arg("recall"));
        run_with(&mut command, &input.to_string())
    };
    // The runbook says "renew", not "rotate the TLS certificate".
    let out = ask("s-m", "how do I rotate the TLS certificate?");
    assert!(out.status.success());
    assert!(
        ids_in(&text(&out)).contains(&runbook),
        "{} / {}",
        text(&out),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "hybrid: nothing to tell");
    for prompt in ["write a haiku about the sea", "convert json to csv", "how to reverse a string"] {
        let out = ask("s-u", prompt);
        assert_eq!(text(&out), "", "{prompt} must not drag memories in");
    }
}
