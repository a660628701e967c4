//! Provenance and the git tables on PostgreSQL (`0019_provenance.sql`): an item's provenance
//! row, a branch's path table and head, a project's merge records. A write of merge records
//! takes the audit chain's lock first, as every audited transaction does.

use super::conn::{Conn, Sql, Tx};
use crate::{GitTables, Result, StoreError, WriteContext, WriteOutcome};
use cortex_domain::Kind;
use cortex_domain::provenance::{
    BranchMerge, FileBaseline, MergeHow, PathChange, PathHead, PathState, Provenance, RepoBranch,
};
use postgres::Row;
use serde_json::Value;
use uuid::Uuid;

const PROVENANCE_COLUMNS: &str = "item_id, commit_id, commit_time, branch, dirty, files";

fn provenance(r: &Row) -> Result<(Uuid, Provenance)> {
    let id: Uuid = r.try_get(0)?;
    let files: Value = r.try_get(5)?;
    let files = serde_json::from_value::<Vec<FileBaseline>>(files)
        .map_err(|e| StoreError::Corrupt(format!("item_provenance.files of {id}: {e}")))?;
    Ok((
        id,
        Provenance {
            commit: r.try_get(1)?,
            commit_time: r.try_get(2)?,
            branch: r.try_get(3)?,
            dirty: r.try_get(4)?,
            files,
        },
    ))
}

fn files_json(p: &Provenance) -> Result<Value> {
    serde_json::to_value(&p.files).map_err(|e| StoreError::Corrupt(format!("provenance files: {e}")))
}

/// Sets the provenance of a stored item (see [`crate::WriteOp::Provenance`]).
pub(super) fn set_provenance(tx: &mut Tx<'_>, id: Uuid, p: &Provenance) -> Result<WriteOutcome> {
    let changed = tx.execute(
        &format!(
            "INSERT INTO item_provenance ({PROVENANCE_COLUMNS}) \
             SELECT id, $2, $3, $4, $5, $6 FROM items WHERE id = $1 \
             ON CONFLICT (item_id) DO UPDATE SET commit_id = excluded.commit_id, \
               commit_time = excluded.commit_time, branch = excluded.branch, dirty = excluded.dirty, \
               files = excluded.files"
        ),
        &[&id, &p.commit, &p.commit_time, &p.branch, &p.dirty, &files_json(p)?],
    )?;
    Ok(if changed == 1 { WriteOutcome::Updated { id } } else { WriteOutcome::NotFound { id } })
}

/// Confirms a live item (see [`crate::WriteOp::Confirm`]): its provenance replaced and a
/// `confirm` audit record appended, with the transaction's writer.
pub(super) fn confirm(
    tx: &mut Tx<'_>,
    id: Uuid,
    kind: Option<Kind>,
    p: &Provenance,
    at: i64,
) -> Result<WriteOutcome> {
    let Some(row) = tx.query_opt("SELECT kind, deleted_at FROM items WHERE id = $1 FOR UPDATE", &[&id])?
    else {
        return Ok(WriteOutcome::NotFound { id });
    };
    let stored: String = row.try_get(0)?;
    let stored = crate::model::parse_kind(&stored)?;
    if kind.is_some_and(|k| k != stored) {
        return Ok(WriteOutcome::KindMismatch { id, stored });
    }
    let deleted_at: Option<i64> = row.try_get(1)?;
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
        "INSERT INTO audit_log (at, operation, item_id, kind, org, project, branch, service, sprint, \
           tenant, environment, request_id, batch_id, hash_before, hash_after, summary, principal, via) \
         SELECT $1, 'confirm', i.id, i.kind, i.org, i.project, i.branch, i.service, i.sprint, i.tenant, \
           i.environment, nullif(current_setting('cortex.request_id', true), ''), \
           nullif(current_setting('cortex.batch_id', true), ''), i.content_hash, i.content_hash, $3, \
           nullif(current_setting('cortex.principal', true), ''), nullif(current_setting('cortex.via', true), '') \
         FROM items i WHERE i.id = $2",
        &[&at, &id, &summary],
    )?;
    Ok(WriteOutcome::Confirmed { id })
}

pub(super) fn provenance_of(c: &mut Conn, ids: &[Uuid]) -> Result<Vec<(Uuid, Provenance)>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let rows = c.query(
        &format!("SELECT {PROVENANCE_COLUMNS} FROM item_provenance WHERE item_id = ANY($1)"),
        &[&ids],
    )?;
    rows.iter().map(provenance).collect()
}

pub(super) fn provenance_page(
    c: &mut Conn,
    after: Option<Uuid>,
    limit: usize,
) -> Result<Vec<(Uuid, Provenance)>> {
    let after = after.unwrap_or(Uuid::nil());
    let rows = c.query(
        &format!(
            "SELECT {PROVENANCE_COLUMNS} FROM item_provenance WHERE item_id > $1 ORDER BY item_id LIMIT $2"
        ),
        &[&after, &(limit as i64)],
    )?;
    rows.iter().map(provenance).collect()
}

