use cortex_domain::ValidationError;
use cortex_store::StoreError;
use thiserror::Error;

pub type Result<T> = std::result::Result<T, ServiceError>;

/// A whole request failed: either the caller sent something to fix (`Invalid`, carrying the
/// field and a hint) or something broke inside (`Internal`, logged with context).
#[derive(Debug, Error)]
pub enum ServiceError {
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    #[error("internal error: {0}")]
    Internal(#[from] StoreError),
    /// The configured embedder cannot serve this store (its vectors came from another model),
    /// or is unavailable for a command that needs it.
    #[error("{0}")]
    Embedder(String),
    /// The lexical index cannot be built (`cortex reindex --lexical`); finds still work, through
    /// the database's own search.
    #[error(transparent)]
    Lexical(#[from] cortex_lexical::LexicalError),
    /// `cortex reindex --lexical` where there is no index to build.
    #[error("there is no lexical index to build: {}", crate::lexical_index::NO_INDEX)]
    NoLexicalIndex,
    /// What spans every tenant (counting, checking, purging, exporting the whole store, API
    /// keys, the audit chain), asked by the holder of an API key, whose view stops at its
    /// tenant's bound.
    #[error(
        "{0} spans every tenant, so it is the server operator's: run the `cortex` command on the server, as its local user, not under an API key"
    )]
    AdminOnly(&'static str),
    /// The git repository could not be read (`cortex git sync`, `cortex ingest --git`).
    #[error("{0}")]
    Git(String),
}

impl From<crate::git::GitError> for ServiceError {
    fn from(e: crate::git::GitError) -> ServiceError {
        match e {
            crate::git::GitError::NotARepository { path, reason } => {
                ServiceError::Invalid(ValidationError::new(
                    cortex_domain::ErrorCode::NotFound,
                    "repository",
                    format!("{path} is not in a git repository: {reason}"),
                    "run in a git checkout, or give its folder",
                ))
            }
            other => ServiceError::Git(other.to_string()),
        }
    }
}
