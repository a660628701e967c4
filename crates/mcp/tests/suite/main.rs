//! The MCP adapter's integration tests, one binary (one link): the tool definitions every client
//! accepts, the framing under fuzzing, and the HTTP gate.

mod fuzz_framing;
mod http_gate;
mod tool_definitions;
