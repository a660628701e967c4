//! Reading the change log (migration `0010_change_log.sql`). SQLite has one writer at a time,
//! so entries commit in `seq` order and a cursor is simply the last seq read.

use crate::{ChangeCursor, Changes, Result, StoreError};
use rusqlite::Connection;
use uuid::Uuid;

/// The newest entry: a reader that loads everything now has seen the log up to it.
pub fn head(conn: &Connection) -> Result<ChangeCursor> {
    let seq = conn.query_row("SELECT coalesce(max(seq), 0) FROM change_log", [], |r| r.get(0))?;
    Ok(ChangeCursor { txn: 0, seq })
}

/// Up to `limit` entries after `cursor`, read in one transaction (one snapshot).
pub fn since(conn: &Connection, cursor: ChangeCursor, limit: usize) -> Result<Changes> {
    let tx = conn.unchecked_transaction()?;
    let pruned: i64 = tx.query_row("SELECT seq FROM change_log_pruned WHERE id = 1", [], |r| r.get(0))?;
    if cursor.seq < pruned {
        return Ok(Changes::behind(cursor));
    }
    let mut stmt =
        tx.prepare_cached("SELECT seq, item_id FROM change_log WHERE seq > ?1 ORDER BY seq LIMIT ?2")?;
    let mut rows = stmt.query(rusqlite::params![cursor.seq, limit as i64])?;
    let (mut items, mut next, mut read) = (Vec::new(), cursor, 0);
    while let Some(row) = rows.next()? {
        next.seq = row.get(0)?;
        let id: String = row.get(1)?;
        items.push(
            Uuid::parse_str(&id).map_err(|e| {
                StoreError::Corrupt(format!("change_log.item_id holds {id:?}, not a UUID: {e}"))
            })?,
        );
        read += 1;
    }
    Ok(Changes::page(items, next, read < limit))
}
