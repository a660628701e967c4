//! The only place that writes to stdout. In `serve`, stdout belongs to JSON-RPC, and nothing
//! here is called; everything else the CLI prints goes through these functions.
use cortex_service::response::FindResponse;
use serde::Serialize;
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
    say!("{text}");
}

/// A readable table of hits, then suggestions and notes.
pub fn find_table(response: &FindResponse) {
    if response.hits.is_empty() {
        say!("no hits (route: {}, scope: {})", response.route_used, response.searched_scope.level);
    } else {
        // Scores come with `--detail full` only; without them the first column is the rank.
        let scored = response.hits.iter().all(|h| h.score.is_some());
        say!("{:<5} {:<12} {:<8} {:<36} TITLE", if scored { "SCORE" } else { "#" }, "KIND", "SCOPE", "ID");
        for (rank, hit) in response.hits.iter().enumerate() {
            let scope_match = serde_json::to_value(hit.scope_match).ok();
            let scope_match = scope_match.as_ref().and_then(|v| v.as_str()).unwrap_or("");
            let title: String = hit.title.chars().take(60).collect();
            let first = match hit.score {
                Some(score) if scored => format!("{score:.3}"),
                _ => (rank + 1).to_string(),
            };
            say!("{first:<5} {:<12} {scope_match:<8} {:<36} {title}", hit.kind, hit.id);
            let snippet: String = hit.snippet.replace('\n', " ").chars().take(160).collect();
            say!("      {snippet}");
            if let Some(stale) = &hit.stale {
                say!("      may be out of date: {}", stale.why);
            }
            if hit.expanded {
                let path: Vec<String> =
                    hit.path.iter().map(|e| format!("{} → {} → {}", e.from, e.relation_type, e.to)).collect();
                say!("      reached by: {}", path.join(", "));
            }
        }
    }
    if let Some(cursor) = &response.next_cursor {
        say!("more: --cursor {cursor}");
    }
    for s in &response.suggestions {
        say!("suggestion: {s}");
    }
    for n in &response.notes {
        say!("note: {n}");
    }
}
