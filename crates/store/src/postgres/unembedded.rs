//! Live items without a vector of their whole text: stored while no embedder was available.

use super::conn::{Conn, Sql};
use crate::Result;
use uuid::Uuid;

/// Up to `limit` of them, by id after `after`.
pub fn page(client: &mut Conn, after: Option<Uuid>, limit: usize) -> Result<Vec<Uuid>> {
    let rows = client.query(
        "SELECT id FROM items WHERE embedding IS NULL AND deleted_at IS NULL \
         AND ($1::uuid IS NULL OR id > $1) ORDER BY id LIMIT $2",
        &[&after, &(limit as i64)],
    )?;
    Ok(rows.iter().map(|row| row.try_get(0)).collect::<std::result::Result<_, _>>()?)
}

pub fn count(client: &mut Conn) -> Result<i64> {
    Ok(client
        .query_one("SELECT count(*) FROM items WHERE embedding IS NULL AND deleted_at IS NULL", &[])?
        .try_get(0)?)
}
