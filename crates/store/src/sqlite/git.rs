//! Provenance and the git tables on SQLite (`0017_provenance.sql`): an item's provenance row,
//! a branch's path table and head, a project's merge records.

use crate::{GitTables, Result, StoreError, WriteContext, WriteOutcome};
use cortex_domain::Kind;
use cortex_domain::provenance::{
    BranchMerge, FileBaseline, MergeHow, PathChange, PathHead, PathState, Provenance, RepoBranch,
};
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use uuid::Uuid;

fn files_text(p: &Provenance) -> Result<String> {
    serde_json::to_string(&p.files).map_err(|e| StoreError::Corrupt(format!("provenance files: {e}")))
}

fn provenance_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(String, Provenance, String)> {
    Ok((
        r.get(0)?,
        Provenance {
            commit: r.get(1)?,
            commit_time: r.get(2)?,
            branch: r.get(3)?,
            dirty: r.get(4)?,
            files: Vec::new(),
        },
        r.get(5)?,
    ))
}

fn finish_provenance((id, mut p, files): (String, Provenance, String)) -> Result<(Uuid, Provenance)> {
    let id = super::row::parse_id(&id, "item_provenance.item_id")?;
    p.files = serde_json::from_str::<Vec<FileBaseline>>(&files)
        .map_err(|e| StoreError::Corrupt(format!("item_provenance.files of {id}: {e}")))?;
    Ok((id, p))
}

const PROVENANCE_COLUMNS: &str = "item_id, commit_id, commit_time, branch, dirty, files";

/// Sets the provenance of a stored item (see [`crate::WriteOp::Provenance`]).
pub(super) fn set_provenance(tx: &Transaction<'_>, id: Uuid, p: &Provenance) -> Result<WriteOutcome> {
    let changed = tx
        .prepare_cached(&format!(
            "INSERT INTO item_provenance ({PROVENANCE_COLUMNS}) \
             SELECT id, ?2, ?3, ?4, ?5, ?6 FROM items WHERE id = ?1 \
             ON CONFLICT (item_id) DO UPDATE SET commit_id = excluded.commit_id, \
               commit_time = excluded.commit_time, branch = excluded.branch, dirty = excluded.dirty, \
               files = excluded.files"
        ))?
        .execute(params![id.to_string(), p.commit, p.commit_time, p.branch, p.dirty, files_text(p)?])?;
    Ok(if changed == 1 { WriteOutcome::Updated { id } } else { WriteOutcome::NotFound { id } })
}

/// Confirms a live item (see [`crate::WriteOp::Confirm`]): its provenance replaced and a
/// `confirm` audit record appended, with the writer's context.
pub(super) fn confirm(
    tx: &Transaction<'_>,
    id: Uuid,
    kind: Option<Kind>,
    p: &Provenance,
    at: i64,
) -> Result<WriteOutcome> {
    let row: Option<(String, Option<i64>)> = tx
        .query_row("SELECT kind, deleted_at FROM items WHERE id = ?1", [id.to_string()], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()?;
    let Some((stored, deleted_at)) = row else { return Ok(WriteOutcome::NotFound { id }) };
    let stored = crate::model::parse_kind(&stored)?;
    if kind.is_some_and(|k| k != stored) {
        return Ok(WriteOutcome::KindMismatch { id, stored });
    }
    if deleted_at.is_some() {
        return Ok(WriteOutcome::NotFound { id });
    }
    set_provenance(tx, id, p)?;
    let summary = match &p.commit {
        Some(commit) => format!(
            "confirmed: still holds at {}{}",
            &commit[..commit.len().min(12)],
            p.branch.as_deref().map(|b| format!(" on {b}")).unwrap_or_default()
        ),
        None => "confirmed: still holds".to_string(),
    };
    tx.execute(
        "INSERT INTO audit_append (at, operation, item_id, kind, org, project, branch, service, sprint, \
           tenant, environment, request_id, batch_id, hash_before, hash_after, summary, principal, via) \
         SELECT ?1, 'confirm', i.id, i.kind, i.org, i.project, i.branch, i.service, i.sprint, i.tenant, \
           i.environment, c.request_id, c.batch_id, i.content_hash, i.content_hash, ?3, c.principal, c.via \
         FROM items i, audit_context c WHERE i.id = ?2 AND c.id = 1",
        params![at, id.to_string(), summary],
    )?;
    Ok(WriteOutcome::Confirmed { id })
}

pub(super) fn provenance_of(conn: &Connection, ids: &[Uuid]) -> Result<Vec<(Uuid, Provenance)>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let ids = serde_json::Value::from(ids.iter().map(Uuid::to_string).collect::<Vec<_>>()).to_string();
    let rows: Vec<_> = conn
        .prepare_cached(&format!(
            "SELECT {PROVENANCE_COLUMNS} FROM item_provenance WHERE item_id IN (SELECT value FROM json_each(?1))"
        ))?
        .query_map([ids], provenance_row)?
        .collect::<rusqlite::Result<_>>()?;
    rows.into_iter().map(finish_provenance).collect()
}

