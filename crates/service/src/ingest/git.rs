//! The commits of a repository, read with gix (pure Rust: no `git` binary, no C library to
//! build), without its default features: opening a repository, references, walking commits
//! and diffing trees. Line counts come from imara-diff (Myers, as `git log --numstat`).
//!
//! A history is read in two passes so a long one is never held whole: the walk keeps only the
//! ids it selects (20 bytes each), and each commit is read in full — message, author, files —
//! when its turn to be written comes.

use cortex_domain::sources::commits::{Commit, FileChange};
use cortex_domain::{ErrorCode, ValidationError};
use gix::ObjectId;
use std::path::Path;

/// Which commits of the history: like `git log --since … --author … -n …`.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// A date (`YYYY-MM-DD` or RFC 3339: commits made at or after it) or a revision (a
    /// branch, a tag or a commit hash: commits it does not reach).
    pub since: Option<String>,
    /// Commits whose author's name or e-mail holds this text (case-insensitive).
    pub author: Option<String>,
    /// The newest this many, at most.
    pub max_commits: Option<usize>,
}

/// The commits selected, oldest first, by id.
pub(crate) struct History {
    repository: gix::Repository,
    pub ids: Vec<ObjectId>,
    /// Where the repository's files are (its work tree, else its git folder).
    pub top: std::path::PathBuf,
}

fn read_error(repo: &Path, e: &dyn std::fmt::Display) -> ValidationError {
    ValidationError::new(
        ErrorCode::InvalidValue,
        "--git",
        format!("cannot read the history of {}: {e}", repo.display()),
        "check that the repository is whole (`git fsck`), then run again",
    )
}

/// The commits reachable from HEAD of the repository around `repo` that `select` keeps.
pub(crate) fn history(repo: &Path, select: &Selection) -> Result<History, ValidationError> {
    let repository = gix::discover(repo).map_err(|e| {
        ValidationError::new(
            ErrorCode::NotFound,
            "--git",
            format!("{} is not in a git repository: {e}", repo.display()),
            "run in a git checkout, or give its folder: cortex ingest --git path/to/repo",
        )
    })?;
    let top = repository.workdir().unwrap_or(repository.git_dir()).to_path_buf();
    let head = match repository.head_id() {
        Ok(id) => id.detach(),
        // A repository without commits has no history to ingest.
        Err(_) => return Ok(History { repository, ids: Vec::new(), top }),
    };
    let since_date = select.since.as_deref().and_then(|s| cortex_domain::time::parse_instant(s).ok());
    let hidden = match (&select.since, since_date) {
        (Some(rev), None) => Some(resolve(&repository, rev)?),
        _ => None,
    };
    let sorting = match since_date {
        Some(at) => gix::revision::walk::Sorting::ByCommitTimeCutoff {
            seconds: at.div_euclid(1000),
            order: Default::default(),
        },
        None => gix::revision::walk::Sorting::ByCommitTime(Default::default()),
    };
    let mut walk = repository.rev_walk([head]).sorting(sorting);
    if let Some(hidden) = hidden {
        walk = walk.with_hidden([hidden]);
    }
    let author = select.author.as_deref().map(str::to_lowercase);
    let mut ids = Vec::new();
    for info in walk.all().map_err(|e| read_error(repo, &e))? {
        let info = info.map_err(|e| read_error(repo, &e))?;
        if let Some(wanted) = &author {
            let commit = info.object().map_err(|e| read_error(repo, &e))?;
            let signature = commit.author().map_err(|e| read_error(repo, &e))?;
            let who = format!("{} <{}>", signature.name, signature.email).to_lowercase();
            if !who.contains(wanted.as_str()) {
                continue;
            }
        }
        ids.push(info.id);
        if select.max_commits.is_some_and(|max| ids.len() >= max) {
            break;
        }
    }
    ids.reverse();
    Ok(History { repository, ids, top })
}

impl History {
    /// One commit in full: its message, author, dates and the files it changed against its
    /// first parent, with their line counts.
    pub fn read(&self, id: ObjectId) -> Result<Commit, ValidationError> {
        let fail = |e: &dyn std::fmt::Display| read_error(&self.top, e);
        let repo = &self.repository;
        let commit = repo.find_commit(id).map_err(|e| fail(&e))?;
        let author = commit.author().map_err(|e| fail(&e))?;
        let committer = commit.committer().map_err(|e| fail(&e))?;
        let seconds = |time: Result<gix::date::Time, _>| time.map(|t| t.seconds).unwrap_or_default();
        let parents: Vec<ObjectId> = commit.parent_ids().map(|p| p.detach()).collect();
        let tree = commit.tree().map_err(|e| fail(&e))?;
        let before = match parents.first() {
            Some(parent) => repo.find_commit(*parent).and_then(|p| p.tree()).map_err(|e| fail(&e))?,
            None => repo.empty_tree(),
        };
        let mut recorder = gix::diff::tree::Recorder::default();
        gix::diff::tree(
            gix::objs::TreeRefIter::from_bytes(&before.data, before.id.kind()),
            gix::objs::TreeRefIter::from_bytes(&tree.data, tree.id.kind()),
            &mut gix::diff::tree::State::default(),
            &repo.objects,
            &mut recorder,
        )
        .map_err(|e| fail(&e))?;
        let mut files = Vec::new();
        for change in recorder.records {
            use gix::diff::tree::recorder::Change;
            let (status, path, old, new, mode) = match change {
                Change::Addition { entry_mode, oid, path, .. } => ('A', path, None, Some(oid), entry_mode),
                Change::Deletion { entry_mode, oid, path, .. } => ('D', path, Some(oid), None, entry_mode),
                Change::Modification { previous_oid, oid, path, entry_mode, .. } => {
                    ('M', path, Some(previous_oid), Some(oid), entry_mode)
                }
            };
            if mode.is_tree() || mode.is_commit() {
                continue;
            }
            let (added, removed) = self.line_counts(old, new);
            files.push(FileChange { path: path.to_string(), status, added, removed });
        }
        // In the order `git log` lists them.
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(Commit {
            hash: id.to_string(),
            parents: parents.iter().map(ToString::to_string).collect(),
            message: String::from_utf8_lossy(commit.message_raw().map_err(|e| fail(&e))?).into_owned(),
            author_name: author.name.to_string(),
            author_email: author.email.to_string(),
            author_time: seconds(author.time()) * 1000,
            commit_time: seconds(committer.time()) * 1000,
            files,
        })
    }

