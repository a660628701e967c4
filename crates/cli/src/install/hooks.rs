//! The hooks that keep what a session learned (`cortex hook stop`, `cortex hook pre-compact`)
//! and the session briefing, in each client's own hooks file: Claude Code's `settings.json`
//! and Codex's `hooks.json` share one shape (event → matcher groups → command hooks); Cursor's
//! `hooks.json` is flat (event → commands). Cursor also gets a rule file telling its agent when
//! to find and store, since its hooks cannot add text to the session.

use super::json_file::{object_of, text_of};
use super::{Edit, read, unchanged};
use crate::error::CliError;
use serde_json::{Map, Value, json};
use std::path::Path;

/// The hook's shell command line (`exe` is the launcher's shell prefix, quoted already).
fn command_line(exe: &str, args: &str) -> String {
    format!("{exe} {args}")
}

/// One command hook: the event, the `cortex` arguments it runs, and its group's matcher and
/// the hook's timeout in seconds, where it has them.
struct Hook {
    event: &'static str,
    args: &'static str,
    matcher: Option<&'static str>,
    timeout: Option<u64>,
}

const fn hook(event: &'static str, args: &'static str) -> Hook {
    Hook { event, args, matcher: None, timeout: None }
}

/// Claude Code's hooks: the briefing at session start (`cortex context`), the memories most
/// relevant to each prompt (`cortex recall`, with a timeout that keeps a stuck database from
/// holding a prompt for the default minute), the one that notes what a `memory_find` returned
/// so the prompt's recall does not inject it again (any MCP server name: the matcher is a
/// pattern), and the two that keep what a session learned.
const CLAUDE_CODE: &[Hook] = &[
    Hook { matcher: Some("startup|resume|clear|compact"), ..hook("SessionStart", "context") },
    Hook { timeout: Some(10), ..hook("UserPromptSubmit", "recall") },
    Hook {
        matcher: Some("mcp__.*memory_find"),
        timeout: Some(10),
        ..hook("PostToolUse", "hook post-tool-use")
    },
    hook("Stop", "hook stop"),
    hook("PreCompact", "hook pre-compact"),
];

/// Codex's: the briefing, the prompt's recall (Codex adds both hooks' plain stdout to the
/// model's context, as Claude Code does) and the Stop hook. Codex has no way to add text to its
/// compaction, so no PreCompact; it has no PostToolUse for MCP tools, so a `memory_find`'s hits
/// are not noted for recall to pass over.
const CODEX: &[Hook] = &[
    Hook { matcher: Some("startup|resume|clear"), ..hook("SessionStart", "context") },
    Hook { timeout: Some(10), ..hook("UserPromptSubmit", "recall") },
    hook("Stop", "hook stop"),
];

/// Claude Code's hooks in its `settings.json`, in one edit, beside any hooks already there.
pub fn claude_code(path: &Path, exe: &str) -> Result<Option<Edit>, CliError> {
    grouped(path, exe, "", CLAUDE_CODE)
}

/// Codex's hooks in its `hooks.json` (the same shape as Claude Code's). Codex has no settings
/// block whose environment reaches its hooks (Claude Code's `env`), so each command line
/// carries the settings in force (`env`: the database named, ...) as sh assignments before it.
pub fn codex(path: &Path, exe: &str, env: &[(String, String)]) -> Result<Option<Edit>, CliError> {
    grouped(path, exe, &assignments(env), CODEX)
}

/// `env` as sh assignments, each followed by a space (`CORTEX_DB='/data/memory.db' `).
pub fn assignments(env: &[(String, String)]) -> String {
    env.iter().map(|(k, v)| format!("{k}='{}' ", v.replace('\'', "'\\''"))).collect()
}

