//! What each commit did to paths: the tree of a commit compared with its parents' (our own
//! comparison of two trees, name by name, descending only into folders that differ), and a
//! path's state after it. A commit touches a path when the path differs from every parent
//! (see `cortex_domain::provenance`); a path gone from one place whose exact content appears
//! at another in the same commit was renamed (a rename with edits is a deletion and an
//! addition: git's similarity search needs the whole blobs' diff).

use super::GitError;
use super::repo::Repo;
use cortex_domain::provenance::PathState;
use gix::ObjectId;
use std::collections::{BTreeMap, HashMap};

/// One path a commit touched, and what it is after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Touch {
    pub path: String,
    pub state: PathState,
}

/// A path's entry before and after (`None`: absent), from comparing two trees.
type Changed = BTreeMap<String, (Option<ObjectId>, Option<ObjectId>)>;

/// The paths whose file (blob, link or submodule) differs between two trees.
pub(crate) fn diff(repo: &Repo, old: Option<ObjectId>, new: Option<ObjectId>) -> Result<Changed, GitError> {
    let mut out = Changed::new();
    diff_into(repo, old, new, "", &mut out)?;
    Ok(out)
}

fn diff_into(
    repo: &Repo,
    old: Option<ObjectId>,
    new: Option<ObjectId>,
    prefix: &str,
    out: &mut Changed,
) -> Result<(), GitError> {
    if old == new {
        return Ok(());
    }
    let old = match old {
        Some(id) => repo.tree(id)?,
        None => BTreeMap::new(),
    };
    let new = match new {
        Some(id) => repo.tree(id)?,
        None => BTreeMap::new(),
    };
    let names: std::collections::BTreeSet<&Vec<u8>> = old.keys().chain(new.keys()).collect();
    for name in names {
        let (a, b) = (old.get(name), new.get(name));
        if a == b {
            continue;
        }
        let path = format!("{prefix}{}", String::from_utf8_lossy(name));
        let folder = |e: Option<&super::repo::Entry>| e.filter(|(mode, _)| mode.is_tree()).map(|(_, id)| *id);
        let file = |e: Option<&super::repo::Entry>| e.filter(|(mode, _)| !mode.is_tree()).map(|(_, id)| *id);
        let (a_dir, b_dir) = (folder(a), folder(b));
        if a_dir.is_some() || b_dir.is_some() {
            diff_into(repo, a_dir, b_dir, &format!("{path}/"), out)?;
        }
        let (a_file, b_file) = (file(a), file(b));
        if a_file != b_file {
            out.insert(path, (a_file, b_file));
        }
    }
    Ok(())
}

/// What a commit touched. A root commit touches every path it holds; a merge only the paths
/// that differ from every parent (what it resolved itself).
pub(crate) fn touched(repo: &Repo, tree: ObjectId, parents: &[ObjectId]) -> Result<Vec<Touch>, GitError> {
    // A parent a shallow clone does not hold is no parent here, as it is to git's own walk.
    let parent_trees: Vec<ObjectId> = parents
        .iter()
        .filter(|p| repo.has_commit(**p))
        .map(|p| repo.commit(*p).map(|c| c.tree))
        .collect::<Result<_, _>>()?;
    let first = diff(repo, parent_trees.first().copied(), Some(tree))?;
    let mut changed: Changed = first;
    for other in parent_trees.iter().skip(1) {
        let against = diff(repo, Some(*other), Some(tree))?;
        changed.retain(|path, _| against.contains_key(path));
    }
    Ok(touches(changed))
}

/// The touches of a comparison, a deleted path whose exact content was added elsewhere in it
/// counted as renamed there.
fn touches(changed: Changed) -> Vec<Touch> {
    let mut added: HashMap<ObjectId, Vec<&str>> = HashMap::new();
    for (path, (before, after)) in &changed {
        if let (None, Some(blob)) = (before, after) {
            added.entry(*blob).or_default().push(path);
        }
    }
    changed
        .iter()
        .map(|(path, (before, after))| {
            let state = match (before, after) {
                (_, Some(_)) => PathState::Present,
                (Some(blob), None) => {
                    match added.get_mut(blob).and_then(|to| (!to.is_empty()).then(|| to.remove(0))) {
                        Some(to) => PathState::Renamed(to.to_string()),
                        None => PathState::Deleted,
                    }
                }
                (None, None) => PathState::Deleted,
            };
            Touch { path: path.clone(), state }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u8) -> ObjectId {
        ObjectId::from_bytes_or_panic(&[n; 20])
    }

    #[test]
    fn a_deleted_path_whose_content_appears_elsewhere_was_renamed() {
        let mut changed = Changed::new();
        changed.insert("old.rs".into(), (Some(id(1)), None));
        changed.insert("new.rs".into(), (None, Some(id(1))));
        changed.insert("gone.rs".into(), (Some(id(2)), None));
        changed.insert("edited.rs".into(), (Some(id(3)), Some(id(4))));
        let mut t = touches(changed);
        t.sort_by(|a, b| a.path.cmp(&b.path));
        let states: Vec<(&str, &PathState)> = t.iter().map(|t| (t.path.as_str(), &t.state)).collect();
        assert_eq!(
            states,
            vec![
                ("edited.rs", &PathState::Present),
                ("gone.rs", &PathState::Deleted),
                ("new.rs", &PathState::Present),
                ("old.rs", &PathState::Renamed("new.rs".into())),
            ]
        );
    }
}
