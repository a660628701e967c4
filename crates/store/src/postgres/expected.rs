//! The compare half of compare-and-set: inside the batch's transaction (after the audit lock,
//! so every other item writer has committed or waits), each item the batch was checked against
//! must still be as the check saw it; its row stays locked until commit.

use super::conn::{Sql, Tx};
use crate::{ExpectedState, Result, StoreError};

/// `Err(Conflict)` naming the first item that changed (or went) since it was checked.
pub fn check(tx: &mut Tx<'_>, expected: &[ExpectedState]) -> Result<()> {
    for e in expected {
        let row = tx.query_opt(
            "SELECT content_hash, status, updated_at, deleted_at IS NOT NULL FROM items WHERE id = $1 FOR UPDATE",
            &[&e.id],
        )?;
        let now = row
            .map(|r| -> Result<(String, Option<String>, i64, bool)> {
                Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?, r.try_get(3)?))
            })
            .transpose()?;
        if now.as_ref() != Some(&(e.content_hash.clone(), e.status.clone(), e.updated_at, e.deleted)) {
            return Err(StoreError::Conflict { id: e.id });
        }
    }
    Ok(())
}
