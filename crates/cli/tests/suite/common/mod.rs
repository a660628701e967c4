//! What the CLI's hook tests share: `cortex` started as an agent's hook starts it.

use std::path::Path;
use std::process::Command;

/// `cortex` in `dir` on `db`, at acme/api@main: the project folder as working directory, as
/// an agent runs a hook.
pub fn cortex(dir: &Path, db: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cortex"));
    command
        .current_dir(dir)
        .env("CORTEX_DB", db)
        .env("CORTEX_ORG", "acme")
        .env("CORTEX_PROJECT", "api")
        .env("CORTEX_BRANCH", "main")
        .env("CORTEX_EMBEDDER", "none")
        .env("CORTEX_LOG", "warn");
    command
}
