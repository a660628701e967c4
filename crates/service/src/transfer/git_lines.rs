//! The lines of an export file that carry memory that follows the code, after the items: each
//! item's provenance, then the git tables (each branch's head and path rows, the merge
//! records). Each line is an object with one key naming what it is.

use cortex_domain::provenance::{BranchMerge, PathChange, PathHead, Provenance, RepoBranch};
use cortex_store::GitTables;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// One line of memory that follows the code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GitLine {
    /// An item's provenance.
    Provenance { item: Uuid, provenance: Provenance },
    /// Where a branch's path table stands.
    GitHead { at: RepoBranch, head: PathHead },
    /// One row of a branch's path table.
    GitPath { at: RepoBranch, path: PathChange },
    /// A merge record.
    GitMerge(BranchMerge),
}

/// The keys naming a [`GitLine`].
const KEYS: [&str; 4] = ["provenance", "git_head", "git_path", "git_merge"];

impl GitLine {
    /// The line `value` is, when it is one of these; `Err` names what is wrong with it.
    pub fn parse(value: &Value) -> Option<Result<GitLine, serde_json::Error>> {
        let object = value.as_object()?;
        if object.len() != 1 || !KEYS.iter().any(|k| object.contains_key(*k)) {
            return None;
        }
        Some(serde_json::from_value(value.clone()))
    }

    /// The lines of a store's git tables.
    pub fn of_tables(tables: GitTables) -> impl Iterator<Item = GitLine> {
        let heads = tables.heads.into_iter().map(|(at, head)| GitLine::GitHead { at, head });
        let paths = tables.paths.into_iter().map(|(at, path)| GitLine::GitPath { at, path });
        heads.chain(paths).chain(tables.merges.into_iter().map(GitLine::GitMerge))
    }
}

/// Git lines gathered for an import: the items' provenance, and the tables.
#[derive(Debug, Default)]
pub struct GitImport {
    pub provenance: Vec<(Uuid, Provenance)>,
    pub tables: GitTables,
}

impl GitImport {
    pub fn add(&mut self, line: GitLine) {
        match line {
            GitLine::Provenance { item, provenance } => self.provenance.push((item, provenance)),
            GitLine::GitHead { at, head } => self.tables.heads.push((at, head)),
            GitLine::GitPath { at, path } => self.tables.paths.push((at, path)),
            GitLine::GitMerge(merge) => self.tables.merges.push(merge),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cortex_domain::provenance::{FileBaseline, MergeHow, PathState};

    #[test]
    fn each_line_reads_back_as_written_and_items_are_not_taken_for_one() {
        let at = RepoBranch { org: "o".into(), project: "p".into(), branch: "main".into() };
        let lines = [
            GitLine::Provenance {
                item: Uuid::from_u128(7),
                provenance: Provenance {
                    commit: Some("c".repeat(40)),
                    commit_time: Some(1),
                    branch: Some("main".into()),
                    dirty: true,
                    files: vec![FileBaseline { path: "a.rs".into(), changes: Some(2) }],
                },
            },
            GitLine::GitHead { at: at.clone(), head: PathHead { commit: "h".into(), time: 2, synced_at: 3 } },
            GitLine::GitPath {
                at,
                path: PathChange {
                    path: "b.rs".into(),
                    commit: "x".into(),
                    time: 4,
                    changes: 5,
                    state: PathState::Renamed("c.rs".into()),
                },
            },
            GitLine::GitMerge(BranchMerge {
                id: 1,
                org: "o".into(),
                project: "p".into(),
                from_branch: "f".into(),
                into_branch: "main".into(),
                commit: "m".into(),
                how: MergeHow::Squash,
                detected_at: 6,
                undone_at: Some(7),
            }),
        ];
        for line in lines {
            let value = serde_json::to_value(&line).unwrap();
            assert_eq!(GitLine::parse(&value).unwrap().unwrap(), line);
        }
        let item = serde_json::json!({"id": "0190a8e0-0000-7000-8000-000000000000", "kind": "section"});
        assert!(GitLine::parse(&item).is_none());
        let broken = serde_json::json!({"git_path": {"at": 1}});
        assert!(GitLine::parse(&broken).unwrap().is_err());
    }
}
