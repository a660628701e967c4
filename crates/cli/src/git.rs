//! `cortex git`: memory that follows the code. `sync` brings the checked-out branch's path
//! table to HEAD and records the merges its new commits show (what the git hooks `cortex
//! install git-hooks` writes run, and `cortex serve` at start); `merges` lists the records of
//! this project; `unmerge` undoes one, so the merged branch's items are no longer seen from
//! the branch it was merged into.

use crate::error::CliError;
use crate::output;
use cortex_service::MemoryService;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Subcommand)]
pub enum GitCommand {
    /// Bring this checkout's branch's path table to HEAD and record the merges its new commits
    /// show. Prints what it did as JSON.
    Sync {
        /// The repository [default: the current folder's].
        repo: Option<PathBuf>,
        /// Run by the git hook of this name: prints nothing and always exits 0 (a failure is
        /// one line on stderr), so git never stops on it.
        #[arg(long, value_name = "HOOK")]
        hook: Option<String>,
    },
    /// This project's merge records, oldest first, and the branches the current one sees.
    Merges,
    /// Undo the records of FROM merged into a branch: FROM's items are no longer seen from it
    /// (audited; a later sync does not record the same merge again).
    Unmerge {
        /// The branch that was merged.
        from: String,
        /// The branch it was merged into [default: the checked-out one].
        #[arg(long)]
        into: Option<String>,
    },
}

impl GitCommand {
    /// Run by a git hook: exits 0 whatever happens.
    pub fn is_hook(&self) -> bool {
        matches!(self, GitCommand::Sync { hook: Some(_), .. })
    }
}

pub fn run(service: Result<MemoryService, CliError>, command: GitCommand) -> Result<ExitCode, CliError> {
    match command {
        GitCommand::Sync { repo, hook: Some(hook) } => {
            let result =
                service.and_then(|s| Ok(s.git().sync(&repo.unwrap_or_else(|| PathBuf::from(".")))?));
            if let Err(e) = result {
                eprintln!("cortex ({hook} hook): {e}");
            }
            Ok(ExitCode::SUCCESS)
        }
        GitCommand::Sync { repo, hook: None } => {
            let report = service?.git().sync(&repo.unwrap_or_else(|| PathBuf::from(".")))?;
            output::json(&report);
            Ok(ExitCode::SUCCESS)
        }
        GitCommand::Merges => {
            let service = service?;
            let branch = service.inferred_scope().scope.branch.clone().unwrap_or_default();
            let merges = service.git().merges()?;
            let seen: Vec<_> = service
                .git()
                .visible_from(&branch)?
                .into_iter()
                .map(|(branch, until)| json!({"branch": branch, "items_created_until": until}))
                .collect();
            output::json(&json!({"merges": merges, "branch": branch, "sees": seen}));
            Ok(ExitCode::SUCCESS)
        }
        GitCommand::Unmerge { from, into } => {
            let undone = service?.git().unmerge(&from, into.as_deref())?;
            output::json(&json!({"undone": undone}));
            Ok(if undone == 0 { ExitCode::from(2) } else { ExitCode::SUCCESS })
        }
    }
}
