//! Purge: expired items removed for good, in transactions the audit trigger records.

use super::conn::{Conn, Sql};
use super::write::{delete_links_of, take_audit_lock};
use crate::{Result, WriteContext};
use cortex_domain::graph::Cascade;
use uuid::Uuid;

/// Hard-deletes up to `limit` expired items in one transaction (the audit trigger records each
/// as `purge`); rows another purge holds are skipped, not waited for.
pub fn purge_expired(
    client: &mut Conn,
    now: i64,
    limit: usize,
    cascade: Cascade,
    context: &WriteContext,
) -> Result<Vec<(String, i64)>> {
    let mut tx = client.transaction()?;
    take_audit_lock(&mut tx)?;
    tx.execute(
        "SELECT set_config('cortex.batch_id', $1, true), set_config('cortex.principal', $2, true), \
         set_config('cortex.via', $3, true)",
        &[
            &Uuid::now_v7().to_string(),
            &context.principal.clone().unwrap_or_default(),
            &context.via.as_deref().unwrap_or("purge"),
        ],
    )?;
    let rows = tx.query(
        "DELETE FROM items WHERE id IN (SELECT id FROM items WHERE expires_at IS NOT NULL AND expires_at <= $1 \
           LIMIT $2 FOR UPDATE SKIP LOCKED) \
         RETURNING kind, id",
        &[&now, &(limit as i64)],
    )?;
    let purged: Vec<Uuid> = rows.iter().map(|r| r.try_get(1)).collect::<std::result::Result<_, _>>()?;
    delete_links_of(&mut tx, &purged, now, cascade)?;
    let kinds: Vec<String> = rows.iter().map(|r| r.try_get(0)).collect::<std::result::Result<_, _>>()?;
    tx.commit()?;
    Ok(crate::model::count_by_kind(kinds))
}
