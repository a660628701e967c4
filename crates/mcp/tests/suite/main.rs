//! The MCP adapter's integration tests, one binary (one link): the tool definitions every client
//! accepts, and the framing under fuzzing.

mod fuzz_framing;
mod tool_definitions;
