//! Reading: lexical search, counts, lookups by id, stats.

use super::fts::match_expression;
use super::migrate::current_version;
use super::row::{COLUMN_COUNT, COLUMNS, FACTS, facts_at, from_row, parse_id, scope_at};
use crate::{
    Clause, Combine, ExportedItem, Filters, ItemVectors, LexicalMatch, LexicalQuery, Result, Stats,
    StoredItem, VectorRow,
};
use cortex_domain::find::Author;
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, params_from_iter};
use uuid::Uuid;

/// BM25 column weights: a word in the title counts twice a word in the body.
const BM25: &str = "bm25(2.0, 1.0)";

/// `AND ...` conditions for the filters, one per clause of the shared rule
/// ([`Filters::clauses`]), with their parameters appended to `params`.
pub(super) fn filter_sql(filters: &Filters, params: &mut Vec<SqlValue>) -> String {
    let mut push = |value: SqlValue| {
        params.push(value);
        format!("?{}", params.len())
    };
    let mut sql = String::new();
    for clause in filters.clauses() {
        let condition = match clause {
            Clause::Live => "i.deleted_at IS NULL".to_string(),
            Clause::NotSuperseded => "i.superseded_by IS NULL".to_string(),
            Clause::NotExpiredAt(now) => {
                format!("(i.expires_at IS NULL OR i.expires_at > {})", push(SqlValue::Integer(now)))
            }
            Clause::KindIn(kinds) => {
                let marks: Vec<String> =
                    kinds.iter().map(|k| push(SqlValue::Text(k.as_str().to_string()))).collect();
                format!("i.kind IN ({})", marks.join(", "))
            }
            // `field` comes from the fixed list of scope column names, never from the caller.
            Clause::ScopeEquals(field, value) => {
                format!("i.{field} = {}", push(SqlValue::Text(value.into())))
            }
            Clause::ScopeIn(field, values) => {
                let marks: Vec<String> = values.iter().map(|v| push(SqlValue::Text(v.clone()))).collect();
                format!("i.{field} IN ({})", marks.join(", "))
            }
            Clause::BranchWithMerged(branch, merged) => {
                let mut any = vec![format!("i.branch = {}", push(SqlValue::Text(branch.into())))];
                for m in merged {
                    let (b, until) =
                        (push(SqlValue::Text(m.branch.clone())), push(SqlValue::Integer(m.until)));
                    any.push(format!("(i.branch = {b} AND i.created_at <= {until})"));
                }
                format!("({})", any.join(" OR "))
            }
            Clause::UpdatedSince(t) => format!("i.updated_at >= {}", push(SqlValue::Integer(t))),
            Clause::UpdatedBefore(t) => format!("i.updated_at < {}", push(SqlValue::Integer(t))),
            Clause::StatusIs(status) => format!("i.status = {}", push(SqlValue::Text(status.into()))),
            Clause::AuthorIs(Author::Principal(p)) => {
                format!("i.author = {}", push(SqlValue::Text(p.clone())))
            }
            // As `row::FACTS` reads the claimed agent: only a string is one.
            Clause::AuthorIs(Author::Agent(a)) => format!(
                "(json_type(i.source, '$.actor') = 'text' AND json_extract(i.source, '$.actor') = {})",
                push(SqlValue::Text(a.clone()))
            ),
            // One condition whatever the number of tags (one EXISTS per tag once built an
            // expression tree SQLite refuses): the item holds as many of the distinct tags
            // asked for as there are.
            // One set computed once per query (each tag a range of the (tag, item) key, the
            // sets intersected), not a subquery per matching row: a query word that matches
            // most items stays fast under a tag filter. Validation caps a find at 32 tags; a
            // longer list still stays within SQLite's limits (at most 100 terms per compound
            // SELECT, of 500; one `IN` per 100 tags).
            Clause::HasTags(tags) => {
                let distinct: Vec<&String> =
                    tags.iter().collect::<std::collections::BTreeSet<_>>().into_iter().collect();
                let groups: Vec<String> = distinct
                    .chunks(100)
                    .map(|group| {
                        let sets: Vec<String> = group
                            .iter()
                            .map(|t| {
                                let tag = push(SqlValue::Text((*t).clone()));
                                format!("SELECT item_rowid FROM item_tags WHERE tag = {tag}")
                            })
                            .collect();
                        format!("i.rowid IN ({})", sets.join(" INTERSECT "))
                    })
                    .collect();
                groups.join(" AND ")
            }
        };
        sql.push_str(" AND ");
        sql.push_str(&condition);
    }
    sql
}

