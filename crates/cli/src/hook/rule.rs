//! The decision of `cortex hook stop` and `cortex hook pre-compact`, without I/O: what the
//! hook input says, what the session's transcript shows (tool uses counted, nothing kept),
//! and whether to ask the agent to store what it learned.
//!
//! The rule: a session that changed files and stored nothing is asked once to record its
//! decisions, issues and changes with `memory_store`. Never while the agent is already
//! continuing because of a stop hook, never a second time in one session (the reminder's
//! own words in the transcript say it was asked), and never a session that stored something
//! or changed nothing.

use cortex_domain::Tool;
use serde_json::Value;

/// Ends every reminder: finding it in a transcript means this session was asked already.
pub const MARKER: &str = "(cortex hook stop: asked once per session)";

/// Tool names that change files, by client: Claude Code (`Edit`, `Write`, `MultiEdit`,
/// `NotebookEdit`), Codex (`apply_patch`), Cursor (`edit_file`, `search_replace`, `write`,
/// `delete_file`, `StrReplace`).
const CHANGING_TOOLS: &[&str] = &[
    "Edit",
    "Write",
    "MultiEdit",
    "NotebookEdit",
    "apply_patch",
    "edit_file",
    "search_replace",
    "write",
    "delete_file",
    "StrReplace",
];

/// The JSON object types that record a tool call: Claude Code's and Cursor's `tool_use`
/// content blocks, Codex's `function_call` and `custom_tool_call` items.
const TOOL_CALL_TYPES: &[&str] = &["tool_use", "function_call", "custom_tool_call"];

/// The event the hook runs for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    Stop,
    PreCompact,
}

/// Which reply shape the client reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Client {
    /// Claude Code and Codex: `{"decision": "block", "reason": …}` on Stop.
    ClaudeOrCodex,
    /// Cursor: `{"followup_message": …}` on `stop`.
    Cursor,
}

/// What the hook reads from its input.
#[derive(Debug, PartialEq, Eq)]
pub struct HookInput {
    pub transcript_path: Option<String>,
    /// The agent is already continuing because a stop hook asked (Claude Code and Codex's
    /// `stop_hook_active`, Cursor's `loop_count` above 0).
    pub continuing: bool,
    pub client: Client,
}

/// Hook input the hook cannot read; the message names what is wrong.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum InputError {
    #[error("the hook input on stdin is not JSON ({0}): run this command as an agent's hook")]
    NotJson(String),
    #[error("the hook input on stdin is not a JSON object: run this command as an agent's hook")]
    NotObject,
    #[error("`{0}` in the hook input is not {1}")]
    Field(&'static str, &'static str),
}

/// Reads a hook's stdin: Claude Code's or Codex's `Stop`/`PreCompact` input, or Cursor's
/// `stop` input (told apart by its `loop_count`).
pub fn parse_input(text: &str) -> Result<HookInput, InputError> {
    let value: Value = serde_json::from_str(text).map_err(|e| InputError::NotJson(e.to_string()))?;
    let Value::Object(map) = value else { return Err(InputError::NotObject) };
    let transcript_path = match map.get("transcript_path") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.trim().is_empty() => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(InputError::Field("transcript_path", "a string")),
    };
    if let Some(count) = map.get("loop_count") {
        let count = count.as_u64().ok_or(InputError::Field("loop_count", "a whole number"))?;
        return Ok(HookInput { transcript_path, continuing: count > 0, client: Client::Cursor });
    }
    let continuing = match map.get("stop_hook_active") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(InputError::Field("stop_hook_active", "true or false")),
    };
    Ok(HookInput { transcript_path, continuing, client: Client::ClaudeOrCodex })
}

/// What the transcript shows, counted line by line; nothing of its text is kept.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Activity {
    /// Tool uses that change files.
    pub changes: usize,
    /// `memory_store` calls, under any MCP server prefix.
    pub stores: usize,
    /// The reminder is in the transcript already.
    pub reminded: bool,
}

impl Activity {
    /// Counts one line of a JSON Lines transcript. A line that is not JSON is skipped: a
    /// transcript being written may end in half a line.
    pub fn add_line(&mut self, line: &str) {
        if line.contains(MARKER) {
            self.reminded = true;
        }
        if let Ok(value) = serde_json::from_str::<Value>(line) {
            self.add_value(&value);
        }
    }

