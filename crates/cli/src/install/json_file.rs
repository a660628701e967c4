//! The JSON config files: Claude Code's `.mcp.json` / `~/.claude.json` and its
//! `settings.json` hooks, Cursor's `mcp.json`. Keys keep their order; other entries stay as
//! they were.

use super::launcher::Launcher;
use super::{Edit, read, unchanged};
use crate::error::CliError;
use serde_json::{Map, Value, json};
use std::path::Path;

/// The file's object, `{}` for a file not there yet; an error naming the file otherwise.
fn object_of(path: &Path) -> Result<Map<String, Value>, CliError> {
    let Some(text) = read(path)? else { return Ok(Map::new()) };
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str(&text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(CliError::content(path, "is not a JSON object: fix or move it, then run again")),
        Err(e) => Err(CliError::content(
            path,
            format!("is not valid JSON ({e}): fix it, then run again; nothing was written"),
        )),
    }
}

fn text_of(map: Map<String, Value>) -> String {
    let mut text = serde_json::to_string_pretty(&Value::Object(map)).unwrap_or_default();
    text.push('\n');
    text
}

/// `mcpServers.cortex` = this cortex with `serve`.
pub fn mcp_server(path: &Path, exe: &Launcher) -> Result<Option<Edit>, CliError> {
    let mut map = object_of(path)?;
    let entry = json!({ "command": exe.command, "args": exe.args("serve") });
    let servers = map.entry("mcpServers").or_insert_with(|| json!({}));
    let Value::Object(servers) = servers else {
        return Err(CliError::content(path, "`mcpServers` is not an object: fix it, then run again"));
    };
    let change = match servers.get("cortex") {
        Some(old) if *old == entry => return Ok(unchanged(path, "the cortex MCP server")),
        Some(old) => format!("~ mcpServers.cortex (was {old})"),
        None => format!("+ mcpServers.cortex: {}", exe.command_line("serve")),
    };
    servers.insert("cortex".into(), entry);
    Ok(Some(Edit { path: path.to_path_buf(), changes: vec![change], text: text_of(map) }))
}

/// A `SessionStart` hook running `cortex context`, beside any hooks already there.
pub fn session_hook(path: &Path, exe: &Launcher) -> Result<Option<Edit>, CliError> {
    let mut map = object_of(path)?;
    // The hook is a shell command line: a path with spaces is quoted.
    let command = exe.command_line("context");
    let hooks = map.entry("hooks").or_insert_with(|| json!({}));
    let Value::Object(hooks) = hooks else {
        return Err(CliError::content(path, "`hooks` is not an object: fix it, then run again"));
    };
    let starts = hooks.entry("SessionStart").or_insert_with(|| json!([]));
    let Value::Array(starts) = starts else {
        return Err(CliError::content(path, "`hooks.SessionStart` is not a list: fix it, then run again"));
    };
    let present = starts.iter().any(|group| {
        group["hooks"].as_array().is_some_and(|hs| hs.iter().any(|h| h["command"].as_str() == Some(&command)))
    });
    if present {
        return Ok(unchanged(path, "the cortex SessionStart hook"));
    }
    starts.push(json!({
        "matcher": "startup|resume|clear|compact",
        "hooks": [{ "type": "command", "command": command }]
    }));
    let change = format!("+ hooks.SessionStart: {command}");
    Ok(Some(Edit { path: path.to_path_buf(), changes: vec![change], text: text_of(map) }))
}
