//! Writing a batch in one transaction, safely beside other processes writing too.

use super::conn::{Conn, Sql, Tx};
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
use postgres::error::SqlState;
use uuid::Uuid;

/// A batch that loses a deadlock or a serialization conflict is retried whole this often.
const ATTEMPTS: usize = 5;

pub fn apply_batch(client: &mut Conn, ops: &[WriteOp], context: &WriteContext) -> Result<Vec<WriteOutcome>> {
    let mut attempt = 1;
    loop {
        match try_batch(client, ops, context) {
            Err(crate::StoreError::Postgres(e))
                if attempt < ATTEMPTS
                    && matches!(
                        e.code(),
                        Some(&SqlState::T_R_DEADLOCK_DETECTED | &SqlState::T_R_SERIALIZATION_FAILURE)
                    ) =>
            {
                tracing::debug!(attempt, "write batch lost a conflict with another writer; retrying");
                attempt += 1;
            }
            other => return other,
        }
    }
}

fn try_batch(client: &mut Conn, ops: &[WriteOp], context: &WriteContext) -> Result<Vec<WriteOutcome>> {
    let mut tx = client.transaction()?;
    take_audit_lock(&mut tx)?;
    // The audit trigger reads who is writing from transaction-local settings.
    let insert_as = if ops.iter().any(|op| matches!(op, WriteOp::Import { .. })) {
        AuditOperation::Import.as_str()
    } else {
        ""
    };
    let batch_id = Uuid::now_v7().to_string();
    let none = String::new();
    tx.execute(
        "SELECT set_config('cortex.request_id', $1, true), set_config('cortex.batch_id', $2, true), \
         set_config('cortex.principal', $3, true), set_config('cortex.via', $4, true), \
         set_config('cortex.insert_as', $5, true)",
        &[
            context.request_id.as_ref().unwrap_or(&none),
            &batch_id,
            context.principal.as_ref().unwrap_or(&none),
            context.via.as_ref().unwrap_or(&none),
            &insert_as,
        ],
    )?;
    lock_dedupe_keys(&mut tx, ops)?;
    super::expected::check(&mut tx, &context.expected)?;
    let mut outcomes = Vec::with_capacity(ops.len());
    for op in ops {
        let outcome = match op {
            WriteOp::Insert { record, checks } => insert(&mut tx, record, checks)?,
            WriteOp::Update { record } => update(&mut tx, record)?,
            WriteOp::Delete { id, kind, at, cascade } => delete(&mut tx, *id, *kind, *at, *cascade)?,
            WriteOp::Restore { id, kind, at } => restore(&mut tx, *id, *kind, *at)?,
            WriteOp::Import { item, vector, chunks } => import(&mut tx, item, vector.as_deref(), chunks)?,
            WriteOp::Supersede { id, by, at, status } => supersede(&mut tx, *id, *by, *at, *status)?,
            WriteOp::Blocked(attempt) => record_blocked(&mut tx, attempt)?,
            WriteOp::Provenance { id, provenance } => super::git::set_provenance(&mut tx, *id, provenance)?,
            WriteOp::Confirm { id, kind, provenance, at } => {
                super::git::confirm(&mut tx, *id, *kind, provenance, *at)?
            }
        };
        outcomes.push(outcome);
    }
    tx.commit()?;
    Ok(outcomes)
}

/// Every audit record takes the chain's lock until commit (migration 0008); a writing
/// transaction takes it before any other lock, so two writers never wait on each other in a
/// cycle (one holding a row the other deletes, the other holding the chain).
pub(super) fn take_audit_lock(tx: &mut Tx<'_>) -> Result<()> {
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&super::AUDIT_LOCK])?;
    Ok(())
}

/// Two processes inserting the same text, or the same idempotency key, must not both see "no
/// duplicate": each takes a transaction lock per key before looking. Keys are locked sorted,
/// so two batches never wait on each other in a cycle.
fn lock_dedupe_keys(tx: &mut Tx<'_>, ops: &[WriteOp]) -> Result<()> {
    let mut keys: Vec<String> = Vec::new();
    for op in ops {
        if let WriteOp::Insert { record: r, .. } = op {
            let s = scope_values(&r.scope);
            keys.push(format!(
                "content\u{1f}{}\u{1f}{}\u{1f}{}",
                r.kind.as_str(),
                s.join("\u{1f}"),
                r.content_hash
            ));
            if let Some(key) = &r.idempotency_key {
                keys.push(format!("idempotency\u{1f}{}\u{1f}{}\u{1f}{key}", s[0], s[1]));
            }
            if let Some(key) = natural_key_of(r) {
                keys.push(format!("natural\u{1f}{}\u{1f}{}\u{1f}{key}", s[0], s[1]));
            }
        }
    }
    if keys.is_empty() {
        return Ok(());
    }
    keys.sort();
    keys.dedup();
    // OFFSET 0 keeps the sort below the lock calls: locks are taken in key order.
    tx.execute(
        "SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0))) \
         FROM (SELECT k FROM unnest($1::text[]) k ORDER BY k OFFSET 0) sorted",
        &[&keys],
    )?;
    Ok(())
}

