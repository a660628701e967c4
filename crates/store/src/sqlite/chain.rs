//! The audit chain on SQLite: the `cortex_audit_hash` SQL function the triggers call, and the
//! reads the verifier needs (records with their hashes, items against their last record, the
//! schema against a freshly migrated one).

use super::row::scope_at;
use crate::audit_chain::{ChainRecord, FIELD_COUNT, FIELD_COUNT_V2, hash_fields};
use crate::audit_chain::{SchemaDrift, TrailMismatch};
use crate::item_trail::{self, LastRecord, StoredColumns};
use crate::{AuditQuery, AuditRecord, Result};
use rusqlite::functions::{Context, FunctionFlags};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, params};

/// Items read at once when each is checked against its trail.
const TRAIL_PAGE: usize = 1_000;

/// Registers `cortex_audit_hash(prev_hash, seq, at, operation, …, summary)` (canonical form
/// version 1, which migrations up to 14 call) and `cortex_audit_hash_v2(prev_hash, seq, …,
/// summary, principal, via)` on `conn`. Every connection that may write items needs them: the
/// audit triggers call them, so a tool that is not Cortex (without the functions) cannot
/// change items at all, audited or not.
pub fn register_functions(conn: &Connection) -> rusqlite::Result<()> {
    let flags = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC;
    conn.create_scalar_function("cortex_audit_hash", (FIELD_COUNT + 1) as i32, flags, |ctx| {
        audit_hash(ctx, 1, FIELD_COUNT)
    })?;
    conn.create_scalar_function("cortex_audit_hash_v2", (FIELD_COUNT_V2 + 1) as i32, flags, |ctx| {
        audit_hash(ctx, 2, FIELD_COUNT_V2)
    })
}

fn audit_hash(ctx: &Context<'_>, version: i64, count: usize) -> rusqlite::Result<Option<String>> {
    let text = |i: usize| -> rusqlite::Result<Option<String>> {
        Ok(match ctx.get_raw(i) {
            ValueRef::Null => None,
            ValueRef::Integer(n) => Some(n.to_string()),
            ValueRef::Real(x) => Some(x.to_string()),
            ValueRef::Text(t) | ValueRef::Blob(t) => Some(
                String::from_utf8(t.to_vec()).map_err(|e| rusqlite::Error::UserFunctionError(Box::new(e)))?,
            ),
        })
    };
    let Some(prev) = text(0)? else {
        // No previous hash: the caller is not on the chain; NULL makes its check fail.
        return Ok(None);
    };
    let fields = (1..=count).map(text).collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(Some(hash_fields(&prev, version, &fields)))
}

/// The columns [`chain_record`] reads, in order.
const CHAIN_COLUMNS: &str = "seq, at, operation, item_id, kind, org, project, branch, service, sprint, \
     tenant, environment, actor, tool, session, request_id, batch_id, hash_before, hash_after, summary, \
     prev_hash, hash, principal, via, chain_version";

fn chain_record(row: &rusqlite::Row<'_>) -> rusqlite::Result<ChainRecord> {
    let s = scope_at(row, 5)?;
    let scope = [s.org, s.project, s.branch, s.service, s.sprint, s.tenant, s.environment]
        .map(Option::unwrap_or_default);
    Ok(ChainRecord {
        seq: row.get(0)?,
        at: row.get(1)?,
        operation: row.get(2)?,
        item_id: row.get(3)?,
        kind: row.get(4)?,
        scope,
        actor: row.get(12)?,
        tool: row.get(13)?,
        session: row.get(14)?,
        request_id: row.get(15)?,
        batch_id: row.get(16)?,
        hash_before: row.get(17)?,
        hash_after: row.get(18)?,
        summary: row.get(19)?,
        prev_hash: row.get(20)?,
        hash: row.get(21)?,
        principal: row.get(22)?,
        via: row.get(23)?,
        chain_version: row.get(24)?,
    })
}

