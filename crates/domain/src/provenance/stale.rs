//! Whether an item may be out of date because the files it concerns changed after it was
//! written, and how to say so in a few words. Computed from the item's [`Provenance`] and the
//! rows of a branch's path table for its files — no history is walked.
//!
//! Per file, with a baseline count `c` (the path's changes at the item's commit) and the
//! table's count `n` at the branch's head: `n − c` commits touched the file since, and the
//! item is flagged when that is more than the file's allowance — one commit for an item
//! written on uncommitted changes (`dirty`: the commit that records what it was written
//! against), none otherwise. A negative difference (the item's commit is not in this
//! history: a rebase, a squash) or an unknown baseline falls back to time: the file's last
//! change is newer than the item's commit (or, without one, than the item itself).

use super::{PathChange, PathState, Provenance};
use crate::kind::Kind;
use crate::time::format_instant;

/// The kinds whose knowledge can go out of date with the code. Records of something that
/// happened — a change, a release and its notes, an incident, a pull request, a migration —
/// stay true of their moment and are never flagged.
pub fn goes_stale(kind: Kind) -> bool {
    !matches!(
        kind,
        Kind::Change
            | Kind::Release
            | Kind::ReleaseNote
            | Kind::Incident
            | Kind::PrContext
            | Kind::Ddl
            | Kind::Relation
    )
}

/// One file that changed after the item was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleFile {
    pub path: String,
    /// Commits that touched it since (`None`: the item's commit is not in this history).
    pub commits: Option<i64>,
    /// Its newest change (epoch ms).
    pub newest: i64,
    /// Deleted, or renamed, at the branch's head.
    pub state: PathState,
}

/// Why an item may be out of date: the files that changed since its commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stale {
    pub files: Vec<StaleFile>,
}

impl Stale {
    /// The most commits any one file saw since (at least this many commits changed them).
    pub fn commits(&self) -> Option<i64> {
        self.files.iter().filter_map(|f| f.commits).max()
    }

    /// The newest change among the files.
    pub fn newest(&self) -> i64 {
        self.files.iter().map(|f| f.newest).max().unwrap_or_default()
    }

    /// Fewer words, for a line of the session briefing or the recall hook: `may be out of date:
    /// src/auth.rs changed in 3 commits`.
    pub fn few_words(&self) -> String {
        let first = self.files.first().map(describe).unwrap_or_default();
        format!("may be out of date: {first}{}", more(self.files.len().saturating_sub(1), ","))
    }

    /// A few words: `src/auth.rs changed in 3 commits since (newest 2026-05-01)`.
    pub fn why(&self) -> String {
        let shown: Vec<String> = self.files.iter().take(3).map(describe).collect();
        let more = more(self.files.len().saturating_sub(3), "");
        let newest = format_instant(self.newest());
        let day = newest.get(..10).unwrap_or(&newest);
        format!("{}{more} since it was written (newest {day})", shown.join("; "))
    }
}

/// ` and 2 more files` after the files named (`sep` before it), nothing when none are left.
fn more(left: usize, sep: &str) -> String {
    match left {
        0 => String::new(),
        1 => format!("{sep} and 1 more file"),
        n => format!("{sep} and {n} more files"),
    }
}

fn describe(file: &StaleFile) -> String {
    let times = match file.commits {
        Some(1) => " in 1 commit".to_string(),
        Some(n) => format!(" in {n} commits"),
        None => String::new(),
    };
    match &file.state {
        PathState::Present => format!("{} changed{times}", file.path),
        PathState::Deleted => format!("{} deleted", file.path),
        PathState::Renamed(to) => format!("{} renamed to {to}", file.path),
    }
}

