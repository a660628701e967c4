//! A damaged lexical index noticed, set aside and built again from nothing.
//!
//! Damage shows in three ways: tantivy fails or panics reading the files (a search, a catch-up),
//! the files fail the checksums tantivy wrote at their end (checked once at `serve`'s start,
//! by `doctor`, and when the index finds nothing where the database finds something), or the
//! folder cannot be read at opening (`LexicalIndex::open` empties it then). A damaged index is
//! set aside at once: finds ask the database's own text search and say so, the reason is
//! logged once, and the server builds the index again on a thread of its own, the way
//! `cortex reindex --lexical` does. Nothing is lost: the index is derived from the store.

use super::Lexical;
use cortex_lexical::{LexicalIndex, Place};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How often, at most, a suspicion (the index found nothing, the database something) has the
/// index's files checked: the check reads every file, and a query the database's looser
/// matching finds (a substring, say) is no damage, so it must not cost a read per find.
const SUSPICION_CHECK_EVERY: Duration = Duration::from_secs(300);

#[derive(Default)]
pub(super) struct Health {
    /// Why the index is set aside, while it is.
    set_aside: Mutex<Option<String>>,
    /// Held while the index is built anew: one build at a time.
    building: Mutex<()>,
    /// When a suspicion last had the files checked.
    last_check: Mutex<Option<Instant>>,
}

impl Health {
    /// Why the index is set aside, if it is.
    pub(super) fn set_aside(&self) -> Option<String> {
        self.set_aside.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl Lexical {
    /// Sets `index` aside as damaged (`reason`): logged once, finds ask the database, and the
    /// index is built again on a thread of its own. An index already replaced is left alone.
    pub(super) fn set_aside(self: &Arc<Self>, index: &Arc<LexicalIndex>, reason: String) {
        {
            let mut aside = self.health.set_aside.lock().unwrap_or_else(PoisonError::into_inner);
            let current = self.opened().is_some_and(|now| Arc::ptr_eq(&now, index));
            if aside.is_some() || !current {
                return;
            }
            *aside = Some(reason.clone());
        }
        let place = index.place().clone();
        tracing::error!(
            index = %place,
            %reason,
            "the lexical index is damaged: finds ask the database's own text search while it is built again"
        );
        let lexical = self.clone();
        let spawned = std::thread::Builder::new().name("lexical-repair".into()).spawn(move || {
            match lexical.build_anew(&place, &mut |_, _| {}) {
                Ok(index) => tracing::info!(
                    index = %place,
                    items = index.documents(),
                    "the lexical index was built again; finds use it"
                ),
                Err(e) => tracing::error!(
                    index = %place,
                    "the lexical index could not be built again; finds keep asking the database (run `cortex reindex --lexical`): {e}"
                ),
            }
        });
        if let Err(e) = spawned {
            tracing::error!("cannot start the lexical index's repair (run `cortex reindex --lexical`): {e}");
        }
    }

    /// The index found nothing where the database found `theirs` items: its files are checked
    /// on a thread of their own, at most once in [`SUSPICION_CHECK_EVERY`].
    pub(super) fn suspect(self: &Arc<Self>, index: &Arc<LexicalIndex>, theirs: usize) {
        {
            let mut last = self.health.last_check.lock().unwrap_or_else(PoisonError::into_inner);
            if last.is_some_and(|at| at.elapsed() < SUSPICION_CHECK_EVERY) {
                return;
            }
            *last = Some(Instant::now());
        }
        tracing::info!(
            database = theirs,
            "the lexical index found nothing where the database found items; checking its files"
        );
        let (lexical, index) = (self.clone(), index.clone());
        let spawned = std::thread::Builder::new()
            .name("lexical-check".into())
            .spawn(move || lexical.check_files(&index));
        if let Err(e) = spawned {
            tracing::warn!("cannot start the lexical index's check: {e}");
        }
    }

    /// Sets `index` aside when its files fail their checksums.
    pub(super) fn check_files(self: &Arc<Self>, index: &Arc<LexicalIndex>) {
        match index.damaged_files() {
            Ok(damaged) if damaged.is_empty() => {}
            Ok(damaged) => self.set_aside(
                index,
                format!("{} file(s) fail their checksum: {}", damaged.len(), damaged.join(", ")),
            ),
            Err(e) if e.is_damage() => self.set_aside(index, e.to_string()),
            Err(e) => tracing::warn!("the lexical index's files could not be checked: {e}"),
        }
    }

    /// Empties the index's folder, builds the index there from every item of the store, and
    /// puts it in place of the old one, which finds stop reading (they ask the database until
    /// the new one is in place).
    pub(super) fn build_anew(
        &self,
        place: &Place,
        progress: cortex_lexical::Progress<'_>,
    ) -> crate::Result<Arc<LexicalIndex>> {
        let failed = crate::ServiceError::Lexical;
        let _one_at_a_time = self.health.building.lock().unwrap_or_else(PoisonError::into_inner);
        let old = self.index.write().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(old) = old {
            old.retire();
        }
        let fresh = LexicalIndex::open_anew(place).map_err(failed)?;
        fresh.rebuild(self.store.as_ref(), progress).map_err(failed)?;
        let fresh = Arc::new(fresh);
        *self.index.write().unwrap_or_else(PoisonError::into_inner) = Some(fresh.clone());
        *self.health.set_aside.lock().unwrap_or_else(PoisonError::into_inner) = None;
        Ok(fresh)
    }
}
