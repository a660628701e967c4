//! What an agent is told without asking: the session briefing (`context`, `cortex context`
//! and the MCP resource) and the prompt's recall (`recall`, `cortex recall`, the
//! prompt-submit hook).

mod context;
mod recall;

use crate::MemoryService;

/// The briefing and the recall hook as one caller is served (see the module doc); made by
/// [`MemoryService::briefing`].
pub struct Briefing<'a> {
    pub(crate) service: &'a MemoryService,
}
