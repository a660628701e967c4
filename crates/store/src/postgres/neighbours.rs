//! Session neighbours: the items stored right before and after an item in its session
//! (`source.session`), found among the few stored on either side by id (UUIDv7: creation
//! order) through the primary key: one statement reads the items' sessions, then one per item
//! that has a session.

use super::conn::{Conn, Sql};
use super::params::Params;
use super::read::filter_sql;
use super::row::scope_at;
use crate::{Filters, Neighbour, Result};
use uuid::Uuid;

pub fn session_neighbours(
    client: &mut Conn,
    ids: &[Uuid],
    filters: &Filters,
    window: usize,
) -> Result<Vec<Neighbour>> {
    let mut out = Vec::new();
    for (id, session) in sessions_of(client, ids)? {
        let mut params = Params::default();
        let (anchor, limit, same) = (params.push(id), params.push(window as i64), params.push(session));
        let conditions = filter_sql(filters, &mut params);
        // The window's items of the same session, in storage order. The window (at most twice
        // `window` ids) drives the join, each row read by primary key.
        let sql = format!(
            "SELECT i.id, i.updated_at, i.org, i.project, i.branch, i.service, i.sprint, i.tenant, i.environment \
             FROM ( \
                 (SELECT id FROM items WHERE id < {anchor} ORDER BY id DESC LIMIT {limit}) \
                 UNION ALL (SELECT id FROM items WHERE id > {anchor} ORDER BY id LIMIT {limit})) w \
             JOIN items i ON i.id = w.id \
             WHERE i.source->>'session' = {same}{conditions} ORDER BY i.id"
        );
        let rows = client.query(&sql, &params.as_refs())?;
        let mates = rows.iter().map(|row| Ok((row.try_get(0)?, row.try_get(1)?, scope_at(row, 2)?)));
        out.extend(Neighbour::closest(id, mates)?);
    }
    Ok(out)
}

/// The items among `ids` that have a session, with it, in the order of `ids`.
fn sessions_of(client: &mut Conn, ids: &[Uuid]) -> Result<Vec<(Uuid, String)>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let rows = client.query(
        "SELECT id, source->>'session' FROM items WHERE id = ANY($1) AND source ? 'session'",
        &[&ids],
    )?;
    let mut found = std::collections::HashMap::new();
    for row in rows {
        if let Some(session) = row.try_get::<_, Option<String>>(1)? {
            found.insert(row.try_get::<_, Uuid>(0)?, session);
        }
    }
    Ok(ids.iter().filter_map(|id| Some((*id, found.remove(id)?))).collect())
}