/// The item `r` duplicates: the owner found by the first of `checks` that finds one (the
/// order is the domain's, `cortex_domain::dedupe`).
fn find_duplicate(
    tx: &mut Tx<'_>,
    r: &Record,
    checks: DuplicateChecks,
) -> Result<Option<(Uuid, DuplicateReason)>> {
    dedupe::first_owner(checks, |check| match check {
        DuplicateCheck::SameId => {
            Ok(tx.query_opt("SELECT 1 FROM items WHERE id = $1", &[&r.id])?.map(|_| r.id))
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
            let row = tx.query_opt(
                "SELECT id FROM items WHERE kind = $1 AND content_hash = $2 AND org = $3 AND project = $4 \
                 AND branch = $5 AND service = $6 AND sprint = $7 AND tenant = $8 AND environment = $9 \
                 AND deleted_at IS NULL LIMIT 1",
                &[&r.kind.as_str(), &r.content_hash, &s[0], &s[1], &s[2], &s[3], &s[4], &s[5], &s[6]],
            )?;
            Ok(row.map(|row| row.try_get(0)).transpose()?)
        }
    })
}

const INSERT: &str = "INSERT INTO items (id, kind, org, project, branch, service, sprint, tenant, environment, \
     title, body, content, data, metadata, source, tags, status, content_hash, idempotency_key, ttl, \
     created_at, updated_at, expires_at, deleted_at, embedding, superseded_by, natural_key, link_from, link_to, \
     occurred_at, governed_since, author) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, \
             coalesce($32, nullif(current_setting('cortex.principal', true), ''))) \
     ON CONFLICT DO NOTHING RETURNING id";

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

/// Inserts the row unless any unique key (id, idempotency key) is taken; whether it went in.
fn insert_row(tx: &mut Tx<'_>, r: &Record, stored: Stored, vector: Option<&[f32]>) -> Result<bool> {
    let s = scope_values(&r.scope);
    let (link_from, link_to) = link_ends(r);
    let embedding = vector.map(<[f32]>::to_vec);
    let rows = tx.query(
        INSERT,
        &[
            &r.id,
            &r.kind.as_str(),
            &s[0],
            &s[1],
            &s[2],
            &s[3],
            &s[4],
            &s[5],
            &s[6],
            &r.title,
            &r.body,
            &r.content,
            &r.data,
            &r.metadata,
            &r.source,
            &r.tags,
            &r.status,
            &r.content_hash,
            &r.idempotency_key,
            &r.ttl,
            &r.created_at,
            &r.updated_at,
            &r.expires_at,
            &stored.deleted_at,
            &embedding,
            &stored.superseded_by,
            &natural_key_of(r),
            &link_from,
            &link_to,
            &r.occurred_at,
            &stored.governed_since.or_else(|| governed_at(r)),
            &stored.author,
        ],
    )?;
    Ok(!rows.is_empty())
}

fn insert(tx: &mut Tx<'_>, r: &Record, checks: DuplicateChecks) -> Result<WriteOutcome> {
    if let Some((existing_id, reason)) = find_duplicate(tx, r, checks)? {
        return Ok(WriteOutcome::Duplicate { existing_id, reason });
    }
    if !insert_row(tx, r, Stored::new(), r.vector.as_deref())? {
        // Only a concurrent writer's idempotency key can take the slot after the check.
        if let Some((existing_id, reason)) = find_duplicate(tx, r, &[DuplicateCheck::IdempotencyKey])? {
            return Ok(WriteOutcome::Duplicate { existing_id, reason });
        }
        return Ok(WriteOutcome::Duplicate { existing_id: r.id, reason: DuplicateReason::SameId });
    }
    insert_chunks(tx, r.id, &r.chunks)?;
    Ok(WriteOutcome::Inserted { id: r.id })
}

fn import(
    tx: &mut Tx<'_>,
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
    if !insert_row(tx, r, stored, vector)? {
        return Ok(WriteOutcome::Duplicate { existing_id: r.id, reason: DuplicateReason::SameId });
    }
    insert_chunks(tx, r.id, chunks)?;
    Ok(WriteOutcome::Inserted { id: r.id })
}

