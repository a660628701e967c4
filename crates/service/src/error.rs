use cortex_domain::ValidationError;
use cortex_embed::EmbedError;
use cortex_store::StoreError;
use std::sync::Arc;
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
    #[error(transparent)]
    Embedder(#[from] EmbedderError),
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
    /// The git repository could not be read (`cortex git sync`, `cortex ingest --git`); a
    /// folder outside any repository is the caller's to fix, and answered as `Invalid`.
    #[error(transparent)]
    Git(crate::git::GitError),
}

/// Why semantic search cannot serve, or a command that embeds cannot run. A load failure is
/// kept and answered to every caller until the next try, so the embedder's own error is
/// shared (`Arc`), not copied into words.
#[derive(Debug, Clone, Error)]
pub enum EmbedderError {
    #[error(
        "the embedder is `none` (CORTEX_EMBEDDER=none): set CORTEX_EMBEDDER=local and install the model to enable semantic search"
    )]
    Off,
    /// The embedder cannot be loaded, or failed while embedding.
    #[error("{0}")]
    Embed(Arc<EmbedError>),
    #[error(
        "this memory's vectors come from {recorded}, but the configured embedder is {configured}: run `cortex reindex` to embed every item again with {configured}, or configure the embedder that made them (CORTEX_EMBEDDER, CORTEX_OPENAI_MODEL)"
    )]
    OtherModel { recorded: String, configured: String },
    /// The nearest vectors could not be read (the store or the vector file failed).
    #[error("{0}")]
    Nearest(Arc<crate::semantic::NearestError>),
}

impl From<EmbedError> for EmbedderError {
    fn from(e: EmbedError) -> EmbedderError {
        EmbedderError::Embed(Arc::new(e))
    }
}

impl From<crate::git::GitError> for ServiceError {
    fn from(e: crate::git::GitError) -> ServiceError {
        match e {
            crate::git::GitError::NotARepository { path, source } => {
                ServiceError::Invalid(ValidationError::new(
                    cortex_domain::ErrorCode::NotFound,
                    "repository",
                    format!("{path} is not in a git repository: {source}"),
                    "run in a git checkout, or give its folder",
                ))
            }
            other => ServiceError::Git(other),
        }
    }
}
