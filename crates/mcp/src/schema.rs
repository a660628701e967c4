//! The two tool definitions: input schemas, output schemas, annotations, descriptions.
//!
//! Arguments are validated by the service, not by these types: they exist to tell clients
//! the shape. Per-kind rules stay in server-side validation and its errors, which keeps both
//! definitions small (a test holds what the model reads of both under 6,000 characters).
//!
//! Input schemas are written in the subset of JSON Schema that every model API an agent
//! forwards them to accepts (`portable`): Claude Code drops a tool whose schema has a
//! top-level `anyOf`, OpenAI's strict mode refuses `minLength`, Gemini reads no `$ref`. What
//! the subset cannot say (one of `query` or `ids`, a query's length) the description says and
//! the server checks, per field.

use cortex_domain::Kind;
use cortex_service::response::{FindResponse, StoreResponse};
use rmcp::handler::server::common::schema_for_type;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde_json::{Value, json};
use std::sync::Arc;

pub const STORE_TOOL: &str = "memory_store";
pub const FIND_TOOL: &str = "memory_find";

/// A kind's name: the names and their aliases, from the domain's one list of kinds, defined
/// once per tool (`$defs/Kind`). The server also takes them in any case and with `-` for `_`.
struct KindName;

impl JsonSchema for KindName {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Kind".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = Kind::ALL
            .iter()
            .map(|k| k.as_str())
            .chain(Kind::ALIASES.iter().map(|(alias, _)| *alias))
            .collect();
        schemars::json_schema!({ "type": "string", "enum": names })
    }
}

/// One kind (a delete needs none).
fn kind_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    generator.subschema_for::<KindName>()
}

/// A closed list of words. The server also takes null for absent.
fn words(names: &[&str]) -> schemars::Schema {
    schemars::json_schema!({ "type": "string", "enum": names })
}

fn mode_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    words(&["fast", "auto", "deep"])
}

fn widen_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    words(&["branch", "project", "org", "all"])
}

fn expand_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    words(&["none", "relations", "parents", "children", "all"])
}

fn detail_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    words(&["brief", "full"])
}

fn operation_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    words(&["upsert", "delete", "restore"])
}

fn ttl_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    words(&["short", "default", "long", "permanent"])
}

/// Kinds to keep, as a list (the server also takes one kind alone).
fn kinds_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let kind = generator.subschema_for::<KindName>();
    schemars::json_schema!({ "type": "array", "items": kind })
}

