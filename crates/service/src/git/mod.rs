//! Memory that follows the code, the repository's side ([`Git`]): the path table of the
//! checked-out branch brought to HEAD, and the merges its new commits show, recorded. It runs
//! where the repository is — `cortex git sync` (which the git hooks `cortex install git-hooks`
//! writes run), `cortex ingest --git`, `cortex serve` at start, and a store whose checkout
//! moved since — never on a find: finds read the tables.
//!
//! - [`repo`]: the repository read with gix (HEAD, commits, trees, branches, reflogs, the
//!   working tree's files)
//! - [`history`]: what each commit did to paths
//! - [`paths`]: a branch's path table brought to its head
//! - [`merges`]: the merges new commits show
//! - [`stamp`]: an item's provenance at store time
//! - [`stale`]: which items may be out of date, read from the tables

pub(crate) mod history;
pub(crate) mod merges;
pub(crate) mod paths;
pub(crate) mod repo;
pub(crate) mod stale;
pub(crate) mod stamp;

use crate::{MemoryService, Result};
use cortex_domain::provenance::{BranchMerge, PathHead, RepoBranch, visible_branches};
use cortex_store::{Store, WriteContext};
use repo::Repo;
use serde::Serialize;
use std::path::Path;
use std::sync::Arc;

/// The repository could not be read.
#[derive(Debug, Clone, thiserror::Error)]
pub enum GitError {
    /// No repository holds the folder (or its `.git` cannot be opened).
    #[error("{path} is not in a git repository: {source}")]
    NotARepository { path: String, source: Arc<gix::Error> },
    /// The repository opened, but a part of it cannot be read (a missing or corrupt object, an
    /// unreadable reference).
    #[error("cannot read {what} of the repository: {source}; check it is whole (`git fsck`)")]
    Read { what: Part, source: Arc<dyn std::error::Error + Send + Sync> },
}

/// The part of a repository that could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Head,
    Commit(gix::ObjectId),
    Tree(gix::ObjectId),
    History,
    References,
    Branches,
}

/// As the error message names it: `HEAD`, `commit <hash>`, `the branches`…
impl std::fmt::Display for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Part::Head => f.write_str("HEAD"),
            Part::Commit(id) => write!(f, "commit {id}"),
            Part::Tree(id) => write!(f, "tree {id}"),
            Part::History => f.write_str("the history"),
            Part::References => f.write_str("the references"),
            Part::Branches => f.write_str("the branches"),
        }
    }
}

impl GitError {
    pub(crate) fn not_a_repository(path: &Path, source: gix::Error) -> GitError {
        GitError::NotARepository { path: path.display().to_string(), source: Arc::new(source) }
    }
}

/// What a sync did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SyncReport {
    /// The branch whose table was brought up to date (`None`: HEAD is detached, or the
    /// repository has no commit yet: nothing to do).
    pub branch: Option<String>,
    pub head: Option<String>,
    /// Commits read (compared with their parents).
    pub commits_read: usize,
    /// Rows of the path table written.
    pub paths_written: usize,
    /// The table was built from the whole history.
    pub rebuilt: bool,
    /// Merges recorded by this sync.
    pub merges: Vec<MergeRecorded>,
    /// What was not done, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One merge recorded.
#[derive(Debug, Clone, Serialize)]
pub struct MergeRecorded {
    pub from: String,
    pub into: String,
    pub how: &'static str,
    pub commit: String,
}

/// A merge record as `cortex git merges` lists it.
#[derive(Debug, Clone, Serialize)]
pub struct MergeView {
    pub id: i64,
    pub from: String,
    pub into: String,
    pub how: &'static str,
    pub commit: String,
    pub detected_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undone_at: Option<String>,
}

impl From<&BranchMerge> for MergeView {
    fn from(m: &BranchMerge) -> MergeView {
        MergeView {
            id: m.id,
            from: m.from_branch.clone(),
            into: m.into_branch.clone(),
            how: m.how.as_str(),
            commit: m.commit.clone(),
            detected_at: cortex_domain::time::format_instant(m.detected_at),
            undone_at: m.undone_at.map(cortex_domain::time::format_instant),
        }
    }
}

/// The git tables as one caller is served (see the module doc); made by
/// [`MemoryService::git`].
pub struct Git<'a> {
    pub(crate) service: &'a MemoryService,
}

