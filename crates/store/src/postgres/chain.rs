//! The audit chain on PostgreSQL: the reads the verifier needs (records with their hashes,
//! items against their last record) and the server's own report of damaged pages. The chain
//! itself is written by the `audit_log_chain` trigger (migration 0008).

use crate::audit_chain::{ChainRecord, TrailMismatch};
use crate::{AuditQuery, AuditRecord, Result};
use postgres::{Client, Row};

/// The columns [`chain_record`] reads, in order.
const CHAIN_COLUMNS: &str = "seq, at, operation, item_id::text, kind, org, project, branch, service, sprint, \
     tenant, environment, actor, tool, session, request_id, batch_id, hash_before, hash_after, summary, \
     prev_hash, hash";

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
    })
}

/// Up to `limit` records after `after`, oldest first.
pub fn chain_page(client: &mut Client, after: i64, limit: usize) -> Result<Vec<ChainRecord>> {
    let sql = format!("SELECT {CHAIN_COLUMNS} FROM audit_log WHERE seq > $1 ORDER BY seq LIMIT $2");
    client.query(&sql, &[&after, &(limit as i64)])?.iter().map(chain_record).collect()
}

/// Audit records, oldest first: one item's, or those at or after `since`.
pub fn audit(client: &mut Client, query: &AuditQuery) -> Result<Vec<AuditRecord>> {
    let sql = format!(
        "SELECT {CHAIN_COLUMNS} FROM audit_log WHERE ($1::uuid IS NULL OR item_id = $1) \
         AND ($2::bigint IS NULL OR at >= $2) ORDER BY seq LIMIT $3"
    );
    let rows = client.query(&sql, &[&query.item, &query.since, &(query.limit as i64)])?;
    rows.iter().map(|r| chain_record(r)?.into_audit_record()).collect()
}

/// The record just before the newest `n`.
pub fn record_before_last(client: &mut Client, n: usize) -> Result<Option<ChainRecord>> {
    let sql = format!("SELECT {CHAIN_COLUMNS} FROM audit_log ORDER BY seq DESC LIMIT 1 OFFSET $1");
    client.query_opt(&sql, &[&(n as i64)])?.as_ref().map(chain_record).transpose()
}

/// The record with this seq.
pub fn chain_record_at(client: &mut Client, seq: i64) -> Result<Option<ChainRecord>> {
    let sql = format!("SELECT {CHAIN_COLUMNS} FROM audit_log WHERE seq = $1");
    client.query_opt(&sql, &[&seq])?.as_ref().map(chain_record).transpose()
}

/// Items whose state their trail does not explain, at most `limit`.
pub fn trail_mismatches(client: &mut Client, limit: usize) -> Result<Vec<TrailMismatch>> {
    let rows = client.query(
        "WITH last AS (
             SELECT DISTINCT ON (item_id) item_id, operation, hash_after FROM audit_log
             WHERE item_id IS NOT NULL AND operation <> 'blocked' ORDER BY item_id, seq DESC
         )
         (SELECT i.id::text, l.operation, l.hash_after, i.content_hash FROM items i LEFT JOIN last l ON l.item_id = i.id
          WHERE l.operation IS NULL OR l.operation = 'purge' OR l.hash_after IS DISTINCT FROM i.content_hash)
         UNION ALL
         (SELECT l.item_id::text, l.operation, l.hash_after, NULL FROM last l
          WHERE l.operation <> 'purge' AND NOT EXISTS (SELECT 1 FROM items i WHERE i.id = l.item_id))
         LIMIT $1",
        &[&(limit as i64)],
    )?;
    rows.iter()
        .map(|r| Ok(TrailMismatch::classify(r.try_get(0)?, r.try_get(1)?, r.try_get(2)?, r.try_get(3)?)))
        .collect()
}

/// The server verifies its own pages (data checksums, when the cluster has them on): the
/// checksum failures it counted in this database are what there is to report.
pub fn integrity_problems(client: &mut Client) -> Result<Vec<String>> {
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
