//! `cortex recall`: the memories most relevant to a prompt, for an agent's prompt-submit hook
//! (Claude Code's and Codex's `UserPromptSubmit` add a hook's plain stdout to the prompt's
//! context). It prints nothing when nothing is relevant enough, or all of it is in the session
//! already (the hook input's `session_id`), and it must never break or hold up a prompt:
//! whatever goes wrong is one line on stderr, and the exit code is 0.

use crate::error::CliError;
use crate::output;
use cortex_service::{Config, MemoryService, RecallRequest};
use serde_json::Value;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

/// More than a prompt ever is: a hook's input past this is not read further.
const MAX_INPUT_BYTES: u64 = 4 * 1024 * 1024;

#[derive(clap::Args)]
pub struct RecallArgs {
    /// The prompt [default: the hook's JSON on stdin, its `prompt` and `cwd`].
    #[arg(long)]
    prompt: Option<String>,
    /// At most this many tokens (counted as characters / 3) [default:
    /// CORTEX_RECALL_BUDGET_TOKENS, else 400].
    #[arg(long)]
    budget_tokens: Option<usize>,
    /// Without the embedding model: how much of the prompt a memory must match to be shown
    /// (0–1: the share of the prompt's meaningful words it holds, counted against at most 6
    /// of them) [default: 0.8].
    #[arg(long)]
    floor: Option<f64>,
}

/// What the hook was asked about, and where the agent stands.
struct Prompt {
    text: String,
    /// The session's folder (the hook input's `cwd`): the project whose memories count.
    cwd: Option<PathBuf>,
    /// The hook input's `session_id`.
    session: Option<String>,
}

pub fn run(db: Option<String>, args: RecallArgs) -> ExitCode {
    let recalled = prompt(&args).and_then(|prompt| {
        if let Some(floor) = args.floor.filter(|f| !(0.0..=1.0).contains(f)) {
            return Err(CliError::argument("--floor", format!("{floor} is not between 0 and 1")));
        }
        let workdir = prompt
            .cwd
            .filter(|d| d.is_dir())
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("."));
        let config = Config::resolve(db, &workdir)?;
        let service = MemoryService::open(&config)?;
        let request = RecallRequest {
            prompt: prompt.text,
            budget_tokens: args.budget_tokens,
            floor: args.floor,
            session: prompt.session,
        };
        Ok(service.briefing().recall(&request)?)
    });
    match recalled {
        Ok(recalled) => {
            if let Some(notice) = &recalled.notice {
                output::note(&format!("cortex recall: {notice}"));
            }
            if !recalled.injection.text.is_empty() {
                output::line(&recalled.injection.text);
            }
        }
        Err(e) => output::note(&format!("cortex recall: nothing recalled ({e})")),
    }
    ExitCode::SUCCESS
}

fn prompt(args: &RecallArgs) -> Result<Prompt, CliError> {
    if let Some(text) = &args.prompt {
        return Ok(Prompt { text: text.clone(), cwd: None, session: None });
    }
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Err(CliError::argument(
            "--prompt",
            "give the prompt with --prompt, or the hook's JSON ({\"prompt\": ...}) on stdin",
        ));
    }
    let input = crate::hook::input::stdin(MAX_INPUT_BYTES, crate::hook::input::STDIN_WAIT)
        .map_err(|e| CliError::argument("stdin", e.to_string()))?;
    hook_input(&input)
}

/// The prompt, folder and session of a prompt-submit hook's input (`{"prompt": ..., "cwd":
/// ..., "session_id": ...}`, Claude Code's and Codex's alike).
fn hook_input(input: &str) -> Result<Prompt, CliError> {
    let value: Value = serde_json::from_str(input).map_err(|e| {
        CliError::argument("stdin", format!("is not the hook's JSON ({e}); or give the prompt with --prompt"))
    })?;
    let Some(text) = value.get("prompt").and_then(Value::as_str) else {
        return Err(CliError::argument(
            "stdin.prompt",
            "is missing or not a string: run this as a UserPromptSubmit hook, or give --prompt",
        ));
    };
    let cwd = value.get("cwd").and_then(Value::as_str).map(PathBuf::from);
    let session =
        value.get("session_id").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
    Ok(Prompt { text: text.to_string(), cwd, session })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hook_input_gives_prompt_and_folder() {
        let p =
            hook_input(r#"{"session_id": "s", "prompt": "why does deploy fail", "cwd": "/tmp/x"}"#).unwrap();
        assert_eq!(p.text, "why does deploy fail");
        assert_eq!(p.cwd, Some(PathBuf::from("/tmp/x")));
        assert_eq!(p.session.as_deref(), Some("s"));
        let e = hook_input(r#"{"session_id": "s"}"#).err().unwrap().to_string();
        assert!(e.starts_with("stdin.prompt:"), "{e}");
        let e = hook_input("not json").err().unwrap().to_string();
        assert!(e.contains("--prompt"), "{e}");
    }
}
