//! What the team application fails with, besides the refusals it answers (`problem`: the
//! request's to fix, as JSON with a code and a hint). [`ServeError`]: `cortex serve --http`
//! cannot start, the message naming what to fix (a TLS file, the address, the database).
//! [`Failure`]: a request's work failed inside the server — the store, a blocking task —
//! which is answered as a server-side failure and logged, never as the caller's fault. The
//! OAuth module's errors are its own (`oauth::issuer::IssuerError`, `oauth::code_flow`).

use cortex_service::ServiceError;
use cortex_service::config::ConfigError;
use std::net::SocketAddr;

pub type Result<T, E = ServeError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The certificate or its key, read again as the server starts, cannot be served.
    #[error(transparent)]
    Tls(#[from] ConfigError),
    #[error("cannot read the API keys: {0}")]
    Keys(ServiceError),
    #[error("cannot read the database: {0}")]
    Database(ServiceError),
    #[error("cannot listen on {addr}: {source}")]
    Listen { addr: SocketAddr, source: std::io::Error },
    /// The bound socket cannot say its own address.
    #[error(transparent)]
    Socket(std::io::Error),
    /// The start's blocking work (reading the keys and the schema) panicked.
    #[error(transparent)]
    Task(#[from] tokio::task::JoinError),
}

/// A request's work that failed inside the server.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Failure {
    #[error(transparent)]
    Service(#[from] ServiceError),
    /// A blocking task panicked or was cancelled.
    #[error(transparent)]
    Task(#[from] tokio::task::JoinError),
}