pub(super) fn provenance_page(
    conn: &Connection,
    after: Option<Uuid>,
    limit: usize,
) -> Result<Vec<(Uuid, Provenance)>> {
    let after = after.map(|id| id.to_string()).unwrap_or_default();
    let rows: Vec<_> = conn
        .prepare_cached(&format!(
            "SELECT {PROVENANCE_COLUMNS} FROM item_provenance WHERE item_id > ?1 ORDER BY item_id LIMIT ?2"
        ))?
        .query_map(params![after, limit as i64], provenance_row)?
        .collect::<rusqlite::Result<_>>()?;
    rows.into_iter().map(finish_provenance).collect()
}

fn path_row(r: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<(PathChange, String, Option<String>)> {
    Ok((
        PathChange {
            path: r.get(first)?,
            commit: r.get(first + 1)?,
            time: r.get(first + 2)?,
            changes: r.get(first + 3)?,
            state: PathState::Present,
        },
        r.get(first + 4)?,
        r.get(first + 5)?,
    ))
}

fn finish_path((mut row, state, to): (PathChange, String, Option<String>)) -> Result<PathChange> {
    row.state = PathState::from_stored(&state, to)
        .ok_or_else(|| StoreError::Corrupt(format!("git_paths.state of {} holds {state:?}", row.path)))?;
    Ok(row)
}

const PATH_COLUMNS: &str = "path, commit_id, commit_time, changes, state, renamed_to";

pub(super) fn path_changes(conn: &Connection, at: &RepoBranch, paths: &[String]) -> Result<Vec<PathChange>> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let paths = serde_json::Value::from(paths.to_vec()).to_string();
    let rows: Vec<_> = conn
        .prepare_cached(&format!(
            "SELECT {PATH_COLUMNS} FROM git_paths WHERE org = ?1 AND project = ?2 AND branch = ?3 \
             AND path IN (SELECT value FROM json_each(?4))"
        ))?
        .query_map(params![at.org, at.project, at.branch, paths], |r| path_row(r, 0))?
        .collect::<rusqlite::Result<_>>()?;
    rows.into_iter().map(finish_path).collect()
}

pub(super) fn path_head(conn: &Connection, at: &RepoBranch) -> Result<Option<PathHead>> {
    Ok(conn
        .prepare_cached(
            "SELECT commit_id, commit_time, synced_at FROM git_heads WHERE org = ?1 AND project = ?2 AND branch = ?3",
        )?
        .query_row(params![at.org, at.project, at.branch], |r| {
            Ok(PathHead { commit: r.get(0)?, time: r.get(1)?, synced_at: r.get(2)? })
        })
        .optional()?)
}

const MERGE_COLUMNS: &str =
    "id, org, project, from_branch, into_branch, commit_id, how, detected_at, undone_at";