/// Up to `limit` records after `after`, oldest first.
pub fn chain_page(conn: &Connection, after: i64, limit: usize) -> Result<Vec<ChainRecord>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {CHAIN_COLUMNS} FROM audit_log WHERE seq > ?1 ORDER BY seq LIMIT ?2"
    ))?;
    let rows = stmt.query_map(params![after, limit as i64], chain_record)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Audit records in the query's order: one item's, or those at or after `since`.
pub fn audit(conn: &Connection, query: &AuditQuery) -> Result<Vec<AuditRecord>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {CHAIN_COLUMNS} FROM audit_log \
         WHERE (?1 IS NULL OR item_id = ?1) AND (?2 IS NULL OR at >= ?2) ORDER BY {} LIMIT ?3",
        query.order()
    ))?;
    let item = query.item.map(|id| id.to_string());
    let rows = stmt.query_map(params![item, query.since, query.limit as i64], chain_record)?;
    rows.map(|r| r?.into_audit_record()).collect()
}

/// The newest `n` records' first seq minus one, with its record: where a quick check starts.
pub fn record_before_last(conn: &Connection, n: usize) -> Result<Option<ChainRecord>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {CHAIN_COLUMNS} FROM audit_log ORDER BY seq DESC LIMIT 1 OFFSET ?1"
    ))?;
    let mut rows = stmt.query_map([n as i64], chain_record)?;
    Ok(rows.next().transpose()?)
}

/// The record with this seq.
pub fn chain_record_at(conn: &Connection, seq: i64) -> Result<Option<ChainRecord>> {
    let mut stmt = conn.prepare_cached(&format!("SELECT {CHAIN_COLUMNS} FROM audit_log WHERE seq = ?1"))?;
    let mut rows = stmt.query_map([seq], chain_record)?;
    Ok(rows.next().transpose()?)
}

/// Items whose state their trail does not explain (see [`TrailMismatch`]), at most `limit`:
/// every item read page by page and checked column by column ([`item_trail::check`]), then
/// the items that are gone without a purge record.
pub fn trail_mismatches(conn: &Connection, limit: usize) -> Result<Vec<TrailMismatch>> {
    let mut found = Vec::new();
    let mut after = String::new();
    // The last record of each item that changed it (a `blocked` record changes nothing).
    let mut page = conn.prepare_cached(
        "SELECT i.id, i.kind, i.org, i.project, i.branch, i.service, i.sprint, i.tenant, i.environment, \
           i.title, i.body, i.content, i.data, i.status, i.content_hash, i.deleted_at IS NOT NULL, \
           l.operation, l.hash_after, l.org, l.project, l.branch, l.service, l.sprint, l.tenant, l.environment \
         FROM items i LEFT JOIN audit_log l ON l.seq = (SELECT max(seq) FROM audit_log b \
           WHERE b.item_id = i.id AND b.operation <> 'blocked') \
         WHERE i.id > ?1 ORDER BY i.id LIMIT ?2",
    )?;
    while found.len() < limit {
        let rows: Vec<(StoredColumns, Option<LastRecord>)> = page
            .query_map(params![after, TRAIL_PAGE as i64], |r| {
                let scope = |at: usize| -> rusqlite::Result<[String; 7]> {
                    Ok([
                        r.get(at)?,
                        r.get(at + 1)?,
                        r.get(at + 2)?,
                        r.get(at + 3)?,
                        r.get(at + 4)?,
                        r.get(at + 5)?,
                        r.get(at + 6)?,
                    ])
                };
                let item = StoredColumns {
                    id: r.get(0)?,
                    kind: r.get(1)?,
                    scope: scope(2)?,
                    title: r.get(9)?,
                    body: r.get(10)?,
                    content: r.get(11)?,
                    data: r.get(12)?,
                    status: r.get(13)?,
                    content_hash: r.get(14)?,
                    deleted: r.get(15)?,
                };
                let operation: Option<String> = r.get(16)?;
                let last = match operation {
                    Some(operation) => {
                        Some(LastRecord { operation, hash_after: r.get(17)?, scope: scope(18)? })
                    }
                    None => None,
                };
                Ok((item, last))
            })?
            .collect::<rusqlite::Result<_>>()?;
        let Some((last_item, _)) = rows.last() else { break };
        after = last_item.id.clone();
        found.extend(rows.iter().filter_map(|(item, last)| item_trail::check(item, last.as_ref())));
    }
    let mut gone = conn.prepare_cached(
        "WITH last AS (
             SELECT item_id, operation, hash_after FROM audit_log a
             WHERE seq = (SELECT max(seq) FROM audit_log b WHERE b.item_id = a.item_id AND b.operation <> 'blocked')
         )
         SELECT l.item_id, l.operation, l.hash_after FROM last l
         WHERE l.operation <> 'purge' AND NOT EXISTS (SELECT 1 FROM items i WHERE i.id = l.item_id)
         LIMIT ?1",
    )?;
    let rows = gone
        .query_map([limit as i64], |r| Ok(TrailMismatch::classify(r.get(0)?, r.get(1)?, r.get(2)?, None)))?;
    found.extend(rows.collect::<rusqlite::Result<Vec<_>>>()?);
    found.truncate(limit);
    Ok(found)
}

