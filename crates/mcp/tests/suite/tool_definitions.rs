//! Wire-format snapshot: the exact JSON of the two tool definitions. A change here changes
//! what every agent sees; review the diff, then refresh with `UPDATE_SNAPSHOTS=1 cargo test`.

const SNAPSHOT: &str = "tests/snapshots/tools.json";

#[test]
fn tool_definitions_match_the_snapshot() {
    let current = serde_json::to_string_pretty(&cortex_mcp::tools()).unwrap() + "\n";
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(SNAPSHOT);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, &current).unwrap();
    }
    let pinned = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        pinned == current,
        "tool definitions changed; review and run UPDATE_SNAPSHOTS=1 cargo test -p cortex-mcp\n--- new ---\n{current}"
    );
}

/// What the model reads of the tools (name, description, input schema) is paid for by every
/// session: both together stay under 6,000 characters of JSON. Output schemas are read by
/// clients, not models; they stay under 5,100 (the store result's `may_contradict`, `hint` and
/// `redacted` say only "an array" or "a string" there, their entries described in docs/TOOLS.md).
#[test]
fn what_the_model_sees_of_both_tools_stays_under_6000_characters() {
    let tools = serde_json::to_value(cortex_mcp::tools()).unwrap();
    let (mut seen, mut output) = (0, 0);
    for tool in tools.as_array().unwrap() {
        for key in ["name", "description", "inputSchema"] {
            seen += serde_json::to_string(&tool[key]).unwrap().len();
        }
        output += serde_json::to_string(&tool["outputSchema"]).unwrap().len();
    }
    assert!(seen <= 6_000, "{seen} characters the model reads");
    assert!(output <= 5_100, "{output} characters of output schemas");
    let names: Vec<_> = cortex_mcp::tools().iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, vec!["memory_store", "memory_find"]);
}

/// The server instructions reach every session's context too: short, and measured.
#[test]
fn the_server_instructions_stay_under_2200_characters() {
    let instructions = include_str!("../../src/instructions.md");
    assert!(instructions.len() <= 2_200, "{} characters", instructions.len());
    for must in ["memory_find BEFORE", "memory_store AFTER", "supersede", "ids"] {
        assert!(instructions.contains(must), "the instructions say when and how: {must}");
    }
}

/// Every argument a published input schema names is one the server parses, and nothing else
/// is: the parser refuses a name the schema does not list (both come from one definition per
/// argument; this holds the published JSON to the parser, whatever generates it).
#[test]
fn the_schemas_name_exactly_the_fields_the_domain_parses() {
    use cortex_domain::ErrorCode;
    use cortex_domain::find::FindRequest;
    use cortex_domain::item::parse_item;
    use serde_json::json;
    let tools = serde_json::to_value(cortex_mcp::tools()).unwrap();
    let names = |schema: &serde_json::Value| -> Vec<String> {
        schema["properties"].as_object().unwrap().keys().cloned().collect()
    };
    let find = names(&tools[1]["inputSchema"]);
    assert_eq!(find.len(), 20, "{find:?}");
    for name in &find {
        let mut args = json!({ "query": "x" });
        args[name.as_str()] = serde_json::Value::Null;
        let parsed = FindRequest::from_json(&args);
        assert!(
            parsed.as_ref().err().is_none_or(|e| e.code != ErrorCode::UnknownField),
            "memory_find refuses its own `{name}`: {parsed:?}"
        );
    }
    let err = FindRequest::from_json(&json!({ "query": "x", "colour": 1 })).unwrap_err();
    assert_eq!((err.code, err.field.as_str()), (ErrorCode::UnknownField, "colour"));
    let item = names(&tools[0]["inputSchema"]["properties"]["items"]["items"]);
    assert_eq!(item.len(), 15, "{item:?}");
    for name in &item {
        let mut value = json!({ "kind": "todo", "content": "x" });
        value[name.as_str()] = serde_json::Value::Null;
        let parsed = parse_item(&value);
        assert!(
            parsed.as_ref().err().is_none_or(|e| e.code != ErrorCode::UnknownField),
            "an item refuses its own `{name}`: {parsed:?}"
        );
    }
    let err = parse_item(&json!({ "kind": "todo", "content": "x", "colour": 1 })).unwrap_err();
    assert_eq!((err.code, err.field.as_str()), (ErrorCode::UnknownField, "colour"));
}