/// Each of `wanted` that no group of its event runs yet, added as a group of its own, in one
/// edit of the file (Claude Code's `settings.json`, Codex's `hooks.json`: event → matcher
/// groups → command hooks). A cortex hook already there with other settings before it (`env`,
/// the `assignments` prefix: another database) is changed in place rather than doubled.
fn grouped(path: &Path, exe: &str, env: &str, wanted: &[Hook]) -> Result<Option<Edit>, CliError> {
    let mut map = object_of(path)?;
    let mut changes = Vec::new();
    for hook in wanted {
        let bare = command_line(exe, hook.args);
        let command = format!("{env}{bare}");
        let groups = event_list(&mut map, path, hook.event)?;
        let ours =
            groups.iter_mut().filter_map(|group| group["hooks"].as_array_mut()).flatten().find(|h| {
                h["command"].as_str().is_some_and(|c| c == bare || c.ends_with(&format!(" {bare}")))
            });
        match ours {
            Some(h) if h["command"].as_str() == Some(&command) => {
                unchanged(path, &format!("the cortex {} hook", hook.event));
            }
            Some(h) => {
                h["command"] = json!(command);
                changes.push(format!("~ hooks.{}: {command}", hook.event));
            }
            None => {
                let mut entry = json!({ "type": "command", "command": command });
                if let Some(timeout) = hook.timeout {
                    entry["timeout"] = json!(timeout);
                }
                let mut group = json!({ "hooks": [entry] });
                if let Some(matcher) = hook.matcher {
                    group["matcher"] = json!(matcher);
                }
                groups.push(group);
                changes.push(format!("+ hooks.{}: {command}", hook.event));
            }
        }
    }
    if changes.is_empty() {
        return Ok(None);
    }
    Ok(Some(Edit { path: path.to_path_buf(), changes, text: text_of(map) }))
}

/// `hooks.<event>`, the list of that event's hooks, made when missing.
fn event_list<'a>(
    map: &'a mut Map<String, Value>,
    path: &Path,
    event: &str,
) -> Result<&'a mut Vec<Value>, CliError> {
    let hooks = map.entry("hooks").or_insert_with(|| json!({}));
    let Value::Object(hooks) = hooks else {
        return Err(CliError::content(path, "`hooks` is not an object: fix it, then run again"));
    };
    match hooks.entry(event).or_insert_with(|| json!([])) {
        Value::Array(list) => Ok(list),
        _ => Err(CliError::content(path, format!("`hooks.{event}` is not a list: fix it, then run again"))),
    }
}

/// The Stop hook in Cursor's `hooks.json` in the `.cursor` folder `dir`
/// (`{"version": 1, "hooks": {"stop": [{"command": …}]}}`).
pub fn cursor(dir: &Path, exe: &str) -> Result<Option<Edit>, CliError> {
    let (path, event, args) = (&dir.join("hooks.json"), "stop", "hook stop");
    let mut map = object_of(path)?;
    let command = command_line(exe, args);
    map.entry("version").or_insert_with(|| json!(1));
    let entries = event_list(&mut map, path, event)?;
    if entries.iter().any(|h| h["command"].as_str() == Some(&command)) {
        return Ok(unchanged(path, &format!("the cortex {event} hook")));
    }
    entries.push(json!({ "command": command }));
    let change = format!("+ hooks.{event}: {exe} {args}");
    Ok(Some(Edit { path: path.to_path_buf(), changes: vec![change], text: text_of(map) }))
}

/// Cursor's rule for its agent: when to find and when to store.
const CURSOR_RULE: &str = include_str!("cortex.mdc");

/// `rules/cortex.mdc` in the `.cursor` folder `dir`, written when absent; one the user changed
/// is left as it is.
pub fn cursor_rule(dir: &Path) -> Result<Option<Edit>, CliError> {
    let path = &dir.join("rules").join("cortex.mdc");
    match read(path)? {
        Some(text) if text == CURSOR_RULE => Ok(unchanged(path, "the cortex rule")),
        Some(_) => Ok(unchanged(path, "a cortex rule of your own (left as it is)")),
        None => Ok(Some(Edit {
            path: path.to_path_buf(),
            changes: vec!["+ the cortex rule: when to memory_find and memory_store".to_string()],
            text: CURSOR_RULE.to_string(),
        })),
    }
}
