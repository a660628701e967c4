//! MCP protocol adapter: maps the tools `memory_store` and `memory_find`, the resources and the
//! prompt onto the memory service, whatever the transport, using the official `rmcp` SDK. It
//! serves stdio itself; the team application (`cortex-server`) serves the same handler over
//! Streamable HTTP, telling it who asks ([`principal`]) and keeping its metrics ([`CallMetrics`]).

pub mod frame;
mod metrics;
pub mod principal;
mod resources;
mod schema;
mod server;
pub mod transport;

pub use metrics::{CallMetrics, CallOutcome};
pub use resources::{HISTORY_TEMPLATE, templates as resource_templates};
pub use schema::{FIND_TOOL, STORE_TOOL, tools};
pub use server::CortexServer;

use cortex_service::MemoryService;
use rmcp::ServiceExt;
use rmcp::service::ServerInitializeError;
use std::sync::Arc;

/// Why an MCP session on stdio ended other than by the client leaving.
#[derive(Debug, thiserror::Error)]
pub enum StdioError {
    #[error("MCP session failed to start: {0}")]
    Start(Box<ServerInitializeError>),
    /// The session's task panicked or was cancelled.
    #[error("MCP session ended abnormally: {0}")]
    Ended(#[from] tokio::task::JoinError),
}

/// Serves MCP on stdin/stdout until the client leaves. Returns `Ok` on a clean exit,
/// including a stateless client that only asked `server/discover` and closed the stream.
pub async fn serve_stdio(service: Arc<MemoryService>) -> Result<(), StdioError> {
    let server = CortexServer::new(service);
    let stdin = tokio::io::BufReader::with_capacity(1 << 20, tokio::io::stdin());
    let transport = transport::LineTransport::new(stdin, tokio::io::stdout());
    let running = match server.serve(transport).await {
        Ok(running) => running,
        Err(ServerInitializeError::ConnectionClosed(waiting_for)) => {
            tracing::info!("client left before initializing (while waiting for the {waiting_for})");
            return Ok(());
        }
        Err(e) => return Err(StdioError::Start(Box::new(e))),
    };
    match running.waiting().await {
        Ok(reason) => {
            tracing::info!(?reason, "client left");
            Ok(())
        }
        Err(e) => Err(StdioError::Ended(e)),
    }
}
