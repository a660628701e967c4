//! Reading: lexical and dense search, counts, lookups by id, stats, export pages.

use super::conn::{Conn, Sql};
use super::migrate::current_version;
use super::params::Params;
use super::row::{COLUMN_COUNT, COLUMNS, FACTS, facts_at, from_row, scope_at};
use super::tsquery::expression;
use crate::model::scope_values;
use crate::{
    ChunkVector, Clause, Combine, DenseMatch, ExportedItem, Filters, ItemVectors, LexicalMatch, LexicalQuery,
    Result, Stats, StoredItem, VectorRow,
};
use cortex_domain::Scope;
use cortex_domain::find::Author;
use std::collections::HashMap;
use uuid::Uuid;

/// `ts_rank` weights for D, C, B, A: a word in the title (A) counts twice one in the body (B).
const RANK_WEIGHTS: &str = "'{0.1, 0.2, 0.5, 1.0}'::float4[]";
/// Snippet: matched words in `**`, one fragment of about 24 words around the best match.
/// Candidates an HNSW scan visits at least; more than `k` keeps recall up.
const MIN_EF_SEARCH: usize = 64;

/// `AND ...` conditions for the filters, one per clause of the shared rule
/// ([`Filters::clauses`]), with their parameters appended to `params`.
pub(super) fn filter_sql(filters: &Filters, params: &mut Params) -> String {
    let mut sql = String::new();
    for clause in filters.clauses() {
        let condition = match clause {
            Clause::Live => "i.deleted_at IS NULL".to_string(),
            Clause::NotSuperseded => "i.superseded_by IS NULL".to_string(),
            Clause::NotExpiredAt(now) => {
                format!("(i.expires_at IS NULL OR i.expires_at > {})", params.push(now))
            }
            Clause::KindIn(kinds) => {
                let kinds: Vec<String> = kinds.iter().map(|k| k.as_str().to_string()).collect();
                format!("i.kind = ANY({})", params.push(kinds))
            }
            // `field` comes from the fixed list of scope column names, never from the caller.
            Clause::ScopeEquals(field, value) => format!("i.{field} = {}", params.push(value.to_string())),
            Clause::ScopeIn(field, values) => format!("i.{field} = ANY({})", params.push(values.to_vec())),
            Clause::BranchWithMerged(branch, merged) => {
                let mut any = vec![format!("i.branch = {}", params.push(branch.to_string()))];
                for m in merged {
                    let (b, until) = (params.push(m.branch.clone()), params.push(m.until));
                    any.push(format!("(i.branch = {b} AND i.created_at <= {until})"));
                }
                format!("({})", any.join(" OR "))
            }
            Clause::UpdatedSince(t) => format!("i.updated_at >= {}", params.push(t)),
            Clause::UpdatedBefore(t) => format!("i.updated_at < {}", params.push(t)),
            Clause::StatusIs(status) => format!("i.status = {}", params.push(status.to_string())),
            Clause::AuthorIs(Author::Principal(p)) => format!("i.author = {}", params.push(p.clone())),
            // As `row::FACTS` reads the claimed agent: only a string is one.
            Clause::AuthorIs(Author::Agent(a)) => format!(
                "(jsonb_typeof(i.source -> 'actor') = 'string' AND i.source ->> 'actor' = {})",
                params.push(a.clone())
            ),
            Clause::HasTags(tags) => format!("i.tags @> {}", params.push(tags.to_vec())),
        };
        sql.push_str(" AND ");
        sql.push_str(&condition);
    }
    sql
}

pub fn search(client: &mut Conn, query: &LexicalQuery) -> Result<Vec<LexicalMatch>> {
    let mut params = Params::default();
    let Some(q) = expression(&query.query, query.combine == Combine::All, &mut params) else {
        return Ok(Vec::new());
    };
    let filters = filter_sql(&query.filters, &mut params);
    let limit = params.push(query.pool as i64);
    let sql = format!(
        "SELECT i.id, ts_rank({RANK_WEIGHTS}, i.tsv, {q}) AS score, i.updated_at, \
         i.org, i.project, i.branch, i.service, i.sprint, i.tenant, i.environment, i.kind \
         FROM items i WHERE i.tsv @@ {q}{filters} ORDER BY score DESC, i.id LIMIT {limit}"
    );
    let rows = client.query(&sql, &params.as_refs())?;
    rows.iter()
        .map(|row| {
            let score: f32 = row.try_get(1)?;
            Ok(LexicalMatch {
                id: row.try_get(0)?,
                score: f64::from(score),
                updated_at: row.try_get(2)?,
                scope: scope_at(row, 3)?,
                kind: cortex_domain::Kind::parse(row.try_get::<_, &str>(10)?),
            })
        })
        .collect()
}

/// `rows` (each holding an `id` first) in the order of `ids`.
fn in_order_of<T>(ids: &[Uuid], mut items: Vec<T>, id_of: impl Fn(&T) -> Uuid) -> Vec<T> {
    let mut out = Vec::with_capacity(items.len());
    for id in ids {
        if let Some(at) = items.iter().position(|item| id_of(item) == *id) {
            out.push(items.swap_remove(at));
        }
    }
    out
}

