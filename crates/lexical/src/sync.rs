//! Keeping the index current with the store, and building it from the store.
//!
//! The index's last commit carries a payload: the version of its schema, the identity of the
//! store it was built from (a random id kept in the store's own metadata, so a database
//! replaced at the same path or URL is not mistaken for the old one), and the change-log cursor
//! it has read to. A find reads the log from the cursor of the commit it searches into the
//! [`Delta`] (in memory, no commit on its path); the fold (`fold.rs`) commits the changes a
//! moment later, under tantivy's writer lock, so two processes never apply the same changes
//! twice, and the second one finds the first one's commit and starts from there.

use crate::delta::{Delta, DeltaDoc};
use crate::parallel::most_threads;
use crate::schema::VERSION;
use crate::{LexicalError, LexicalIndex, Result, View};
use cortex_store::{ChangeCursor, Store, StoredItem};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tantivy::directory::error::LockError;
use tantivy::indexer::NoMergePolicy;
use tantivy::{IndexWriter, TantivyDocument, TantivyError};
use uuid::Uuid;

/// Change-log entries read per page.
const CHANGES_PAGE: usize = 10_000;
/// Changed items a delta holds at most: beyond, a find commits them first (a bulk import by
/// another process), rather than hold thousands of documents in memory.
const DELTA_MOST: usize = 5_000;
/// Items read per page while building.
const BUILD_PAGE: usize = 2_000;
/// How long a commit waits for another process's writer lock before the find asks the
/// database instead (another process's fold takes milliseconds; its build, minutes).
const CATCH_UP_LOCK_WAIT: Duration = Duration::from_secs(2);
/// How long `cortex reindex --lexical` waits for it.
const BUILD_LOCK_WAIT: Duration = Duration::from_secs(60);
/// Indexing memory of a fold (tantivy's least) and of a build.
const CATCH_UP_HEAP: usize = 15_000_000;
const BUILD_HEAP: usize = 200_000_000;

/// Called as a build goes: items read so far, and how many there are.
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64);

#[derive(Debug, Default)]
pub(crate) struct SyncState {
    /// The store's change counter when the view was last brought up to date.
    counter: Option<i64>,
    /// The store's identity, read (or made) once.
    store_id: Option<String>,
}

impl SyncState {
    pub(crate) fn store_id(&mut self, store: &dyn Store) -> Result<String> {
        if let Some(id) = &self.store_id {
            return Ok(id.clone());
        }
        let id = cortex_store::identity(store)?;
        self.store_id = Some(id.clone());
        Ok(id)
    }
}

/// What the index's commits record about themselves.
#[derive(Debug, serde::Serialize, serde::Deserialize, PartialEq)]
struct Payload {
    version: u32,
    store: String,
    txn: i64,
    seq: i64,
}

impl Payload {
    fn cursor(&self) -> ChangeCursor {
        ChangeCursor { txn: self.txn, seq: self.seq }
    }
}

impl LexicalIndex {
    /// Brings what searches read up to date with every write committed to `store` (by any
    /// process) before this call: cheap when nothing was (one read of the change counter), a
    /// read of the changed items when something was. Their commit is left to a fold a moment
    /// later, on a thread of its own.
    pub fn catch_up(self: &Arc<Self>, store: &Arc<dyn Store>) -> Result<()> {
        crate::health::guarded(|| self.catch_up_unguarded(store))
    }

    fn catch_up_unguarded(self: &Arc<Self>, store: &Arc<dyn Store>) -> Result<()> {
        if self.building.load(Ordering::Acquire) {
            return Err(LexicalError::Building);
        }
        // Read the counter before the log: a write landing in between is read next time.
        let counter = store.change_counter()?;
        let mut state = self.lock_sync();
        if state.counter == Some(counter) {
            return Ok(());
        }
        let store_id = state.store_id(store.as_ref())?;
        let view = self.follower().caught_up_view(store.as_ref(), &store_id)?;
        let pending = !view.delta.is_empty();
        self.set_view(view);
        state.counter = Some(counter);
        drop(state);
        if pending {
            self.schedule_fold(store);
        }
        Ok(())
    }

