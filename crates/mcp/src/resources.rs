//! MCP resources and prompts, read-only: one item's audit history at
//! `cortex://items/{id}/history`, and the session briefing at `cortex://context` and as the
//! prompt `context`.

use rmcp::model::{Prompt, Resource, ResourceTemplate};
use uuid::Uuid;

pub const HISTORY_TEMPLATE: &str = "cortex://items/{id}/history";
pub const CONTEXT_URI: &str = "cortex://context";
pub const CONTEXT_PROMPT: &str = "context";
const CONTEXT_DESCRIPTION: &str = "What this project's memory holds for a session starting now, as Markdown: decisions in \
     force, open issues and todos, active incidents and risks, recent changes and releases, each \
     one line with its id (the current branch first; about 1,500 tokens at most).";

pub fn listed() -> Vec<Resource> {
    vec![
        Resource::new(CONTEXT_URI, "context")
            .with_title("Session briefing")
            .with_description(CONTEXT_DESCRIPTION)
            .with_mime_type("text/markdown"),
    ]
}

pub fn prompts() -> Vec<Prompt> {
    vec![Prompt::new(CONTEXT_PROMPT, Some(CONTEXT_DESCRIPTION), None).with_title("Session briefing")]
}

pub fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(HISTORY_TEMPLATE, "item_history")
            .with_title("Item history")
            .with_description(
                "Every change to one item, oldest first, as the database recorded it: insert, update, \
                 delete, supersede, purge and refused (blocked) attempts, with actor, tool, request \
                 and batch ids, content hashes before and after, and a short summary.",
            )
            .with_mime_type("application/json"),
    ]
}

/// A resource URI this server does not have; the message names the form it expects.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnknownResource {
    #[error("unknown resource `{0}`: this server has {HISTORY_TEMPLATE}")]
    Uri(String),
    #[error("`{id}` in `{uri}` is not an item id; use the id memory_find or memory_store returned")]
    NotAnId { id: String, uri: String },
}

/// The item id of a history URI.
pub fn history_item(uri: &str) -> Result<Uuid, UnknownResource> {
    let id = uri
        .strip_prefix("cortex://items/")
        .and_then(|rest| rest.strip_suffix("/history"))
        .ok_or_else(|| UnknownResource::Uri(uri.to_string()))?;
    Uuid::parse_str(id).map_err(|_| UnknownResource::NotAnId { id: id.to_string(), uri: uri.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_uris_name_an_item() {
        let id = Uuid::now_v7();
        assert_eq!(history_item(&format!("cortex://items/{id}/history")), Ok(id));
        assert_eq!(
            history_item("cortex://items/nope/history").unwrap_err().to_string(),
            "`nope` in `cortex://items/nope/history` is not an item id; use the id memory_find or memory_store returned"
        );
        assert_eq!(
            history_item("file:///etc/passwd").unwrap_err().to_string(),
            "unknown resource `file:///etc/passwd`: this server has cortex://items/{id}/history"
        );
    }
}
