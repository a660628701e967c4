//! Session neighbours: the items stored right before and after an item in its session
//! (`source.session`), found among the few stored on either side by id (UUIDv7: creation
//! order), through the unique index on `id`.

use super::read::filter_sql;
use super::row::{parse_id, scope_at};
use crate::{Filters, Neighbour, Result};
use cortex_domain::neighbours::Side;
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, params_from_iter};
use uuid::Uuid;

pub fn session_neighbours(
    conn: &Connection,
    ids: &[Uuid],
    filters: &Filters,
    window: usize,
) -> Result<Vec<Neighbour>> {
    let mut session_of =
        conn.prepare_cached("SELECT json_extract(source, '$.session') FROM items WHERE id = ?1")?;
    let mut out = Vec::new();
    for id in ids {
        let session: Option<Option<String>> =
            session_of.query_row([id.to_string()], |r| r.get(0)).optional()?;
        let Some(Some(session)) = session else { continue };
        for side in [Side::Before, Side::After] {
            let (compare, order) = match side {
                Side::Before => ("<", "DESC"),
                Side::After => (">", "ASC"),
            };
            let mut params = vec![
                SqlValue::Text(id.to_string()),
                SqlValue::Integer(window as i64),
                SqlValue::Text(session.clone()),
            ];
            let conditions = filter_sql(filters, &mut params);
            let sql = format!(
                "SELECT i.id, i.updated_at, i.org, i.project, i.branch, i.service, i.sprint, i.tenant, i.environment \
                 FROM items i WHERE i.rowid IN (SELECT rowid FROM items WHERE id {compare} ?1 ORDER BY id {order} LIMIT ?2) \
                 AND json_extract(i.source, '$.session') = ?3{conditions} ORDER BY i.id {order} LIMIT 1"
            );
            let mut stmt = conn.prepare_cached(&sql)?;
            let mut rows = stmt.query(params_from_iter(params))?;
            if let Some(row) = rows.next()? {
                let found: String = row.get(0)?;
                out.push(Neighbour {
                    of: *id,
                    side,
                    id: parse_id(&found, "id")?,
                    updated_at: row.get(1)?,
                    scope: scope_at(row, 2)?,
                });
            }
        }
    }
    Ok(out)
}
