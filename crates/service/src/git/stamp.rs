//! An item's provenance at store time ([`Stamper`]): the commit it is written at, whether
//! its files have uncommitted changes, and its files — those the request names, those its
//! text mentions that the repository has — each with the path's change count at that commit.
//!
//! With the checkout the service runs in (an item of its org and project), HEAD is the commit,
//! and the checked-out branch's path table, brought to HEAD first when a commit was made since
//! (this store pays for it, once), gives the counts. Without one (a team server, another
//! project's item), the item's branch's table stands in for the checkout: its head is the
//! commit unless the request names another, and a path exists when the table has it.

use super::repo::{Head, Repo};
use crate::MemoryService;
use cortex_domain::Scope;
use cortex_domain::provenance::{
    FileBaseline, PathChange, PathHead, PathState, Provenance, ProvenanceClaim, RepoBranch, mentioned_paths,
};
use cortex_store::TenantStore;
use gix::ObjectId;

/// The checkout, read once for a batch.
struct Checkout {
    repo: Repo,
    head: Head,
    head_tree: ObjectId,
    org: String,
    project: String,
    /// The checked-out branch's table is at HEAD: its counts are HEAD's.
    table_at_head: bool,
}

/// Stamps the items of one batch with their provenance.
pub(crate) struct Stamper<'a> {
    view: &'a dyn TenantStore,
    checkout: Option<Checkout>,
}