    fn add_value(&mut self, value: &Value) {
        match value {
            Value::Object(map) => {
                let is_call =
                    map.get("type").and_then(Value::as_str).is_some_and(|t| TOOL_CALL_TYPES.contains(&t));
                if is_call && let Some(name) = map.get("name").and_then(Value::as_str) {
                    if is_store(name) {
                        self.stores += 1;
                    } else if CHANGING_TOOLS.contains(&name) {
                        self.changes += 1;
                    }
                }
                map.values().for_each(|v| self.add_value(v));
            }
            Value::Array(items) => items.iter().for_each(|v| self.add_value(v)),
            _ => {}
        }
    }
}

/// `memory_store` as the model calls it: bare, or behind a client's server prefix
/// (`mcp__cortex__memory_store`, `mcp__plugin_cortex_cortex__memory_store`, `cortex__memory_store`).
fn is_store(name: &str) -> bool {
    let bare = name.rsplit_once("__").map_or(name, |(_, tool)| tool);
    Tool::parse(bare) == Some(Tool::Store)
}

/// What the hook answers.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing on stdout: the agent goes on (or stops) as it would have.
    Silent,
    /// Ask the agent, before it stops, to store what it learned (the text is the reason).
    Remind(String),
    /// Text added to the compaction's instructions, so the summary keeps what is unstored.
    CompactNote(String),
}

pub fn decide(event: Event, input: &HookInput, activity: &Activity) -> Verdict {
    let unstored = activity.changes > 0 && activity.stores == 0;
    match event {
        Event::Stop if unstored && !input.continuing && !activity.reminded => Verdict::Remind(format!(
            "Before you finish: this session changed files ({} edits) and stored nothing in the \
             project's memory. Record what a later session should know with one memory_store call \
             (a batch of items): decisions made and why (kind decision), issues found or fixed and \
             their cause (kind issue), notable changes (kind change). If nothing is worth keeping, \
             say so and finish. {MARKER}",
            activity.changes
        )),
        Event::PreCompact if unstored => Verdict::CompactNote(
            "This session changed files and has stored nothing in the project's memory yet. Keep in \
             the summary, one line each, the decisions made and why, the issues found and the \
             changes made, and end it with: \"Not yet stored: record these with memory_store.\""
                .to_string(),
        ),
        _ => Verdict::Silent,
    }
}

