//! The merges that commits newly in a branch's history show, read from the repository:
//! - a merge commit whose other parent is another branch's tip, or whose message names the
//!   branch (`Merge branch 'x'`, `Merge pull request #1 from owner/x`);
//! - work committed on another local branch (its reflog's `commit` entries) now in this
//!   history: a fast-forward, or this branch rebased onto it;
//! - a squash: a new commit holding, for every path another local branch changed since it
//!   forked, exactly that branch's version, and touching at least one of them.
//!
//! What is not seen: a squash whose branch was deleted (or never fetched) before the history
//! was read, one whose conflicts were resolved differently from the branch, and a fast-forward
//! to commits made elsewhere (a colleague's branch pulled and merged with no merge commit).

use super::GitError;
use super::history::diff;
use super::repo::{Head, Repo};
use cortex_domain::provenance::MergeHow;
use cortex_domain::provenance::merges::branch_in_merge_message;
use gix::ObjectId;
use std::collections::HashSet;

/// Newest commits of a history looked at for a squash: enough for what a sync after a merge
/// brings, few enough that the first sync of a long history stays quick.
const SQUASH_WINDOW: usize = 200;

/// One merge seen: `from` came into the branch with `commit`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Seen {
    pub from: String,
    pub commit: ObjectId,
    pub how: MergeHow,
}

/// The merges into `branch` that the commits `added` (newest first) show.
pub(crate) fn seen(
    repo: &Repo,
    branch: &str,
    head: &Head,
    added: &[ObjectId],
) -> Result<Vec<Seen>, GitError> {
    let branches = repo.branches()?;
    let added_set: HashSet<ObjectId> = added.iter().copied().collect();
    let mut out: Vec<Seen> = Vec::new();
    let push = |out: &mut Vec<Seen>, from: String, commit: ObjectId, how: MergeHow| {
        if from != branch && !out.iter().any(|s| s.from == from && s.commit == commit) {
            out.push(Seen { from, commit, how });
        }
    };
    for id in added.iter().rev() {
        let c = repo.commit(*id)?;
        if c.parents.len() < 2 {
            continue;
        }
        for parent in &c.parents[1..] {
            for (name, tip, _) in &branches {
                if tip == parent {
                    push(&mut out, name.clone(), *id, MergeHow::Merge);
                }
            }
        }
        if let Some(name) = branch_in_merge_message(&c.message) {
            push(&mut out, name, *id, MergeHow::Merge);
        }
    }
    let local: Vec<&(String, ObjectId, bool)> =
        branches.iter().filter(|(name, _, local)| *local && name != branch).collect();
    for (name, _, _) in &local {
        if out.iter().any(|s| &s.from == name) {
            continue;
        }
        if repo.committed_on(name).iter().any(|c| added_set.contains(c)) {
            push(&mut out, name.clone(), head.commit, MergeHow::FastForward);
        }
    }
    let window: Vec<ObjectId> = added.iter().take(SQUASH_WINDOW).copied().collect();
    for (name, tip, _) in local {
        if out.iter().any(|s| &s.from == name) || added_set.contains(tip) {
            continue;
        }
        if let Some(commit) = squashed(repo, *tip, head, &window)? {
            push(&mut out, name.clone(), commit, MergeHow::Squash);
        }
    }
    Ok(out)
}

/// The commit of `window` that squashed the branch at `tip`, if one did.
fn squashed(
    repo: &Repo,
    tip: ObjectId,
    head: &Head,
    window: &[ObjectId],
) -> Result<Option<ObjectId>, GitError> {
    let own = repo.walk(&[tip], &[head.commit])?;
    let Some(oldest) = own.last() else { return Ok(None) };
    let fork = repo.commit(*oldest)?.parents.first().copied();
    let fork_tree = fork.map(|f| repo.commit(f).map(|c| c.tree)).transpose()?;
    let tip_tree = repo.commit(tip)?.tree;
    let changes = diff(repo, fork_tree, Some(tip_tree))?;
    if changes.is_empty() {
        return Ok(None);
    }
    for id in window {
        let c = repo.commit(*id)?;
        if c.parents.len() != 1 {
            continue;
        }
        let parent_tree = repo.commit(c.parents[0])?.tree;
        let touched = diff(repo, Some(parent_tree), Some(c.tree))?;
        if !changes.keys().any(|p| touched.contains_key(p)) {
            continue;
        }
        let mut all = true;
        for (path, (_, after)) in &changes {
            if repo.entry_at(c.tree, path)?.map(|(_, id)| id) != *after {
                all = false;
                break;
            }
        }
        if all {
            return Ok(Some(*id));
        }
    }
    Ok(None)
}
