//! `cortex ingest`: a project's decision records, changelog, docs and commits into memory.
//! It feeds the store flow (`crate::memory_store`): every item goes through
//! [`crate::MemoryStore::store`], so validation, governance and the audit trail apply exactly as
//! to an agent's `memory_store`.
//!
//! Files stay the source of truth, and running again is safe. Each item carries its source
//! in `metadata.ingest` (`from`: `files` or `git`; `root`: the repository or folder the files
//! are in; the file's `path`; the `key` of the item within it; the `hash` of what the file
//! made of it). A run lists the items earlier runs made under the same root of the same
//! project (`plan`) and compares: an unchanged item is not written at all (no audit record), a
//! changed one is updated in place (same id), a new one inserted, and the items of files that
//! are gone from what the run covers are deleted — never an item another root, another
//! project or an agent made. The listing is the store's `recent` read, filtered on the
//! metadata here. Every item carries the time of what it records (`occurred_at`).
//!
//! - [`files`]: which files, and the paths they are known by
//! - [`plan`]: what each item needs (insert, update, nothing, delete) and the supersedes
//! - [`export`]: the memory as Markdown files (`cortex export --markdown`), which ingest reads back
//! - [`apply`]: the writes, through the store flow, and the report of each result
//! - [`foresee`]: a dry run's writes checked as the store flow would, nothing written
//! - [`link`]: a supersede between two records stored before
//! - [`refresh`]: unchanged items whose file changed elsewhere, stamped at the current commit
//! - [`git`]: the commits of a repository, read with gix
//! - [`report`]: what a run did

mod apply;
mod export;
mod files;
mod foresee;
mod git;
mod link;
mod plan;
mod refresh;
pub mod report;

pub use git::Selection;

use crate::{MemoryService, Result};
use cortex_domain::provenance::{MAX_CLAIMED_FILES, normalize_path};
use cortex_domain::sources::{self, READER_VERSION, SourceItem};
use cortex_domain::{ErrorCode, Kind};
use plan::Wanted;
use report::{IngestReport, Missing, Passed};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// `cortex ingest` and `cortex export --markdown` as one caller is served (see the module doc); made by
/// [`MemoryService::ingest`].
pub struct Ingest<'a> {
    pub(crate) service: &'a MemoryService,
}

/// How far a run's writes have come: `(done, total)`, for a progress bar.
pub type Progress<'a> = &'a dyn Fn(u64, u64);

/// Commits read, planned and written at a time: a long history is never held whole.
const COMMITS_PER_ROUND: usize = 500;

/// The largest file read (a changelog of many years is a few hundred KiB).
const MAX_FILE_BYTES: u64 = 8 << 20;