/// When the stored row of `id` was deleted (`None`: live), or the outcome that stops the write.
fn live_row(
    tx: &mut Tx<'_>,
    id: Uuid,
    kind: Option<Kind>,
) -> Result<std::result::Result<Option<i64>, WriteOutcome>> {
    // FOR UPDATE: a concurrent update or delete of the same item waits its turn.
    let Some(row) = tx.query_opt("SELECT kind, deleted_at FROM items WHERE id = $1 FOR UPDATE", &[&id])?
    else {
        return Ok(Err(WriteOutcome::NotFound { id }));
    };
    let stored = super::row::kind_at(&row, 0)?;
    if let Some(kind) = kind
        && kind != stored
    {
        return Ok(Err(WriteOutcome::KindMismatch { id, stored }));
    }
    Ok(Ok(row.try_get(1)?))
}

fn update(tx: &mut Tx<'_>, r: &Record) -> Result<WriteOutcome> {
    let deleted_at = match live_row(tx, r.id, Some(r.kind))? {
        Ok(found) => found,
        Err(outcome) => return Ok(outcome),
    };
    if deleted_at.is_some() {
        return Ok(WriteOutcome::NotFound { id: r.id });
    }
    let s = scope_values(&r.scope);
    let (link_from, link_to) = link_ends(r);
    let embedding = r.vector.clone();
    // A scope field the update leaves unset ('') keeps its stored value; so do `ttl` and
    // `expires_at` when no ttl is given.
    tx.execute(
        "UPDATE items SET \
           org = coalesce(nullif($2, ''), org), project = coalesce(nullif($3, ''), project), \
           branch = coalesce(nullif($4, ''), branch), service = coalesce(nullif($5, ''), service), \
           sprint = coalesce(nullif($6, ''), sprint), tenant = coalesce(nullif($7, ''), tenant), \
           environment = coalesce(nullif($8, ''), environment), \
           title = $9, body = $10, content = $11, data = $12, metadata = $13, source = $14, tags = $15, \
           status = $16, content_hash = $17, ttl = coalesce($18, ttl), updated_at = $19, \
           expires_at = CASE WHEN $18::text IS NULL THEN expires_at ELSE $20 END, embedding = $21, \
           natural_key = $22, link_from = $23, link_to = $24, occurred_at = coalesce($25, occurred_at), \
           governed_since = coalesce(governed_since, $26), \
           author = nullif(current_setting('cortex.principal', true), '') \
         WHERE id = $1",
        &[
            &r.id,
            &s[0],
            &s[1],
            &s[2],
            &s[3],
            &s[4],
            &s[5],
            &s[6],
            &r.title,
            &r.body,
            &r.content,
            &r.data,
            &r.metadata,
            &r.source,
            &r.tags,
            &r.status,
            &r.content_hash,
            &r.ttl,
            &r.updated_at,
            &r.expires_at,
            &embedding,
            &natural_key_of(r),
            &link_from,
            &link_to,
            &r.occurred_at,
            &governed_at(r),
        ],
    )?;
    replace_chunks(tx, r.id, &r.chunks)?;
    Ok(WriteOutcome::Updated { id: r.id })
}

fn delete(tx: &mut Tx<'_>, id: Uuid, kind: Option<Kind>, at: i64, cascade: Cascade) -> Result<WriteOutcome> {
    let deleted_at = match live_row(tx, id, kind)? {
        Ok(found) => found,
        Err(outcome) => return Ok(outcome),
    };
    if deleted_at.is_some() {
        return Ok(WriteOutcome::Deleted { id, already: true, cascaded: 0 });
    }
    tx.execute("UPDATE items SET deleted_at = $2, updated_at = $2 WHERE id = $1", &[&id, &at])?;
    let cascaded = delete_links_of(tx, &[id], at, cascade)?;
    Ok(WriteOutcome::Deleted { id, already: false, cascaded })
}

/// Brings a deleted item back (see [`WriteOp::Restore`]); the audit trigger records `restore`.
fn restore(tx: &mut Tx<'_>, id: Uuid, kind: Option<Kind>, at: i64) -> Result<WriteOutcome> {
    let deleted_at = match live_row(tx, id, kind)? {
        Ok(found) => found,
        Err(outcome) => return Ok(outcome),
    };
    if deleted_at.is_none() {
        return Ok(WriteOutcome::Restored { id, already: true });
    }
    let holder = tx.query_opt(
        "SELECT o.id FROM items i JOIN items o ON o.natural_key = i.natural_key AND o.org = i.org \
           AND o.project = i.project AND o.deleted_at IS NULL AND o.id <> i.id \
         WHERE i.id = $1 LIMIT 1",
        &[&id],
    )?;
    if let Some(row) = holder {
        return Ok(WriteOutcome::Duplicate {
            existing_id: row.try_get(0)?,
            reason: DuplicateReason::NaturalKey,
        });
    }
    tx.execute("UPDATE items SET deleted_at = NULL, updated_at = $2 WHERE id = $1", &[&id, &at])?;
    Ok(WriteOutcome::Restored { id, already: false })
}