pub fn count(client: &mut Conn, query: &LexicalQuery, cap: usize) -> Result<usize> {
    let mut params = Params::default();
    let Some(q) = expression(&query.query, query.combine == Combine::All, &mut params) else {
        return Ok(0);
    };
    let filters = filter_sql(&query.filters, &mut params);
    let limit = params.push(cap as i64);
    let sql =
        format!("SELECT count(*) FROM (SELECT 1 FROM items i WHERE i.tsv @@ {q}{filters} LIMIT {limit}) t");
    let n: i64 = client.query_one(&sql, &params.as_refs())?.try_get(0)?;
    Ok(n as usize)
}

pub fn get(client: &mut Conn, ids: &[Uuid]) -> Result<Vec<StoredItem>> {
    let rows =
        client.query(&format!("SELECT {COLUMNS} FROM items i WHERE i.id = ANY($1)"), &[&ids.to_vec()])?;
    let found = rows.iter().map(from_row).collect::<Result<Vec<_>>>()?;
    Ok(in_order_of(ids, found, |item| item.record.id))
}

pub fn recent(client: &mut Conn, filters: &Filters, limit: usize) -> Result<Vec<StoredItem>> {
    let mut params = Params::default();
    let conditions = filter_sql(filters, &mut params);
    let limit = params.push(limit as i64);
    let sql = format!(
        "SELECT {COLUMNS} FROM items i WHERE true{conditions} ORDER BY coalesce(i.occurred_at, i.updated_at) DESC, i.id DESC LIMIT {limit}"
    );
    client.query(&sql, &params.as_refs())?.iter().map(from_row).collect()
}

pub fn places(client: &mut Conn) -> Result<Vec<crate::Place>> {
    client
        .query(crate::model::PLACES, &[])?
        .iter()
        .map(|r| Ok(crate::Place::of(r.try_get(0)?, r.try_get(1)?, r.try_get(2)?, r.try_get(3)?)))
        .collect()
}

pub fn stats(client: &mut Conn) -> Result<Stats> {
    let row = client.query_one(
        "SELECT count(*) FILTER (WHERE deleted_at IS NULL), count(*) FILTER (WHERE deleted_at IS NOT NULL), \
         pg_total_relation_size('items') + pg_total_relation_size('store_meta') \
         FROM items",
        &[],
    )?;
    let by_kind = client
        .query("SELECT kind, count(*) FROM items WHERE deleted_at IS NULL GROUP BY kind ORDER BY kind", &[])?
        .iter()
        .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
        .collect::<Result<Vec<_>>>()?;
    Ok(Stats {
        items: row.try_get(0)?,
        deleted: row.try_get(1)?,
        by_kind,
        schema_version: current_version(client)?,
        bytes: row.try_get(2)?,
    })
}

/// The items `ids` (every item, with `None`) with their vectors.
pub fn vector_rows(client: &mut Conn, ids: Option<&[Uuid]>) -> Result<Vec<VectorRow>> {
    let rows = client.query(
        &format!(
            "SELECT i.id, i.deleted_at IS NOT NULL, i.embedding::real[], {FACTS} FROM items i \
             WHERE $1::uuid[] IS NULL OR i.id = ANY($1)"
        ),
        &[&ids],
    )?;
    let ids: Vec<Uuid> = rows.iter().map(|row| row.try_get(0)).collect::<std::result::Result<_, _>>()?;
    let mut chunks = chunks_of(client, &ids)?;
    rows.iter()
        .map(|row| {
            let id: Uuid = row.try_get(0)?;
            Ok(VectorRow {
                id,
                deleted: row.try_get(1)?,
                vector: row.try_get(2)?,
                chunks: chunks.remove(&id).unwrap_or_default(),
                facts: facts_at(row, 3)?,
            })
        })
        .collect()
}

pub fn vectors_of(client: &mut Conn, ids: &[Uuid]) -> Result<Vec<ItemVectors>> {
    let rows = client.query(
        "SELECT id, embedding::real[] FROM items WHERE id = ANY($1) AND embedding IS NOT NULL",
        &[&ids],
    )?;
    let mut chunks = chunks_of(client, ids)?;
    rows.iter()
        .map(|row| {
            let id: Uuid = row.try_get(0)?;
            Ok(ItemVectors { id, vector: row.try_get(1)?, chunks: chunks.remove(&id).unwrap_or_default() })
        })
        .collect()
}

/// The chunk vectors of these items, in text order.
fn chunks_of(client: &mut Conn, ids: &[Uuid]) -> Result<HashMap<Uuid, Vec<ChunkVector>>> {
    let mut out: HashMap<Uuid, Vec<ChunkVector>> = HashMap::new();
    if ids.is_empty() {
        return Ok(out);
    }
    let rows = client.query(
        "SELECT item_id, start_byte, end_byte, embedding::real[] FROM item_chunks WHERE item_id = ANY($1) \
         ORDER BY item_id, start_byte",
        &[&ids],
    )?;
    for row in rows {
        let (start, end): (i32, i32) = (row.try_get(1)?, row.try_get(2)?);
        out.entry(row.try_get(0)?).or_default().push(ChunkVector {
            start: start as u32,
            end: end as u32,
            vector: row.try_get(3)?,
        });
    }
    Ok(out)
}