impl Ingest<'_> {
    /// Reads the files under `paths` into decisions, releases and sections, and brings the
    /// memory in line with them (nothing is written with `dry_run`). A path that does not
    /// exist is named in the report and the others are read.
    pub fn files(&self, paths: &[PathBuf], dry_run: bool, progress: Progress<'_>) -> Result<IngestReport> {
        let mut report = IngestReport { dry_run, ..IngestReport::default() };
        let mut by_root: BTreeMap<String, Vec<files::Walked>> = BTreeMap::new();
        for path in paths {
            match files::walk(path) {
                Ok(walked) => by_root.entry(walked.root.clone()).or_default().push(walked),
                Err(e) if e.code == ErrorCode::NotFound => report.missing.push(Missing {
                    path: path.display().to_string(),
                    message: e.message,
                    human_hint: e.human_hint,
                }),
                Err(e) => return Err(e.into()),
            }
        }
        let component = self.service.inferred.scope.project.clone().unwrap_or_else(|| "project".into());
        for (root, walks) in by_root {
            // Paths relative to the service's own checkout name its files; another folder's do not.
            let ours = walks.first().is_some_and(|w| self.in_our_checkout(w.top.as_deref()));
            let mut wanted: BTreeMap<(String, String), Wanted> = BTreeMap::new();
            let mut seen = std::collections::HashSet::new();
            for walk in &walks {
                for (path, file) in &walk.files {
                    // Two PATHs may hold the same file (`docs` and `docs/adr`): read once.
                    if !seen.insert(path.as_str()) {
                        continue;
                    }
                    report.files += 1;
                    match read(file, path, &component, walk.in_decision_folder(path)) {
                        Ok(items) => {
                            for item in items {
                                let mut w = Wanted::new(path, item);
                                if ours {
                                    w.files = repository_paths([path.as_str()]);
                                }
                                wanted.insert((path.clone(), w.item.key.clone()), w);
                            }
                        }
                        Err(Unread::Passed(reason)) => {
                            report.passed_over.push(Passed { path: path.clone(), reason })
                        }
                        // An exported file that cannot be read back was edited wrongly: none of
                        // its edits are made, so the run says so as a refusal (exit 2).
                        Err(Unread::Broken(message)) => report.refused.push(report::Refusal {
                            path: path.clone(),
                            key: String::new(),
                            code: ErrorCode::InvalidValue.as_str().into(),
                            message,
                            human_hint: "fix the line named (or export again over it); an exported file \
                                         keeps its cortex_id front matter, or its `<!-- cortex: {…} -->` \
                                         line under each version heading"
                                .into(),
                        }),
                    }
                }
            }
            // Any kind: an exported file may hold any (a run deletes only what files made).
            let existing = self.ingested(plan::FROM_FILES, Some(&root), &Kind::ALL)?;
            let mut wanted: Vec<Wanted> = wanted.into_values().collect();
            self.match_exported(&mut wanted)?;
            let mut plan =
                plan::plan(&wanted, existing, |path| walks.iter().any(|w| w.covers(path)), &mut report);
            self.refresh(&wanted, &mut plan, &mut report)?;
            self.apply(plan::FROM_FILES, &root, &wanted, plan, &mut report, progress)?;
        }
        Ok(report)
    }

    /// One `change` per commit of the repository at `repo` (the checkout around it) reachable
    /// from HEAD that `select` keeps, oldest first; commits ingested before are left alone,
    /// and those an older version of ingest read differently are updated in place.
    pub fn commits(
        &self,
        repo: &Path,
        select: &Selection,
        dry_run: bool,
        progress: Progress<'_>,
    ) -> Result<IngestReport> {
        let mut report = IngestReport { dry_run, ..IngestReport::default() };
        let history = git::history(repo, select)?;
        let root = history.identity();
        let ours = self.in_our_checkout(Some(&history.top));
        let total = history.ids.len() as u64;
        report.files = history.ids.len();
        // Commits are known by their hash whatever checkout read them.
        let mut existing: HashMap<String, plan::Existing> = self
            .ingested(plan::FROM_GIT, None, &[Kind::Change])?
            .into_iter()
            .map(|e| (e.key.clone(), e))
            .collect();
        progress(0, total);
        for (round, ids) in history.ids.chunks(COMMITS_PER_ROUND).enumerate() {
            let mut wanted = Vec::with_capacity(ids.len());
            for id in ids {
                // A commit never changes: one this reader stored before is not read again.
                if existing.get(&id.to_string()).is_some_and(|e| e.reader == u64::from(READER_VERSION)) {
                    report.kind(Kind::Change.as_str()).unchanged += 1;
                    continue;
                }
                let commit = history.read(*id)?;
                let Some(message) = commit.read_message() else {
                    report.merges_without_message += 1;
                    continue;
                };
                let mut item = SourceItem::new(commit.hash.clone(), Kind::Change, commit.data(&message));
                item.metadata = commit.metadata(&message);
                item.occurred_at = Some(commit.commit_time);
                let mut w = Wanted::new("", item);
                if ours {
                    w.files = repository_paths(commit.files.iter().map(|f| f.path.as_str()));
                    w.commit = Some(commit.hash.clone());
                }
                wanted.push(w);
            }
            let known: Vec<plan::Existing> =
                wanted.iter().filter_map(|w| existing.remove(&w.item.key)).collect();
            // A commit never goes away from a history, which is no folder: nothing is deleted.
            let plan = plan::plan(&wanted, known, |_| false, &mut report);
            let done = (round * COMMITS_PER_ROUND) as u64;
            let step = |d: u64, _: u64| progress((done + d).min(total), total);
            self.apply(plan::FROM_GIT, &root, &wanted, plan, &mut report, &step)?;
            progress((done + ids.len() as u64).min(total), total);
        }
        Ok(report)
    }
}

