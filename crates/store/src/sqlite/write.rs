//! Writing a batch in one transaction.

use super::read::{idempotency_owner, natural_key_owner};
use crate::model::{governed_at, link_ends, natural_key_of, scope_values};
use crate::{
    AuditOperation, BlockedAttempt, ChunkVector, DuplicateReason, ItemVectors, Record, Result, StoredItem,
    WriteContext, WriteOp, WriteOutcome,
};
use cortex_domain::Kind;
use cortex_domain::dedupe::{self, DuplicateCheck, DuplicateChecks};
use cortex_domain::graph::Cascade;
use cortex_domain::lifecycle::StatusChange;
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use uuid::Uuid;

pub fn apply_batch(
    conn: &mut Connection,
    ops: &[WriteOp],
    context: &WriteContext,
) -> Result<Vec<WriteOutcome>> {
    // IMMEDIATE takes the write lock up front, so the dedupe checks below see every committed
    // write of every process and no other writer can slip in before our insert.
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // The audit triggers read who is writing from here; cleared before commit, so a later
    // raw write is never attributed to this batch.
    let insert_as =
        ops.iter().any(|op| matches!(op, WriteOp::Import { .. })).then_some(AuditOperation::Import.as_str());
    tx.execute(
        "UPDATE audit_context SET request_id = ?1, batch_id = ?2, principal = ?3, via = ?4, \
         insert_as = ?5 WHERE id = 1",
        params![context.request_id, Uuid::now_v7().to_string(), context.principal, context.via, insert_as],
    )?;
    super::expected::check(&tx, &context.expected)?;
    let mut outcomes = Vec::with_capacity(ops.len());
    for op in ops {
        let outcome = match op {
            WriteOp::Insert { record, checks } => insert(&tx, record, checks)?,
            WriteOp::Update { record } => update(&tx, record)?,
            WriteOp::Delete { id, kind, at, cascade } => delete(&tx, *id, *kind, *at, *cascade)?,
            WriteOp::Restore { id, kind, at } => restore(&tx, *id, *kind, *at)?,
            WriteOp::Import { item, vector, chunks } => import(&tx, item, vector.as_deref(), chunks)?,
            WriteOp::Supersede { id, by, at, status } => supersede(&tx, *id, *by, *at, *status)?,
            WriteOp::Blocked(attempt) => record_blocked(&tx, attempt)?,
            WriteOp::Provenance { id, provenance } => super::git::set_provenance(&tx, *id, provenance)?,
            WriteOp::Confirm { id, kind, provenance, at } => {
                super::git::confirm(&tx, *id, *kind, provenance, *at)?
            }
        };
        outcomes.push(outcome);
    }
    tx.execute(
        "UPDATE audit_context SET request_id = NULL, batch_id = NULL, principal = NULL, via = NULL, \
         insert_as = NULL WHERE id = 1",
        [],
    )?;
    tx.commit()?;
    Ok(outcomes)
}

/// Marks `id` replaced by `by`, if both are live, and writes the status the domain gave (see
/// [`WriteOp::Supersede`]).
fn supersede(
    tx: &Transaction<'_>,
    id: Uuid,
    by: Uuid,
    at: i64,
    status: Option<StatusChange>,
) -> Result<WriteOutcome> {
    // The field name comes from the domain's kind table, never from the caller.
    let (field, value) = status.map(|s| (format!("$.{}", s.field), s.value)).unzip();
    let changed = tx.execute(
        "UPDATE items SET superseded_by = ?2, updated_at = ?3, status = coalesce(?4, status), \
           data = CASE WHEN ?4 IS NULL THEN data ELSE json_set(data, ?5, ?4) END \
         WHERE id = ?1 AND deleted_at IS NULL AND superseded_by IS NULL \
           AND EXISTS (SELECT 1 FROM items n WHERE n.id = ?2 AND n.deleted_at IS NULL)",
        params![id.to_string(), by.to_string(), at, value, field],
    )?;
    Ok(if changed == 1 { WriteOutcome::Updated { id } } else { WriteOutcome::NotFound { id } })
}

