//! A branch's path table brought to its head. From the head the table was last brought to,
//! only the commits between are read: those the new head reaches and the old did not count
//! once more for each path they touch, those the old head reached and the new does not (a
//! rebase, a reset, an amend) once less. A path whose last change was taken away is looked up
//! again in the new history, newest first. A table with no head yet, or whose head the
//! repository no longer holds, is built from the whole history.

use super::GitError;
use super::history::{Touch, touched};
use super::repo::{Head, Repo};
use cortex_domain::provenance::{PathChange, PathState};
use gix::ObjectId;
use std::collections::{BTreeMap, HashMap, HashSet};

/// A table's new rows (those that changed), and what it took.
#[derive(Debug, Default)]
pub(crate) struct TableUpdate {
    pub rows: Vec<PathChange>,
    /// Built from nothing: the rows given are the whole table.
    pub whole: bool,
    /// The commits the new head reaches that the old did not (every commit, when whole).
    pub added: Vec<ObjectId>,
    /// Commits read (compared with their parents).
    pub commits_read: usize,
}

/// One commit's time and touches, read once.
struct Read {
    time: i64,
    touches: Vec<Touch>,
}

fn read(repo: &Repo, id: ObjectId, cache: &mut HashMap<ObjectId, Read>) -> Result<(), GitError> {
    if cache.contains_key(&id) {
        return Ok(());
    }
    let c = repo.commit(id)?;
    let touches = touched(repo, c.tree, &c.parents)?;
    cache.insert(id, Read { time: c.time, touches });
    Ok(())
}

/// The table's changed rows to bring it from `old` (its head, if it has one; `stored` reads
/// its rows for some paths) to `head`.
pub(crate) fn update(
    repo: &Repo,
    head: &Head,
    old: Option<ObjectId>,
    stored: impl Fn(&[String]) -> crate::Result<Vec<PathChange>>,
) -> crate::Result<TableUpdate> {
    let mut cache = HashMap::new();
    let old = old.filter(|id| repo.has_commit(*id));
    let Some(old) = old else {
        let all = repo.walk(&[head.commit], &[])?;
        return Ok(build(repo, all, &mut cache)?);
    };
    if old == head.commit {
        return Ok(TableUpdate::default());
    }
    let added = repo.walk(&[head.commit], &[old])?;
    let removed = repo.walk(&[old], &[head.commit])?;
    for id in added.iter().chain(&removed) {
        read(repo, *id, &mut cache)?;
    }
    let mut paths: Vec<String> = added
        .iter()
        .chain(&removed)
        .flat_map(|id| cache[id].touches.iter().map(|t| t.path.clone()))
        .collect();
    paths.sort();
    paths.dedup();
    let mut rows: BTreeMap<String, PathChange> =
        stored(&paths)?.into_iter().map(|r| (r.path.clone(), r)).collect();
    let removed_set: HashSet<ObjectId> = removed.iter().copied().collect();
    let mut lost: HashSet<String> = HashSet::new();
    for id in &removed {
        for t in &cache[id].touches {
            if let Some(row) = rows.get_mut(&t.path) {
                row.changes -= 1;
                if removed_set.contains(&parse(&row.commit)) {
                    lost.insert(t.path.clone());
                }
            }
        }
    }
    // Oldest first, so the newest touch of a path is applied last.
    for id in added.iter().rev() {
        let r = &cache[id];
        for t in &r.touches {
            let row = rows.entry(t.path.clone()).or_insert_with(|| PathChange {
                path: t.path.clone(),
                commit: id.to_string(),
                time: r.time,
                changes: 0,
                state: t.state.clone(),
            });
            row.changes += 1;
            if r.time >= row.time || lost.contains(&t.path) {
                row.commit = id.to_string();
                row.time = r.time;
                row.state = t.state.clone();
                lost.remove(&t.path);
            }
        }
    }
    let mut commits_read = cache.len();
    if !lost.is_empty() {
        // A last change taken away and none added: the newest one left in the new history.
        for id in repo.walk(&[head.commit], &[])? {
            read(repo, id, &mut cache)?;
            let r = &cache[&id];
            for t in &r.touches {
                if lost.remove(&t.path)
                    && let Some(row) = rows.get_mut(&t.path)
                {
                    row.commit = id.to_string();
                    row.time = r.time;
                    row.state = t.state.clone();
                }
            }
            if lost.is_empty() {
                break;
            }
        }
        commits_read = cache.len();
        if !lost.is_empty() {
            // No commit of the new history touches it: the table is built again.
            let all = repo.walk(&[head.commit], &[])?;
            return Ok(build(repo, all, &mut cache)?);
        }
    }
    Ok(TableUpdate { rows: rows.into_values().collect(), whole: false, added, commits_read })
}

/// The whole table of the history `all` (newest first).
fn build(
    repo: &Repo,
    all: Vec<ObjectId>,
    cache: &mut HashMap<ObjectId, Read>,
) -> Result<TableUpdate, GitError> {
    let mut rows: BTreeMap<String, PathChange> = BTreeMap::new();
    for id in &all {
        read(repo, *id, cache)?;
        let r = &cache[id];
        for t in &r.touches {
            match rows.get_mut(&t.path) {
                Some(row) => {
                    row.changes += 1;
                    if r.time > row.time {
                        row.commit = id.to_string();
                        row.time = r.time;
                        row.state = t.state.clone();
                    }
                }
                None => {
                    rows.insert(
                        t.path.clone(),
                        PathChange {
                            path: t.path.clone(),
                            commit: id.to_string(),
                            time: r.time,
                            changes: 1,
                            state: t.state.clone(),
                        },
                    );
                }
            }
        }
    }
    let commits_read = cache.len();
    Ok(TableUpdate { rows: rows.into_values().collect(), whole: true, added: all, commits_read })
}

fn parse(hash: &str) -> ObjectId {
    ObjectId::from_hex(hash.as_bytes()).unwrap_or_else(|_| ObjectId::null(gix::hash::Kind::Sha1))
}

/// Each row's state as the head's tree says: a path it holds is present, whatever touched it
/// last by time (a merge can bring back a path an older-dated commit of a side branch removed).
pub(crate) fn settle_states(rows: &mut [PathChange], at_head: &HashSet<String>) {
    for row in rows {
        if at_head.contains(&row.path) {
            row.state = PathState::Present;
        } else if row.state == PathState::Present {
            row.state = PathState::Deleted;
        }
    }
}
