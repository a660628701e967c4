//! What the MCP server reports of each tool call to a transport that keeps metrics (the team
//! application's `/metrics`). A trait, so the adapter knows nothing of how or where they are shown.

use std::time::Duration;

pub trait CallMetrics: Send + Sync {
    /// One finished tool call: its tool, find mode (`store` for memory_store), outcome (`ok`,
    /// `refused`, `error`, `forbidden`, `timeout`) and how long it took.
    fn tool_call(&self, tool: &str, mode: &str, outcome: &str, took: Duration);

    /// `n` items of a memory_store call that came to `outcome` (`inserted`, `skipped_dedupe`, …).
    fn store_items(&self, outcome: &str, n: u64);
}
