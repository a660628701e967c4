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
    let mut stmt = conn.prepare_cached(&incoming_sql(relations, &mut params))?;
    let mut rows = stmt.query(params_from_iter(params))?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push((uuid(&row.get::<_, String>(0)?)?, row.get(1)?));
    }
    Ok(out)
}

/// The count of relations pointing at each of the ids in `?1`, under `relations`' conditions.
/// The link_to index is named: with a caller's scope among the conditions SQLite otherwise
/// picks the scope index and walks every item in the scope to count a page's citations.
fn incoming_sql(relations: &Filters, params: &mut Vec<SqlValue>) -> String {
    let conditions = filter_sql(relations, params);
    format!(
        "SELECT i.link_to, count(*) FROM items i INDEXED BY items_link_to \
         WHERE i.link_to IN (SELECT value FROM json_each(?1)) AND i.kind = 'relation'{conditions} \
         GROUP BY i.link_to"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn citations_are_counted_through_the_link_to_index_under_a_scope() {
        let mut conn = Connection::open_in_memory().unwrap();
        super::super::chain::register_functions(&conn).unwrap();
        super::super::migrate::run(&mut conn).unwrap();
        let relations = Filters {
            now: 1,
            include_superseded: true,
            scope_equals: vec![("org", "acme".into()), ("project", "api".into())],
            ..Filters::default()
        };
        let mut params = vec![SqlValue::Text(id_list(&[Uuid::nil()]))];
        let sql = incoming_sql(&relations, &mut params);
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let plan: Vec<String> = stmt
            .query_map(params_from_iter(params), |row| row.get::<_, String>(3))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert!(plan.iter().any(|step| step.contains("items_link_to")), "{plan:?}");
        assert!(!plan.iter().any(|step| step.contains("items_scope")), "{plan:?}");
    }
}