fn merge_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(BranchMerge, String)> {
    Ok((
        BranchMerge {
            id: r.get(0)?,
            org: r.get(1)?,
            project: r.get(2)?,
            from_branch: r.get(3)?,
            into_branch: r.get(4)?,
            commit: r.get(5)?,
            how: MergeHow::Merge,
            detected_at: r.get(7)?,
            undone_at: r.get(8)?,
        },
        r.get(6)?,
    ))
}

fn finish_merge((mut m, how): (BranchMerge, String)) -> Result<BranchMerge> {
    m.how = MergeHow::parse(&how)
        .ok_or_else(|| StoreError::Corrupt(format!("git_merges.how of record {} holds {how:?}", m.id)))?;
    Ok(m)
}

pub(super) fn merges(conn: &Connection, org: &str, project: &str) -> Result<Vec<BranchMerge>> {
    let rows: Vec<_> = conn
        .prepare_cached(&format!(
            "SELECT {MERGE_COLUMNS} FROM git_merges WHERE org = ?1 AND project = ?2 ORDER BY id"
        ))?
        .query_map(params![org, project], merge_row)?
        .collect::<rusqlite::Result<_>>()?;
    rows.into_iter().map(finish_merge).collect()
}

fn upsert_paths(tx: &Transaction<'_>, at: &RepoBranch, rows: &[PathChange]) -> Result<()> {
    let mut stmt = tx.prepare_cached(
        "INSERT INTO git_paths (org, project, branch, path, commit_id, commit_time, changes, state, renamed_to) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) \
         ON CONFLICT (org, project, branch, path) DO UPDATE SET commit_id = excluded.commit_id, \
           commit_time = excluded.commit_time, changes = excluded.changes, state = excluded.state, \
           renamed_to = excluded.renamed_to",
    )?;
    for row in rows {
        stmt.execute(params![
            at.org,
            at.project,
            at.branch,
            row.path,
            row.commit,
            row.time,
            row.changes,
            row.state.word(),
            row.state.renamed_to()
        ])?;
    }
    Ok(())
}

fn upsert_head(tx: &Transaction<'_>, at: &RepoBranch, head: &PathHead) -> Result<()> {
    tx.prepare_cached(
        "INSERT INTO git_heads (org, project, branch, commit_id, commit_time, synced_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
         ON CONFLICT (org, project, branch) DO UPDATE SET commit_id = excluded.commit_id, \
           commit_time = excluded.commit_time, synced_at = excluded.synced_at",
    )?
    .execute(params![at.org, at.project, at.branch, head.commit, head.time, head.synced_at])?;
    Ok(())
}

pub(super) fn write_paths(
    conn: &mut Connection,
    at: &RepoBranch,
    head: &PathHead,
    rows: &[PathChange],
    whole: bool,
) -> Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    if whole {
        tx.execute(
            "DELETE FROM git_paths WHERE org = ?1 AND project = ?2 AND branch = ?3",
            params![at.org, at.project, at.branch],
        )?;
    }
    upsert_paths(&tx, at, rows)?;
    upsert_head(&tx, at, head)?;
    tx.commit()?;
    Ok(())
}

/// Runs `write` with the writer's context in `audit_context` (the merge triggers read it),
/// cleared before commit.
fn with_context<T>(
    conn: &mut Connection,
    context: &WriteContext,
    write: impl FnOnce(&Transaction<'_>) -> Result<T>,
) -> Result<T> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute(
        "UPDATE audit_context SET request_id = ?1, batch_id = ?2, principal = ?3, via = ?4 WHERE id = 1",
        params![context.request_id, Uuid::now_v7().to_string(), context.principal, context.via],
    )?;
    let out = write(&tx)?;
    tx.execute(
        "UPDATE audit_context SET request_id = NULL, batch_id = NULL, principal = NULL, via = NULL WHERE id = 1",
        [],
    )?;
    tx.commit()?;
    Ok(out)
}