pub fn search(conn: &Connection, query: &LexicalQuery) -> Result<Vec<LexicalMatch>> {
    let Some(expr) = match_expression(&query.query, query.combine == Combine::All) else {
        return Ok(Vec::new());
    };
    let mut params = vec![SqlValue::Text(expr)];
    let filters = filter_sql(&query.filters, &mut params);
    params.push(SqlValue::Integer(query.pool as i64));
    let sql = format!(
        "SELECT i.id, -items_fts.rank, i.updated_at, i.org, i.project, i.branch, i.service, i.sprint, i.tenant, i.environment, i.kind \
         FROM items_fts JOIN items i ON i.rowid = items_fts.rowid \
         WHERE items_fts MATCH ?1 AND items_fts.rank MATCH '{BM25}'{filters} ORDER BY items_fts.rank LIMIT ?{}",
        params.len()
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query(params_from_iter(params))?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        out.push(LexicalMatch {
            id: parse_id(&id, "id")?,
            score: row.get(1)?,
            updated_at: row.get(2)?,
            scope: scope_at(row, 3)?,
            kind: cortex_domain::Kind::parse(&row.get::<_, String>(10)?),
        });
    }
    Ok(out)
}

pub fn count(conn: &Connection, query: &LexicalQuery, cap: usize) -> Result<usize> {
    let Some(expr) = match_expression(&query.query, query.combine == Combine::All) else {
        return Ok(0);
    };
    let mut params = vec![SqlValue::Text(expr)];
    let filters = filter_sql(&query.filters, &mut params);
    params.push(SqlValue::Integer(cap as i64));
    let sql = format!(
        "SELECT count(*) FROM (SELECT 1 FROM items_fts JOIN items i ON i.rowid = items_fts.rowid \
         WHERE items_fts MATCH ?1{filters} LIMIT ?{})",
        params.len()
    );
    let n: i64 = conn.prepare_cached(&sql)?.query_row(params_from_iter(params), |r| r.get(0))?;
    Ok(n as usize)
}

pub fn get(conn: &Connection, ids: &[Uuid]) -> Result<Vec<StoredItem>> {
    let mut stmt = conn.prepare_cached(&format!("SELECT {COLUMNS} FROM items i WHERE i.id = ?1"))?;
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let mut rows = stmt.query([id.to_string()])?;
        if let Some(row) = rows.next()? {
            out.push(from_row(row)?);
        }
    }
    Ok(out)
}

pub fn recent(conn: &Connection, filters: &Filters, limit: usize) -> Result<Vec<StoredItem>> {
    let mut params = Vec::new();
    let conditions = filter_sql(filters, &mut params);
    params.push(SqlValue::Integer(limit as i64));
    let sql = format!(
        "SELECT {COLUMNS} FROM items i WHERE 1 = 1{conditions} ORDER BY coalesce(i.occurred_at, i.updated_at) DESC, i.id DESC LIMIT ?{}",
        params.len()
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query(params_from_iter(params))?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(from_row(row)?);
    }
    Ok(out)
}

pub fn places(conn: &Connection) -> Result<Vec<crate::Place>> {
    let mut stmt = conn.prepare_cached(crate::model::PLACES)?;
    let rows = stmt.query_map([], |r| Ok(crate::Place::of(r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

pub fn stats(conn: &Connection) -> Result<Stats> {
    let (items, deleted): (i64, i64) = conn.query_row(
        "SELECT count(*) FILTER (WHERE deleted_at IS NULL), count(*) FILTER (WHERE deleted_at IS NOT NULL) FROM items",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let mut stmt = conn
        .prepare("SELECT kind, count(*) FROM items WHERE deleted_at IS NULL GROUP BY kind ORDER BY kind")?;
    let by_kind =
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<rusqlite::Result<Vec<_>>>()?;
    let bytes: i64 = conn.query_row(
        "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
        [],
        |r| r.get(0),
    )?;
    Ok(Stats { items, deleted, by_kind, schema_version: current_version(conn)?, bytes })
}

/// The items `ids` (every item, with `None`) with their vectors.
pub fn vector_rows(conn: &Connection, ids: Option<&[Uuid]>) -> Result<Vec<VectorRow>> {
    let ids = ids
        .map(|ids| serde_json::Value::from(ids.iter().map(Uuid::to_string).collect::<Vec<_>>()).to_string());
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT i.id, i.deleted_at IS NOT NULL, v.vector, v.chunks, {FACTS} \
         FROM items i LEFT JOIN item_vectors v ON v.item_rowid = i.rowid \
         WHERE ?1 IS NULL OR i.id IN (SELECT value FROM json_each(?1))"
    ))?;
    let mut rows = stmt.query([ids])?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        let blob: Option<Vec<u8>> = row.get(2)?;
        let chunks: Option<Vec<u8>> = row.get(3)?;
        out.push(VectorRow {
            id: parse_id(&id, "id")?,
            deleted: row.get(1)?,
            vector: blob.map(|b| super::row::vector_from_blob(&b)),
            chunks: super::row::chunks_from_blob(chunks.as_deref())?,
            facts: facts_at(row, 4)?,
        });
    }
    Ok(out)
}

pub fn vectors_of(conn: &Connection, ids: &[Uuid]) -> Result<Vec<ItemVectors>> {
    let ids = serde_json::Value::from(ids.iter().map(Uuid::to_string).collect::<Vec<_>>()).to_string();
    let mut stmt = conn.prepare_cached(
        "SELECT i.id, v.vector, v.chunks FROM items i JOIN item_vectors v ON v.item_rowid = i.rowid \
         WHERE i.id IN (SELECT value FROM json_each(?1))",
    )?;
    let mut rows = stmt.query([ids])?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        let vector: Vec<u8> = row.get(1)?;
        let chunks: Option<Vec<u8>> = row.get(2)?;
        out.push(ItemVectors {
            id: parse_id(&id, "id")?,
            vector: super::row::vector_from_blob(&vector),
            chunks: super::row::chunks_from_blob(chunks.as_deref())?,
        });
    }
    Ok(out)
}

pub fn export_page(conn: &Connection, after: Option<Uuid>, limit: usize) -> Result<Vec<ExportedItem>> {
    // Ids are lowercase hyphenated UUIDs, whose text order is their byte order.
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS}, v.vector, v.chunks FROM items i LEFT JOIN item_vectors v ON v.item_rowid = i.rowid \
         WHERE ?1 IS NULL OR i.id > ?1 ORDER BY i.id LIMIT ?2"
    ))?;
    let mut rows = stmt.query(rusqlite::params![after.map(|id| id.to_string()), limit as i64])?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let blob: Option<Vec<u8>> = row.get(COLUMN_COUNT)?;
        let chunks: Option<Vec<u8>> = row.get(COLUMN_COUNT + 1)?;
        out.push(ExportedItem {
            item: from_row(row)?,
            vector: blob.map(|b| super::row::vector_from_blob(&b)),
            chunks: super::row::chunks_from_blob(chunks.as_deref())?,
        });
    }
    Ok(out)
}

