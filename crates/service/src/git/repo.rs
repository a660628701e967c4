//! A repository read with gix (no `git` process): its HEAD, commits, trees, branches and their
//! reflogs, and whether a file in the working tree differs from HEAD's.

use super::{GitError, Part};
use gix::ObjectId;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Files larger than this are not read to tell whether they changed (a large file is rarely
/// what a memory is about; reading it would make a store slow).
const MAX_COMPARED_BYTES: u64 = 8 << 20;

/// An open repository.
pub(crate) struct Repo {
    inner: gix::Repository,
    /// The working tree's top folder (`None` for a bare repository).
    top: Option<PathBuf>,
}

/// What HEAD is: its commit and time, and its branch (`None`: detached).
#[derive(Debug, Clone)]
pub(crate) struct Head {
    pub commit: ObjectId,
    /// Committer time, epoch ms.
    pub time: i64,
    pub branch: Option<String>,
}

/// One commit as the history tables need it.
#[derive(Debug, Clone)]
pub(crate) struct CommitFacts {
    pub tree: ObjectId,
    pub parents: Vec<ObjectId>,
    /// Committer time, epoch ms.
    pub time: i64,
    pub message: String,
}

/// One entry of a tree: a file's blob (or link, or submodule commit) and its mode.
pub(crate) type Entry = (gix::objs::tree::EntryMode, ObjectId);

fn read_error(what: Part, e: impl std::error::Error + Send + Sync + 'static) -> GitError {
    GitError::Read { what, source: Arc::new(e) }
}

impl Repo {
    /// The repository holding `path` (a folder inside its working tree, or the repository).
    pub(crate) fn open(path: &Path) -> Result<Repo, GitError> {
        let inner = gix::discover(path).map_err(|e| GitError::not_a_repository(path, e))?;
        let top = inner.workdir().map(Path::to_path_buf);
        Ok(Repo { inner, top })
    }

    /// HEAD, or `None` in a repository without commits.
    pub(crate) fn head(&self) -> Result<Option<Head>, GitError> {
        let Ok(id) = self.inner.head_id() else { return Ok(None) };
        let commit = id.detach();
        let time = self.commit(commit)?.time;
        let branch = self
            .inner
            .head_name()
            .map_err(|e| read_error(Part::Head, e))?
            .and_then(|name| name.as_bstr().to_string().strip_prefix("refs/heads/").map(str::to_string));
        Ok(Some(Head { commit, time, branch }))
    }

    pub(crate) fn commit(&self, id: ObjectId) -> Result<CommitFacts, GitError> {
        let commit = self.inner.find_commit(id).map_err(|e| read_error(Part::Commit(id), e))?;
        let time = commit.time().map_err(|e| read_error(Part::Commit(id), e))?.seconds * 1000;
        let tree = commit.tree_id().map_err(|e| read_error(Part::Commit(id), e))?.detach();
        let parents = commit.parent_ids().map(|p| p.detach()).collect();
        let message = String::from_utf8_lossy(commit.message_raw_sloppy()).into_owned();
        Ok(CommitFacts { tree, parents, time, message })
    }

    /// The entries of a tree by name (names as bytes: a path is any bytes to git).
    pub(crate) fn tree(&self, id: ObjectId) -> Result<BTreeMap<Vec<u8>, Entry>, GitError> {
        let tree = self.inner.find_tree(id).map_err(|e| read_error(Part::Tree(id), e))?;
        let decoded = tree.decode().map_err(|e| read_error(Part::Tree(id), e))?;
        Ok(decoded.entries.iter().map(|e| (e.filename.to_vec(), (e.mode, e.oid.to_owned()))).collect())
    }

    /// Every file path (blob, link, submodule) of the tree `root`.
    pub(crate) fn files(&self, root: ObjectId) -> Result<std::collections::HashSet<String>, GitError> {
        let mut out = std::collections::HashSet::new();
        let mut todo = vec![(root, String::new())];
        while let Some((tree, prefix)) = todo.pop() {
            for (name, (mode, id)) in self.tree(tree)? {
                let path = format!("{prefix}{}", String::from_utf8_lossy(&name));
                match mode.is_tree() {
                    true => todo.push((id, format!("{path}/"))),
                    false => {
                        out.insert(path);
                    }
                }
            }
        }
        Ok(out)
    }

    /// The entry at `path` in the tree `root`, if any.
    pub(crate) fn entry_at(&self, root: ObjectId, path: &str) -> Result<Option<Entry>, GitError> {
        let mut tree = root;
        let mut parts = path.split('/').peekable();
        while let Some(part) = parts.next() {
            let entries = self.tree(tree)?;
            let Some((mode, id)) = entries.get(part.as_bytes()).copied() else { return Ok(None) };
            if parts.peek().is_none() {
                return Ok(Some((mode, id)));
            }
            if !mode.is_tree() {
                return Ok(None);
            }
            tree = id;
        }
        Ok(None)
    }

    /// The commits reachable from `tips` and not from `hidden`, newest first (by commit
    /// time). A hidden id the repository does not hold is left out.
    pub(crate) fn walk(&self, tips: &[ObjectId], hidden: &[ObjectId]) -> Result<Vec<ObjectId>, GitError> {
        let hidden: Vec<ObjectId> = hidden.iter().copied().filter(|id| self.has_commit(*id)).collect();
        let walk = self
            .inner
            .rev_walk(tips.iter().copied())
            .sorting(gix::revision::walk::Sorting::ByCommitTime(Default::default()))
            .with_hidden(hidden)
            .all()
            .map_err(|e| read_error(Part::History, e))?;
        let mut out = Vec::new();
        for info in walk {
            out.push(info.map_err(|e| read_error(Part::History, e))?.id);
        }
        Ok(out)
    }

    pub(crate) fn has_commit(&self, id: ObjectId) -> bool {
        self.inner.find_commit(id).is_ok()
    }

    /// A commit named by a full hash or the start of one (4 or more hex digits).
    pub(crate) fn resolve(&self, hash: &str) -> Option<ObjectId> {
        if let Ok(id) = ObjectId::from_hex(hash.as_bytes()) {
            return self.has_commit(id).then_some(id);
        }
        let prefix = gix::hash::Prefix::from_hex(hash).ok()?;
        match self.inner.objects.lookup_prefix(prefix, None) {
            Ok(Some(Ok(id))) if self.has_commit(id) => Some(id),
            _ => None,
        }
    }

    /// The local branches and their tips, and the remote-tracking ones by their name on the
    /// remote (`origin/x` → `x`), local ones first.
    pub(crate) fn branches(&self) -> Result<Vec<(String, ObjectId, bool)>, GitError> {
        let refs = self.inner.references().map_err(|e| read_error(Part::References, e))?;
        let mut out = Vec::new();
        for (iter, local) in [
            (refs.local_branches().map_err(|e| read_error(Part::Branches, e))?, true),
            (refs.remote_branches().map_err(|e| read_error(Part::Branches, e))?, false),
        ] {
            for reference in iter.peeled().map_err(|e| read_error(Part::Branches, e))? {
                let Ok(reference) = reference else { continue };
                let name = reference.name().as_bstr().to_string();
                let short = match local {
                    true => name.strip_prefix("refs/heads/").map(str::to_string),
                    false => name
                        .strip_prefix("refs/remotes/")
                        .and_then(|r| r.split_once('/'))
                        .map(|(_, b)| b.to_string()),
                };
                let Some(short) = short.filter(|s| s != "HEAD") else { continue };
                out.push((short, reference.id().detach(), local));
            }
        }
        Ok(out)
    }

    /// The commits a local branch's reflog says were made on it (`commit`, `commit (amend)`,
    /// `commit (merge)`, …): its own work, whichever branch holds it later.
    pub(crate) fn committed_on(&self, branch: &str) -> Vec<ObjectId> {
        let Ok(Some(reference)) = self.inner.try_find_reference(format!("refs/heads/{branch}").as_str())
        else {
            return Vec::new();
        };
        let mut platform = reference.log_iter();
        let Ok(Some(lines)) = platform.all() else { return Vec::new() };
        lines
            .filter_map(Result::ok)
            .filter(|line| line.message.starts_with(b"commit"))
            .map(|line| line.new_oid())
            .collect()
    }

    /// The blob id a file of the working tree would have, or `None` when it is not there (or
    /// too large to compare, or not a file or link). A link is hashed as its target, as git
    /// stores it, never followed.
    pub(crate) fn worktree_blob(&self, path: &str) -> Option<ObjectId> {
        let full = self.inside(path)?;
        let meta = std::fs::symlink_metadata(&full).ok()?;
        let data = if meta.file_type().is_symlink() {
            std::fs::read_link(&full).ok()?.to_string_lossy().into_owned().into_bytes()
        } else if meta.is_file() && meta.len() <= MAX_COMPARED_BYTES {
            std::fs::read(&full).ok()?
        } else {
            return None;
        };
        gix::objs::compute_hash(self.inner.object_hash(), gix::objs::Kind::Blob, &data).ok()
    }

    /// Whether the working tree holds a file or link at `path` (not following links).
    pub(crate) fn in_worktree(&self, path: &str) -> bool {
        self.inside(path).is_some_and(|full| {
            std::fs::symlink_metadata(full).is_ok_and(|m| m.is_file() || m.file_type().is_symlink())
        })
    }

    /// The working tree's file at `path` (already a repository path: relative, no `..`), if no
    /// folder on the way is a link: a link to a folder elsewhere must not make a file outside
    /// the checkout look like one of its own.
    fn inside(&self, path: &str) -> Option<PathBuf> {
        let mut full = self.top.clone()?;
        let mut parts = path.split('/').peekable();
        while let Some(part) = parts.next() {
            full.push(part);
            if parts.peek().is_some() && !std::fs::symlink_metadata(&full).ok()?.is_dir() {
                return None;
            }
        }
        Some(full)
    }
}
