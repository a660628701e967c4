//! Folding the delta into the index: a commit of the changes a find has read, made on a thread
//! of its own a moment after the first of them, so that one commit carries every write of
//! that moment and no find waits for it. A service that closes folds what is left, so the next
//! process starts from a commit that holds it.

use crate::{LexicalIndex, Result};
use cortex_store::Store;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// How long a fold waits after the change that called for it: the writes of that second share
/// one commit (a busy team server stores tens of times a second, and a commit costs 10–20 ms).
const FOLD_DELAY: Duration = Duration::from_secs(1);

/// The fold's state in an index.
#[derive(Default)]
pub(crate) struct Folding {
    /// A fold is waiting to run.
    due: AtomicBool,
    /// Held while a fold runs: one at a time.
    running: Mutex<()>,
    /// The service closed: no waiting fold may start.
    closed: AtomicBool,
}

impl Folding {
    /// No waiting fold may start any more: the index is closing, or being replaced.
    pub(crate) fn retire(&self) {
        self.closed.store(true, Ordering::Release);
    }
}

impl LexicalIndex {
    /// Starts a fold in `FOLD_DELAY`, unless one is waiting already. The thread holds neither
    /// the index nor the store while it waits: a service closed meanwhile has folded already.
    pub(crate) fn schedule_fold(self: &Arc<Self>, store: &Arc<dyn Store>) {
        if self.folding.due.swap(true, Ordering::AcqRel) {
            return;
        }
        let (index, store) = (Arc::downgrade(self), Arc::downgrade(store));
        let spawned = std::thread::Builder::new().name("lexical-fold".into()).spawn(move || {
            std::thread::sleep(FOLD_DELAY);
            let (Some(index), Some(store)) = (index.upgrade(), store.upgrade()) else { return };
            index.folding.due.store(false, Ordering::Release);
            if index.folding.closed.load(Ordering::Acquire) {
                return;
            }
            if let Err(e) = index.fold(store.as_ref()) {
                tracing::warn!(
                    "the lexical index could not commit its recent changes; finds still see them: {e}"
                );
            }
        });
        if let Err(e) = spawned {
            self.folding.due.store(false, Ordering::Release);
            tracing::warn!("cannot start the lexical index's fold; the next find tries again: {e}");
        }
    }

    /// Commits the changes the delta holds (and any the log holds beyond it), then reads
    /// the new commit with whatever changed meanwhile. Finds go on reading the previous view
    /// until the new one is in place.
    pub fn fold(&self, store: &dyn Store) -> Result<()> {
        let _one_at_a_time = self.folding.running.lock().unwrap_or_else(PoisonError::into_inner);
        if self.view().is_none_or(|view| view.delta.is_empty()) {
            return Ok(());
        }
        let store_id = self.lock_sync().store_id(store)?;
        self.follower().commit_changes(store, &store_id)?;
        let _state = self.lock_sync();
        self.follower().refresh_view(store, &store_id)
    }

    /// Folds what is left and lets no waiting fold start: the service is closing.
    pub fn close(&self, store: &dyn Store) -> Result<()> {
        self.folding.retire();
        self.fold(store)
    }
}