    /// Builds the index again from every item of `store`, reporting progress; returns the live
    /// items indexed. Other processes keep reading the previous commit until this one lands.
    pub fn rebuild(&self, store: &dyn Store, progress: Progress<'_>) -> Result<u64> {
        self.follower().rebuild(store, progress)
    }

    /// The index as it follows the store's change log.
    pub(crate) fn follower(&self) -> Follower<'_> {
        Follower { index: self }
    }
}

/// The index following the store: the changes since its last commit read into a delta,
/// committed under tantivy's writer lock, or the whole store read into it anew.
pub(crate) struct Follower<'a> {
    index: &'a LexicalIndex,
}

impl Follower<'_> {
    /// [`LexicalIndex::rebuild`].
    fn rebuild(&self, store: &dyn Store, progress: Progress<'_>) -> Result<u64> {
        let mut state = self.index.lock_sync();
        let store_id = state.store_id(store)?;
        let mut writer = self.writer(most_threads(), BUILD_HEAP, BUILD_LOCK_WAIT)?;
        // A build's segments are merged once at its end, not level by level as it goes.
        writer.set_merge_policy(Box::new(NoMergePolicy));
        self.fill(&mut writer, store, &store_id, progress)?;
        writer.wait_merging_threads()?;
        self.try_merge_per_core();
        self.refresh_view(store, &store_id)?;
        // The merged-away segments' files are deleted once no searcher reads them (tantivy
        // keeps them for the view they were loaded in): now, rather than at the next commit,
        // so that the index a build leaves is its size on disk.
        let collected = self.writer(1, CATCH_UP_HEAP, CATCH_UP_LOCK_WAIT).and_then(|writer| {
            writer.garbage_collect_files().wait()?;
            Ok(())
        });
        if let Err(e) = collected {
            tracing::debug!("merged-away segment files are left to the next commit: {e}");
        }
        state.counter = None;
        Ok(self.index.reader.searcher().num_docs())
    }

    /// The current view with the log's changes since it read into its delta. Changes too many
    /// to hold, or that the log cannot list any more, are committed first.
    fn caught_up_view(&self, store: &dyn Store, store_id: &str) -> Result<View> {
        let current = match self.index.view() {
            Some(view) => view,
            None => Arc::new(self.committed_view(store, store_id)?),
        };
        if let Some(delta) = self.read_changes(&current.delta, store)? {
            return Ok(View { searcher: current.searcher.clone(), delta });
        }
        self.commit_changes(store, store_id)?;
        self.fresh_view(store, store_id)
    }

    /// Loads the last commit and reads the changes since it: what a fold or a build leaves.
    pub(crate) fn refresh_view(&self, store: &dyn Store, store_id: &str) -> Result<()> {
        self.index.set_view(self.fresh_view(store, store_id)?);
        Ok(())
    }

    /// The last commit with the changes since it.
    fn fresh_view(&self, store: &dyn Store, store_id: &str) -> Result<View> {
        let committed = self.committed_view(store, store_id)?;
        let delta = self.read_changes(&committed.delta, store)?.ok_or(LexicalError::Lagging)?;
        Ok(View { searcher: committed.searcher, delta })
    }

    /// The last commit for this store, loaded, with an empty delta at its cursor; the index is
    /// built first when it has none.
    fn committed_view(&self, store: &dyn Store, store_id: &str) -> Result<View> {
        // The cursor before the reload: a commit landing in between is newer than the cursor
        // says, and the changes it holds are read into the delta again (harmless).
        let payload = match self.committed_for(store_id) {
            Some(payload) => payload,
            None => {
                self.commit_changes(store, store_id)?;
                self.committed_for(store_id).ok_or(LexicalError::Lagging)?
            }
        };
        self.index.reader.reload()?;
        Ok(View { searcher: self.index.reader.searcher(), delta: Delta::empty(payload.cursor()) })
    }

    /// `delta` with the log's changes after its cursor; `None` when they are too many to hold,
    /// or the log no longer lists them all.
    fn read_changes(&self, delta: &Delta, store: &dyn Store) -> Result<Option<Delta>> {
        let mut delta = delta.clone();
        let mut analyzer = self.index.analyzer.clone();
        loop {
            let changes = store.changes_since(delta.cursor, CHANGES_PAGE)?;
            let stuck = !changes.complete && changes.next == delta.cursor;
            if changes.behind || stuck || delta.len() + changes.items.len() > DELTA_MOST {
                return Ok(None);
            }
            let live: HashMap<Uuid, StoredItem> = store
                .get(&changes.items)?
                .into_iter()
                .filter(|item| item.deleted_at.is_none())
                .map(|item| (item.record.id, item))
                .collect();
            for id in &changes.items {
                delta.put(*id, live.get(id).map(|item| DeltaDoc::of(item, &mut analyzer)));
            }
            delta.cursor = changes.next;
            if changes.complete {
                return Ok(Some(delta));
            }
        }
    }

    /// Commits the changes the log holds after the index's last commit, or builds the index
    /// when it has none for this store, under tantivy's writer lock.
    pub(crate) fn commit_changes(&self, store: &dyn Store, store_id: &str) -> Result<()> {
        let mut writer = match self.committed_for(store_id) {
            None => self.writer(most_threads(), BUILD_HEAP, CATCH_UP_LOCK_WAIT)?,
            Some(_) => self.writer(1, CATCH_UP_HEAP, CATCH_UP_LOCK_WAIT)?,
        };
        // Another process may have committed while this one waited for the lock.
        let added = match self.committed_for(store_id) {
            Some(p) => self.apply_changes(&mut writer, store, store_id, p.cursor())?,
            None => {
                writer.set_merge_policy(Box::new(NoMergePolicy));
                self.fill(&mut writer, store, store_id, &mut logged())?
            }
        };
        writer.wait_merging_threads()?;
        if added > DELTA_MOST {
            self.try_merge_per_core();
        }
        Ok(())
    }

    /// [`Self::merge_per_core`], whose failure (another process holding the writer, say) costs
    /// only speed: logged, never returned.
    fn try_merge_per_core(&self) {
        if let Err(e) = self.merge_per_core() {
            tracing::warn!(
                "the lexical index's segments were not merged; long questions are slower until its next build: {e}"
            );
        }
    }

    /// Merges the index into one segment per core a search may split across, the largest
    /// spread first. A build, or a bulk commit, leaves many segments (one per indexing heap
    /// filled); a split search then walks several per thread, each from its start, and every
    /// fresh start pays WAND's low threshold again (docs/BENCHMARKS_HISTORY.md, "one segment per
    /// core"). The merge commits nothing new: the payload stays the last commit's, and
    /// the merged-away files go at the next commit (or at once after a rebuild).
    pub(crate) fn merge_per_core(&self) -> Result<()> {
        let mut segments = self.index.index.searchable_segment_metas()?;
        let groups = most_threads();
        if segments.len() <= groups {
            return Ok(());
        }
        segments.sort_by_key(|s| std::cmp::Reverse(s.num_docs()));
        let mut grouped: Vec<(u32, Vec<tantivy::index::SegmentId>)> = vec![(0, Vec::new()); groups];
        for segment in &segments {
            let lightest = grouped.iter_mut().min_by_key(|(docs, _)| *docs).expect("at least one group");
            lightest.0 += segment.num_docs();
            lightest.1.push(segment.id());
        }
        let started = Instant::now();
        let mut writer = self.writer(1, CATCH_UP_HEAP, CATCH_UP_LOCK_WAIT)?;
        writer.set_merge_policy(Box::new(NoMergePolicy));
        let merges: Vec<_> =
            grouped.iter().filter(|(_, ids)| ids.len() > 1).map(|(_, ids)| writer.merge(ids)).collect();
        for merge in merges {
            merge.wait()?;
        }
        writer.wait_merging_threads()?;
        tracing::info!(
            segments = segments.len(),
            into = groups,
            ms = started.elapsed().as_millis() as u64,
            "lexical index merged"
        );
        Ok(())
    }

    /// Applies the changes after `cursor`; falls back to a build when the log no longer holds
    /// them all.
    fn apply_changes(
        &self,
        writer: &mut IndexWriter,
        store: &dyn Store,
        store_id: &str,
        mut cursor: ChangeCursor,
    ) -> Result<usize> {
        let started = Instant::now();
        let mut applied = 0usize;
        loop {
            let changes = store.changes_since(cursor, CHANGES_PAGE)?;
            if changes.behind || (!changes.complete && changes.next == cursor) {
                // Further behind than the log keeps, or a full page that cannot move the
                // cursor (a long transaction holds it back): read everything.
                return self.fill(writer, store, store_id, &mut logged());
            }
            for id in &changes.items {
                writer.delete_term(self.index.fields.id_term(*id));
            }
            for item in store.get(&changes.items)? {
                if item.deleted_at.is_none() {
                    writer.add_document(self.index.fields.document(&item))?;
                }
            }
            applied += changes.items.len();
            cursor = changes.next;
            if changes.complete {
                break;
            }
        }
        if applied == 0 {
            // Another process's commit holds every change already.
            return Ok(0);
        }
        self.commit(writer, store_id, cursor)?;
        tracing::debug!(
            items = applied,
            ms = started.elapsed().as_millis() as u64,
            "lexical index caught up"
        );
        Ok(applied)
    }

    /// Replaces the index's content with every live item of the store.
    fn fill(
        &self,
        writer: &mut IndexWriter,
        store: &dyn Store,
        store_id: &str,
        progress: Progress<'_>,
    ) -> Result<usize> {
        let started = Instant::now();
        self.index.building.store(true, Ordering::Release);
        let _done = Unset(&self.index.building);
        // Changes made while the items are read show up after this cursor, and are read again.
        let head = store.change_head()?;
        let total = store.stats()?.items.max(0) as u64;
        writer.delete_all_documents()?;
        let (mut after, mut read) = (None, 0u64);
        loop {
            let page = store.export_page(after, BUILD_PAGE)?;
            let Some(last) = page.last() else { break };
            after = Some(last.item.record.id);
            for exported in &page {
                if exported.item.deleted_at.is_none() {
                    writer.add_document(self.index.fields.document(&exported.item))?;
                }
            }
            read += page.len() as u64;
            progress(read, total.max(read));
        }
        self.commit(writer, store_id, head)?;
        tracing::info!(items = read, ms = started.elapsed().as_millis() as u64, "lexical index built");
        Ok(usize::try_from(read).unwrap_or(usize::MAX))
    }

    fn commit(&self, writer: &mut IndexWriter, store_id: &str, cursor: ChangeCursor) -> Result<()> {
        let payload =
            Payload { version: VERSION, store: store_id.to_string(), txn: cursor.txn, seq: cursor.seq };
        let mut prepared = writer.prepare_commit()?;
        prepared.set_payload(&serde_json::to_string(&payload).unwrap_or_default());
        prepared.commit()?;
        Ok(())
    }

    /// What the last commit recorded, if it is this version's index of the store `store_id`
    /// (`None` for an index never committed, unreadable, of another version or another store).
    fn committed_for(&self, store_id: &str) -> Option<Payload> {
        let meta = self.index.index.load_metas().ok()?;
        let payload: Payload = serde_json::from_str(meta.payload.as_deref()?).ok()?;
        (payload.version == VERSION && payload.store == store_id).then_some(payload)
    }

    /// tantivy's writer, waiting up to `wait` while another process holds its lock.
    fn writer(&self, threads: usize, heap: usize, wait: Duration) -> Result<IndexWriter> {
        let started = Instant::now();
        loop {
            match self.index.index.writer_with_num_threads::<TantivyDocument>(threads, heap) {
                Ok(writer) => return Ok(writer),
                Err(TantivyError::LockFailure(LockError::LockBusy, _)) if started.elapsed() < wait => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(TantivyError::LockFailure(LockError::LockBusy, _)) => {
                    return Err(LexicalError::Busy { seconds: wait.as_secs() });
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// Progress of a build no terminal watches (`serve`'s): a log line every tenth.
fn logged() -> impl FnMut(u64, u64) {
    let mut next = 1;
    move |done, total| {
        if total >= 10_000 && done * 10 >= next * total {
            tracing::info!(items = done, of = total, "building the lexical index");
            next = done * 10 / total + 1;
        }
    }
}

/// Clears the building flag when a build ends, however it ends.
struct Unset<'a>(&'a AtomicBool);

impl Drop for Unset<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}
