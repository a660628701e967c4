//! Vectors follow the embedder: items stored while no embedder was available (no model
//! installed yet, `CORTEX_EMBEDDER=none`, a remote embedder down) have no vectors, and dense
//! search cannot find them. `serve` embeds them in the background at start, in small batches
//! with a pause between them so that stores and finds keep their share of the cores; progress
//! goes to the log, `doctor` counts what is missing, and finds say semantic results are partial
//! while items wait.
//!
//! A local model installed while the server runs is loaded by the next store or find
//! (`Semantic::embedder` tries a missing model again every few seconds), which runs the
//! background embedding again (`resume_backfill`). Items stored while a remote embedder failed
//! wait for the next start.

use super::{Semantic, model_fits, vectors_for};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use uuid::Uuid;

/// Items embedded per batch: one call of the embedder, one write.
const BATCH: usize = 32;
/// The pause between batches: the embedder takes every core while it runs.
const PAUSE: Duration = Duration::from_millis(20);

#[derive(Default)]
pub(super) struct Backfill {
    /// Whether `serve` started a run: only then does an embedder becoming available start
    /// another.
    started: AtomicBool,
    running: AtomicBool,
    /// Items without vectors when the run started, and those embedded since.
    missing: AtomicU64,
    embedded: AtomicU64,
}

impl Backfill {
    /// Items still waiting for their vectors, as far as this process knows (0 when no
    /// background embedding counted any).
    fn waiting(&self) -> u64 {
        self.missing.load(Ordering::Acquire).saturating_sub(self.embedded.load(Ordering::Acquire))
    }
}

/// Clears the running flag however a run ends.
struct Done<'a>(&'a AtomicBool);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl Semantic {
    /// Embeds, on a thread of its own, every live item of the store that has no vector (none
    /// when the embedder is `none`, or a run is going already).
    pub fn embed_missing_in_background(self: &Arc<Self>) {
        self.backfill.started.store(true, Ordering::Release);
        if self.choice.model_id().is_none() || self.backfill.running.swap(true, Ordering::AcqRel) {
            return;
        }
        let semantic = self.clone();
        let spawned = std::thread::Builder::new().name("embed-missing".into()).spawn(move || {
            let _done = Done(&semantic.backfill.running);
            if let Err(e) = semantic.embed_missing() {
                tracing::warn!(
                    "embedding the items stored without vectors stopped; the next start tries again: {e}"
                );
            }
        });
        if let Err(e) = spawned {
            self.backfill.running.store(false, Ordering::Release);
            tracing::warn!("cannot start embedding the items stored without vectors: {e}");
        }
    }

    /// Runs the background embedding again once the embedder has become available (a local
    /// model installed while `serve` runs); nothing in a process that never started one.
    pub fn resume_backfill(self: &Arc<Self>) {
        if !self.became_available.swap(false, Ordering::AcqRel) {
            return;
        }
        if self.backfill.started.load(Ordering::Acquire) {
            tracing::info!("the embedder is available now; embedding the items stored without vectors");
            self.embed_missing_in_background();
        }
    }

    /// Items waiting for their vectors in this process's background embedding (0 when none
    /// is counted).
    pub fn waiting_for_vectors(&self) -> u64 {
        self.backfill.waiting()
    }

    /// `Err` is the warning the background thread logs before the next start tries again
    /// (the store, the embedder or the index failed: nothing waits for it or matches on it).
    fn embed_missing(&self) -> Result<(), String> {
        let store = self.store.as_ref();
        let missing = store.count_unembedded().map_err(|e| e.to_string())?.max(0) as u64;
        if missing == 0 {
            return Ok(());
        }
        let embedder = match self.embedder() {
            Ok(embedder) => embedder,
            Err(reason) => {
                tracing::warn!(items = missing, "items without vectors wait for an embedder: {reason}");
                return Ok(());
            }
        };
        if let Some(conflict) = self.conflict().map_err(|e| e.to_string())? {
            tracing::warn!(items = missing, "items without vectors are not embedded: {conflict}");
            return Ok(());
        }
        self.backfill.embedded.store(0, Ordering::Release);
        self.backfill.missing.store(missing, Ordering::Release);
        tracing::info!(items = missing, "embedding the items stored without vectors, in the background");
        let (mut after, mut done, mut next_report): (Option<Uuid>, u64, u64) = (None, 0, 1);
        loop {
            let ids = store.unembedded(after, BATCH).map_err(|e| e.to_string())?;
            let Some(last) = ids.last() else { break };
            after = Some(*last);
            let items = store.get(&ids).map_err(|e| e.to_string())?;
            let live: Vec<_> = items.iter().filter(|i| i.deleted_at.is_none()).map(|i| &i.record).collect();
            let rows = vectors_for(&embedder, &live).map_err(|e| e.to_string())?;
            let Some(first) = rows.first() else { continue };
            let model = format!("{}:{}", embedder.model_id().unwrap_or_default(), first.vector.len());
            if !model_fits(store, &model) {
                // The items stay waiting (finds keep saying so) until `cortex reindex`.
                return Ok(());
            }
            store.set_vectors(&rows).map_err(|e| e.to_string())?;
            done += rows.len() as u64;
            self.backfill.embedded.store(done, Ordering::Release);
            if done * 10 >= next_report * missing {
                tracing::info!(items = done, of = missing, "embedding the items stored without vectors");
                next_report = done * 10 / missing + 1;
            }
            std::thread::sleep(PAUSE);
        }
        // Whatever the count said, nothing is waiting now (an item deleted meanwhile counted).
        self.backfill.embedded.store(missing, Ordering::Release);
        tracing::info!(items = done, "the items stored without vectors are embedded");
        Ok(())
    }
}