/// Appends the audit record of a refused change (the item itself is not touched).
fn record_blocked(tx: &Transaction<'_>, a: &BlockedAttempt) -> Result<WriteOutcome> {
    let s = scope_values(&a.scope);
    tx.execute(
        "INSERT INTO audit_append (at, operation, item_id, kind, org, project, branch, service, sprint, \
           tenant, environment, actor, tool, session, request_id, batch_id, hash_before, hash_after, summary, \
           principal, via) \
         SELECT ?1, 'blocked', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, \
           json_extract(?11, '$.actor'), json_extract(?11, '$.tool'), json_extract(?11, '$.session'), \
           c.request_id, c.batch_id, ?12, NULL, ?13, c.principal, c.via \
         FROM audit_context c WHERE c.id = 1",
        params![
            a.at,
            a.id.to_string(),
            a.kind.as_str(),
            s[0],
            s[1],
            s[2],
            s[3],
            s[4],
            s[5],
            s[6],
            json_text(&a.source),
            a.hash,
            a.reason
        ],
    )?;
    Ok(WriteOutcome::Blocked { id: a.id })
}

/// The item `r` duplicates: the owner found by the first of `checks` that finds one (the
/// order is the domain's, `cortex_domain::dedupe`).
fn find_duplicate(
    tx: &Transaction<'_>,
    r: &Record,
    checks: DuplicateChecks,
) -> Result<Option<(Uuid, DuplicateReason)>> {
    dedupe::first_owner(checks, |check| match check {
        DuplicateCheck::SameId => {
            let taken = tx.prepare_cached("SELECT 1 FROM items WHERE id = ?1")?.exists([r.id.to_string()])?;
            Ok(taken.then_some(r.id))
        }
        DuplicateCheck::IdempotencyKey => match &r.idempotency_key {
            Some(key) => idempotency_owner(tx, &r.scope, key),
            None => Ok(None),
        },
        DuplicateCheck::NaturalKey => match natural_key_of(r) {
            Some(key) => natural_key_owner(tx, &r.scope, &key),
            None => Ok(None),
        },
        DuplicateCheck::ContentHash => {
            let s = scope_values(&r.scope);
            let existing: Option<String> = tx
                .prepare_cached(
                    "SELECT id FROM items WHERE kind = ?1 AND content_hash = ?2 AND org = ?3 AND project = ?4 \
                     AND branch = ?5 AND service = ?6 AND sprint = ?7 AND tenant = ?8 AND environment = ?9 \
                     AND deleted_at IS NULL LIMIT 1",
                )?
                .query_row(
                    params![r.kind.as_str(), r.content_hash, s[0], s[1], s[2], s[3], s[4], s[5], s[6]],
                    |row| row.get(0),
                )
                .optional()?;
            existing.map(|id| super::row::parse_id(&id, "id")).transpose()
        }
    })
}

fn json_text(value: &Option<serde_json::Value>) -> Option<String> {
    value.as_ref().map(|v| v.to_string())
}

fn insert(tx: &Transaction<'_>, r: &Record, checks: DuplicateChecks) -> Result<WriteOutcome> {
    if let Some((existing_id, reason)) = find_duplicate(tx, r, checks)? {
        return Ok(WriteOutcome::Duplicate { existing_id, reason });
    }
    insert_row(tx, r, Stored::new(), r.vector.as_deref(), &r.chunks)?;
    Ok(WriteOutcome::Inserted { id: r.id })
}

fn import(
    tx: &Transaction<'_>,
    item: &StoredItem,
    vector: Option<&[f32]>,
    chunks: &[ChunkVector],
) -> Result<WriteOutcome> {
    let r = &item.record;
    if let Some((existing_id, reason)) = find_duplicate(tx, r, dedupe::IMPORT)? {
        return Ok(WriteOutcome::Duplicate { existing_id, reason });
    }
    let stored = Stored {
        deleted_at: item.deleted_at,
        superseded_by: item.superseded_by,
        governed_since: item.governed_since,
        author: item.author.clone(),
    };
    insert_row(tx, r, stored, vector, chunks)?;
    Ok(WriteOutcome::Inserted { id: r.id })
}

