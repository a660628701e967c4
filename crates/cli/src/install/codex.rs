//! Codex's `~/.codex/config.toml`: the `[mcp_servers.cortex]` table, edited in place so the
//! file's comments and layout stay.

use super::launcher::Launcher;
use super::{Edit, read, unchanged};
use crate::error::CliError;
use std::path::Path;
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, value};

/// `env` is written as the entry's `env` table, `passed` as `env_vars` (names whose values
/// Codex copies from its own environment): Codex starts a server with a cleared environment.
pub fn mcp_server(
    path: &Path,
    exe: &Launcher,
    env: &[(String, String)],
    passed: &[String],
) -> Result<Option<Edit>, CliError> {
    let text = read(path)?.unwrap_or_default();
    let mut doc: DocumentMut = text.parse().map_err(|e| {
        CliError::content(
            path,
            format!("is not valid TOML ({e}): fix it, then run again; nothing was written"),
        )
    })?;
    let servers = doc.entry("mcp_servers").or_insert_with(|| {
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    });
    let Some(servers) = servers.as_table_mut() else {
        return Err(CliError::content(path, "`mcp_servers` is not a table: fix it, then run again"));
    };
    let mut entry = Table::new();
    entry.insert("command", value(&exe.command));
    entry.insert("args", value(Array::from_iter(exe.args("serve"))));
    if !env.is_empty() {
        let mut table = InlineTable::new();
        for (name, val) in env {
            table.insert(name, val.as_str().into());
        }
        entry.insert("env", value(table));
    }
    if !passed.is_empty() {
        entry.insert("env_vars", value(Array::from_iter(passed)));
    }
    let same = servers.get("cortex").and_then(Item::as_table).is_some_and(|t| {
        t.get("command").and_then(Item::as_str) == Some(exe.command.as_str())
            && strings(t.get("args")) == exe.args("serve")
            && pairs(t.get("env")) == env
            && strings(t.get("env_vars")) == passed
    });
    if same {
        return Ok(unchanged(path, "the cortex MCP server"));
    }
    let change = if servers.contains_key("cortex") {
        "~ [mcp_servers.cortex] (replaced)".to_string()
    } else {
        format!("+ [mcp_servers.cortex]: {}", exe.command_line("serve"))
    };
    servers.insert("cortex", Item::Table(entry));
    Ok(Some(Edit { path: path.to_path_buf(), changes: vec![change], text: doc.to_string() }))
}

/// A list of strings as written; empty when missing.
fn strings(item: Option<&Item>) -> Vec<String> {
    let Some(array) = item.and_then(Item::as_array) else { return Vec::new() };
    array.iter().map(|v| v.as_str().unwrap_or_default().to_string()).collect()
}

/// A table of strings (inline or not) as written; empty when missing.
fn pairs(item: Option<&Item>) -> Vec<(String, String)> {
    let Some(table) = item.and_then(Item::as_table_like) else { return Vec::new() };
    table.iter().map(|(k, v)| (k.to_string(), v.as_str().unwrap_or_default().to_string())).collect()
}
