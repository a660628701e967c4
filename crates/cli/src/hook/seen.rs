//! What a tool result put in the session's context, without I/O: the memories a
//! `memory_find` returned, read from a `PostToolUse` hook's input (Claude Code's and Codex's:
//! `tool_name`, `tool_response`, `session_id`), so the prompt's recall does not inject them
//! again (`cortex_domain::recall::session`).

use cortex_domain::Tool;
use serde_json::Value;

/// A memory_find's result as the hook input carries it.
#[derive(Debug, PartialEq, Eq)]
pub struct FindResult {
    pub session: String,
    /// The ids of the hits it returned, in order.
    pub ids: Vec<String>,
}

/// The session and returned ids of a `PostToolUse` input for `memory_find` (under any MCP
/// server prefix); `None` for another tool, or an input without a session.
pub fn find_result(input: &Value) -> Option<FindResult> {
    let name = input.get("tool_name")?.as_str()?;
    let bare = name.rsplit_once("__").map_or(name, |(_, tool)| tool);
    if Tool::parse(bare) != Some(Tool::Find) {
        return None;
    }
    let session = input.get("session_id")?.as_str().filter(|s| !s.is_empty())?.to_string();
    let mut ids = Vec::new();
    hit_ids(input.get("tool_response")?, &mut ids, 0);
    Some(FindResult { session, ids })
}

/// The `id` of every object in a `hits` list anywhere in `value`, looking into strings that
/// hold JSON (a tool result's text content is the answer's JSON): Claude Code hands the hook
/// the result's content blocks, Codex its structured content.
fn hit_ids(value: &Value, ids: &mut Vec<String>, depth: usize) {
    if depth > 8 {
        return;
    }
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(hits)) = map.get("hits") {
                for hit in hits {
                    if let Some(id) = hit.get("id").and_then(Value::as_str)
                        && uuid::Uuid::parse_str(id).is_ok()
                        && !ids.iter().any(|i| i == id)
                    {
                        ids.push(id.to_string());
                    }
                }
            }
            map.values().for_each(|v| hit_ids(v, ids, depth + 1));
        }
        Value::Array(items) => items.iter().for_each(|v| hit_ids(v, ids, depth + 1)),
        Value::String(text) if text.trim_start().starts_with('{') => {
            if let Ok(inner) = serde_json::from_str::<Value>(text) {
                hit_ids(&inner, ids, depth + 1);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const A: &str = "0190aaaa-0000-7000-8000-000000000001";
    const B: &str = "0190aaaa-0000-7000-8000-000000000002";

    fn answer() -> String {
        json!({"hits": [{"id": A, "title": "x", "relations": [{"id": "not-a-hit"}]}, {"id": B}], "notes": []})
            .to_string()
    }

    #[test]
    fn claude_codes_content_blocks_and_codexs_structured_content_give_the_hits() {
        let claude = json!({"session_id": "s1", "tool_name": "mcp__cortex__memory_find",
                            "tool_response": [{"type": "text", "text": answer()}]});
        assert_eq!(
            find_result(&claude),
            Some(FindResult { session: "s1".into(), ids: vec![A.into(), B.into()] })
        );
        let codex = json!({"session_id": "s2", "tool_name": "mcp__plugin_cortex_cortex__memory_find",
                           "tool_response": {"structuredContent": serde_json::from_str::<Value>(&answer()).unwrap()}});
        assert_eq!(find_result(&codex).unwrap().ids, [A, B]);
    }

    #[test]
    fn another_tool_or_no_session_gives_nothing() {
        let store =
            json!({"session_id": "s", "tool_name": "mcp__cortex__memory_store", "tool_response": answer()});
        assert_eq!(find_result(&store), None);
        let bash = json!({"session_id": "s", "tool_name": "Bash", "tool_response": answer()});
        assert_eq!(find_result(&bash), None);
        let anonymous = json!({"tool_name": "mcp__cortex__memory_find", "tool_response": answer()});
        assert_eq!(find_result(&anonymous), None);
        let empty = json!({"session_id": "s", "tool_name": "memory_find", "tool_response": "not json"});
        assert_eq!(find_result(&empty).unwrap().ids, Vec::<String>::new());
    }
}