impl Ingest<'_> {
    /// Whether `top` is the checkout the service stands in: the paths of its files are those
    /// of the service's path tables.
    fn in_our_checkout(&self, top: Option<&Path>) -> bool {
        let canonical = |p: &Path| p.canonicalize().ok();
        match (top, self.service.inferred.checkout.as_deref()) {
            (Some(top), Some(ours)) => canonical(top).is_some_and(|t| Some(t) == canonical(ours)),
            _ => false,
        }
    }

    /// Finds the stored item each exported file names: live, of the file's kind, in this
    /// memory. One not found (exported from another memory, or deleted since) is ingested
    /// like any other file's item.
    fn match_exported(&self, wanted: &mut [Wanted]) -> Result<()> {
        let ids: Vec<uuid::Uuid> = wanted.iter().filter_map(|w| Some(w.item.exported.as_ref()?.id)).collect();
        if ids.is_empty() {
            return Ok(());
        }
        let stored = self.service.view.get(&ids)?;
        let scope = &self.service.inferred.scope;
        let ours = |s: &cortex_store::StoredItem| {
            s.record.scope.org == scope.org && s.record.scope.project == scope.project
        };
        for w in wanted.iter_mut() {
            let Some(id) = w.item.exported.as_ref().map(|e| e.id) else { continue };
            w.matched = stored
                .iter()
                .find(|s| {
                    s.record.id == id && s.deleted_at.is_none() && s.record.kind == w.item.kind && ours(s)
                })
                .cloned()
                .map(Box::new);
        }
        Ok(())
    }
}

/// Why a file gives no item.
enum Unread {
    /// Not knowledge (a template, an index page, no text, not text at all).
    Passed(String),
    /// An exported file that does not read back.
    Broken(String),
}

/// The items of one file, or why it has none.
fn read(
    file: &Path,
    path: &str,
    component: &str,
    decision_folder: bool,
) -> std::result::Result<Vec<SourceItem>, Unread> {
    let passed = |reason: String| Unread::Passed(reason);
    let size = std::fs::metadata(file).map_err(|e| passed(format!("unreadable: {e}")))?.len();
    // A document, not a data dump: what is larger would not be stored whole anyway.
    if size > MAX_FILE_BYTES {
        return Err(passed(format!("larger than {} MiB", MAX_FILE_BYTES >> 20)));
    }
    let bytes = std::fs::read(file).map_err(|e| passed(format!("unreadable: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|_| passed("unreadable: not UTF-8 text".into()))?;
    if text.contains('\0') {
        return Err(passed("unreadable: holds NUL characters".into()));
    }
    let read = sources::read_file(path, &text, component, decision_folder);
    read.map(|(_, items)| items).map_err(|skip| match skip {
        sources::Skip::Exported(problem) => Unread::Broken(problem),
        other => Unread::Passed(other.reason()),
    })
}

/// The repository paths an item names as `source.files`: those a request may name (at most
/// as many as it may name, each as the store normalizes it), the others left out rather than
/// the item refused.
fn repository_paths<'p>(paths: impl IntoIterator<Item = &'p str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for path in paths {
        if out.len() == MAX_CLAIMED_FILES {
            break;
        }
        if let Ok(path) = normalize_path(path)
            && !out.contains(&path)
        {
            out.push(path);
        }
    }
    out
}