impl<'a> Stamper<'a> {
    /// Reads the service's checkout, if it has one, bringing its branch's table to HEAD when
    /// it is behind. A checkout that cannot be read is logged and stamps as no checkout.
    pub(crate) fn new(service: &'a MemoryService) -> Stamper<'a> {
        let checkout = service.shared.inferred.checkout.as_ref().and_then(|path| match open(service, path) {
            Ok(checkout) => checkout,
            Err(e) => {
                tracing::warn!("items are stored without their commit: {e}");
                None
            }
        });
        Stamper { view: service.view.as_ref(), checkout }
    }

    /// The provenance of an item of `scope` whose request claims `claim` and whose text is
    /// `text`; `keep`: files it concerned before (an update, a confirm). `None` when there is
    /// nothing to record.
    pub(crate) fn stamp(
        &self,
        scope: &Scope,
        claim: &ProvenanceClaim,
        text: &str,
        keep: &[String],
    ) -> crate::Result<Option<Provenance>> {
        let (org, project) =
            (scope.org.clone().unwrap_or_default(), scope.project.clone().unwrap_or_default());
        let mut files: Vec<String> = claim.files.clone();
        for path in keep {
            if !files.contains(path) {
                files.push(path.clone());
            }
        }
        let mentioned = mentioned_paths(text);
        match self.checkout.as_ref().filter(|c| c.org == org && c.project == project) {
            Some(c) => {
                for path in mentioned {
                    let exists = c.repo.entry_at(c.head_tree, &path).ok().flatten().is_some()
                        || c.repo.in_worktree(&path);
                    if exists && !files.contains(&path) {
                        files.push(path);
                    }
                }
                let branch = c.head.branch.clone().or_else(|| scope.branch.clone()).unwrap_or_default();
                let place = RepoBranch { org, project, branch };
                let rows = self.view.path_changes(&place, &files)?;
                let head_hex = c.head.commit.to_string();
                let names_another = |named: &String| !head_hex.starts_with(named.as_str());
                let (commit, commit_time, counted) = match &claim.commit {
                    Some(named) if names_another(named) => match c.repo.resolve(named) {
                        Some(id) => (id.to_string(), c.repo.commit(id).ok().map(|f| f.time), false),
                        None => (named.clone(), None, false),
                    },
                    _ => (head_hex.clone(), Some(c.head.time), c.table_at_head),
                };
                // The working tree differs from HEAD, not from an older commit a request names
                // (an ingested commit): only an item written at HEAD can be on uncommitted changes.
                let dirty = !claim.commit.as_ref().is_some_and(names_another)
                    && files.iter().any(|path| {
                        let committed = c.repo.entry_at(c.head_tree, path).ok().flatten().map(|(_, id)| id);
                        committed != c.repo.worktree_blob(path)
                    });
                Ok(Some(Provenance {
                    commit: Some(commit),
                    commit_time,
                    branch: c.head.branch.clone(),
                    dirty,
                    files: baselines(&files, &rows, counted),
                }))
            }
            None => {
                let branch = scope.branch.clone().unwrap_or_default();
                let place = RepoBranch { org, project, branch: branch.clone() };
                let mut asked = files.clone();
                asked.extend(mentioned.iter().cloned());
                let rows = self.view.path_changes(&place, &asked)?;
                for path in mentioned {
                    let known = rows.iter().any(|r| r.path == path && r.state == PathState::Present);
                    if known && !files.contains(&path) {
                        files.push(path);
                    }
                }
                let table: Option<PathHead> = self.view.path_head(&place)?;
                let (commit, commit_time, counted) = match (&claim.commit, &table) {
                    (Some(named), Some(t)) if t.commit.starts_with(named.as_str()) => {
                        (Some(t.commit.clone()), Some(t.time), true)
                    }
                    (Some(named), _) => (Some(named.clone()), None, false),
                    (None, Some(t)) => (Some(t.commit.clone()), Some(t.time), true),
                    (None, None) => (None, None, false),
                };
                if commit.is_none() && files.is_empty() {
                    return Ok(None);
                }
                Ok(Some(Provenance {
                    commit,
                    commit_time,
                    branch: table.is_some().then_some(branch),
                    dirty: false,
                    files: baselines(&files, &rows, counted),
                }))
            }
        }
    }

    /// The files an item concerned, as they are now on `scope`'s branch: a renamed one under
    /// its new name, a deleted one gone.
    pub(crate) fn followed(&self, scope: &Scope, provenance: &Provenance) -> crate::Result<Vec<String>> {
        let place = RepoBranch {
            org: scope.org.clone().unwrap_or_default(),
            project: scope.project.clone().unwrap_or_default(),
            branch: self
                .checkout
                .as_ref()
                .and_then(|c| c.head.branch.clone())
                .or_else(|| scope.branch.clone())
                .unwrap_or_default(),
        };
        let paths: Vec<String> = provenance.paths().map(str::to_string).collect();
        let rows = self.view.path_changes(&place, &paths)?;
        let mut out = Vec::new();
        for path in paths {
            let now = match rows.iter().find(|r| r.path == path).map(|r| &r.state) {
                Some(PathState::Deleted) => None,
                Some(PathState::Renamed(to)) => Some(to.clone()),
                _ => Some(path),
            };
            if let Some(now) = now.filter(|p| !out.contains(p)) {
                out.push(now);
            }
        }
        Ok(out)
    }
}

/// Each file's count at the commit (`rows` counted there; a path without a row has no change
/// yet), or unknown.
fn baselines(files: &[String], rows: &[PathChange], counted: bool) -> Vec<FileBaseline> {
    files
        .iter()
        .map(|path| FileBaseline {
            path: path.clone(),
            changes: counted.then(|| rows.iter().find(|r| &r.path == path).map_or(0, |r| r.changes)),
        })
        .collect()
}

fn open(service: &MemoryService, path: &std::path::Path) -> crate::Result<Option<Checkout>> {
    let repo = Repo::open(path)?;
    let Some(head) = repo.head()? else { return Ok(None) };
    let table_at_head = table_to_head(service, &repo, &head)?;
    let head_tree = repo.commit(head.commit)?.tree;
    let scope = &service.shared.inferred.scope;
    let (org, project) = (scope.org.clone().unwrap_or_default(), scope.project.clone().unwrap_or_default());
    Ok(Some(Checkout { repo, head, head_tree, org, project, table_at_head }))
}

/// Brings the service's checkout's path table to HEAD, as the first store of a batch would
/// (for a caller that reads staleness before it stores). A checkout that cannot be read is
/// logged and left alone.
pub(crate) fn bring_table_to_head(service: &MemoryService) {
    let Some(path) = service.shared.inferred.checkout.as_ref() else { return };
    let bring = || -> crate::Result<()> {
        let repo = Repo::open(path)?;
        if let Some(head) = repo.head()? {
            table_to_head(service, &repo, &head)?;
        }
        Ok(())
    };
    if let Err(e) = bring() {
        tracing::warn!("the path table is not brought to HEAD: {e}");
    }
}

/// Whether the checked-out branch's table is at HEAD, after syncing it when it was behind.
fn table_to_head(service: &MemoryService, repo: &Repo, head: &Head) -> crate::Result<bool> {
    let Some(branch) = &head.branch else { return Ok(false) };
    // The server's own place, not the caller's: the checkout is the server's.
    let scope = &service.shared.inferred.scope;
    let place = RepoBranch {
        org: scope.org.clone().unwrap_or_default(),
        project: scope.project.clone().unwrap_or_default(),
        branch: branch.clone(),
    };
    let head_hex = head.commit.to_string();
    let at = |t: Option<PathHead>| t.is_some_and(|t| t.commit == head_hex);
    if at(service.view.path_head(&place)?) {
        return Ok(true);
    }
    // The table is the server's own upkeep, done for its checkout whoever stores.
    super::sync_with(service.shared.store.as_ref(), scope, repo, super::upkeep_context())?;
    Ok(at(service.view.path_head(&place)?))
}
