//! `cortex context`: the session briefing as Markdown on stdout, for an agent's session-start
//! hook (Claude Code's `SessionStart` adds a hook's stdout to the session). A hook that fails
//! must not break the session starting: whatever goes wrong is one line on stderr, and the
//! exit code is 0.

use crate::error::CliError;
use crate::output;
use cortex_domain::Scope;
use cortex_domain::briefing::DEFAULT_BUDGET_TOKENS;
use cortex_service::MemoryService;
use std::process::ExitCode;

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
        Ok(text) => output::line(text.trim_end()),
        Err(e) => output::note(&format!("cortex context: no briefing ({e})")),
    }
    ExitCode::SUCCESS
}
