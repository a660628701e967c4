//! Reading the knowledge graph's links (relations and observations) by their indexed ends.

use super::conn::{Conn, Sql};
use super::params::Params;
use super::read::filter_sql;
use super::row::{FACTS, facts_at};
use crate::{Filters, Link, Result};
use uuid::Uuid;

pub fn links(client: &mut Conn, ids: &[Uuid]) -> Result<Vec<Link>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let rows = client.query(
        &format!(
            "SELECT i.id, i.link_from, i.link_to, i.title, {FACTS} \
         FROM items i WHERE i.id IN ( \
           SELECT id FROM items WHERE link_from = ANY($1) AND deleted_at IS NULL \
           UNION SELECT id FROM items WHERE link_to = ANY($1) AND deleted_at IS NULL \
           UNION SELECT id FROM items WHERE id = ANY($1) \
             AND kind = 'observation' AND link_from IS NOT NULL AND deleted_at IS NULL) \
         ORDER BY i.id"
        ),
        &[&ids.to_vec()],
    )?;
    rows.iter()
        .map(|row| {
            let facts = facts_at(row, 4)?;
            Ok(Link {
                id: row.try_get(0)?,
                kind: facts.kind,
                from: row.try_get(1)?,
                to: row.try_get(2)?,
                title: row.try_get(3)?,
                facts,
            })
        })
        .collect()
}

pub fn incoming_links(client: &mut Conn, ids: &[Uuid], relations: &Filters) -> Result<Vec<(Uuid, i64)>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut params = Params::default();
    let ids = params.push(ids.to_vec());
    let conditions = filter_sql(relations, &mut params);
    let rows = client.query(
        &format!(
            "SELECT i.link_to, count(*) FROM items i \
             WHERE i.link_to = ANY({ids}) AND i.kind = 'relation'{conditions} \
             GROUP BY i.link_to"
        ),
        &params.as_refs(),
    )?;
    rows.iter().map(|row| Ok((row.try_get(0)?, row.try_get(1)?))).collect()
}
