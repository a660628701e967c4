//! Where the store's live items are (org, project and branch, with how many), remembered by
//! the process until the store's change counter moves. The web UI's project picker asks on
//! every page load, and the count reads an index entry of every live item: at a million items
//! that is a tenth of a second of the database's CPU per page (BENCHMARKS.md), against one
//! cheap read of the counter.
//!
//! The counter is read before the places, so places read after a change committed are kept
//! under the older counter at worst, and the next call, seeing it moved, reads them again: an
//! answer is never older than the counter it was checked against.

use cortex_store::{Place, Result, Store};
use std::sync::{Arc, Mutex, PoisonError};

#[derive(Default)]
pub(crate) struct PlaceCounts {
    /// The change counter the places were read at, and the places.
    last: Mutex<Option<(i64, Arc<Vec<Place>>)>>,
}

impl PlaceCounts {
    /// Every place of the whole store, read again only when something changed since.
    pub fn current(&self, store: &dyn Store) -> Result<Arc<Vec<Place>>> {
        let counter = store.change_counter()?;
        if let Some((at, places)) = &*self.last.lock().unwrap_or_else(PoisonError::into_inner)
            && *at == counter
        {
            return Ok(places.clone());
        }
        let places = Arc::new(store.places()?);
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some((counter, places.clone()));
        Ok(places)
    }
}
