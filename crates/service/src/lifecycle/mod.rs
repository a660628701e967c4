//! What happens to items over time, past what a store call does: expired items purged for good
//! (`purge`), and the caller's deleted items listed to be restored (`deleted`; the restore
//! itself is a `memory_store` operation). When an item expires is the domain's rule
//! (`cortex_domain::lifecycle`, `cortex_domain::ttl`).

mod deleted;
mod purge;

pub use deleted::{DeletedItem, DeletedItems};
pub use purge::{PurgeReport, interval_from_env};

use crate::MemoryService;

/// Purge and deleted items as one caller is served (see the module doc); made by
/// [`MemoryService::lifecycle`].
pub struct Lifecycle<'a> {
    pub(crate) service: &'a MemoryService,
}