/// The hook's stdout for a verdict, in the shape its client reads; `None` prints nothing.
pub fn reply(verdict: &Verdict, client: Client) -> Option<String> {
    match verdict {
        Verdict::Silent => None,
        Verdict::Remind(reason) => Some(match client {
            Client::ClaudeOrCodex => serde_json::json!({ "decision": "block", "reason": reason }),
            Client::Cursor => serde_json::json!({ "followup_message": reason }),
        })
        .map(|v| v.to_string()),
        // Claude Code adds a PreCompact hook's plain stdout to the compaction's instructions.
        Verdict::CompactNote(text) => Some(text.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claude_line(tool: &str) -> String {
        serde_json::json!({
            "type": "assistant", "sessionId": "s1",
            "message": {"role": "assistant", "content": [
                {"type": "text", "text": "working"},
                {"type": "tool_use", "id": "toolu_1", "name": tool, "input": {"file_path": "/x"}}
            ]}
        })
        .to_string()
    }

    fn activity(lines: &[String]) -> Activity {
        let mut a = Activity::default();
        lines.iter().for_each(|l| a.add_line(l));
        a
    }

    fn stop_input(active: bool) -> HookInput {
        parse_input(&format!(
            r#"{{"session_id": "s1", "transcript_path": "/t.jsonl", "cwd": "/p", "hook_event_name": "Stop", "stop_hook_active": {active}}}"#
        ))
        .unwrap()
    }

    #[test]
    fn edits_and_no_store_are_reminded_once_with_a_block() {
        let a = activity(&[claude_line("Read"), claude_line("Edit"), claude_line("Write")]);
        assert_eq!(a, Activity { changes: 2, stores: 0, reminded: false });
        let verdict = decide(Event::Stop, &stop_input(false), &a);
        let Verdict::Remind(reason) = &verdict else { panic!("{verdict:?}") };
        assert!(reason.contains("memory_store") && reason.contains("2 edits") && reason.ends_with(MARKER));
        let out: Value = serde_json::from_str(&reply(&verdict, Client::ClaudeOrCodex).unwrap()).unwrap();
        assert_eq!(out["decision"], "block");
        assert_eq!(out["reason"], reason.as_str());

        // The reminder, as the client records it, is in the transcript: never a second time.
        let fed_back = serde_json::json!({"type": "user", "message": {"role": "user", "content": format!("Stop hook feedback:\n{reason}")}});
        let again = activity(&[claude_line("Edit"), fed_back.to_string(), claude_line("Edit")]);
        assert!(again.reminded);
        assert_eq!(decide(Event::Stop, &stop_input(false), &again), Verdict::Silent);
    }

    #[test]
    fn a_session_that_stored_or_changed_nothing_or_is_continuing_is_let_go() {
        let stored = activity(&[claude_line("Edit"), claude_line("mcp__cortex__memory_store")]);
        assert_eq!(stored.stores, 1);
        assert_eq!(decide(Event::Stop, &stop_input(false), &stored), Verdict::Silent);
        let plugin =
            activity(&[claude_line("Write"), claude_line("mcp__plugin_cortex_cortex__memory_store")]);
        assert_eq!(decide(Event::Stop, &stop_input(false), &plugin), Verdict::Silent);
        let read_only =
            activity(&[claude_line("Read"), claude_line("Bash"), claude_line("mcp__cortex__memory_find")]);
        assert_eq!(decide(Event::Stop, &stop_input(false), &read_only), Verdict::Silent);
        let edits = activity(&[claude_line("Edit")]);
        assert_eq!(decide(Event::Stop, &stop_input(true), &edits), Verdict::Silent, "stop_hook_active");
        assert_eq!(reply(&Verdict::Silent, Client::ClaudeOrCodex), None);
    }

    #[test]
    fn pre_compact_adds_a_note_only_for_an_unstored_session() {
        let input = parse_input(r#"{"session_id": "s1", "transcript_path": "/t", "hook_event_name": "PreCompact", "trigger": "auto", "custom_instructions": null}"#).unwrap();
        let edits = activity(&[claude_line("MultiEdit")]);
        let note = decide(Event::PreCompact, &input, &edits);
        let text = reply(&note, Client::ClaudeOrCodex).unwrap();
        assert!(
            text.contains("memory_store") && !text.starts_with('{'),
            "plain text for the compaction: {text}"
        );
        let stored = activity(&[claude_line("MultiEdit"), claude_line("mcp__cortex__memory_store")]);
        assert_eq!(decide(Event::PreCompact, &input, &stored), Verdict::Silent);
    }

    #[test]
    fn codex_and_cursor_transcripts_and_inputs() {
        let codex = [
            r#"{"type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","input":"*** Begin Patch"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{}"}}"#,
        ];
        let a = activity(&codex.map(String::from));
        assert_eq!((a.changes, a.stores), (1, 0));
        let stored = r#"{"type":"response_item","payload":{"type":"function_call","name":"mcp__cortex__memory_store","arguments":"{}"}}"#;
        assert_eq!(activity(&[codex[0].to_string(), stored.to_string()]).stores, 1);

        let cursor = parse_input(
            r#"{"conversation_id": "c1", "status": "completed", "loop_count": 0, "transcript_path": "/t"}"#,
        )
        .unwrap();
        assert_eq!(
            cursor,
            HookInput { transcript_path: Some("/t".into()), continuing: false, client: Client::Cursor }
        );
        let verdict = decide(Event::Stop, &cursor, &a);
        let out: Value = serde_json::from_str(&reply(&verdict, Client::Cursor).unwrap()).unwrap();
        assert!(out["followup_message"].as_str().unwrap().contains("memory_store"));
        let looping = parse_input(r#"{"conversation_id": "c1", "loop_count": 1}"#).unwrap();
        assert!(looping.continuing && looping.transcript_path.is_none());
        assert_eq!(decide(Event::Stop, &looping, &a), Verdict::Silent);
    }

    #[test]
    fn bad_input_is_named() {
        assert!(matches!(parse_input("not json"), Err(InputError::NotJson(_))));
        assert_eq!(parse_input("[1]"), Err(InputError::NotObject));
        assert_eq!(
            parse_input(r#"{"transcript_path": 3}"#),
            Err(InputError::Field("transcript_path", "a string"))
        );
        assert_eq!(
            parse_input(r#"{"stop_hook_active": "yes"}"#),
            Err(InputError::Field("stop_hook_active", "true or false"))
        );
        assert_eq!(
            parse_input(r#"{"loop_count": -1}"#),
            Err(InputError::Field("loop_count", "a whole number"))
        );
        let mut a = Activity::default();
        a.add_line("{\"type\": \"tool_use\", \"name\": \"Ed");
        assert_eq!(a, Activity::default(), "half a line is skipped");
    }
}
