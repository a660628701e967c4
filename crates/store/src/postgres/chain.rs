//! The audit chain on PostgreSQL: the reads the verifier needs (records with their hashes,
//! items against their last record) and the server's own report of damaged pages. The chain
//! itself is written by the `audit_log_chain` trigger (migration 0008).

use super::conn::{Conn, Sql};
use crate::audit_chain::{ChainRecord, TrailMismatch};
use crate::item_trail::{self, LastRecord, StoredColumns};
use crate::{AuditQuery, AuditRecord, Result};
use postgres::Row;

/// The columns [`chain_record`] reads, in order.
const CHAIN_COLUMNS: &str = "seq, at, operation, item_id::text, kind, org, project, branch, service, sprint, \
     tenant, environment, actor, tool, session, request_id, batch_id, hash_before, hash_after, summary, \
     prev_hash, hash, principal, via, chain_version::bigint";

fn chain_record(row: &Row) -> Result<ChainRecord> {
    let text = |i: usize| -> Result<String> { Ok(row.try_get(i)?) };
    Ok(ChainRecord {
        seq: row.try_get(0)?,
        at: row.try_get(1)?,
        operation: row.try_get(2)?,
        item_id: row.try_get(3)?,
        kind: row.try_get(4)?,
        scope: [text(5)?, text(6)?, text(7)?, text(8)?, text(9)?, text(10)?, text(11)?],
        actor: row.try_get(12)?,
        tool: row.try_get(13)?,
        session: row.try_get(14)?,
        request_id: row.try_get(15)?,
        batch_id: row.try_get(16)?,
        hash_before: row.try_get(17)?,
        hash_after: row.try_get(18)?,
        summary: row.try_get(19)?,
        prev_hash: row.try_get(20)?,
        hash: row.try_get(21)?,
        principal: row.try_get(22)?,
        via: row.try_get(23)?,
        chain_version: row.try_get(24)?,
    })
}

/// Up to `limit` records after `after`, oldest first.
pub fn chain_page(client: &mut Conn, after: i64, limit: usize) -> Result<Vec<ChainRecord>> {
    let sql = format!("SELECT {CHAIN_COLUMNS} FROM audit_log WHERE seq > $1 ORDER BY seq LIMIT $2");
    client.query(&sql, &[&after, &(limit as i64)])?.iter().map(chain_record).collect()
}

/// Audit records in the query's order: one item's, or those at or after `since`.
pub fn audit(client: &mut Conn, query: &AuditQuery) -> Result<Vec<AuditRecord>> {
    let sql = format!(
        "SELECT {CHAIN_COLUMNS} FROM audit_log WHERE ($1::uuid IS NULL OR item_id = $1) \
         AND ($2::bigint IS NULL OR at >= $2) ORDER BY {} LIMIT $3",
        query.order()
    );
    let rows = client.query(&sql, &[&query.item, &query.since, &(query.limit as i64)])?;
    rows.iter().map(|r| chain_record(r)?.into_audit_record()).collect()
}

/// The record just before the newest `n`.
pub fn record_before_last(client: &mut Conn, n: usize) -> Result<Option<ChainRecord>> {
    let sql = format!("SELECT {CHAIN_COLUMNS} FROM audit_log ORDER BY seq DESC LIMIT 1 OFFSET $1");
    client.query_opt(&sql, &[&(n as i64)])?.as_ref().map(chain_record).transpose()
}

/// The record with this seq.
pub fn chain_record_at(client: &mut Conn, seq: i64) -> Result<Option<ChainRecord>> {
    let sql = format!("SELECT {CHAIN_COLUMNS} FROM audit_log WHERE seq = $1");
    client.query_opt(&sql, &[&seq])?.as_ref().map(chain_record).transpose()
}

/// Items read at once when each is checked against its trail.
const TRAIL_PAGE: i64 = 1_000;

/// Items whose state their trail does not explain, at most `limit`: every item read page by
/// page and checked column by column ([`item_trail::check`]), then the items that are gone
/// without a purge record.
pub fn trail_mismatches(client: &mut Conn, limit: usize) -> Result<Vec<TrailMismatch>> {
    let mut found = Vec::new();
    let mut after = String::new();
    while found.len() < limit {
        // The last record of each item that changed it (a `blocked` record changes nothing).
        let rows = client.query(
            "SELECT i.id::text, i.kind, i.org, i.project, i.branch, i.service, i.sprint, i.tenant, i.environment, \
               i.title, i.body, i.content, i.data::text, i.status, i.content_hash, i.deleted_at IS NOT NULL, \
               l.operation, l.hash_after, l.org, l.project, l.branch, l.service, l.sprint, l.tenant, l.environment \
             FROM items i LEFT JOIN LATERAL (SELECT * FROM audit_log b \
               WHERE b.item_id = i.id AND b.operation <> 'blocked' ORDER BY b.seq DESC LIMIT 1) l ON true \
             WHERE i.id::text > $1 ORDER BY i.id::text LIMIT $2",
            &[&after, &TRAIL_PAGE],
        )?;
        let Some(last_row) = rows.last() else { break };
        after = last_row.try_get(0)?;
        for r in &rows {
            let scope = |at: usize| -> Result<[String; 7]> {
                let text = |i: usize| -> Result<String> { Ok(r.try_get(i)?) };
                Ok([
                    text(at)?,
                    text(at + 1)?,
                    text(at + 2)?,
                    text(at + 3)?,
                    text(at + 4)?,
                    text(at + 5)?,
                    text(at + 6)?,
                ])
            };
            let item = StoredColumns {
                id: r.try_get(0)?,
                kind: r.try_get(1)?,
                scope: scope(2)?,
                title: r.try_get(9)?,
                body: r.try_get(10)?,
                content: r.try_get(11)?,
                data: r.try_get(12)?,
                status: r.try_get(13)?,
                content_hash: r.try_get(14)?,
                deleted: r.try_get(15)?,
            };
            let operation: Option<String> = r.try_get(16)?;
            let last = match operation {
                Some(operation) => {
                    Some(LastRecord { operation, hash_after: r.try_get(17)?, scope: scope(18)? })
                }
                None => None,
            };
            found.extend(item_trail::check(&item, last.as_ref()));
        }
    }
    let gone = client.query(
        "WITH last AS (
             SELECT DISTINCT ON (item_id) item_id, operation, hash_after FROM audit_log
             WHERE item_id IS NOT NULL AND operation <> 'blocked' ORDER BY item_id, seq DESC
         )
         SELECT l.item_id::text, l.operation, l.hash_after FROM last l
         WHERE l.operation <> 'purge' AND NOT EXISTS (SELECT 1 FROM items i WHERE i.id = l.item_id)
         LIMIT $1",
        &[&(limit as i64)],
    )?;
    for r in &gone {
        found.push(TrailMismatch::classify(r.try_get(0)?, r.try_get(1)?, r.try_get(2)?, None));
    }
    found.truncate(limit);
    Ok(found)
}

/// The server verifies its own pages (data checksums, when the cluster has them on): the
/// checksum failures it counted in this database are what there is to report.
pub fn integrity_problems(client: &mut Conn) -> Result<Vec<String>> {
    let row = client.query_one(
        "SELECT coalesce(checksum_failures, 0), current_setting('data_checksums') FROM pg_stat_database \
         WHERE datname = current_database()",
        &[],
    )?;
    let failures: i64 = row.try_get(0)?;
    Ok(if failures > 0 {
        vec![format!("the server counted {failures} page checksum failures in this database")]
    } else {
        Vec::new()
    })
}