fn insert_merge(tx: &Transaction<'_>, m: &BranchMerge) -> Result<Option<i64>> {
    let id: Option<i64> = tx
        .prepare_cached(
            "INSERT INTO git_merges (org, project, from_branch, into_branch, commit_id, how, detected_at, undone_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) \
             ON CONFLICT (org, project, from_branch, into_branch, commit_id) DO NOTHING RETURNING id",
        )?
        .query_row(
            params![m.org, m.project, m.from_branch, m.into_branch, m.commit, m.how.as_str(), m.detected_at, m.undone_at],
            |r| r.get(0),
        )
        .optional()?;
    Ok(id)
}

pub(super) fn record_merge(
    conn: &mut Connection,
    m: &BranchMerge,
    context: &WriteContext,
) -> Result<Option<i64>> {
    with_context(conn, context, |tx| insert_merge(tx, m))
}

pub(super) fn undo_merges(
    conn: &mut Connection,
    place: &RepoBranch,
    from: &str,
    at: i64,
    context: &WriteContext,
) -> Result<u64> {
    with_context(conn, context, |tx| {
        Ok(tx.execute(
            "UPDATE git_merges SET undone_at = ?5 WHERE org = ?1 AND project = ?2 AND from_branch = ?3 \
             AND into_branch = ?4 AND undone_at IS NULL",
            params![place.org, place.project, from, place.branch, at],
        )? as u64)
    })
}

pub(super) fn git_tables(conn: &Connection) -> Result<GitTables> {
    let place = |r: &rusqlite::Row<'_>| -> rusqlite::Result<RepoBranch> {
        Ok(RepoBranch { org: r.get(0)?, project: r.get(1)?, branch: r.get(2)? })
    };
    let heads = conn
        .prepare(
            "SELECT org, project, branch, commit_id, commit_time, synced_at FROM git_heads \
             ORDER BY org, project, branch",
        )?
        .query_map([], |r| {
            Ok((place(r)?, PathHead { commit: r.get(3)?, time: r.get(4)?, synced_at: r.get(5)? }))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let raw: Vec<_> = conn
        .prepare(&format!(
            "SELECT org, project, branch, {PATH_COLUMNS} FROM git_paths ORDER BY org, project, branch, path"
        ))?
        .query_map([], |r| Ok((place(r)?, path_row(r, 3)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let paths = raw.into_iter().map(|(at, row)| Ok((at, finish_path(row)?))).collect::<Result<_>>()?;
    let raw: Vec<_> = conn
        .prepare(&format!("SELECT {MERGE_COLUMNS} FROM git_merges ORDER BY id"))?
        .query_map([], merge_row)?
        .collect::<rusqlite::Result<_>>()?;
    let merges = raw.into_iter().map(finish_merge).collect::<Result<_>>()?;
    Ok(GitTables { heads, paths, merges })
}

pub(super) fn import_git_tables(
    conn: &mut Connection,
    tables: &GitTables,
    context: &WriteContext,
) -> Result<()> {
    with_context(conn, context, |tx| {
        {
            let mut head = tx.prepare_cached(
                "INSERT INTO git_heads (org, project, branch, commit_id, commit_time, synced_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING",
            )?;
            for (at, h) in &tables.heads {
                head.execute(params![at.org, at.project, at.branch, h.commit, h.time, h.synced_at])?;
            }
            let mut path = tx.prepare_cached(
                "INSERT INTO git_paths (org, project, branch, path, commit_id, commit_time, changes, state, renamed_to) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT DO NOTHING",
            )?;
            for (at, r) in &tables.paths {
                path.execute(params![
                    at.org,
                    at.project,
                    at.branch,
                    r.path,
                    r.commit,
                    r.time,
                    r.changes,
                    r.state.word(),
                    r.state.renamed_to()
                ])?;
            }
        }
        for m in &tables.merges {
            insert_merge(tx, m)?;
        }
        Ok(())
    })
}