#[allow(dead_code)]
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct ScopeArg {
    org: Option<String>,
    project: Option<String>,
    branch: Option<String>,
    service: Option<String>,
    sprint: Option<String>,
    tenant: Option<String>,
    environment: Option<String>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct SourceArg {
    actor: Option<String>,
    tool: Option<String>,
    session: Option<String>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct ItemArg {
    /// Needed for a new item (adr = decision, pr = pr_context); not for a delete.
    #[serde(default)]
    #[schemars(schema_with = "kind_schema")]
    kind: Option<String>,
    /// Free text (≤256 KiB).
    content: Option<String>,
    /// The kind's fields, e.g. decision {component, status, title, rationale}. Errors list what is missing.
    data: Option<JsonObject>,
    /// Missing fields default to the server's org/project/branch.
    scope: Option<ScopeArg>,
    tags: Option<Vec<String>>,
    metadata: Option<JsonObject>,
    /// Who stored it.
    source: Option<SourceArg>,
    /// The same key twice stores one item.
    idempotency_key: Option<String>,
    /// short 30d, default 90d, long 365d, permanent (default per kind)
    #[serde(default)]
    #[schemars(schema_with = "ttl_schema")]
    ttl: Option<String>,
    /// RFC 3339: expire at this instant instead
    expires_at: Option<String>,
    /// Id of the item this new one replaces (it leaves finds)
    supersedes: Option<String>,
    /// With upsert: update this item. With delete/restore: the item to delete/undelete.
    id: Option<String>,
    /// upsert (default), delete or restore
    #[serde(default)]
    #[schemars(schema_with = "operation_schema")]
    operation: Option<String>,
    /// false stores an exact duplicate anyway
    dedupe: Option<bool>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct StoreArgs {
    #[schemars(length(min = 1, max = 100))]
    items: Vec<ItemArg>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct FindArgs {
    /// A few key words (≤1000 characters); "exact phrase", -exclude, prefix* work.
    query: Option<String>,
    /// Fetch these items whole instead of searching.
    #[schemars(length(max = cortex_domain::limits::MAX_IDS))]
    ids: Option<Vec<String>>,
    /// fast = lexical; auto (default); deep
    #[serde(default)]
    #[schemars(schema_with = "mode_schema")]
    mode: Option<String>,
    /// Kinds to keep. Without query or ids: the newest items of these kinds.
    #[serde(default)]
    #[schemars(schema_with = "kinds_schema")]
    types: Option<Vec<String>>,
    /// Naming fewer of org/project/branch widens the search.
    scope: Option<ScopeArg>,
    /// Default branch.
    #[serde(default)]
    #[schemars(schema_with = "widen_schema")]
    widen: Option<String>,
    /// RFC 3339 or YYYY-MM-DD, on updated time.
    since: Option<String>,
    until: Option<String>,
    /// Hits must carry all of these.
    #[schemars(length(max = cortex_domain::limits::MAX_TAGS))]
    tags: Option<Vec<String>>,
    /// The kind's status, e.g. accepted, open.
    status: Option<String>,
    /// Also return items a newer item superseded.
    include_superseded: Option<bool>,
    /// Also return expired items not purged yet.
    include_expired: Option<bool>,
    /// Default 10.
    #[schemars(range(min = 1, max = 100))]
    limit: Option<i64>,
    /// next_cursor of the previous page.
    cursor: Option<String>,
    /// Content characters per hit (default 600); implies detail full.
    #[schemars(range(min = 0, max = 20000))]
    max_content_chars: Option<i64>,
    /// brief (default for query): id, title, snippet, status, dates; full (default for ids): also content, data, scores.
    #[serde(default)]
    #[schemars(schema_with = "detail_schema")]
    detail: Option<String>,
    /// Also return items linked to the hits: relations (both ways), children (what a hit points to, an entity's observations), parents. Default none; all in deep mode.
    #[serde(default)]
    #[schemars(schema_with = "expand_schema")]
    expand: Option<String>,
    /// Links away to follow (default 1).
    #[schemars(range(min = 1, max = 3))]
    depth: Option<i64>,
    /// Items expansion adds at most (default 20).
    #[schemars(range(min = 1, max = 100))]
    expand_limit: Option<i64>,
}

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

fn input_schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    let mut schema = (*schema_for_type::<T>()).clone();
    strip(&mut schema, &["$schema", "title", "format", "default"]);
    Arc::new(portable(schema))
}

/// The same schema in the portable subset (see the module doc): each `$ref` replaced by its
/// definition, an optional value's `anyOf [X, null]` or `type [T, "null"]` by X or T alone
/// (the server still takes null for absent), and `additionalProperties: true` (the default)
/// dropped.
fn portable(mut schema: JsonObject) -> JsonObject {
    let defs = match schema.remove("$defs") {
        Some(Value::Object(defs)) => defs,
        _ => JsonObject::new(),
    };
    let mut root = Value::Object(schema);
    inline(&mut root, &defs);
    match root {
        Value::Object(schema) => schema,
        _ => unreachable!("a schema object stays an object"),
    }
}

fn inline(value: &mut Value, defs: &JsonObject) {
    match value {
        Value::Object(schema) => {
            // The optional value's `anyOf` first: the option it keeps may be a `$ref`.
            if let Some(Value::Array(options)) = schema.get("anyOf") {
                let kept: Vec<Value> =
                    options.iter().filter(|o| o.get("type") != Some(&json!("null"))).cloned().collect();
                if let [only] = kept.as_slice() {
                    let only = only.as_object().cloned().unwrap_or_default();
                    schema.remove("anyOf");
                    for (key, option_value) in only {
                        schema.entry(key).or_insert(option_value);
                    }
                }
            }
            if let Some(Value::String(target)) = schema.remove("$ref") {
                let name = target.trim_start_matches("#/$defs/");
                if let Some(Value::Object(def)) = defs.get(name) {
                    for (key, def_value) in def {
                        schema.entry(key.clone()).or_insert_with(|| def_value.clone());
                    }
                }
            }
            if let Some(Value::Array(types)) = schema.get("type") {
                let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
                if let [only] = kept.as_slice() {
                    schema.insert("type".into(), only.clone());
                }
            }
            if schema.get("additionalProperties") == Some(&Value::Bool(true)) {
                schema.remove("additionalProperties");
            }
            for child in schema.values_mut() {
                inline(child, defs);
            }
        }
        Value::Array(list) => list.iter_mut().for_each(|v| inline(v, defs)),
        _ => {}
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

pub fn tools() -> Vec<Tool> {
    let store = Tool::new(
        STORE_TOOL,
        "Store knowledge items (batch of 1–100). Each item gets its own result: inserted, updated, deleted, skipped_dedupe (with existing_id), business_rule_blocked or validation_error (with field and human_hint). operation \"delete\" with id soft-deletes; \"restore\" undoes it.",
        input_schema::<StoreArgs>(),
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
    let find = Tool::new(
        FIND_TOOL,
        "Find stored knowledge, ranked (relevance, recency, scope, citations), with snippets. Needs query, ids, or types alone (lists the newest of those kinds). Searches the current branch unless widened. Fewer than 3 hits come with computed suggestions.",
        input_schema::<FindArgs>(),
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