impl Git<'_> {
    /// Brings the path table of the branch checked out at `repo` to its HEAD and records the
    /// merges its new commits show, in the caller's org and project.
    pub fn sync(&self, repo: &Path) -> Result<SyncReport> {
        let store = self.service.whole_store("keeping the git tables")?;
        let repo = Repo::open(repo)?;
        sync_with(store, &self.service.inferred.scope, &repo, self.service.write_context(SYNC))
    }

    /// [`Git::sync`] of the checkout the service was started in, on a thread of its own; a
    /// failure is logged. Nothing without a checkout.
    pub fn sync_in_background(&self) {
        let Some(checkout) = self.service.inferred.checkout.clone() else { return };
        let Ok(store) =
            self.service.whole_store("keeping the git tables").map(|_| self.service.shared.store.clone())
        else {
            return;
        };
        let scope = self.service.inferred.scope.clone();
        let context = upkeep_context();
        let spawned = std::thread::Builder::new().name("git-sync".into()).spawn(move || {
            let started = std::time::Instant::now();
            let result = Repo::open(&checkout)
                .map_err(crate::ServiceError::from)
                .and_then(|repo| sync_with(store.as_ref(), &scope, &repo, context));
            match result {
                Ok(r) => tracing::info!(
                    branch = r.branch.as_deref(),
                    commits = r.commits_read,
                    paths = r.paths_written,
                    merges = r.merges.len(),
                    ms = started.elapsed().as_millis() as u64,
                    "git tables brought up to date"
                ),
                Err(e) => tracing::warn!("cannot bring the git tables up to date: {e}"),
            }
        });
        if let Err(e) = spawned {
            tracing::warn!("cannot start the git sync: {e}");
        }
    }

    /// The merge records of the caller's project, oldest first.
    pub fn merges(&self) -> Result<Vec<MergeView>> {
        let (org, project) = self.project();
        Ok(self.service.view.merges(&org, &project)?.iter().map(MergeView::from).collect())
    }

    /// The branches whose items `branch` sees through merges (of the caller's project), each
    /// with the latest creation time it sees.
    pub fn visible_from(&self, branch: &str) -> Result<Vec<(String, String)>> {
        let (org, project) = self.project();
        let merges = self.service.view.merges(&org, &project)?;
        Ok(visible_branches(branch, &merges)
            .into_iter()
            .map(|m| (m.branch, cortex_domain::time::format_instant(m.until)))
            .collect())
    }

    /// Undoes the records of `from` merged into `into` (the caller's branch when `None`): the
    /// items of `from` are no longer seen from `into` (audited). How many records it undid.
    pub fn unmerge(&self, from: &str, into: Option<&str>) -> Result<u64> {
        let store = self.service.whole_store("undoing a merge record")?;
        let (org, project) = self.project();
        let branch = into
            .map(str::to_string)
            .or_else(|| self.service.inferred.scope.branch.clone())
            .unwrap_or_default();
        let place = RepoBranch { org, project, branch };
        let context = self.service.write_context("cortex git unmerge");
        Ok(store.undo_merges(&place, from, self.service.now()?, &context)?)
    }

    fn project(&self) -> (String, String) {
        let scope = &self.service.inferred.scope;
        (scope.org.clone().unwrap_or_default(), scope.project.clone().unwrap_or_default())
    }
}

/// The folder git runs the hooks of the repository holding `path` from: `core.hooksPath`
/// (relative to the working tree's top), else `hooks` in the repository's common folder (a
/// worktree's hooks are its main repository's).
pub fn hooks_dir(path: &Path) -> Result<std::path::PathBuf> {
    let repo = gix::discover(path).map_err(|e| GitError::not_a_repository(path, e))?;
    let configured = repo.config_snapshot().string("core.hooksPath").map(|p| p.to_string());
    Ok(match configured.filter(|p| !p.trim().is_empty()) {
        Some(p) => {
            let p = std::path::PathBuf::from(p.trim());
            match (p.is_absolute(), repo.workdir()) {
                (false, Some(top)) => top.join(p),
                _ => p,
            }
        }
        None => repo.common_dir().join("hooks"),
    })
}

/// What a sync's merge records say they came through.
const SYNC: &str = "cortex git sync";

/// The writer of the server's own upkeep of its checkout's tables: whoever runs the process.
pub(crate) fn upkeep_context() -> WriteContext {
    WriteContext {
        request_id: Some(uuid::Uuid::now_v7().to_string()),
        principal: Some(crate::os_user::local_principal().to_string()),
        via: Some(SYNC.into()),
        ..WriteContext::default()
    }
}

/// The sync of one repository into the tables of `scope`'s org and project, its merge
/// records written as `context`'s.
pub(crate) fn sync_with(
    store: &dyn Store,
    scope: &cortex_domain::Scope,
    repo: &Repo,
    context: WriteContext,
) -> Result<SyncReport> {
    let Some(head) = repo.head()? else {
        return Ok(SyncReport {
            note: Some("the repository has no commit yet".into()),
            ..SyncReport::default()
        });
    };
    let Some(branch) = head.branch.clone() else {
        return Ok(SyncReport {
            head: Some(head.commit.to_string()),
            note: Some("HEAD is detached: no branch's table to bring up to date".into()),
            ..SyncReport::default()
        });
    };
    let place = RepoBranch {
        org: scope.org.clone().unwrap_or_default(),
        project: scope.project.clone().unwrap_or_default(),
        branch: branch.clone(),
    };
    let old = store.path_head(&place)?;
    let old_commit = old.as_ref().and_then(|h| gix::ObjectId::from_hex(h.commit.as_bytes()).ok());
    let mut report = SyncReport {
        branch: Some(branch.clone()),
        head: Some(head.commit.to_string()),
        ..SyncReport::default()
    };
    if old_commit == Some(head.commit) {
        return Ok(report);
    }
    let mut update = paths::update(repo, &head, old_commit, |paths| Ok(store.path_changes(&place, paths)?))?;
    let at_head = repo.files(repo.commit(head.commit)?.tree)?;
    paths::settle_states(&mut update.rows, &at_head);
    let now = store.now()?;
    let table_head = PathHead { commit: head.commit.to_string(), time: head.time, synced_at: now };
    store.write_paths(&place, &table_head, &update.rows, update.whole)?;
    report.commits_read = update.commits_read;
    report.paths_written = update.rows.len();
    report.rebuilt = update.whole;
    for seen in merges::seen(repo, &branch, &head, &update.added)? {
        let merge = BranchMerge {
            id: 0,
            org: place.org.clone(),
            project: place.project.clone(),
            from_branch: seen.from.clone(),
            into_branch: branch.clone(),
            commit: seen.commit.to_string(),
            how: seen.how,
            detected_at: now,
            undone_at: None,
        };
        if store.record_merge(&merge, &context)?.is_some() {
            report.merges.push(MergeRecorded {
                from: seen.from,
                into: branch.clone(),
                how: seen.how.as_str(),
                commit: seen.commit.to_string(),
            });
        }
    }
    Ok(report)
}
