//! Session neighbours: the items stored right before and after an item in its session
//! (`source.session`), found among the few stored on either side by id (UUIDv7: creation
//! order) through the unique index on `id`: one statement reads the items' sessions, then one
//! per item that has a session.

use super::read::filter_sql;
use super::row::{parse_id, scope_at};
use crate::{Filters, Neighbour, Result};
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, params_from_iter};
use uuid::Uuid;

pub fn session_neighbours(
    conn: &Connection,
    ids: &[Uuid],
    filters: &Filters,
    window: usize,
) -> Result<Vec<Neighbour>> {
    let mut out = Vec::new();
    for (id, session) in sessions_of(conn, ids)? {
        let mut params =
            vec![SqlValue::Text(id.to_string()), SqlValue::Integer(window as i64), SqlValue::Text(session)];
        let conditions = filter_sql(filters, &mut params);
        // The window's items of the same session, in storage order. CROSS JOIN keeps the
        // window the outer loop: left to itself the planner walks the scope index, every item
        // of the project.
        let sql = format!(
            "WITH w(r) AS ( \
                 SELECT rowid FROM (SELECT rowid FROM items WHERE id < ?1 ORDER BY id DESC LIMIT ?2) \
                 UNION ALL SELECT rowid FROM (SELECT rowid FROM items WHERE id > ?1 ORDER BY id LIMIT ?2)) \
             SELECT i.id, i.updated_at, i.org, i.project, i.branch, i.service, i.sprint, i.tenant, i.environment \
             FROM w CROSS JOIN items i ON i.rowid = w.r \
             WHERE json_extract(i.source, '$.session') = ?3{conditions} ORDER BY i.id"
        );
        let mut stmt = conn.prepare_cached(&sql)?;
        let mut rows = stmt.query(params_from_iter(params))?;
        let mates = std::iter::from_fn(|| match rows.next() {
            Ok(Some(row)) => Some(mate(row)),
            Ok(None) => None,
            Err(e) => Some(Err(e.into())),
        });
        out.extend(Neighbour::closest(id, mates)?);
    }
    Ok(out)
}

/// A row of the window: the item's id, update time and scope.
fn mate(row: &rusqlite::Row) -> Result<(Uuid, i64, cortex_domain::Scope)> {
    Ok((parse_id(&row.get::<_, String>(0)?, "id")?, row.get(1)?, scope_at(row, 2)?))
}

/// The items among `ids` that have a session, with it, in the order of `ids`.
fn sessions_of(conn: &Connection, ids: &[Uuid]) -> Result<Vec<(Uuid, String)>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let marks: Vec<String> = (1..=ids.len()).map(|i| format!("?{i}")).collect();
    let sql = format!(
        "SELECT id, json_extract(source, '$.session') FROM items WHERE id IN ({}) AND source IS NOT NULL",
        marks.join(", ")
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query(params_from_iter(ids.iter().map(|id| id.to_string())))?;
    let mut found = std::collections::HashMap::new();
    while let Some(row) = rows.next()? {
        if let Some(session) = row.get::<_, Option<String>>(1)? {
            found.insert(parse_id(&row.get::<_, String>(0)?, "id")?, session);
        }
    }
    Ok(ids.iter().filter_map(|id| Some((*id, found.remove(id)?))).collect())
}
