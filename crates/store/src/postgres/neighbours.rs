//! Session neighbours: the items stored right before and after an item in its session
//! (`source.session`), found among the few stored on either side by id (UUIDv7: creation
//! order), through the primary key.

use super::params::Params;
use super::read::filter_sql;
use super::row::scope_at;
use crate::{Filters, Neighbour, Result};
use cortex_domain::neighbours::Side;
use postgres::Client;
use uuid::Uuid;

pub fn session_neighbours(
    client: &mut Client,
    ids: &[Uuid],
    filters: &Filters,
    window: usize,
) -> Result<Vec<Neighbour>> {
    let mut out = Vec::new();
    for id in ids {
        let row = client.query_opt("SELECT source->>'session' FROM items WHERE id = $1", &[id])?;
        let Some(session) = row.map(|r| r.try_get::<_, Option<String>>(0)).transpose()?.flatten() else {
            continue;
        };
        for side in [Side::Before, Side::After] {
            let (compare, order) = match side {
                Side::Before => ("<", "DESC"),
                Side::After => (">", "ASC"),
            };
            let mut params = Params::default();
            let (anchor, limit, same) =
                (params.push(*id), params.push(window as i64), params.push(session.clone()));
            let conditions = filter_sql(filters, &mut params);
            let sql = format!(
                "SELECT i.id, i.updated_at, i.org, i.project, i.branch, i.service, i.sprint, i.tenant, i.environment \
                 FROM items i WHERE i.id IN (SELECT id FROM items WHERE id {compare} {anchor} ORDER BY id {order} LIMIT {limit}) \
                 AND i.source->>'session' = {same}{conditions} ORDER BY i.id {order} LIMIT 1"
            );
            if let Some(row) = client.query_opt(&sql, &params.as_refs())? {
                out.push(Neighbour {
                    of: *id,
                    side,
                    id: row.try_get(0)?,
                    updated_at: row.try_get(1)?,
                    scope: scope_at(&row, 2)?,
                });
            }
        }
    }
    Ok(out)
}