/// Marks `id` replaced by `by`, if both are live, and writes the status the domain gave (see
/// [`WriteOp::Supersede`]).
fn supersede(
    tx: &mut Tx<'_>,
    id: Uuid,
    by: Uuid,
    at: i64,
    status: Option<StatusChange>,
) -> Result<WriteOutcome> {
    // The field name comes from the domain's kind table, never from the caller.
    let (field, value) = status.map(|s| (s.field, s.value)).unzip();
    let changed = tx.execute(
        "UPDATE items SET superseded_by = $2, updated_at = $3, status = coalesce($4::text, status), \
           data = CASE WHEN $4::text IS NULL THEN data ELSE jsonb_set(data, ARRAY[$5::text], to_jsonb($4::text)) END \
         WHERE id = $1 AND deleted_at IS NULL AND superseded_by IS NULL \
           AND EXISTS (SELECT 1 FROM items n WHERE n.id = $2 AND n.deleted_at IS NULL)",
        &[&id, &by, &at, &value, &field],
    )?;
    Ok(if changed == 1 { WriteOutcome::Updated { id } } else { WriteOutcome::NotFound { id } })
}

/// Appends the audit record of a refused change (the item itself is not touched).
fn record_blocked(tx: &mut Tx<'_>, a: &BlockedAttempt) -> Result<WriteOutcome> {
    let s = scope_values(&a.scope);
    tx.execute(
        "INSERT INTO audit_log (at, operation, item_id, kind, org, project, branch, service, sprint, \
           tenant, environment, actor, tool, session, request_id, batch_id, hash_before, hash_after, summary, \
           principal, via) \
         VALUES ($1, 'blocked', $2, $3, $4, $5, $6, $7, $8, $9, $10, \
           $11::jsonb ->> 'actor', $11::jsonb ->> 'tool', $11::jsonb ->> 'session', \
           nullif(current_setting('cortex.request_id', true), ''), \
           nullif(current_setting('cortex.batch_id', true), ''), $12, NULL, $13, \
           nullif(current_setting('cortex.principal', true), ''), \
           nullif(current_setting('cortex.via', true), ''))",
        &[&a.at, &a.id, &a.kind.as_str(), &s[0], &s[1], &s[2], &s[3], &s[4], &s[5], &s[6], &a.source, &a.hash, &a.reason],
    )?;
    Ok(WriteOutcome::Blocked { id: a.id })
}

/// Soft-deletes (audited) the live links whose end is one of `ids`, when `cascade` says they go
/// with it; how many.
pub(super) fn delete_links_of(tx: &mut Tx<'_>, ids: &[Uuid], at: i64, cascade: Cascade) -> Result<u64> {
    if cascade == Cascade::KeepLinks || ids.is_empty() {
        return Ok(0);
    }
    let deleted = tx.execute(
        "UPDATE items SET deleted_at = $2, updated_at = $2 WHERE deleted_at IS NULL \
           AND (link_from = ANY($1) OR link_to = ANY($1))",
        &[&ids, &at],
    )?;
    Ok(deleted)
}

/// New vectors for stored items, in one transaction (see [`crate::Store::set_vectors`]).
pub fn set_vectors(client: &mut Conn, vectors: &[ItemVectors]) -> Result<()> {
    let mut tx = client.transaction()?;
    for r in vectors {
        if tx.execute("UPDATE items SET embedding = $2 WHERE id = $1", &[&r.id, &r.vector])? > 0 {
            replace_chunks(&mut tx, r.id, &r.chunks)?;
        }
    }
    tx.commit()?;
    Ok(())
}

/// The chunk vectors of a newly inserted item.
fn insert_chunks(tx: &mut Tx<'_>, id: Uuid, chunks: &[ChunkVector]) -> Result<()> {
    if chunks.is_empty() {
        return Ok(());
    }
    for c in chunks {
        tx.execute(
            "INSERT INTO item_chunks (item_id, start_byte, end_byte, embedding) VALUES ($1, $2, $3, $4)",
            &[&id, &(c.start as i32), &(c.end as i32), &c.vector],
        )?;
    }
    Ok(())
}

/// Replaces an item's chunk vectors: whatever described its former text goes.
fn replace_chunks(tx: &mut Tx<'_>, id: Uuid, chunks: &[ChunkVector]) -> Result<()> {
    tx.execute("DELETE FROM item_chunks WHERE item_id = $1", &[&id])?;
    insert_chunks(tx, id, chunks)
}