/// What a new row holds beside its record: none of it for an insert, the item's own for an
/// import. An item governed as written is governed from then on, whatever it says here.
struct Stored {
    deleted_at: Option<i64>,
    superseded_by: Option<Uuid>,
    governed_since: Option<i64>,
    /// The author an import carries; the writer's principal otherwise.
    author: Option<String>,
}

impl Stored {
    fn new() -> Stored {
        Stored { deleted_at: None, superseded_by: None, governed_since: None, author: None }
    }
}

fn insert_row(
    tx: &Transaction<'_>,
    r: &Record,
    stored: Stored,
    vector: Option<&[f32]>,
    chunks: &[ChunkVector],
) -> Result<()> {
    let s = scope_values(&r.scope);
    let (link_from, link_to) = link_ends(r);
    tx.prepare_cached(
        "INSERT INTO items (id, kind, org, project, branch, service, sprint, tenant, environment, \
         title, body, content, data, metadata, source, tags, status, content_hash, idempotency_key, \
         ttl, created_at, updated_at, expires_at, deleted_at, superseded_by, natural_key, link_from, link_to, \
         occurred_at, governed_since, author) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, \
                 coalesce(?31, (SELECT principal FROM audit_context WHERE id = 1)))",
    )?
    .execute(params![
            r.id.to_string(),
            r.kind.as_str(),
            s[0],
            s[1],
            s[2],
            s[3],
            s[4],
            s[5],
            s[6],
            r.title,
            r.body,
            r.content,
            r.data.to_string(),
            json_text(&r.metadata),
            json_text(&r.source),
            serde_json::to_string(&r.tags).unwrap_or_else(|_| "[]".into()),
            r.status,
            r.content_hash,
            r.idempotency_key,
            r.ttl,
            r.created_at,
            r.updated_at,
            r.expires_at,
            stored.deleted_at,
            stored.superseded_by.map(|id| id.to_string()),
            natural_key_of(r),
            link_from.map(|id| id.to_string()),
            link_to.map(|id| id.to_string()),
            r.occurred_at,
            stored.governed_since.or_else(|| governed_at(r)),
            stored.author,
    ])?;
    let rowid = tx.last_insert_rowid();
    insert_tags(tx, rowid, &r.tags)?;
    write_vector(tx, rowid, vector, chunks)?;
    Ok(())
}

fn insert_tags(tx: &Transaction<'_>, rowid: i64, tags: &[String]) -> Result<()> {
    let mut stmt = tx.prepare_cached("INSERT OR IGNORE INTO item_tags (tag, item_rowid) VALUES (?1, ?2)")?;
    for tag in tags {
        stmt.execute(params![tag, rowid])?;
    }
    Ok(())
}

/// Stores (or, for an item whose new text was not embedded, removes) the item's vector and
/// chunk vectors, so a vector never describes text the item no longer has.
fn write_vector(
    tx: &Transaction<'_>,
    rowid: i64,
    vector: Option<&[f32]>,
    chunks: &[ChunkVector],
) -> Result<()> {
    match vector {
        Some(v) => tx
            .prepare_cached(
                "INSERT OR REPLACE INTO item_vectors (item_rowid, vector, chunks) VALUES (?1, ?2, ?3)",
            )?
            .execute(params![rowid, super::row::vector_to_blob(v), super::row::chunks_to_blob(chunks)])?,
        None => tx.prepare_cached("DELETE FROM item_vectors WHERE item_rowid = ?1")?.execute([rowid])?,
    };
    Ok(())
}

