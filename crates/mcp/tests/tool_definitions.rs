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
/// clients, not models; they stay under 5,000.
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
    assert!(output <= 5_000, "{output} characters of output schemas");
    let names: Vec<_> = cortex_mcp::tools().iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, vec!["memory_store", "memory_find"]);
}

/// The server instructions reach every session's context too: short, and measured.
#[test]
fn the_server_instructions_stay_under_2200_characters() {
    let instructions = include_str!("../src/instructions.md");
    assert!(instructions.len() <= 2_200, "{} characters", instructions.len());
    for must in ["memory_find BEFORE", "memory_store AFTER", "supersede", "ids"] {
        assert!(instructions.contains(must), "the instructions say when and how: {must}");
    }
}

/// The domain's lists of what each tool takes and the published input schemas name the same
/// fields: one can never accept what the other does not know.
#[test]
fn the_schemas_name_exactly_the_fields_the_domain_parses() {
    let tools = serde_json::to_value(cortex_mcp::tools()).unwrap();
    let keys = |schema: &serde_json::Value| {
        let mut keys: Vec<String> = schema["properties"].as_object().unwrap().keys().cloned().collect();
        keys.sort();
        keys
    };
    let sorted = |list: &[&str]| {
        let mut list: Vec<String> = list.iter().map(|s| s.to_string()).collect();
        list.sort();
        list
    };
    assert_eq!(keys(&tools[1]["inputSchema"]), sorted(cortex_domain::find::FIND_FIELDS));
    assert_eq!(keys(&tools[0]["inputSchema"]["$defs"]["ItemArg"]), sorted(cortex_domain::item::ITEM_FIELDS));
}
