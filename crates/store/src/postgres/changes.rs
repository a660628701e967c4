//! Reading the change log (migration `0009_change_log.sql`) safely beside transactions still
//! running. Sequence values are taken at write time, so entries can commit out of `seq`
//! order: reading "seq > the last one read" would skip an entry whose transaction took a
//! lower seq and committed later. Entries are read in `(txn, seq)` order instead, and the
//! cursor never passes the snapshot's xmin (every transaction below it has finished, so all
//! of its entries are visible now); entries of younger transactions that were visible are
//! returned and read again next time, with whatever those still running add once committed.

use super::conn::{Conn, Sql};
use crate::{ChangeCursor, Changes, Result};
use postgres::IsolationLevel;
use uuid::Uuid;

/// The oldest transaction still running, as of the current snapshot.
const XMIN: &str = "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint";

/// The change counter: the log's sequence and the transactions running now, as one number.
///
/// The sequence alone is not enough. A transaction takes its seq when it writes and may commit
/// after a younger one: a reader that caught up meanwhile (reading the younger entry, the older
/// one still invisible) and then saw the same sequence value would never read the log again
/// for the older entry — a store answered, and the next find missed it (seen with six
/// clients storing at once). The snapshot's running set and its `xmax` (one past the last
/// transaction finished; a writer at or past it is running but not listed) are part of the
/// counter, so it moves when any writer running at the read ends. Hashed into one number:
/// equal counters mean equal (sequence, xmax, running set) but for a 2⁻⁶⁴ chance.
pub fn counter(client: &mut Conn) -> Result<i64> {
    let row = client.query_one(
        "SELECT (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM items_changes), \
                pg_snapshot_xmax(s)::text::bigint, \
                ARRAY(SELECT x::text::bigint FROM pg_snapshot_xip(s) AS x ORDER BY 1) \
         FROM pg_current_snapshot() AS s",
        &[],
    )?;
    let seq: i64 = row.try_get(0)?;
    let xmax: i64 = row.try_get(1)?;
    let running: Vec<i64> = row.try_get(2)?;
    let mut hasher = std::hash::DefaultHasher::new();
    std::hash::Hash::hash(&(seq, xmax, running), &mut hasher);
    Ok(std::hash::Hasher::finish(&hasher) as i64)
}

/// Where a reader that loads everything now starts: the oldest transaction still running.
pub fn head(client: &mut Conn) -> Result<ChangeCursor> {
    let txn = client.query_one(XMIN, &[])?.try_get(0)?;
    Ok(ChangeCursor { txn, seq: 0 })
}

/// Up to `limit` entries after `cursor`, in one snapshot.
pub fn since(client: &mut Conn, cursor: ChangeCursor, limit: usize) -> Result<Changes> {
    let mut tx = client.build_transaction(|build| {
        build.isolation_level(IsolationLevel::RepeatableRead).read_only(true).start()
    })?;
    // The first statement takes the snapshot every later one reads.
    let xmin: i64 = tx.query_one(XMIN, &[])?.try_get(0)?;
    let pruned = tx.query_one("SELECT txn, seq FROM change_log_pruned WHERE id = 1", &[])?;
    let pruned = ChangeCursor { txn: pruned.try_get(0)?, seq: pruned.try_get(1)? };
    if cursor < pruned {
        tx.commit()?;
        return Ok(Changes::behind(cursor));
    }
    let rows = tx.query(
        "SELECT txn, seq, item_id FROM change_log WHERE (txn, seq) > ($1, $2) ORDER BY txn, seq LIMIT $3",
        &[&cursor.txn, &cursor.seq, &(limit as i64)],
    )?;
    tx.commit()?;
    let complete = rows.len() < limit;
    let settled = ChangeCursor { txn: xmin, seq: 0 };
    let mut next = settled;
    if let Some(last) = rows.last().filter(|_| !complete) {
        next = next.min(ChangeCursor { txn: last.try_get(0)?, seq: last.try_get(1)? });
    }
    let items = rows.iter().map(|r| r.try_get(2)).collect::<std::result::Result<Vec<Uuid>, _>>()?;
    Ok(Changes::page(items, next.max(cursor), complete))
}
