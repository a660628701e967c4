//! What the MCP server reports of each tool call to a transport that keeps metrics (the team
//! application's `/metrics`). A trait, so the adapter knows nothing of how or where they are shown.

use std::time::Duration;

/// What a tool call came to: the `outcome` of its `/metrics` series and of its access-log
/// line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallOutcome {
    /// Answered.
    Ok,
    /// The caller's to fix: a field of the request, a scope outside the key's bound, a path
    /// that spans every tenant.
    Refused,
    /// The server failed: the store, an index, the embedder.
    Error,
    /// The key's role does not include the tool.
    Forbidden,
    /// Ran past the HTTP server's time limit and was abandoned.
    Timeout,
}

impl CallOutcome {
    pub const ALL: [CallOutcome; 5] = [
        CallOutcome::Ok,
        CallOutcome::Refused,
        CallOutcome::Error,
        CallOutcome::Forbidden,
        CallOutcome::Timeout,
    ];

    /// The label as `/metrics` and the logs show it.
    pub fn as_str(self) -> &'static str {
        match self {
            CallOutcome::Ok => "ok",
            CallOutcome::Refused => "refused",
            CallOutcome::Error => "error",
            CallOutcome::Forbidden => "forbidden",
            CallOutcome::Timeout => "timeout",
        }
    }
}

impl std::fmt::Display for CallOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

pub trait CallMetrics: Send + Sync {
    /// One finished tool call: its tool, find mode (`store` for memory_store), outcome and how
    /// long it took.
    fn tool_call(&self, tool: &str, mode: &str, outcome: CallOutcome, took: Duration);

    /// `n` items of a memory_store call that came to `outcome` (`inserted`, `skipped_dedupe`, …).
    fn store_items(&self, outcome: &str, n: u64);
}
