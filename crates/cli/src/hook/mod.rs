//! `cortex hook stop` and `cortex hook pre-compact`: an agent's Stop and PreCompact hooks,
//! which ask the agent to store what the session learned when it changed files and stored
//! nothing (the rule is [`rule`]'s). They read the hook input on stdin and the session's
//! transcript only to count tool uses; nothing of either is stored, and the database is not
//! opened. `cortex hook post-tool-use` notes the memories a `memory_find` returned in the
//! session's ledger ([`seen`]), so the prompt's recall does not inject them again. A hook must
//! never break the session: whatever goes wrong is one line on stderr, nothing on stdout, and
//! exit 0.

mod rule;
mod seen;

use crate::output;
use rule::{Activity, Event, HookInput};
use std::io::{BufRead, BufReader, Read};
use std::process::ExitCode;

/// Hook input larger than this is not an agent's hook input.
const MAX_INPUT_BYTES: u64 = 1 << 20;

#[derive(clap::Subcommand)]
pub enum HookCommand {
    /// Claude Code's and Codex's `Stop`, Cursor's `stop`: when this session changed files and
    /// stored nothing, ask the agent once to record its decisions, issues and changes with
    /// memory_store before it ends. Prints nothing otherwise.
    Stop,
    /// Claude Code's `PreCompact`: when this session changed files and stored nothing, ask the
    /// compaction to keep its decisions, issues and changes in the summary, marked as not
    /// stored yet. Prints nothing otherwise.
    PreCompact,
    /// Claude Code's and Codex's `PostToolUse` for `memory_find`: notes the memories it
    /// returned as in the session, so `cortex recall` does not inject them again. Prints
    /// nothing.
    PostToolUse,
}

pub fn run(command: HookCommand) -> ExitCode {
    let (event, name) = match command {
        HookCommand::Stop => (Event::Stop, "stop"),
        HookCommand::PreCompact => (Event::PreCompact, "pre-compact"),
        HookCommand::PostToolUse => {
            if let Err(e) = note_found() {
                eprintln!("cortex hook post-tool-use: nothing noted ({e})");
            }
            return ExitCode::SUCCESS;
        }
    };
    match answer(event) {
        Ok(Some(text)) => output::line(&text),
        Ok(None) => {}
        Err(e) => eprintln!("cortex hook {name}: nothing asked ({e})"),
    }
    ExitCode::SUCCESS
}

/// Notes a memory_find's hits in its session's ledger.
fn note_found() -> Result<(), String> {
    let text = read_stdin()?;
    let input: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("the hook input on stdin is not JSON ({e})"))?;
    let Some(found) = seen::find_result(&input) else { return Ok(()) };
    let Some(state) = cortex_service::config::recall_state_dir() else { return Ok(()) };
    cortex_service::Sessions::at(&state).seen(&found.session, found.ids).map_err(|e| e.to_string())
}

fn read_stdin() -> Result<String, String> {
    let mut text = String::new();
    std::io::stdin()
        .take(MAX_INPUT_BYTES)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read the hook input on stdin: {e}"))?;
    Ok(text)
}

fn answer(event: Event) -> Result<Option<String>, String> {
    let text = read_stdin()?;
    let input = rule::parse_input(&text).map_err(|e| e.to_string())?;
    let activity = read_transcript(&input)?;
    Ok(rule::reply(&rule::decide(event, &input, &activity), input.client))
}

/// Counts the transcript's tool uses; a session without a transcript shows no changes.
fn read_transcript(input: &HookInput) -> Result<Activity, String> {
    let mut activity = Activity::default();
    let Some(path) = &input.transcript_path else { return Ok(activity) };
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read the transcript {path}: {e}"))?;
    for line in BufReader::new(file).split(b'\n') {
        let line = line.map_err(|e| format!("cannot read the transcript {path}: {e}"))?;
        activity.add_line(&String::from_utf8_lossy(&line));
    }
    Ok(activity)
}
