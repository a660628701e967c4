//! `cortex install claude-code|codex|cursor`: writes the MCP server entry (and, for Claude
//! Code, its session-start and prompt-submit hooks) into that client's own config file, keeping
//! everything else the file holds. `cortex install git-hooks`: the repository's git hooks that
//! keep memory in step with the code. Running it twice changes nothing; `--dry-run` only says what
//! it would do; a file it cannot parse is left untouched and named in the error.
//!
//! - [`json_file`]: the JSON configs (Claude Code, Cursor)
//! - [`codex`]: Codex's TOML config
//! - [`launcher`]: the command that starts cortex (its path, or `uvx` when uvx runs it)
//! - [`server_env`]: the settings the server entry carries (the database the user named)
//! - [`hooks`]: the hooks (Claude Code's settings, Codex's and Cursor's hooks files), Cursor's rule
//! - [`git_hooks`]: the repository's git hooks

mod codex;
mod git_hooks;
mod hooks;
mod json_file;
mod launcher;
mod server_env;

use crate::error::CliError;
use crate::output;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Client {
    ClaudeCode,
    Codex,
    Cursor,
    /// This repository's git hooks (post-commit, post-merge, post-checkout): `cortex git sync`.
    GitHooks,
}

#[derive(clap::Args)]
pub struct InstallArgs {
    /// The agent to wire to this cortex.
    client: Client,
    /// This project only (the current folder's config): the default for Claude Code and Cursor.
    #[arg(long, conflicts_with = "user")]
    project: bool,
    /// Every project of this user (the config in your home folder): the default for Codex.
    #[arg(long)]
    user: bool,
    /// Print what would change and write nothing.
    #[arg(long)]
    dry_run: bool,
}

/// One edit of one file: what it changes, and the file's new text.
pub struct Edit {
    pub path: PathBuf,
    /// Human-readable lines, e.g. `+ mcpServers.cortex`.
    pub changes: Vec<String>,
    pub text: String,
}

/// `db` is the `--db` value (clap fills it from `CORTEX_DB` too).
pub fn run(args: InstallArgs, db: Option<String>) -> Result<ExitCode, CliError> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .ok_or_else(|| CliError::argument("HOME", "is not set: cannot find your config files"))?;
    let here =
        std::env::current_dir().map_err(|e| CliError::io("read", Path::new("the current folder"), e))?;
    let exe =
        std::env::current_exe().map_err(|e| CliError::io("find", Path::new("this cortex binary"), e))?;
    let launcher = launcher::Launcher::current(&exe, &home);
    // Hooks are shell command lines: the launcher's, quoted where needed.
    let exe = launcher.shell_prefix();
    let env = server_env::server_env(db.as_deref(), |k| std::env::var(k).ok(), &here);
    let user = match args.client {
        Client::Codex if args.project => {
            return Err(CliError::argument(
                "--project",
                "Codex reads MCP servers from ~/.codex/config.toml only: run without --project",
            ));
        }
        Client::Codex => true,
        _ => args.user,
    };
    let (here_settings, home_settings) =
        (here.join(".claude").join("settings.json"), home.join(".claude").join("settings.json"));
    let edits = match (args.client, user) {
        (Client::ClaudeCode, false) => vec![
            json_file::mcp_server(&here.join(".mcp.json"), &launcher, &env)?,
            json_file::approve_project_server(&here.join(".claude").join("settings.local.json"))?,
            hooks::claude_code(&here_settings, &exe)?,
        ],
        (Client::ClaudeCode, true) => vec![
            json_file::mcp_server(&home.join(".claude.json"), &launcher, &env)?,
            hooks::claude_code(&home_settings, &exe)?,
        ],
        (Client::Cursor, false) => vec![
            json_file::mcp_server(&here.join(".cursor").join("mcp.json"), &launcher, &env)?,
            hooks::cursor(&here.join(".cursor"), &exe)?,
            hooks::cursor_rule(&here.join(".cursor"))?,
        ],
        (Client::Cursor, true) => vec![
            json_file::mcp_server(&home.join(".cursor").join("mcp.json"), &launcher, &env)?,
            hooks::cursor(&home.join(".cursor"), &exe)?,
            hooks::cursor_rule(&home.join(".cursor"))?,
        ],
        (Client::GitHooks, _) => {
            let dir = cortex_service::git::hooks_dir(&here)?;
            apply(git_hooks::edits(&dir, &exe, &env)?, args.dry_run)?;
            if !args.dry_run {
                git_hooks::make_executable(&dir)?;
            }
            return Ok(ExitCode::SUCCESS);
        }
        (Client::Codex, _) => {
            let passed = server_env::passed_through(|k| std::env::var(k).ok());
            vec![
                codex::mcp_server(&home.join(".codex").join("config.toml"), &launcher, &env, &passed)?,
                hooks::codex(&home.join(".codex").join("hooks.json"), &exe, &env)?,
            ]
        }
    };
    apply(edits, args.dry_run)?;
    // Claude Code's settings carry the same settings to the hooks. Edited after the files above
    // are written, since it may be one of them; per user, as a database path is (not in the
    // project's shared settings.json).
    let settings = match (args.client, user) {
        (Client::ClaudeCode, false) => Some(here.join(".claude").join("settings.local.json")),
        (Client::ClaudeCode, true) => Some(home.join(".claude").join("settings.json")),
        _ => None,
    };
    if let Some(path) = settings {
        apply(vec![json_file::settings_env(&path, &env)?], args.dry_run)?;
    }
    if args.client == Client::Codex {
        // An untrusted hook is skipped without a word, so the user must hear it here.
        output::note(
            "Codex runs a new or changed hook only once you trust it: open /hooks in Codex and trust \
             cortex's (for scripted `codex exec` runs whose hooks you have checked: \
             --dangerously-bypass-hook-trust)",
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn apply(edits: Vec<Option<Edit>>, dry_run: bool) -> Result<(), CliError> {
    for edit in edits.into_iter().flatten() {
        report(&edit, dry_run);
        if !dry_run {
            write(&edit.path, &edit.text)?;
        }
    }
    Ok(())
}

fn report(edit: &Edit, dry_run: bool) {
    let verb = if dry_run { "would change" } else { "changed" };
    output::line(&format!("{verb} {}:", edit.path.display()));
    for change in &edit.changes {
        output::line(&format!("  {change}"));
    }
}

/// The file as it is, or `None` when it does not exist yet.
fn read(path: &Path) -> Result<Option<String>, CliError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(CliError::io("read", path, e)),
    }
}

/// Writes through a temporary file renamed over the original: a crash never leaves half a
/// config.
fn write(path: &Path, text: &str) -> Result<(), CliError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| CliError::io("create", dir, e))?;
    }
    let temp = path.with_extension("cortex-install.tmp");
    std::fs::write(&temp, text).map_err(|e| CliError::io("write", &temp, e))?;
    std::fs::rename(&temp, path).map_err(|e| CliError::io("replace", path, e))
}

/// Says "already installed" for a file that needs no change.
fn unchanged(path: &Path, what: &str) -> Option<Edit> {
    output::line(&format!("{} already has {what}: nothing to change", path.display()));
    None
}