/// The files of `provenance` that `rows` (a branch's path table, for those paths) show
/// changed after the item's commit; `None` when none did. `written_at` is the item's own
/// time, the reference when its commit's time is unknown.
pub fn staleness(provenance: &Provenance, written_at: i64, rows: &[PathChange]) -> Option<Stale> {
    let reference = provenance.commit_time.unwrap_or(written_at);
    let allowance = i64::from(provenance.dirty);
    let mut files = Vec::new();
    for file in &provenance.files {
        let Some(row) = rows.iter().find(|r| r.path == file.path) else { continue };
        let counted = file.changes.map(|base| row.changes - base).filter(|n| *n >= 0);
        let changed = match counted {
            Some(n) => n > allowance,
            None => row.time > reference,
        };
        if changed {
            files.push(StaleFile {
                path: file.path.clone(),
                commits: counted,
                newest: row.time,
                state: row.state.clone(),
            });
        }
    }
    (!files.is_empty()).then_some(Stale { files })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provenance::FileBaseline;

    const DAY: i64 = 86_400_000;

    fn provenance(files: &[(&str, Option<i64>)], dirty: bool) -> Provenance {
        Provenance {
            commit: Some("a".repeat(40)),
            commit_time: Some(10 * DAY),
            branch: Some("main".into()),
            dirty,
            files: files.iter().map(|(p, c)| FileBaseline { path: p.to_string(), changes: *c }).collect(),
        }
    }

    fn row(path: &str, changes: i64, time: i64, state: PathState) -> PathChange {
        PathChange { path: path.into(), commit: "b".repeat(40), time, changes, state }
    }

    #[test]
    fn a_file_touched_since_the_commit_flags_the_item_with_the_count() {
        let p = provenance(&[("src/auth.rs", Some(4)), ("src/db.rs", Some(2))], false);
        let rows = [
            row("src/auth.rs", 7, 20 * DAY, PathState::Present),
            row("src/db.rs", 2, 5 * DAY, PathState::Present),
        ];
        let stale = staleness(&p, 0, &rows).unwrap();
        assert_eq!(stale.files.len(), 1);
        assert_eq!(stale.commits(), Some(3));
        assert_eq!(stale.why(), "src/auth.rs changed in 3 commits since it was written (newest 1970-01-21)");
        assert_eq!(stale.few_words(), "may be out of date: src/auth.rs changed in 3 commits");
    }

    #[test]
    fn untouched_files_files_unknown_to_the_table_and_no_files_never_flag() {
        let p = provenance(&[("src/a.rs", Some(1)), ("new.rs", Some(0))], false);
        assert_eq!(staleness(&p, 0, &[row("src/a.rs", 1, 99 * DAY, PathState::Present)]), None);
        assert_eq!(
            staleness(&provenance(&[], false), 0, &[row("src/a.rs", 5, 99 * DAY, PathState::Present)]),
            None
        );
    }

    #[test]
    fn a_dirty_item_allows_the_commit_of_what_it_was_written_on() {
        let p = provenance(&[("src/a.rs", Some(1))], true);
        assert_eq!(staleness(&p, 0, &[row("src/a.rs", 2, 20 * DAY, PathState::Present)]), None);
        assert!(staleness(&p, 0, &[row("src/a.rs", 3, 20 * DAY, PathState::Present)]).is_some());
    }

    #[test]
    fn without_a_baseline_or_out_of_the_history_time_decides() {
        let p = provenance(&[("src/a.rs", None)], false);
        assert_eq!(staleness(&p, 0, &[row("src/a.rs", 9, 9 * DAY, PathState::Present)]), None);
        let stale = staleness(&p, 0, &[row("src/a.rs", 9, 11 * DAY, PathState::Present)]).unwrap();
        assert_eq!(stale.commits(), None);
        assert!(stale.why().starts_with("src/a.rs changed since"), "{}", stale.why());
        // A baseline above the head's count: the commit is not an ancestor (a rebase).
        let rebased = provenance(&[("src/a.rs", Some(12))], false);
        assert!(staleness(&rebased, 0, &[row("src/a.rs", 9, 11 * DAY, PathState::Present)]).is_some());
        // No commit at all: the item's own time is the reference.
        let no_commit = Provenance { commit: None, commit_time: None, ..p };
        assert!(
            staleness(&no_commit, 12 * DAY, &[row("src/a.rs", 9, 11 * DAY, PathState::Present)]).is_none()
        );
    }

    #[test]
    fn deletions_and_renames_are_said() {
        let p =
            provenance(&[("a.rs", Some(1)), ("b.rs", Some(1)), ("c.rs", Some(1)), ("d.rs", Some(1))], false);
        let rows = [
            row("a.rs", 2, 20 * DAY, PathState::Deleted),
            row("b.rs", 3, 21 * DAY, PathState::Renamed("lib/b.rs".into())),
            row("c.rs", 2, 22 * DAY, PathState::Present),
            row("d.rs", 2, 22 * DAY, PathState::Present),
        ];
        let why = staleness(&p, 0, &rows).unwrap().why();
        assert_eq!(
            why,
            "a.rs deleted; b.rs renamed to lib/b.rs; c.rs changed in 1 commit and 1 more file since it was written (newest 1970-01-23)"
        );
        let stale = staleness(&p, 0, &rows).unwrap();
        assert_eq!(stale.few_words(), "may be out of date: a.rs deleted, and 3 more files");
    }

    #[test]
    fn records_of_events_never_go_stale() {
        assert!(goes_stale(Kind::Decision) && goes_stale(Kind::Section) && goes_stale(Kind::Runbook));
        assert!(!goes_stale(Kind::Change) && !goes_stale(Kind::Release) && !goes_stale(Kind::Incident));
    }
}
