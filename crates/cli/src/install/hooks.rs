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

/// The Stop and PreCompact hooks (`cortex hook stop`, `cortex hook pre-compact`) in Claude
/// Code's `settings.json`, added to the edit `before` made of the same file, if any.
pub fn claude_code(before: Option<Edit>, path: &Path, exe: &str) -> Result<Option<Edit>, CliError> {
    let edit = grouped(before, path, "Stop", None, exe, "hook stop")?;
    grouped(edit, path, "PreCompact", None, exe, "hook pre-compact")
}

/// The session briefing and the Stop hook in Codex's `hooks.json` (Codex has no way to add
/// text to its compaction, so no PreCompact).
pub fn codex(path: &Path, exe: &str) -> Result<Option<Edit>, CliError> {
    let edit = grouped(None, path, "SessionStart", Some("startup|resume|clear"), exe, "context")?;
    grouped(edit, path, "Stop", None, exe, "hook stop")
}

/// A command hook running `exe args` on `event`, beside any hooks already there (Claude Code's
/// `settings.json`, Codex's `hooks.json`): added to `before`, an edit of the same file, when
/// there is one, so that several hooks make one edit.
fn grouped(
    before: Option<Edit>,
    path: &Path,
    event: &str,
    matcher: Option<&str>,
    exe: &str,
    args: &str,
) -> Result<Option<Edit>, CliError> {
    let (mut map, mut changes) = match before {
        Some(edit) => match serde_json::from_str(&edit.text) {
            Ok(Value::Object(map)) => (map, edit.changes),
            _ => return Err(CliError::content(path, "could not be edited: report this as a bug")),
        },
        None => (object_of(path)?, Vec::new()),
    };
    let command = command_line(exe, args);
    let groups = event_list(&mut map, path, event)?;
    let present = groups.iter().any(|group| {
        group["hooks"].as_array().is_some_and(|hs| hs.iter().any(|h| h["command"].as_str() == Some(&command)))
    });
    if present {
        unchanged(path, &format!("the cortex {event} hook"));
    } else {
        let mut group = json!({ "hooks": [{ "type": "command", "command": command }] });
        if let Some(matcher) = matcher {
            group["matcher"] = json!(matcher);
        }
        groups.push(group);
        changes.push(format!("+ hooks.{event}: {exe} {args}"));
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
