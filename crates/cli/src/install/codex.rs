//! Codex's `~/.codex/config.toml`: the `[mcp_servers.cortex]` table, edited in place so the
//! file's comments and layout stay.

use super::launcher::Launcher;
use super::{Edit, read, unchanged};
use crate::error::CliError;
use std::path::Path;
use toml_edit::{Array, DocumentMut, Item, Table, value};

pub fn mcp_server(path: &Path, exe: &Launcher) -> Result<Option<Edit>, CliError> {
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
    let same = servers.get("cortex").and_then(Item::as_table).is_some_and(|t| {
        t.get("command").and_then(Item::as_str) == Some(exe.command.as_str())
            && t.get("args").and_then(Item::as_array).is_some_and(|a| {
                a.iter().map(|v| v.as_str()).collect::<Vec<_>>()
                    == exe.args("serve").iter().map(|s| Some(s.as_str())).collect::<Vec<_>>()
            })
    });
    if same {
        return Ok(unchanged(path, "the cortex MCP server"));
    }
    let change = if servers.contains_key("cortex") {
        "~ [mcp_servers.cortex] (replaced)".to_string()
    } else {
        format!("+ [mcp_servers.cortex]: {}", exe.command_line("serve"))
    };
    let mut entry = Table::new();
    entry.insert("command", value(&exe.command));
    let mut args = Array::new();
    for arg in exe.args("serve") {
        args.push(arg);
    }
    entry.insert("args", value(args));
    servers.insert("cortex", Item::Table(entry));
    Ok(Some(Edit { path: path.to_path_buf(), changes: vec![change], text: doc.to_string() }))
}
