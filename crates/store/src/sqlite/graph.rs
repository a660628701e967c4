//! Reading the knowledge graph's links (relations and observations) by their indexed ends.

use super::read::filter_sql;
use super::row::{FACTS, facts_at};
use crate::{Filters, Link, Result};
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, Row, params_from_iter};
use uuid::Uuid;

fn id_list(ids: &[Uuid]) -> String {
    serde_json::Value::from(ids.iter().map(|id| id.to_string()).collect::<Vec<_>>()).to_string()
}

fn uuid(text: &str) -> Result<Uuid> {
    super::row::parse_id(text, "id")
}

pub fn links(conn: &Connection, ids: &[Uuid]) -> Result<Vec<Link>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    // Three index lookups (link_from, link_to, id) rather than one OR, which SQLite would scan.
    let mut stmt = conn.prepare_cached(
        &format!("SELECT i.id, i.link_from, i.link_to, i.title, {FACTS} \
         FROM items i WHERE i.rowid IN ( \
           SELECT rowid FROM items WHERE link_from IN (SELECT value FROM json_each(?1)) AND deleted_at IS NULL \
           UNION SELECT rowid FROM items WHERE link_to IN (SELECT value FROM json_each(?1)) AND deleted_at IS NULL \
           UNION SELECT rowid FROM items WHERE id IN (SELECT value FROM json_each(?1)) \
             AND kind = 'observation' AND link_from IS NOT NULL AND deleted_at IS NULL) \
         ORDER BY i.id"),
    )?;
    let mut rows = stmt.query([id_list(ids)])?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(link_at(row)?);
    }
    Ok(out)
}

fn link_at(row: &Row<'_>) -> Result<Link> {
    let to: Option<String> = row.get(2)?;
    let facts = facts_at(row, 4)?;
    Ok(Link {
        id: uuid(&row.get::<_, String>(0)?)?,
        kind: facts.kind,
        from: uuid(&row.get::<_, String>(1)?)?,
        to: to.as_deref().map(uuid).transpose()?,
        title: row.get(3)?,
        facts,
    })
}

pub fn incoming_links(conn: &Connection, ids: &[Uuid], relations: &Filters) -> Result<Vec<(Uuid, i64)>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut params = vec![SqlValue::Text(id_list(ids))];
    let conditions = filter_sql(relations, &mut params);
    // The link_to index, named: with a caller's scope among the conditions SQLite otherwise
    // picks the scope index and walks every item in the scope to count a page's citations.
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT i.link_to, count(*) FROM items i INDEXED BY items_link_to \
         WHERE i.link_to IN (SELECT value FROM json_each(?1)) AND i.kind = 'relation'{conditions} \
         GROUP BY i.link_to"
    ))?;
    let mut rows = stmt.query(params_from_iter(params))?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push((uuid(&row.get::<_, String>(0)?)?, row.get(1)?));
    }
    Ok(out)
}