/// The live row of `id`: its rowid and kind, or the outcome that stops the write.
fn live_row(
    tx: &Transaction<'_>,
    id: Uuid,
    kind: Option<Kind>,
) -> Result<Result<(i64, Option<i64>), WriteOutcome>> {
    let row: Option<(i64, String, Option<i64>)> = tx
        .query_row("SELECT rowid, kind, deleted_at FROM items WHERE id = ?1", [id.to_string()], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .optional()?;
    let Some((rowid, stored_kind, deleted_at)) = row else {
        return Ok(Err(WriteOutcome::NotFound { id }));
    };
    let stored = crate::model::parse_kind(&stored_kind)?;
    if let Some(kind) = kind
        && kind != stored
    {
        return Ok(Err(WriteOutcome::KindMismatch { id, stored }));
    }
    Ok(Ok((rowid, deleted_at)))
}

fn update(tx: &Transaction<'_>, r: &Record) -> Result<WriteOutcome> {
    let (rowid, deleted_at) = match live_row(tx, r.id, Some(r.kind))? {
        Ok(found) => found,
        Err(outcome) => return Ok(outcome),
    };
    if deleted_at.is_some() {
        return Ok(WriteOutcome::NotFound { id: r.id });
    }
    let s = scope_values(&r.scope);
    let (link_from, link_to) = link_ends(r);
    // A scope field the update leaves unset ('') keeps its stored value.
    tx.execute(
        "UPDATE items SET \
           org = coalesce(nullif(?2, ''), org), project = coalesce(nullif(?3, ''), project), \
           branch = coalesce(nullif(?4, ''), branch), service = coalesce(nullif(?5, ''), service), \
           sprint = coalesce(nullif(?6, ''), sprint), tenant = coalesce(nullif(?7, ''), tenant), \
           environment = coalesce(nullif(?8, ''), environment), \
           title = ?9, body = ?10, content = ?11, data = ?12, metadata = ?13, source = ?14, tags = ?15, \
           status = ?16, content_hash = ?17, ttl = coalesce(?18, ttl), updated_at = ?19, \
           expires_at = CASE WHEN ?18 IS NULL THEN expires_at ELSE ?20 END, natural_key = ?21, \
           link_from = ?22, link_to = ?23, occurred_at = coalesce(?24, occurred_at), \
           governed_since = coalesce(governed_since, ?25), \
           author = (SELECT principal FROM audit_context WHERE id = 1) \
         WHERE rowid = ?1",
        params![
            rowid,
            s[0],
            s[1],
            s[2],
            s[3],
            s[4],
            s[5],
            s[6],
            r.title,
            r.body,
            r.content,
            r.data.to_string(),
            json_text(&r.metadata),
            json_text(&r.source),
            serde_json::to_string(&r.tags).unwrap_or_else(|_| "[]".into()),
            r.status,
            r.content_hash,
            r.ttl,
            r.updated_at,
            r.expires_at,
            natural_key_of(r),
            link_from.map(|id| id.to_string()),
            link_to.map(|id| id.to_string()),
            r.occurred_at,
            governed_at(r),
        ],
    )?;
    tx.prepare_cached("DELETE FROM item_tags WHERE item_rowid = ?1")?.execute([rowid])?;
    insert_tags(tx, rowid, &r.tags)?;
    write_vector(tx, rowid, r.vector.as_deref(), &r.chunks)?;
    Ok(WriteOutcome::Updated { id: r.id })
}

fn delete(
    tx: &Transaction<'_>,
    id: Uuid,
    kind: Option<Kind>,
    at: i64,
    cascade: Cascade,
) -> Result<WriteOutcome> {
    let (rowid, deleted_at) = match live_row(tx, id, kind)? {
        Ok(found) => found,
        Err(outcome) => return Ok(outcome),
    };
    if deleted_at.is_some() {
        return Ok(WriteOutcome::Deleted { id, already: true, cascaded: 0 });
    }
    tx.execute("UPDATE items SET deleted_at = ?2, updated_at = ?2 WHERE rowid = ?1", params![rowid, at])?;
    let cascaded = delete_links_of(tx, &[id], at, cascade)?;
    Ok(WriteOutcome::Deleted { id, already: false, cascaded })
}

/// Brings a deleted item back (see [`WriteOp::Restore`]); the audit trigger records `restore`.
fn restore(tx: &Transaction<'_>, id: Uuid, kind: Option<Kind>, at: i64) -> Result<WriteOutcome> {
    let (rowid, deleted_at) = match live_row(tx, id, kind)? {
        Ok(found) => found,
        Err(outcome) => return Ok(outcome),
    };
    if deleted_at.is_none() {
        return Ok(WriteOutcome::Restored { id, already: true });
    }
    let holder: Option<String> = tx
        .query_row(
            "SELECT o.id FROM items i JOIN items o ON o.natural_key = i.natural_key AND o.org = i.org \
               AND o.project = i.project AND o.deleted_at IS NULL AND o.rowid <> i.rowid \
             WHERE i.rowid = ?1 LIMIT 1",
            [rowid],
            |row| row.get(0),
        )
        .optional()?;
    if let Some(holder) = holder {
        let existing_id = super::row::parse_id(&holder, "id")?;
        return Ok(WriteOutcome::Duplicate { existing_id, reason: DuplicateReason::NaturalKey });
    }
    tx.execute("UPDATE items SET deleted_at = NULL, updated_at = ?2 WHERE rowid = ?1", params![rowid, at])?;
    Ok(WriteOutcome::Restored { id, already: false })
}

/// Soft-deletes (audited) the live links whose end is one of `ids`, when `cascade` says they go
/// with it; how many.
fn delete_links_of(tx: &Transaction<'_>, ids: &[Uuid], at: i64, cascade: Cascade) -> Result<u64> {
    if cascade == Cascade::KeepLinks || ids.is_empty() {
        return Ok(0);
    }
    let ids = serde_json::Value::from(ids.iter().map(Uuid::to_string).collect::<Vec<_>>()).to_string();
    // Two index lookups (link_from, link_to) rather than one OR, which SQLite would scan.
    let deleted = tx
        .prepare_cached(
            "UPDATE items SET deleted_at = ?2, updated_at = ?2 WHERE rowid IN \
             (SELECT rowid FROM items WHERE link_from IN (SELECT value FROM json_each(?1)) AND deleted_at IS NULL \
              UNION SELECT rowid FROM items WHERE link_to IN (SELECT value FROM json_each(?1)) AND deleted_at IS NULL)",
        )?
        .execute(params![ids, at])?;
    Ok(deleted as u64)
}

/// Hard-deletes up to `limit` expired items in one transaction (tags, vectors and the search
/// index follow by cascade and trigger; the audit trigger records each as `purge`).
pub fn purge_expired(
    conn: &mut Connection,
    now: i64,
    limit: usize,
    cascade: Cascade,
    context: &WriteContext,
) -> Result<Vec<(String, i64)>> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute(
        "UPDATE audit_context SET batch_id = ?1, principal = ?2, via = ?3 WHERE id = 1",
        params![Uuid::now_v7().to_string(), context.principal, context.via.as_deref().unwrap_or("purge")],
    )?;
    let purged: Vec<(String, String)> = tx
        .prepare_cached(
            "DELETE FROM items WHERE rowid IN \
             (SELECT rowid FROM items WHERE expires_at IS NOT NULL AND expires_at <= ?1 LIMIT ?2) RETURNING kind, id",
        )?
        .query_map(params![now, limit as i64], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let ids: Vec<Uuid> =
        purged.iter().map(|(_, id)| super::row::parse_id(id, "id")).collect::<Result<_>>()?;
    delete_links_of(&tx, &ids, now, cascade)?;
    let kinds: Vec<String> = purged.into_iter().map(|(kind, _)| kind).collect();
    tx.execute("UPDATE audit_context SET batch_id = NULL, principal = NULL, via = NULL WHERE id = 1", [])?;
    tx.commit()?;
    Ok(crate::model::count_by_kind(kinds))
}

/// New vectors for stored items, in one transaction (see [`crate::Store::set_vectors`]).
pub fn set_vectors(conn: &mut Connection, vectors: &[ItemVectors]) -> Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    {
        let mut stmt = tx.prepare_cached(
            "INSERT OR REPLACE INTO item_vectors (item_rowid, vector, chunks) SELECT rowid, ?2, ?3 FROM items WHERE id = ?1",
        )?;
        for r in vectors {
            stmt.execute(params![
                r.id.to_string(),
                super::row::vector_to_blob(&r.vector),
                super::row::chunks_to_blob(&r.chunks)
            ])?;
        }
    }
    tx.commit()?;
    Ok(())
}
