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

#[test]
fn both_tool_definitions_stay_under_10000_characters() {
    let compact = serde_json::to_string(&cortex_mcp::tools()).unwrap();
    assert!(compact.len() < 10_000, "{} characters", compact.len());
    let names: Vec<_> = cortex_mcp::tools().iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, vec!["memory_store", "memory_find"]);
}