    /// Lines added and removed between two versions of a file (none for a binary file, as
    /// `git log --numstat` shows `-`).
    fn line_counts(&self, old: Option<ObjectId>, new: Option<ObjectId>) -> (Option<u32>, Option<u32>) {
        let text = |id: Option<ObjectId>| -> Option<Option<String>> {
            let Some(id) = id else { return Some(Some(String::new())) };
            let blob = self.repository.find_blob(id).ok()?;
            // Git's own rule: a NUL in the first 8000 bytes makes a file binary.
            if blob.data.iter().take(8000).any(|b| *b == 0) {
                return Some(None);
            }
            Some(Some(String::from_utf8_lossy(&blob.data).into_owned()))
        };
        let (Some(Some(before)), Some(Some(after))) = (text(old), text(new)) else { return (None, None) };
        let input = imara_diff::InternedInput::new(before.as_str(), after.as_str());
        let diff = imara_diff::Diff::compute(imara_diff::Algorithm::Myers, &input);
        (Some(diff.count_additions()), Some(diff.count_removals()))
    }

    /// What tells this repository from another: its `origin` remote (the same on every clone),
    /// else the folder it is in.
    pub fn identity(&self) -> String {
        repository_identity(&self.repository, &self.top)
    }
}

/// `git:github.com/owner/repo` for a repository with an `origin` remote (however its URL is
/// written), else `dir:` and its folder.
pub(crate) fn repository_identity(repository: &gix::Repository, top: &Path) -> String {
    let url = repository.config_snapshot().string("remote.origin.url").map(|u| u.to_string());
    match url.as_deref().and_then(normalized_remote) {
        Some(remote) => format!("git:{remote}"),
        None => format!("dir:{}", top.display()),
    }
}

/// `host/path` of a remote URL: `https://user@github.com/o/r.git`, `git@github.com:o/r`,
/// `ssh://git@github.com/o/r/` are all `github.com/o/r`.
fn normalized_remote(url: &str) -> Option<String> {
    let url = url.trim();
    let rest = match url.split_once("://") {
        Some((_, rest)) => rest.to_string(),
        None => url.replacen(':', "/", 1),
    };
    let rest = rest.rsplit_once('@').map_or(rest.as_str(), |(_, r)| r);
    let rest = rest.trim_end_matches('/').trim_end_matches(".git").trim_end_matches('/');
    let (host, path) = rest.split_once('/')?;
    (!host.is_empty() && !path.is_empty()).then(|| format!("{}/{path}", host.to_lowercase()))
}

/// The identity of the checkout at `top`, for files read from it.
pub(crate) fn checkout_identity(top: &Path) -> String {
    match gix::open(top) {
        Ok(repository) => repository_identity(&repository, top),
        Err(_) => format!("dir:{}", top.display()),
    }
}

/// A revision's commit: a branch or tag name, a full hash, or a hash's prefix.
fn resolve(repository: &gix::Repository, rev: &str) -> Result<ObjectId, ValidationError> {
    if let Ok(Some(mut reference)) = repository.try_find_reference(rev)
        && let Ok(id) = reference.peel_to_id()
    {
        return Ok(id.detach());
    }
    let lower = rev.trim().to_lowercase();
    let not_found = || {
        ValidationError::new(
            ErrorCode::NotFound,
            "--since",
            format!("`{rev}` is neither a date nor a branch, tag or commit of this history"),
            "give a date (2024-01-31), a tag or branch (v1.2.0, main), or a commit hash from `git log`",
        )
    };
    if lower.len() < 4 || !lower.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(not_found());
    }
    if let Ok(id) = ObjectId::from_hex(lower.as_bytes())
        && repository.find_commit(id).is_ok()
    {
        return Ok(id);
    }
    let head = repository.head_id().map_err(|_| not_found())?;
    let walk = repository.rev_walk([head.detach()]).all().map_err(|_| not_found())?;
    let mut matching = walk.filter_map(Result::ok).filter(|info| info.id.to_string().starts_with(&lower));
    match (matching.next(), matching.next()) {
        (Some(one), None) => Ok(one.id),
        (None, _) => Err(not_found()),
        (Some(_), Some(_)) => Err(ValidationError::new(
            ErrorCode::InvalidValue,
            "--since",
            format!("`{rev}` is the start of several commits' hashes"),
            "give more of the hash",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remotes_written_any_way_name_one_repository() {
        for url in [
            "https://github.com/owner/repo.git",
            "https://user@GitHub.com/owner/repo/",
            "git@github.com:owner/repo.git",
            "ssh://git@github.com/owner/repo",
        ] {
            assert_eq!(normalized_remote(url).as_deref(), Some("github.com/owner/repo"), "{url}");
        }
        assert_eq!(normalized_remote("/srv/git/repo"), None);
    }
}
