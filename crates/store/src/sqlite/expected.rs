//! The compare half of compare-and-set: inside the batch's transaction, which holds SQLite's
//! write lock, each item the batch was checked against must still be as the check saw it.

use crate::{ExpectedState, Result, StoreError};
use rusqlite::{OptionalExtension, Transaction};

/// `Err(Conflict)` naming the first item that changed (or went) since it was checked.
pub fn check(tx: &Transaction<'_>, expected: &[ExpectedState]) -> Result<()> {
    let mut stmt = tx.prepare_cached(
        "SELECT content_hash, status, updated_at, deleted_at IS NOT NULL FROM items WHERE id = ?1",
    )?;
    for e in expected {
        let now: Option<(String, Option<String>, i64, bool)> = stmt
            .query_row([e.id.to_string()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .optional()?;
        if now.as_ref() != Some(&(e.content_hash.clone(), e.status.clone(), e.updated_at, e.deleted)) {
            return Err(StoreError::Conflict { id: e.id });
        }
    }
    Ok(())
}
