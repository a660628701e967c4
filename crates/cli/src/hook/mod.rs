//! `cortex hook stop` and `cortex hook pre-compact`: an agent's Stop and PreCompact hooks,
//! which ask the agent to store what the session learned when it changed files and stored
//! nothing (the rule is [`rule`]'s). They read the hook input on stdin and the session's
//! transcript only to count tool uses; nothing of either is stored, and the database is not
//! opened. A hook must never break the session: whatever goes wrong is one line on stderr,
//! nothing on stdout, and exit 0, within a bounded time whatever stdin and the transcript
//! turn out to be (`input`).

pub mod input;
mod rule;

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
}

pub fn run(command: HookCommand) -> ExitCode {
    let (event, name) = match command {
        HookCommand::Stop => (Event::Stop, "stop"),
        HookCommand::PreCompact => (Event::PreCompact, "pre-compact"),
    };
    match answer(event) {
        Ok(Some(text)) => output::line(&text),
        Ok(None) => {}
        Err(e) => output::note(&format!("cortex hook {name}: nothing asked ({e})")),
    }
    ExitCode::SUCCESS
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
