//! `cortex hook stop` and `cortex hook pre-compact`: an agent's Stop and PreCompact hooks,
//! which ask the agent to store what the session learned when it changed files and stored
//! nothing (the rule is [`rule`]'s). They read the hook input on stdin and the session's
//! transcript only to count tool uses; nothing of either is stored, and the database is not
//! opened. `cortex hook post-tool-use` notes the memories a `memory_find` returned in the
//! session's ledger ([`seen`]), so the prompt's recall does not inject them again. A hook must
//! never break the session: whatever goes wrong is one line on stderr, nothing on stdout, and
//! exit 0, within a bounded time whatever stdin and the transcript turn out to be (`input`).

pub mod input;
mod rule;
mod seen;

use crate::output;
use rule::{Activity, Event, HookInput};
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
                output::note(&format!("cortex hook post-tool-use: nothing noted ({e})"));
            }
            return ExitCode::SUCCESS;
        }
    };
    match answer(event) {
        Ok(Some(text)) => output::line(&text),
        Ok(None) => {}
        Err(e) => output::note(&format!("cortex hook {name}: nothing asked ({e})")),
    }
    ExitCode::SUCCESS
}

/// Notes a memory_find's hits in its session's ledger.
fn note_found() -> Result<(), HookError> {
    let text = input::stdin(MAX_INPUT_BYTES, input::STDIN_WAIT).map_err(HookError::NoInput)?;
    let hook: serde_json::Value = serde_json::from_str(&text).map_err(HookError::NotJson)?;
    let Some(found) = seen::find_result(&hook) else { return Ok(()) };
    let Some(state) = cortex_service::config::recall_state_dir() else { return Ok(()) };
    cortex_service::Sessions::at(&state).seen(&found.session, found.ids).map_err(HookError::Ledger)
}

/// Why a hook asks nothing: one line on stderr, and the hook still exits 0.
#[derive(Debug, thiserror::Error)]
enum HookError {
    #[error("no hook input ({0})")]
    NoInput(input::ReadError),
    #[error(transparent)]
    Input(#[from] rule::InputError),
    #[error(transparent)]
    Transcript(input::ReadError),
    #[error("the hook input on stdin is not JSON ({0})")]
    NotJson(serde_json::Error),
    /// The session's ledger of memories already shown cannot be written.
    #[error("cannot note the session's memories in the recall state folder: {0}")]
    Ledger(std::io::Error),
}

fn answer(event: Event) -> Result<Option<String>, HookError> {
    let text = input::stdin(MAX_INPUT_BYTES, input::STDIN_WAIT).map_err(HookError::NoInput)?;
    let hook = rule::parse_input(&text)?;
    let activity = read_transcript(&hook)?;
    Ok(rule::reply(&rule::decide(event, &hook, &activity), hook.client))
}

/// Counts the transcript's tool uses (in its last `MAX_TRANSCRIPT_BYTES`); a session without
/// a transcript shows no changes.
fn read_transcript(hook: &HookInput) -> Result<Activity, HookError> {
    let mut activity = Activity::default();
    let Some(path) = &hook.transcript_path else { return Ok(activity) };
    input::file_lines(
        std::path::Path::new(path),
        input::MAX_TRANSCRIPT_BYTES,
        input::MAX_LINE_BYTES,
        |line| activity.add_line(&String::from_utf8_lossy(line)),
    )
    .map_err(HookError::Transcript)?;
    Ok(activity)
}
