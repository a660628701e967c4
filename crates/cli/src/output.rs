//! The only place that writes to stdout. In `serve`, stdout belongs to JSON-RPC, and nothing
//! here is called; everything else the CLI prints goes through these functions.
//!
//! What is printed for a person (every line but [`json`]'s) passes through [`printable`]:
//! stored text is anyone's who could store a memory, and a title carrying a terminal escape
//! sequence must not rewrite the reader's screen. JSON output stays JSON (its strings escape
//! control characters themselves).
use cortex_service::response::{FindResponse, Suggestion};
use serde::Serialize;
use std::borrow::Cow;
use std::io::Write;

/// `println!` that gives up quietly when stdout is gone (`cortex find … | head`): a reader
/// that stops early is no error of ours.
macro_rules! say {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

pub fn json<T: Serialize>(value: &T) {
    match serde_json::to_string_pretty(value) {
        Ok(text) => say!("{text}"),
        Err(e) => tracing::error!("cannot encode output: {e}"),
    }
}

pub fn line(text: &str) {
    say!("{}", printable(text));
}

/// A line on stderr for a person (an error, a hook's note), made printable as stdout's are.
pub fn note(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{}", printable(text));
}

/// `text` without what a terminal would act on instead of show: control characters (ESC and
/// the sequences it starts lose their power, carriage return, backspace, bell, C1 controls
/// such as CSI) and the bidirectional overrides that reorder what is shown. Line breaks and
/// tabs stay.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(unprintable) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.chars().filter(|c| !unprintable(*c)).collect())
}

/// One line of a table: [`printable`], line breaks as spaces.
fn cell(text: &str) -> String {
    printable(text).replace(['\n', '\t'], " ")
}

fn unprintable(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// A readable table of hits, then suggestions and notes.
pub fn find_table(response: &FindResponse) {
    if response.hits.is_empty() {
        say!(
            "no hits (route: {}, scope: {})",
            response.route_used,
            cell(response.searched_scope.level.as_str())
        );
    } else {
        // Scores come with `--detail full` only; without them the first column is the rank.
        let scored = response.hits.iter().all(|h| h.score.is_some());
        say!("{:<5} {:<12} {:<8} {:<36} TITLE", if scored { "SCORE" } else { "#" }, "KIND", "SCOPE", "ID");
        for (rank, hit) in response.hits.iter().enumerate() {
            let scope_match = serde_json::to_value(hit.scope_match).ok();
            let scope_match = scope_match.as_ref().and_then(|v| v.as_str()).unwrap_or("");
            let title: String = cell(&hit.title).chars().take(60).collect();
            let first = match hit.score {
                Some(score) if scored => format!("{score:.3}"),
                _ => (rank + 1).to_string(),
            };
            say!("{first:<5} {:<12} {scope_match:<8} {:<36} {title}", hit.kind, hit.id);
            let snippet: String = cell(&hit.snippet).chars().take(160).collect();
            say!("      {snippet}");
            if let Some(stale) = &hit.stale {
                say!("      may be out of date: {}", stale.why);
            }
            if hit.expanded {
                let path: Vec<String> =
                    hit.path.iter().map(|e| format!("{} → {} → {}", e.from, e.relation_type, e.to)).collect();
                say!("      reached by: {}", cell(&path.join(", ")));
            }
        }
    }
    if let Some(cursor) = &response.next_cursor {
        say!("more: --cursor {}", cell(cursor));
    }
    for s in &response.suggestions {
        say!("suggestion: {}", cell(&suggestion(s)));
    }
    for n in &response.notes {
        say!("note: {}", cell(n));
    }
}

/// A find's hint in the CLI's words: the flags of `cortex find` where the service names the
/// tool's arguments.
fn suggestion(s: &Suggestion) -> String {
    match s {
        Suggestion::Widen { more, level } => {
            format!("{more} more hit(s) in {} scope: add --widen {}", level.as_str(), level.as_str())
        }
        Suggestion::OtherKinds { more } => format!("{more} more hit(s) of other kinds: drop --kind"),
        Suggestion::Unfiltered { more, filters } => {
            let flags: Vec<String> = filters.iter().map(|f| flag(f)).collect();
            format!("{more} more hit(s) without {}", flags.join(", "))
        }
        Suggestion::Text(text) => text.clone(),
    }
}

/// The `cortex find` flag of a `memory_find` argument.
pub fn flag(argument: &str) -> String {
    match argument {
        "types" => "--kind".to_string(),
        "tags" => "--tag".to_string(),
        "until" => "the `until` filter".to_string(),
        other => format!("--{other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_overrides_are_removed_and_line_breaks_kept() {
        let hostile = "Deploy\u{1b}[2J\u{1b}]0;pwned\u{7}\rdone\u{9b}31m \u{202e}txt.exe\nnext\tcol\u{8}";
        assert_eq!(printable(hostile), "Deploy[2J]0;pwneddone31m txt.exe\nnext\tcol");
        assert!(matches!(printable("plain — ü"), Cow::Borrowed("plain — ü")));
        assert_eq!(cell("a\nb\tc\u{1b}"), "a b c");
    }
}