/// The schema objects that differ from what this build's migrations create, up to the
/// database's own version: a dropped or altered trigger, view, table or index.
pub fn schema_drift(conn: &Connection) -> Result<Vec<SchemaDrift>> {
    let version = super::migrate::current_version(conn)?;
    let mut fresh = Connection::open_in_memory()?;
    register_functions(&fresh)?;
    super::migrate::run_to(&mut fresh, version)?;
    Ok(crate::audit_chain::schema_drift(&schema_objects(&fresh)?, &schema_objects(conn)?))
}

/// `(type name, sql)` of every schema object but SQLite's own and the migration record.
fn schema_objects(conn: &Connection) -> Result<Vec<(String, Option<String>)>> {
    let mut stmt = conn.prepare(
        "SELECT type || ' ' || name, sql FROM sqlite_schema \
         WHERE name NOT LIKE 'sqlite_%' AND name <> 'schema_migrations' ORDER BY type, name",
    )?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit_chain::ChainWalker;

    #[test]
    fn records_written_before_the_chain_are_sealed_on_upgrade() {
        let mut conn = Connection::open_in_memory().unwrap();
        register_functions(&conn).unwrap();
        // An item from before the audit trail existed (migration 4): it has no record.
        super::super::migrate::run_to(&mut conn, 3).unwrap();
        // Items as Cortex writes them: a section's title and body are its content's, and the
        // content hash is theirs (the full check holds every item to that).
        let insert = "INSERT INTO items (id, kind, title, body, content, content_hash, created_at, updated_at) \
                      VALUES (?1, 'section', ?2, ?2, ?2, ?3, 1, 1)";
        let hash = |text: &str| cortex_domain::text::content_hash(&format!("{text}\n{text}"));
        conn.execute(insert, params!["old", "b", hash("b")]).unwrap();
        super::super::migrate::run_to(&mut conn, 8).unwrap();
        for i in 0..3 {
            conn.execute(insert, params![format!("id-{i}"), format!("b{i}"), hash(&format!("b{i}"))])
                .unwrap();
        }
        conn.execute(
            "UPDATE items SET title = 'c', body = 'c', content = 'c', content_hash = ?1 WHERE id = 'id-0'",
            [hash("c")],
        )
        .unwrap();
        super::super::migrate::run(&mut conn).unwrap();
        // A record written after the audit_principal migration continues the chain in version 2.
        conn.execute(insert, params!["new", "d", hash("d")]).unwrap();
        let records = chain_page(&conn, 0, 100).unwrap();
        assert_eq!(records.len(), 6, "3 inserts, 1 update, 1 baseline, 1 insert after the upgrade");
        assert_eq!(records[4].operation, "baseline");
        let versions: Vec<i64> = records.iter().map(|r| r.chain_version).collect();
        assert_eq!(versions, [1, 1, 1, 1, 1, 2], "each record keeps the form it was written in");
        let mut walker = ChainWalker::default();
        for r in &records {
            walker.check(r).unwrap();
        }
        assert!(trail_mismatches(&conn, 10).unwrap().is_empty());
        assert!(schema_drift(&conn).unwrap().is_empty());
    }
}
