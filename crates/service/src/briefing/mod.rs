//! What an agent is told without asking: the session briefing (`context`, `cortex context`
//! and the MCP resource) and the prompt's recall (`recall`, `cortex recall`, the
//! prompt-submit hook).

mod context;
mod recall;
