//! `cortex context`: the session briefing as Markdown on stdout, for an agent's session-start
//! hook (Claude Code's `SessionStart` adds a hook's stdout to the session). Given the hook's
//! input on stdin (`session_id`, `source`), it notes the memories it lists in the session's
//! ledger, so the prompt's recall does not inject them again; after a compaction or a clear,
//! they are all the session holds. A hook that fails must not break the session starting:
//! whatever goes wrong is one line on stderr, and the exit code is 0.

use crate::error::CliError;
use crate::output;
use cortex_domain::Scope;
use cortex_domain::briefing::DEFAULT_BUDGET_TOKENS;
use cortex_service::MemoryService;
use serde_json::Value;
use std::io::{IsTerminal, Read};
use std::process::ExitCode;
use std::time::Duration;

/// How long the hook input is waited for on a stdin that is not a terminal: an agent writes it
/// at once; a stdin left open with nothing on it must not hold the briefing up.
const INPUT_WAIT: Duration = Duration::from_millis(300);

#[derive(clap::Args)]
pub struct ContextArgs {
    /// At most this many tokens (counted as characters / 3).
    #[arg(long, default_value_t = DEFAULT_BUDGET_TOKENS)]
    budget_tokens: usize,
    /// The org of the project to brief on [default: the inferred one].
    #[arg(long)]
    org: Option<String>,
    #[arg(long)]
    project: Option<String>,
    /// The branch whose items come first [default: the inferred one].
    #[arg(long)]
    branch: Option<String>,
}

pub fn run(service: Result<MemoryService, CliError>, args: ContextArgs) -> ExitCode {
    let scope = Scope { org: args.org, project: args.project, branch: args.branch, ..Scope::default() };
    let briefing = service.and_then(|s| {
        let explicit = (!scope.is_empty()).then_some(&scope);
        s.briefing().context(explicit, args.budget_tokens).map_err(CliError::from)
    });
    match briefing {
        Ok(text) => {
            output::line(text.trim_end());
            if let Some(start) = session_start()
                && let Err(e) = note_listed(&start, &text)
            {
                output::note(&format!("cortex context: the session's ledger was not written ({e})"));
            }
        }
        Err(e) => output::note(&format!("cortex context: no briefing ({e})")),
    }
    ExitCode::SUCCESS
}

/// A session-start hook's input: its session, and why it started.
struct SessionStart {
    session: String,
    /// `startup`, `resume`, `clear` or `compact`.
    source: String,
}

/// The hook input on stdin, when there is one (not a terminal, JSON with a `session_id`).
fn session_start() -> Option<SessionStart> {
    if std::io::stdin().is_terminal() {
        return None;
    }
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let read = std::io::stdin().take(1 << 20).read_to_string(&mut text);
        let _ = send.send(read.map(|_| text));
    });
    let text = receive.recv_timeout(INPUT_WAIT).ok()?.ok()?;
    let input: Value = serde_json::from_str(&text).ok()?;
    let session = input.get("session_id")?.as_str().filter(|s| !s.is_empty())?.to_string();
    let source = input.get("source").and_then(Value::as_str).unwrap_or("startup").to_string();
    Some(SessionStart { session, source })
}

/// Notes the memories `briefing` lists in the session's ledger; after a compaction or a clear,
/// as all it holds.
fn note_listed(start: &SessionStart, briefing: &str) -> std::io::Result<()> {
    let Some(state) = cortex_service::config::recall_state_dir() else { return Ok(()) };
    let sessions = cortex_service::Sessions::at(&state);
    let listed = listed_ids(briefing);
    match start.source.as_str() {
        "compact" | "clear" => sessions.compacted(&start.session, listed),
        _ => sessions.seen(&start.session, listed),
    }
}

/// The memory ids a briefing shows, in order.
fn listed_ids(briefing: &str) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for word in briefing.split(|c: char| !(c.is_ascii_hexdigit() || c == '-')) {
        if word.len() == 36 && uuid::Uuid::parse_str(word).is_ok() && !ids.iter().any(|i| i == word) {
            ids.push(word.to_string());
        }
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ids_a_briefing_lists_are_read_from_it() {
        let text = "## Decisions\n- 0190aaaa-0000-7000-8000-000000000001 Use the outbox (accepted)\n\
                    - [todo] `0190aaaa-0000-7000-8000-000000000002`: move the cron; see 0190aaaa-0000-7000-8000-000000000001";
        assert_eq!(
            listed_ids(text),
            ["0190aaaa-0000-7000-8000-000000000001", "0190aaaa-0000-7000-8000-000000000002"]
        );
        assert!(listed_ids("no ids, only deadbeef-0000 and words").is_empty());
    }
}