/// Nearest live items by cosine similarity, through the dimension's HNSW index. An iterative
/// scan keeps walking the graph until `k` rows pass the filters (or its scan budget runs out),
/// so a narrow scope still gets a full page.
pub fn search_dense(
    client: &mut Conn,
    vector: &[f32],
    filters: &Filters,
    k: usize,
) -> Result<Vec<DenseMatch>> {
    let dim = vector.len();
    let mut params = Params::default();
    let query = params.push(vector.to_vec());
    let filters = filter_sql(filters, &mut params);
    let limit = params.push(k as i64);
    // Whole texts and chunks, each through its own HNSW index.
    let sql = format!(
        "(SELECT i.id, 1 - (i.embedding::vector({dim}) <=> {query}::vector({dim})) AS score, \
           NULL::integer, NULL::integer, {FACTS} \
         FROM items i WHERE vector_dims(i.embedding) = {dim}{filters} \
         ORDER BY i.embedding::vector({dim}) <=> {query}::vector({dim}) LIMIT {limit}) \
         UNION ALL \
         (SELECT i.id, 1 - (c.embedding::vector({dim}) <=> {query}::vector({dim})) AS score, \
           c.start_byte, c.end_byte, {FACTS} \
         FROM item_chunks c JOIN items i ON i.id = c.item_id WHERE vector_dims(c.embedding) = {dim}{filters} \
         ORDER BY c.embedding::vector({dim}) <=> {query}::vector({dim}) LIMIT {limit})"
    );
    let mut tx = client.transaction()?;
    tx.batch_execute(&format!(
        "SET LOCAL hnsw.ef_search = {}; SET LOCAL hnsw.iterative_scan = relaxed_order",
        k.clamp(MIN_EF_SEARCH, 1000)
    ))?;
    let rows = tx.query(&sql, &params.as_refs())?;
    tx.commit()?;
    let mut found = rows
        .iter()
        .map(|row| {
            let score: f64 = row.try_get(1)?;
            let (start, end): (Option<i32>, Option<i32>) = (row.try_get(2)?, row.try_get(3)?);
            Ok(DenseMatch {
                id: row.try_get(0)?,
                score: score as f32,
                chunk: start.zip(end).map(|(s, e)| (s as u32, e as u32)),
                facts: facts_at(row, 4)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    // Relaxed order may return neighbours slightly out of order.
    found.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
    Ok(found)
}

pub fn export_page(client: &mut Conn, after: Option<Uuid>, limit: usize) -> Result<Vec<ExportedItem>> {
    let rows = client.query(
        &format!(
            "SELECT {COLUMNS}, i.embedding::real[] FROM items i WHERE $1::uuid IS NULL OR i.id > $1 ORDER BY i.id LIMIT $2"
        ),
        &[&after, &(limit as i64)],
    )?;
    let ids: Vec<Uuid> = rows.iter().map(|row| row.try_get(0)).collect::<std::result::Result<_, _>>()?;
    let mut chunks = chunks_of(client, &ids)?;
    rows.iter()
        .map(|row| {
            let vector: Option<Vec<f32>> = row.try_get(COLUMN_COUNT)?;
            let item = from_row(row)?;
            let chunks = chunks.remove(&item.record.id).unwrap_or_default();
            Ok(ExportedItem { item, vector, chunks })
        })
        .collect()
}

/// Expired items per kind (deleted ones too): what a purge at `now` would remove.
pub fn expired_by_kind(client: &mut Conn, now: i64) -> Result<Vec<(String, i64)>> {
    let rows = client.query(
        "SELECT kind, count(*) FROM items WHERE expires_at IS NOT NULL AND expires_at <= $1 GROUP BY kind ORDER BY kind",
        &[&now],
    )?;
    rows.iter().map(|r| Ok((r.try_get(0)?, r.try_get(1)?))).collect()
}

/// The live item of `scope`'s org and project with this natural key (see `Store`).
pub fn natural_key_owner(client: &mut impl Sql, scope: &Scope, key: &str) -> Result<Option<Uuid>> {
    let s = scope_values(scope);
    let row = client.query_opt(
        "SELECT id FROM items WHERE natural_key = $1 AND org = $2 AND project = $3 AND deleted_at IS NULL LIMIT 1",
        &[&key, &s[0], &s[1]],
    )?;
    Ok(row.map(|r| r.try_get(0)).transpose()?)
}

/// The item of `scope`'s org and project holding this idempotency key (see `Store`).
pub fn idempotency_owner(client: &mut impl Sql, scope: &Scope, key: &str) -> Result<Option<Uuid>> {
    let s = scope_values(scope);
    let row = client.query_opt(
        "SELECT id FROM items WHERE org = $1 AND project = $2 AND idempotency_key = $3",
        &[&s[0], &s[1], &key],
    )?;
    Ok(row.map(|r| r.try_get(0)).transpose()?)
}
