//! docs/TOOLS.md, the tool reference, is held to the arguments' definitions: every argument
//! has its row in its tool's section, and the row names each word the argument takes and
//! the bounds of a number or a list.

use super::Arg;
use serde_json::Value;

const TOOLS_MD: &str = include_str!("../../../../docs/TOOLS.md");

/// The table rows of the section that starts with `heading`, up to the next `## `.
fn section_rows(heading: &str) -> Vec<&'static str> {
    let start = TOOLS_MD.find(heading).unwrap_or_else(|| panic!("docs/TOOLS.md has no {heading}"));
    let rest = &TOOLS_MD[start + heading.len()..];
    let end = rest.find("\n## ").unwrap_or(rest.len());
    rest[..end].lines().filter(|l| l.starts_with("| `")).collect()
}

/// A number as the reference writes it (20,000).
fn written(n: i64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn check<T>(heading: &str, args: &[&dyn Arg<T>]) {
    let rows = section_rows(heading);
    for arg in args {
        let name = format!("`{}`", arg.name());
        let row = rows
            .iter()
            .find(|r| r.split('|').nth(1).is_some_and(|cell| cell.contains(&name)))
            .unwrap_or_else(|| panic!("docs/TOOLS.md {heading} has no row for {name}"));
        let schema = arg.schema();
        for word in schema["enum"].as_array().into_iter().flatten().filter_map(Value::as_str) {
            // A kind's names are the reference's own section; the row says "one of the 16 kinds".
            if arg.name() != "kind" {
                assert!(row.contains(&format!("`{word}`")), "the row of {name} lacks `{word}`: {row}");
            }
        }
        for bound in ["minimum", "maximum", "maxItems"] {
            if let Some(n) = schema[bound].as_i64() {
                assert!(row.contains(&written(n)), "the row of {name} lacks its {bound} {n}: {row}");
            }
        }
    }
}

#[test]
fn the_tool_reference_has_a_row_for_every_argument_with_its_words_and_bounds() {
    check("## `memory_find`", &crate::find::args::ARGS);
    check("## `memory_store`", &crate::item::args::ARGS);
}
