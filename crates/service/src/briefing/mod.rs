//! What an agent is told without asking: the session briefing (`context`, `cortex context`
//! and the MCP resource) and the prompt's recall (`recall`, `cortex recall`, the
//! prompt-submit hook), with what the hooks keep outside the database: each session's ledger
//! (`sessions`) and each project's counts (`tally`), small files under a lock (`state_file`).

mod context;
mod recall;
mod sessions;
mod state_file;
mod tally;
pub(crate) use tally::Tally;

pub use recall::{RecallRequest, Recalled, Weighed};
pub use sessions::Sessions;

use crate::MemoryService;

/// The briefing and the recall hook as one caller is served (see the module doc); made by
/// [`MemoryService::briefing`].
pub struct Briefing<'a> {
    pub(crate) service: &'a MemoryService,
}
