//! Live items without a vector of their whole text: stored while no embedder was available.

use super::row::parse_id;
use crate::Result;
use rusqlite::Connection;
use uuid::Uuid;

/// Up to `limit` of them, by id after `after`.
pub fn page(conn: &Connection, after: Option<Uuid>, limit: usize) -> Result<Vec<Uuid>> {
    // Ids are lowercase hyphenated UUIDs, whose text order is their byte order.
    let mut stmt = conn.prepare_cached(
        "SELECT i.id FROM items i LEFT JOIN item_vectors v ON v.item_rowid = i.rowid \
         WHERE v.item_rowid IS NULL AND i.deleted_at IS NULL AND (?1 IS NULL OR i.id > ?1) \
         ORDER BY i.id LIMIT ?2",
    )?;
    let after = after.map(|id| id.to_string());
    let mut rows = stmt.query(rusqlite::params![after, limit as i64])?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        out.push(parse_id(&id, "id")?);
    }
    Ok(out)
}

pub fn count(conn: &Connection) -> Result<i64> {
    Ok(conn.query_row(
        "SELECT count(*) FROM items i LEFT JOIN item_vectors v ON v.item_rowid = i.rowid \
         WHERE v.item_rowid IS NULL AND i.deleted_at IS NULL",
        [],
        |r| r.get(0),
    )?)
}