const PATH_COLUMNS: &str = "path, commit_id, commit_time, changes, state, renamed_to";

fn path_row(r: &Row, first: usize) -> Result<PathChange> {
    let path: String = r.try_get(first)?;
    let state: String = r.try_get(first + 4)?;
    let to: Option<String> = r.try_get(first + 5)?;
    let state = PathState::from_stored(&state, to)
        .ok_or_else(|| StoreError::Corrupt(format!("git_paths.state of {path} holds {state:?}")))?;
    Ok(PathChange {
        commit: r.try_get(first + 1)?,
        time: r.try_get(first + 2)?,
        changes: r.try_get(first + 3)?,
        state,
        path,
    })
}

pub(super) fn path_changes(c: &mut Conn, at: &RepoBranch, paths: &[String]) -> Result<Vec<PathChange>> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let rows = c.query(
        &format!(
            "SELECT {PATH_COLUMNS} FROM git_paths WHERE org = $1 AND project = $2 AND branch = $3 \
             AND path = ANY($4)"
        ),
        &[&at.org, &at.project, &at.branch, &paths],
    )?;
    rows.iter().map(|r| path_row(r, 0)).collect()
}

pub(super) fn path_head(c: &mut Conn, at: &RepoBranch) -> Result<Option<PathHead>> {
    let row = c.query_opt(
        "SELECT commit_id, commit_time, synced_at FROM git_heads WHERE org = $1 AND project = $2 AND branch = $3",
        &[&at.org, &at.project, &at.branch],
    )?;
    row.map(|r| Ok(PathHead { commit: r.try_get(0)?, time: r.try_get(1)?, synced_at: r.try_get(2)? }))
        .transpose()
}

const MERGE_COLUMNS: &str =
    "id, org, project, from_branch, into_branch, commit_id, how, detected_at, undone_at";

fn merge(r: &Row) -> Result<BranchMerge> {
    let id: i64 = r.try_get(0)?;
    let how: String = r.try_get(6)?;
    let how = MergeHow::parse(&how)
        .ok_or_else(|| StoreError::Corrupt(format!("git_merges.how of record {id} holds {how:?}")))?;
    Ok(BranchMerge {
        id,
        org: r.try_get(1)?,
        project: r.try_get(2)?,
        from_branch: r.try_get(3)?,
        into_branch: r.try_get(4)?,
        commit: r.try_get(5)?,
        how,
        detected_at: r.try_get(7)?,
        undone_at: r.try_get(8)?,
    })
}

pub(super) fn merges(c: &mut Conn, org: &str, project: &str) -> Result<Vec<BranchMerge>> {
    let rows = c.query(
        &format!("SELECT {MERGE_COLUMNS} FROM git_merges WHERE org = $1 AND project = $2 ORDER BY id"),
        &[&org, &project],
    )?;
    rows.iter().map(merge).collect()
}

fn upsert_paths(tx: &mut Tx<'_>, at: &RepoBranch, rows: &[PathChange], keep_existing: bool) -> Result<()> {
    let on_conflict = if keep_existing {
        "DO NOTHING"
    } else {
        "DO UPDATE SET commit_id = excluded.commit_id, commit_time = excluded.commit_time, \
         changes = excluded.changes, state = excluded.state, renamed_to = excluded.renamed_to"
    };
    let sql = format!(
        "INSERT INTO git_paths (org, project, branch, path, commit_id, commit_time, changes, state, renamed_to) \
         SELECT $1, $2, $3, p, c, t, n, s, r FROM unnest($4::text[], $5::text[], $6::bigint[], $7::bigint[], \
           $8::text[], $9::text[]) AS u(p, c, t, n, s, r) \
         ON CONFLICT (org, project, branch, path) {on_conflict}"
    );
    // One statement per thousand rows: a whole table of a large repository in few round trips.
    for chunk in rows.chunks(1_000) {
        let paths: Vec<&str> = chunk.iter().map(|r| r.path.as_str()).collect();
        let commits: Vec<&str> = chunk.iter().map(|r| r.commit.as_str()).collect();
        let times: Vec<i64> = chunk.iter().map(|r| r.time).collect();
        let changes: Vec<i64> = chunk.iter().map(|r| r.changes).collect();
        let states: Vec<&str> = chunk.iter().map(|r| r.state.word()).collect();
        let to: Vec<Option<&str>> = chunk.iter().map(|r| r.state.renamed_to()).collect();
        tx.execute(
            &sql,
            &[&at.org, &at.project, &at.branch, &paths, &commits, &times, &changes, &states, &to],
        )?;
    }
    Ok(())
}

fn upsert_head(tx: &mut Tx<'_>, at: &RepoBranch, head: &PathHead, keep_existing: bool) -> Result<()> {
    let on_conflict = if keep_existing {
        "DO NOTHING"
    } else {
        "DO UPDATE SET commit_id = excluded.commit_id, commit_time = excluded.commit_time, synced_at = excluded.synced_at"
    };
    tx.execute(
        &format!(
            "INSERT INTO git_heads (org, project, branch, commit_id, commit_time, synced_at) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (org, project, branch) {on_conflict}"
        ),
        &[&at.org, &at.project, &at.branch, &head.commit, &head.time, &head.synced_at],
    )?;
    Ok(())
}