/// The keywords an input schema may use: those the Anthropic API, OpenAI function calling
/// (strict and non-strict) and Gemini (`parametersJsonSchema`) all accept, at any depth.
/// Left out on purpose: `anyOf`/`oneOf`/`allOf`/`not` (Claude Code drops a tool with one at the
/// top level; strict mode and Gemini take only some of them), `$ref`/`$defs` (Gemini's older
/// `parameters` read none), `minLength`/`maxLength`/`pattern`/`format` (strict mode refuses
/// them), `title`/`default` (noise), a `type` list and `null` in an `enum` (nullable forms the
/// APIs spell differently).
const PORTABLE_KEYWORDS: &[&str] = &[
    "type",
    "description",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
];

/// Every place in `schema` (a path from the root) that leaves the portable subset.
fn portability_problems(schema: &serde_json::Value, path: &str, problems: &mut Vec<String>) {
    let Some(object) = schema.as_object() else {
        problems.push(format!("{path}: a schema must be an object"));
        return;
    };
    for (key, value) in object {
        let here = format!("{path}/{key}");
        match key.as_str() {
            "properties" => {
                for (name, property) in value.as_object().into_iter().flatten() {
                    portability_problems(property, &format!("{here}/{name}"), problems);
                }
            }
            "items" => portability_problems(value, &here, problems),
            "type" if !value.is_string() => problems.push(format!("{here}: one type, not a list")),
            "type" => {
                let known = ["object", "array", "string", "integer", "number", "boolean"];
                if !known.contains(&value.as_str().unwrap()) {
                    problems.push(format!("{here}: type {value}"));
                }
            }
            "enum"
                if object.get("type") != Some(&serde_json::json!("string"))
                    || !value.as_array().is_some_and(|v| v.iter().all(|w| w.is_string())) =>
            {
                problems.push(format!("{here}: an enum is a list of strings with type string"));
            }
            "additionalProperties" if value != &serde_json::json!(false) => {
                problems.push(format!("{here}: only `false` (the default says the rest)"))
            }
            "required" => {
                let declared = object.get("properties").and_then(|p| p.as_object());
                for name in value.as_array().into_iter().flatten() {
                    if !declared.is_some_and(|d| d.contains_key(name.as_str().unwrap_or(""))) {
                        problems.push(format!("{here}: {name} is required but not declared"));
                    }
                }
            }
            other if !PORTABLE_KEYWORDS.contains(&other) => {
                problems.push(format!("{here}: keyword not portable"))
            }
            _ => {}
        }
    }
    if !object.contains_key("type") {
        problems.push(format!("{path}: no type"));
    }
}

/// Claude Code 2.1.197 never offered `memory_find` to its model, because its input
/// schema had a top-level `anyOf`. Both tools' input schemas are objects at the root and use
/// only what every model API accepts, at every depth.
#[test]
fn every_input_schema_stays_in_the_subset_every_model_api_accepts() {
    let tools = serde_json::to_value(cortex_mcp::tools()).unwrap();
    for tool in tools.as_array().unwrap() {
        let schema = &tool["inputSchema"];
        let mut problems = Vec::new();
        portability_problems(schema, "", &mut problems);
        assert_eq!(schema["type"], "object", "{}: the root is an object", tool["name"]);
        assert!(schema["properties"].is_object(), "{}: the root declares its properties", tool["name"]);
        assert!(problems.is_empty(), "{}:\n{}", tool["name"], problems.join("\n"));
    }
}

/// OpenAI's strict mode also wants every object closed (`additionalProperties: false`) and
/// every property listed (clients make optional ones nullable when they convert). Objects that
/// declare properties are closed here; the only open ones are the free-form `data` and
/// `metadata` of an item, which strict mode cannot express at all: a client in strict mode
/// sends these tools non-strict (Codex and the OpenAI Agents SDK both do).
#[test]
fn only_an_items_data_and_metadata_are_open_objects() {
    fn open_objects(schema: &serde_json::Value, path: &str, found: &mut Vec<String>) {
        if schema["type"] == "object" {
            if schema["properties"].as_object().is_none_or(|p| p.is_empty()) {
                found.push(path.to_string());
            } else if schema["additionalProperties"] != serde_json::json!(false) {
                found.push(format!("{path} (declares properties but is not closed)"));
            }
        }
        for (name, property) in schema["properties"].as_object().into_iter().flatten() {
            open_objects(property, &format!("{path}/{name}"), found);
        }
        if schema["items"].is_object() {
            open_objects(&schema["items"], &format!("{path}[]"), found);
        }
    }
    let tools = serde_json::to_value(cortex_mcp::tools()).unwrap();
    let mut found = Vec::new();
    for tool in tools.as_array().unwrap() {
        open_objects(&tool["inputSchema"], tool["name"].as_str().unwrap(), &mut found);
    }
    assert_eq!(found, ["memory_store/items[]/data", "memory_store/items[]/metadata"]);
}
