//! A damaged index: its files checked against their checksums, a panic of its search turned
//! into an error, and the folder made anew. The index is derived from the store, so whatever
//! happened to its files, building it again from nothing loses nothing.

use crate::parallel::panic_message;
use crate::{LexicalError, LexicalIndex, OpenFailure, Place, Result};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

impl LexicalError {
    /// Whether the error says the index's files cannot be trusted (rather than that it is
    /// busy, being built, behind, or that the store failed): such an index is set aside and
    /// built again.
    pub fn is_damage(&self) -> bool {
        matches!(
            self,
            LexicalError::Open { .. }
                | LexicalError::Engine(_)
                | LexicalError::Io(_)
                | LexicalError::SearchPanicked { .. }
        )
    }
}

impl LexicalIndex {
    /// The files of the commit searches read whose content no longer matches the checksum
    /// tantivy wrote at their end (a disk error, a stray write): empty for a sound index.
    /// Reads every file once, so it is for a start, `doctor`, or a suspicion, not for a find.
    pub fn damaged_files(&self) -> Result<Vec<String>> {
        let damaged = guarded(|| Ok(self.index.validate_checksum()?))?;
        let mut names: Vec<String> = damaged.iter().map(|p| p.display().to_string()).collect();
        names.sort();
        Ok(names)
    }

    /// Empties the folder at `place` and opens a new index there (filled on the next catch-up
    /// or rebuild): what `cortex reindex --lexical` and a server's repair do with a damaged
    /// index. In memory, simply a new one.
    pub fn open_anew(place: &Place) -> Result<LexicalIndex> {
        if let Place::Dir(dir) = place {
            empty_folder(dir)?;
        }
        LexicalIndex::open(place)
    }

    /// Why the folder was emptied when this index was opened, if it was: its files could
    /// not be read (`doctor` names it).
    pub fn found_damaged(&self) -> Option<&str> {
        self.found_damaged.as_deref()
    }

    /// Lets no waiting fold start: the index is being replaced, and its folder emptied.
    pub fn retire(&self) {
        self.folding.retire();
    }
}

/// `run`, with a panic (tantivy reading a file whose bytes were overwritten) as an error.
pub(crate) fn guarded<T>(run: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(run))
        .unwrap_or_else(|panic| Err(LexicalError::SearchPanicked { message: panic_message(&*panic) }))
}

/// Removes everything in `dir` (the index's files and tantivy's lock files), keeping the folder.
pub(crate) fn empty_folder(dir: &Path) -> Result<()> {
    let failed = |e: std::io::Error| LexicalError::Open {
        path: dir.display().to_string(),
        reason: OpenFailure::Empty(e),
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(failed(e)),
    };
    for entry in entries {
        let path = entry.map_err(failed)?.path();
        let removed =
            if path.is_dir() { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
        match removed {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(failed(e)),
            _ => {}
        }
    }
    Ok(())
}