pub(super) fn write_paths(
    c: &mut Conn,
    at: &RepoBranch,
    head: &PathHead,
    rows: &[PathChange],
    whole: bool,
) -> Result<()> {
    let mut tx = c.transaction()?;
    if whole {
        tx.execute(
            "DELETE FROM git_paths WHERE org = $1 AND project = $2 AND branch = $3",
            &[&at.org, &at.project, &at.branch],
        )?;
    }
    upsert_paths(&mut tx, at, rows, false)?;
    upsert_head(&mut tx, at, head, false)?;
    tx.commit()?;
    Ok(())
}

/// A transaction holding the audit chain's lock, with the writer named for the triggers.
fn audited<'a>(c: &'a mut Conn, context: &WriteContext) -> Result<Tx<'a>> {
    let mut tx = c.transaction()?;
    super::write::take_audit_lock(&mut tx)?;
    let none = String::new();
    tx.execute(
        "SELECT set_config('cortex.request_id', $1, true), set_config('cortex.batch_id', $2, true), \
         set_config('cortex.principal', $3, true), set_config('cortex.via', $4, true)",
        &[
            context.request_id.as_ref().unwrap_or(&none),
            &Uuid::now_v7().to_string(),
            context.principal.as_ref().unwrap_or(&none),
            context.via.as_ref().unwrap_or(&none),
        ],
    )?;
    Ok(tx)
}

fn insert_merge(tx: &mut Tx<'_>, m: &BranchMerge) -> Result<Option<i64>> {
    let row = tx.query_opt(
        "INSERT INTO git_merges (org, project, from_branch, into_branch, commit_id, how, detected_at, undone_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
         ON CONFLICT (org, project, from_branch, into_branch, commit_id) DO NOTHING RETURNING id",
        &[&m.org, &m.project, &m.from_branch, &m.into_branch, &m.commit, &m.how.as_str(), &m.detected_at, &m.undone_at],
    )?;
    row.map(|r| Ok(r.try_get(0)?)).transpose()
}

pub(super) fn record_merge(c: &mut Conn, m: &BranchMerge, context: &WriteContext) -> Result<Option<i64>> {
    let mut tx = audited(c, context)?;
    let id = insert_merge(&mut tx, m)?;
    tx.commit()?;
    Ok(id)
}

pub(super) fn undo_merges(
    c: &mut Conn,
    place: &RepoBranch,
    from: &str,
    at: i64,
    context: &WriteContext,
) -> Result<u64> {
    let mut tx = audited(c, context)?;
    let undone = tx.execute(
        "UPDATE git_merges SET undone_at = $5 WHERE org = $1 AND project = $2 AND from_branch = $3 \
         AND into_branch = $4 AND undone_at IS NULL",
        &[&place.org, &place.project, &from, &place.branch, &at],
    )?;
    tx.commit()?;
    Ok(undone)
}

pub(super) fn git_tables(c: &mut Conn) -> Result<GitTables> {
    let place = |r: &Row| -> Result<RepoBranch> {
        Ok(RepoBranch { org: r.try_get(0)?, project: r.try_get(1)?, branch: r.try_get(2)? })
    };
    let heads = c
        .query(
            "SELECT org, project, branch, commit_id, commit_time, synced_at FROM git_heads \
             ORDER BY org, project, branch",
            &[],
        )?
        .iter()
        .map(|r| {
            Ok((place(r)?, PathHead { commit: r.try_get(3)?, time: r.try_get(4)?, synced_at: r.try_get(5)? }))
        })
        .collect::<Result<_>>()?;
    let paths = c
        .query(
            &format!("SELECT org, project, branch, {PATH_COLUMNS} FROM git_paths ORDER BY org, project, branch, path"),
            &[],
        )?
        .iter()
        .map(|r| Ok((place(r)?, path_row(r, 3)?)))
        .collect::<Result<_>>()?;
    let merges = c
        .query(&format!("SELECT {MERGE_COLUMNS} FROM git_merges ORDER BY id"), &[])?
        .iter()
        .map(merge)
        .collect::<Result<_>>()?;
    Ok(GitTables { heads, paths, merges })
}

pub(super) fn import_git_tables(c: &mut Conn, tables: &GitTables, context: &WriteContext) -> Result<()> {
    let mut tx = audited(c, context)?;
    for (at, head) in &tables.heads {
        upsert_head(&mut tx, at, head, true)?;
    }
    let mut by_branch: std::collections::BTreeMap<&RepoBranch, Vec<PathChange>> = Default::default();
    for (at, row) in &tables.paths {
        by_branch.entry(at).or_default().push(row.clone());
    }
    for (at, rows) in by_branch {
        upsert_paths(&mut tx, at, &rows, true)?;
    }
    for m in &tables.merges {
        insert_merge(&mut tx, m)?;
    }
    tx.commit()?;
    Ok(())
}
