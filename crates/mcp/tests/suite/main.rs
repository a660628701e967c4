//! The MCP adapter's integration tests, one binary (one link): the tool definitions every client
//! accepts, the framing under fuzzing, and no HTTP server among its dependencies.

mod dependencies;
mod fuzz_framing;
mod tool_definitions;