/// Expired items per kind (deleted ones too): what a purge at `now` would remove.
pub fn expired_by_kind(conn: &Connection, now: i64) -> Result<Vec<(String, i64)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT kind, count(*) FROM items WHERE expires_at IS NOT NULL AND expires_at <= ?1 GROUP BY kind ORDER BY kind",
    )?;
    let rows = stmt.query_map([now], |row| Ok((row.get(0)?, row.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

/// The live item of `scope`'s org and project with this natural key (see `Store`).
pub fn natural_key_owner(conn: &Connection, scope: &cortex_domain::Scope, key: &str) -> Result<Option<Uuid>> {
    let s = crate::model::scope_values(scope);
    let id: Option<String> = conn
        .prepare_cached(
            "SELECT id FROM items WHERE natural_key = ?1 AND org = ?2 AND project = ?3 AND deleted_at IS NULL LIMIT 1",
        )?
        .query_row(rusqlite::params![key, s[0], s[1]], |row| row.get(0))
        .optional()?;
    id.map(|id| parse_id(&id, "id")).transpose()
}

/// The item of `scope`'s org and project holding this idempotency key (see `Store`).
pub fn idempotency_owner(conn: &Connection, scope: &cortex_domain::Scope, key: &str) -> Result<Option<Uuid>> {
    let s = crate::model::scope_values(scope);
    let id: Option<String> = conn
        .prepare_cached("SELECT id FROM items WHERE org = ?1 AND project = ?2 AND idempotency_key = ?3")?
        .query_row(rusqlite::params![s[0], s[1], key], |row| row.get(0))
        .optional()?;
    id.map(|id| parse_id(&id, "id")).transpose()
}

/// `PRAGMA quick_check` (or, with `full`, `integrity_check`, which also compares every index
/// with its table; both run FTS5's own check of the full-text index): the problems found, none
/// when the file is sound.
pub fn integrity_problems(conn: &Connection, full: bool) -> Result<Vec<String>> {
    let pragma = if full { "PRAGMA integrity_check(100)" } else { "PRAGMA quick_check(100)" };
    let mut stmt = conn.prepare(pragma)?;
    let mut problems = Vec::new();
    for line in stmt.query_map([], |r| r.get::<_, String>(0))? {
        match line {
            Ok(line) if line == "ok" => {}
            Ok(line) => problems.push(line),
            // Some damage (a b-tree page that is not one) stops the check itself: that is
            // its finding, not a failure to report.
            Err(e) => {
                problems.push(format!("the check stopped: {e}"));
                break;
            }
        }
    }
    Ok(problems)
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    #[test]
    fn the_places_are_counted_from_the_live_rows_index_alone_in_its_order() {
        let mut conn = Connection::open_in_memory().unwrap();
        super::super::chain::register_functions(&conn).unwrap();
        super::super::migrate::run(&mut conn).unwrap();
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {}", crate::model::PLACES)).unwrap();
        let plan: Vec<String> =
            stmt.query_map([], |row| row.get::<_, String>(3)).unwrap().map(|r| r.unwrap()).collect();
        assert!(plan.iter().any(|step| step.contains("USING COVERING INDEX items_places")), "{plan:?}");
        assert!(!plan.iter().any(|step| step.contains("TEMP B-TREE")), "{plan:?}");
    }
}
