//! The JSON config files: Claude Code's `.mcp.json` / `~/.claude.json` and its
//! `settings.json` hooks, Cursor's `mcp.json`. Keys keep their order; other entries stay as
//! they were.

use super::launcher::Launcher;
use super::{Edit, read, unchanged};
use crate::error::CliError;
use serde_json::{Map, Value, json};
use std::path::Path;

/// The file's object, `{}` for a file not there yet; an error naming the file otherwise.
pub(super) fn object_of(path: &Path) -> Result<Map<String, Value>, CliError> {
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

pub(super) fn text_of(map: Map<String, Value>) -> String {
    let mut text = serde_json::to_string_pretty(&Value::Object(map)).unwrap_or_default();
    text.push('\n');
    text
}

/// `mcpServers.cortex` = this binary with `serve`, and `env` when settings are to be carried.
pub fn mcp_server(path: &Path, exe: &Launcher, env: &[(String, String)]) -> Result<Option<Edit>, CliError> {
    let mut map = object_of(path)?;
    let mut entry = json!({ "command": exe.command, "args": exe.args("serve") });
    if !env.is_empty() {
        entry["env"] = Value::Object(env.iter().map(|(k, v)| (k.clone(), json!(v))).collect());
    }
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

/// The settings file's `env` holds the carried settings: Claude Code gives them to every
/// process it starts, so the hooks' `cortex context` reads the database the server serves.
pub fn settings_env(path: &Path, env: &[(String, String)]) -> Result<Option<Edit>, CliError> {
    if env.is_empty() {
        return Ok(None);
    }
    let mut map = object_of(path)?;
    let vars = map.entry("env").or_insert_with(|| json!({}));
    let Value::Object(vars) = vars else {
        return Err(CliError::content(path, "`env` is not an object: fix it, then run again"));
    };
    let mut changes = Vec::new();
    for (name, value) in env {
        if vars.get(name).and_then(Value::as_str) != Some(value) {
            changes.push(format!("+ env.{name}: {value}"));
            vars.insert(name.clone(), json!(value));
        }
    }
    if changes.is_empty() {
        return Ok(unchanged(path, "the cortex settings in `env`"));
    }
    Ok(Some(Edit { path: path.to_path_buf(), changes, text: text_of(map) }))
}

/// `enabledMcpjsonServers` holds `cortex`: Claude Code asks before it starts a server of a
/// project's `.mcp.json`, and `claude -p` cannot ask, so the server would stay pending.
pub fn approve_project_server(path: &Path) -> Result<Option<Edit>, CliError> {
    let mut map = object_of(path)?;
    let enabled = map.entry("enabledMcpjsonServers").or_insert_with(|| json!([]));
    let Value::Array(enabled) = enabled else {
        return Err(CliError::content(path, "`enabledMcpjsonServers` is not a list: fix it, then run again"));
    };
    if enabled.iter().any(|name| name == "cortex") {
        return Ok(unchanged(path, "cortex among the approved project servers"));
    }
    enabled.push(json!("cortex"));
    let change = "+ enabledMcpjsonServers: cortex".to_string();
    Ok(Some(Edit { path: path.to_path_buf(), changes: vec![change], text: text_of(map) }))
}
