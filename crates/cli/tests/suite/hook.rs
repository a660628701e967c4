//! `cortex hook stop` and `cortex hook pre-compact` as an agent runs them: the hook input on
//! stdin, a transcript on disk written the way each client writes it. A session that changed
//! files and stored nothing is asked once; every other session, and every failure, gets
//! nothing on stdout and exit 0 (a failure: one line on stderr).

use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn hook(event: &str, input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cortex"))
        .args(["hook", event])
        .env("CORTEX_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn tool_use(name: &str) -> Value {
    json!({"type": "assistant", "sessionId": "s1", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": format!("toolu_{name}"), "name": name, "input": {"file_path": "src/lib.rs"}}]}})
}

fn transcript(path: &Path, lines: &[Value]) {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(path, text).unwrap();
}

fn stop_input(transcript: &Path, active: bool) -> String {
    json!({"session_id": "s1", "transcript_path": transcript, "cwd": "/p", "permission_mode": "default",
           "hook_event_name": "Stop", "stop_hook_active": active})
    .to_string()
}

fn stdout(out: &Output) -> String {
    assert!(out.status.success(), "a hook always exits 0: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn a_session_that_edited_and_stored_nothing_is_asked_once() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("session.jsonl");
    transcript(&t, &[tool_use("Read"), tool_use("Edit"), tool_use("Write")]);
    let out = hook("stop", &stop_input(&t, false));
    let reply: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(reply["decision"], "block");
    let reason = reply["reason"].as_str().unwrap();
    assert!(reason.contains("memory_store") && reason.contains("decision"), "{reason}");
    assert!(out.stderr.is_empty());

    // Continuing because of the block: let go.
    assert_eq!(stdout(&hook("stop", &stop_input(&t, true))), "");
    // A later turn of the same session, the reminder in its transcript: never asked again.
    let feedback = json!({"type": "user", "message": {"role": "user", "content": format!("Stop hook feedback:\n{reason}")}});
    transcript(&t, &[tool_use("Edit"), feedback, tool_use("Edit")]);
    assert_eq!(stdout(&hook("stop", &stop_input(&t, false))), "");
}

#[test]
fn a_session_that_stored_or_changed_nothing_is_let_go_silently() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("session.jsonl");
    transcript(&t, &[tool_use("Edit"), tool_use("mcp__cortex__memory_store")]);
    let out = hook("stop", &stop_input(&t, false));
    assert_eq!(stdout(&out), "");
    assert!(out.stderr.is_empty());
    transcript(&t, &[tool_use("Read"), tool_use("Grep"), tool_use("mcp__cortex__memory_find")]);
    assert_eq!(stdout(&hook("stop", &stop_input(&t, false))), "");
    assert_eq!(stdout(&hook("pre-compact", &stop_input(&t, false))), "");
}

#[test]
fn pre_compact_asks_the_summary_to_keep_what_is_unstored() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("session.jsonl");
    transcript(&t, &[tool_use("MultiEdit")]);
    let input = json!({"session_id": "s1", "transcript_path": t, "cwd": "/p", "hook_event_name": "PreCompact",
                       "trigger": "auto", "custom_instructions": null});
    let text = stdout(&hook("pre-compact", &input.to_string()));
    assert!(text.contains("memory_store") && text.contains("decisions"), "{text}");
    assert!(
        serde_json::from_str::<Value>(&text).is_err(),
        "plain text, added to the compaction's instructions"
    );
}

#[test]
fn cursor_gets_a_follow_up_message_and_codex_a_block() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("rollout.jsonl");
    transcript(
        &t,
        &[
            json!({"type": "response_item", "payload": {"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch"}}),
        ],
    );
    let codex = json!({"session_id": "s1", "turn_id": "t1", "transcript_path": t, "cwd": "/p", "model": "gpt-5",
                       "permission_mode": "default", "hook_event_name": "Stop", "stop_hook_active": false,
                       "last_assistant_message": "done"});
    let reply: Value = serde_json::from_str(&stdout(&hook("stop", &codex.to_string()))).unwrap();
    assert_eq!(reply["decision"], "block");

    let cursor = json!({"conversation_id": "c1", "generation_id": "g1", "hook_event_name": "stop",
                        "status": "completed", "loop_count": 0, "transcript_path": t});
    let reply: Value = serde_json::from_str(&stdout(&hook("stop", &cursor.to_string()))).unwrap();
    assert!(reply["followup_message"].as_str().unwrap().contains("memory_store"));
    let again =
        json!({"conversation_id": "c1", "status": "completed", "loop_count": 1, "transcript_path": t});
    assert_eq!(stdout(&hook("stop", &again.to_string())), "");
}

#[test]
fn bad_input_or_a_missing_transcript_is_one_line_on_stderr_and_exit_0() {
    for (input, wanted) in [
        ("this is not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        (r#"{"stop_hook_active": "yes"}"#, "stop_hook_active"),
        (
            r#"{"transcript_path": "/no/such/transcript.jsonl", "stop_hook_active": false}"#,
            "/no/such/transcript.jsonl",
        ),
    ] {
        let out = hook("stop", input);
        assert_eq!(stdout(&out), "", "{input}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("cortex hook stop: ") && stderr.contains(wanted), "{stderr}");
    }
}
