//! Memory follows merges. When a branch's history shows another branch's work merged into it
//! (a merge commit, a fast-forward, a rebase onto it, a squash), the merge is recorded, and the
//! items of the merged branch that existed then become visible from the branch merged into:
//! linked, not moved, so the merged branch keeps its items, a merge the other way round (main
//! into a feature, to bring it up to date) only adds to what the feature sees, and undoing the
//! record undoes the visibility. An item stored on the merged branch after the merge is not
//! visible until the next merge.

use serde::{Deserialize, Serialize};

/// How a branch's work came into another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MergeHow {
    /// A merge commit with the branch's tip as a parent.
    Merge,
    /// The branch moved to a commit made on the other branch (a fast-forward or a rebase onto
    /// it).
    FastForward,
    /// One commit holding all the other branch's changes (`git merge --squash`, a forge's
    /// squash-and-merge).
    Squash,
}

impl MergeHow {
    pub const ALL: [MergeHow; 3] = [MergeHow::Merge, MergeHow::FastForward, MergeHow::Squash];

    pub fn as_str(self) -> &'static str {
        match self {
            MergeHow::Merge => "merge",
            MergeHow::FastForward => "fast_forward",
            MergeHow::Squash => "squash",
        }
    }

    pub fn parse(text: &str) -> Option<MergeHow> {
        MergeHow::ALL.into_iter().find(|h| h.as_str() == text)
    }
}

/// One merge seen in a branch's history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BranchMerge {
    /// The store's id of the record (0 before it is stored).
    pub id: i64,
    pub org: String,
    pub project: String,
    /// The branch whose work came in.
    pub from_branch: String,
    /// The branch it came into.
    pub into_branch: String,
    /// The commit that brought it (the merge commit, the new head, the squash commit).
    pub commit: String,
    pub how: MergeHow,
    /// When it was seen (epoch ms, the store's clock): items of `from_branch` created up to
    /// then are visible from `into_branch`.
    pub detected_at: i64,
    /// When the record was undone (`cortex git unmerge`), if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undone_at: Option<i64>,
}

/// A branch whose items another branch sees: those created at or before `until`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MergedBranch {
    pub branch: String,
    /// Epoch ms: items created after it are not seen.
    pub until: i64,
}

/// The branches whose items `branch` sees through `merges` (records of one project), each
/// with the latest creation time seen; `branch` itself is not listed. Merges chain: a feature
/// merged into `develop` at t1, `develop` merged into `main` at t2 ≥ t1, and `main` sees the
/// feature's items created up to t1 (and `develop`'s up to t2). A merge into a branch after it
/// was itself merged on carries nothing further. Undone records count for nothing.
pub fn visible_branches(branch: &str, merges: &[BranchMerge]) -> Vec<MergedBranch> {
    let mut seen: std::collections::BTreeMap<&str, i64> = std::collections::BTreeMap::new();
    let mut todo: Vec<(&str, i64)> = vec![(branch, i64::MAX)];
    while let Some((into, bound)) = todo.pop() {
        for m in merges.iter().filter(|m| m.undone_at.is_none() && m.into_branch == into) {
            if m.detected_at > bound || m.from_branch == branch {
                continue;
            }
            let until = m.detected_at;
            let better = seen.get(m.from_branch.as_str()).is_none_or(|&known| until > known);
            if better {
                seen.insert(&m.from_branch, until);
                todo.push((&m.from_branch, until));
            }
        }
    }
    seen.into_iter().map(|(branch, until)| MergedBranch { branch: branch.to_string(), until }).collect()
}

/// The branch a merge commit's message names as merged (`Merge branch 'x'`, `Merge
/// remote-tracking branch 'origin/x'`, `Merge pull request #12 from owner/x`), if any: for a
/// merge whose branch no longer points at its parent.
pub fn branch_in_merge_message(message: &str) -> Option<String> {
    let first = message.lines().next()?.trim();
    let quoted = |rest: &str| rest.strip_prefix('\'').and_then(|r| r.split('\'').next()).map(str::to_string);
    if let Some(rest) = first.strip_prefix("Merge branch ") {
        return quoted(rest);
    }
    if let Some(rest) = first.strip_prefix("Merge remote-tracking branch ") {
        let name = quoted(rest)?;
        return Some(name.split_once('/').map_or(name.clone(), |(_, b)| b.to_string()));
    }
    if let Some(rest) = first.strip_prefix("Merge pull request #") {
        let (_, from) = rest.split_once(" from ")?;
        let from = from.split_whitespace().next()?;
        return from.split_once('/').map(|(_, b)| b.to_string()).filter(|b| !b.is_empty());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merge(from: &str, into: &str, at: i64) -> BranchMerge {
        BranchMerge {
            id: 0,
            org: "o".into(),
            project: "p".into(),
            from_branch: from.into(),
            into_branch: into.into(),
            commit: "c".into(),
            how: MergeHow::Merge,
            detected_at: at,
            undone_at: None,
        }
    }

    fn seen(list: Vec<MergedBranch>) -> Vec<(String, i64)> {
        list.into_iter().map(|m| (m.branch, m.until)).collect()
    }

    #[test]
    fn merges_chain_with_the_earlier_cutoff_and_undone_ones_count_for_nothing() {
        let merges =
            [merge("feature", "develop", 10), merge("develop", "main", 20), merge("late", "develop", 30)];
        assert_eq!(
            seen(visible_branches("main", &merges)),
            vec![("develop".into(), 20), ("feature".into(), 10)]
        );
        assert_eq!(
            seen(visible_branches("develop", &merges)),
            vec![("feature".into(), 10), ("late".into(), 30)]
        );
        assert!(visible_branches("feature", &merges).is_empty());
        let mut undone = merges.to_vec();
        undone[1].undone_at = Some(25);
        assert!(visible_branches("main", &undone).is_empty());
    }

    #[test]
    fn a_second_merge_moves_the_cutoff_and_cycles_end() {
        let merges =
            [merge("feature", "main", 10), merge("main", "feature", 15), merge("feature", "main", 40)];
        assert_eq!(seen(visible_branches("main", &merges)), vec![("feature".into(), 40)]);
        assert_eq!(seen(visible_branches("feature", &merges)), vec![("main".into(), 15)]);
    }

    #[test]
    fn merge_messages_name_their_branch() {
        assert_eq!(
            branch_in_merge_message("Merge branch 'feature/login' into main").as_deref(),
            Some("feature/login")
        );
        assert_eq!(branch_in_merge_message("Merge branch 'x'\n\nbody").as_deref(), Some("x"));
        assert_eq!(
            branch_in_merge_message("Merge remote-tracking branch 'origin/fix-1'").as_deref(),
            Some("fix-1")
        );
        assert_eq!(
            branch_in_merge_message("Merge pull request #12 from acme/feature-x\n\nAdd x").as_deref(),
            Some("feature-x")
        );
        assert_eq!(branch_in_merge_message("Fix the build"), None);
    }
}
