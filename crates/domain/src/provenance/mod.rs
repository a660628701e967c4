//! Memory that follows the code: which commit an item was written at and which files it
//! concerns ([`Provenance`]), what each path of a branch's history last went through
//! ([`PathChange`]), whether an item may be out of date ([`staleness`]), and which branches'
//! items a branch sees after merges ([`merges`]).
//!
//! Counting changes: a commit *touches* a path when the path's content (or absence) in the
//! commit differs from that in every parent — git's rule for a merge, so a merge touches only
//! what it resolved itself. `changes` of a path at a commit is how many of that commit's
//! ancestors (itself included) touch it. It depends only on the commit's ancestry, not on the
//! branch it was counted on, so an item's baseline taken at its commit `C` and a branch's
//! count at its head `H` give, when `C` is an ancestor of `H`, exactly the number of commits
//! since `C` that touched the path (a branch rebased or a merge squashed breaks the ancestry;
//! [`staleness`] then compares times).
//!
//! - [`paths`]: the paths a request names or a text mentions, normalized
//! - [`stale`]: whether an item's files changed since its commit, and how to say it
//! - [`merges`]: merges of branches, and the branches whose items a branch sees

pub mod merges;
pub mod paths;
pub mod stale;

pub use merges::{BranchMerge, MergeHow, MergedBranch, visible_branches};
pub use paths::{MAX_CLAIMED_FILES, PathProblem, ProvenanceClaim, mentioned_paths, normalize_path};
pub use stale::{Stale, StaleFile, goes_stale, staleness};

use crate::kind::Kind;
use serde::{Deserialize, Serialize};

/// Where an item came from in git: the commit it was written at, whether the files it
/// concerns differed from that commit in the working tree, and those files, each with the
/// number of changes the path had seen at that commit (its baseline; `None` when unknown).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// The commit's full hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The commit's time (epoch ms, committer's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_time: Option<i64>,
    /// The branch checked out when it was written (`None`: a detached HEAD, or no checkout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Some file it concerns had uncommitted changes when it was written.
    #[serde(default)]
    pub dirty: bool,
    #[serde(default)]
    pub files: Vec<FileBaseline>,
}

impl Provenance {
    /// The paths it concerns.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|f| f.path.as_str())
    }
}

/// One file an item concerns, with the path's change count at the item's commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileBaseline {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<i64>,
}

/// One branch of one project: whose history a path table follows.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RepoBranch {
    pub org: String,
    pub project: String,
    pub branch: String,
}

/// What a branch's history last did to a path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathChange {
    pub path: String,
    /// The newest commit (by committer time) touching it.
    pub commit: String,
    /// That commit's time (epoch ms).
    pub time: i64,
    /// How many ancestors of the branch's head touch it (see the module doc).
    pub changes: i64,
    /// What the path is at the head.
    #[serde(flatten)]
    pub state: PathState,
}

/// A path at a branch's head.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "to")]
pub enum PathState {
    Present,
    Deleted,
    /// Gone from here, its content now at another path (the same blob, in the commit that
    /// removed it).
    Renamed(String),
}

impl PathState {
    /// The stored word.
    pub fn word(&self) -> &'static str {
        match self {
            PathState::Present => "present",
            PathState::Deleted => "deleted",
            PathState::Renamed(_) => "renamed",
        }
    }

    /// The state a stored word and rename target name; `None` for a word no version writes.
    pub fn from_stored(word: &str, renamed_to: Option<String>) -> Option<PathState> {
        match (word, renamed_to) {
            ("present", _) => Some(PathState::Present),
            ("deleted", _) => Some(PathState::Deleted),
            ("renamed", Some(to)) => Some(PathState::Renamed(to)),
            _ => None,
        }
    }

    pub fn renamed_to(&self) -> Option<&str> {
        match self {
            PathState::Renamed(to) => Some(to),
            _ => None,
        }
    }
}

/// Where a branch's path table stands: the head it was brought up to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathHead {
    pub commit: String,
    /// The head commit's time (epoch ms).
    pub time: i64,
    /// When the table was last brought up to it (epoch ms, the store's clock).
    pub synced_at: i64,
}

/// The kinds that can say something about files worth recording: every kind but the links of
/// the graph, which are about their ends.
pub fn records_provenance(kind: Kind) -> bool {
    !matches!(kind, Kind::Relation)
}
