//! The two tool definitions: input schemas, output schemas, annotations, descriptions.
//!
//! Input schemas are generated in the domain from one definition per argument
//! (`cortex_domain::args`), the same definitions that parse the arguments, in the subset of
//! JSON Schema every model API an agent forwards them to accepts. Per-kind rules stay in
//! server-side validation and its errors, which keeps both definitions small (a test holds
//! what the model reads of both under 6,000 characters). What the subset cannot say (one of
//! `query` or `ids`, a query's length) the description says and the server checks, per field.

use cortex_domain::Tool;
use cortex_service::response::{FindResponse, StoreResponse};
use rmcp::handler::server::common::schema_for_type;
use rmcp::model::{JsonObject, ToolAnnotations};
use schemars::JsonSchema;
use serde_json::{Value, json};
use std::sync::Arc;

pub const STORE_TOOL: &str = Tool::Store.name();
pub const FIND_TOOL: &str = Tool::Find.name();

/// The output schema of a response type, relaxed so an `isError` result carrying only
/// `{"error": {...}}` also conforms.
fn output_schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    let mut schema = (*schema_for_type::<T>()).clone();
    // Field meanings are documented in the input schema and docs/TOOLS.md; repeating them here
    // would spend the client's context on every session.
    strip(&mut schema, &["$schema", "title", "format", "description"]);
    schema.remove("required");
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        props.insert(
            "error".into(),
            json!({"type": "object", "description": "request-level refusal: {code, field, message, human_hint}"}),
        );
    }
    Arc::new(schema)
}

/// A tool's input schema, generated in the domain from its arguments' definitions.
fn input_schema(tool: Tool) -> Arc<JsonObject> {
    match tool.input_schema() {
        Value::Object(schema) => Arc::new(schema),
        _ => unreachable!("an input schema is an object"),
    }
}

/// Removes schema keywords that only cost characters, at every level. A property that happens
/// to be named like a keyword (none is) would survive: only keys of schema objects are removed,
/// never keys inside `properties`.
fn strip(schema: &mut JsonObject, keys: &[&str]) {
    for key in keys {
        schema.remove(*key);
    }
    for (key, value) in schema.iter_mut() {
        match value {
            Value::Object(child) if key == "properties" || key == "$defs" => {
                for sub in child.values_mut() {
                    if let Value::Object(sub) = sub {
                        strip(sub, keys);
                    }
                }
            }
            Value::Object(child) => strip(child, keys),
            Value::Array(list) => {
                for item in list {
                    if let Value::Object(item) = item {
                        strip(item, keys);
                    }
                }
            }
            _ => {}
        }
    }
}

pub fn tools() -> Vec<rmcp::model::Tool> {
    let store = rmcp::model::Tool::new(
        STORE_TOOL,
        "Store knowledge items (batch of 1–100). Each item gets its own result: inserted, updated, deleted, skipped_dedupe (with existing_id), business_rule_blocked or validation_error (with field and human_hint). operation \"delete\" with id soft-deletes; \"restore\" undoes it; \"confirm\" says it still holds though its files changed (clears stale). A decision close to one in force names it in may_contradict.",
        input_schema(Tool::Store),
    )
    .with_title("Store memory")
    .with_raw_output_schema(output_schema::<StoreResponse>())
    .with_annotations(
        ToolAnnotations::new()
            .read_only(false)
            // It deletes (operation delete), overwrites by id and merges entities and issues
            // in place: clients must not auto-approve it as harmless.
            .destructive(true)
            .idempotent(false)
            .open_world(false),
    );
    let find = rmcp::model::Tool::new(
        FIND_TOOL,
        "Find stored knowledge, ranked (relevance, recency, scope, citations), with snippets. Needs query, ids, or types alone (lists the newest of those kinds). Searches the current branch unless widened. Fewer than 3 hits come with suggestions.",
        input_schema(Tool::Find),
    )
    .with_title("Find memory")
    .with_raw_output_schema(output_schema::<FindResponse>())
    .with_annotations(
        ToolAnnotations::new()
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false),
    );
    vec![store, find]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_is_read_only_idempotent_and_closed_world() {
        let tools = tools();
        let find = tools.iter().find(|t| t.name == FIND_TOOL).unwrap();
        let a = find.annotations.as_ref().unwrap();
        assert_eq!(
            (a.read_only_hint, a.idempotent_hint, a.open_world_hint),
            (Some(true), Some(true), Some(false))
        );
        assert!(find.output_schema.is_some());
    }
}
