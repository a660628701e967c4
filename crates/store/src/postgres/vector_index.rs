//! The HNSW vector indexes, one per embedding dimension, created on first use outside any
//! batch's transaction (an index build must not hold a batch's locks, nor block writers).

use super::conn::{Conn, Sql};
use crate::{Result, WriteOp};
use postgres::error::SqlState;
use std::sync::Mutex;

/// pgvector's HNSW index takes vectors of at most this many dimensions.
const HNSW_MAX_DIMENSIONS: usize = 2000;

/// Creates the HNSW index for each vector dimension in `ops` that has none yet. Outside the
/// batch's transaction: an index build must not hold the batch's locks.
pub fn ensure_vector_indexes(client: &mut Conn, ops: &[WriteOp], known: &Mutex<Vec<usize>>) -> Result<()> {
    let dims: Vec<usize> = ops
        .iter()
        .filter_map(|op| match op {
            WriteOp::Insert { record, .. } | WriteOp::Update { record } => record.vector.as_ref(),
            WriteOp::Import { vector, .. } => vector.as_ref(),
            WriteOp::Delete { .. }
            | WriteOp::Restore { .. }
            | WriteOp::Supersede { .. }
            | WriteOp::Blocked(_)
            | WriteOp::Provenance { .. }
            | WriteOp::Confirm { .. } => None,
        })
        .map(Vec::len)
        .collect();
    // Chunk vectors come from the same model as their item's vector: no other dimension.
    ensure_dimension_indexes(client, dims, known)
}

/// Creates the HNSW index of each dimension in `dims` that has none yet. The store's list of
/// known dimensions is locked only to read and record it, never during a build, and the build
/// is `CONCURRENTLY`: writers (of this process and others) go on meanwhile.
///
/// Nothing waits for another builder. A write whose dimension's index another connection is
/// building goes on without it (the build takes in rows written meanwhile; a dense search
/// scans the table until the index is valid), and checks again at its next write. No lock is
/// held across statements: a session-level advisory lock would stay behind on a pooler's
/// server connection (transaction pooling), and `CREATE INDEX CONCURRENTLY` cannot run inside
/// the transaction a transaction-level one would need. Who is building is read from the
/// server's own view of its running statements instead.
pub fn ensure_dimension_indexes(
    client: &mut Conn,
    mut dims: Vec<usize>,
    known: &Mutex<Vec<usize>>,
) -> Result<()> {
    dims.retain(|d| (1..=HNSW_MAX_DIMENSIONS).contains(d));
    dims.sort_unstable();
    dims.dedup();
    dims.retain(|d| !known.lock().unwrap_or_else(|e| e.into_inner()).contains(d));
    for dim in dims {
        if build_vector_indexes(client, dim)? == Built::Valid {
            let mut known = known.lock().unwrap_or_else(|e| e.into_inner());
            if !known.contains(&dim) {
                known.push(dim);
            }
        }
    }
    Ok(())
}

#[derive(Debug, PartialEq, Eq)]
enum Built {
    /// Every index of the dimension is there and valid.
    Valid,
    /// Another connection is building one of them now.
    Elsewhere,
}

/// Builds one dimension's indexes (on items and on chunks), outside any transaction as
/// `CREATE INDEX CONCURRENTLY` requires. A build that failed half-way leaves an invalid index
/// that `IF NOT EXISTS` would keep forever: one that no connection is building is dropped and
/// built again.
fn build_vector_indexes(client: &mut Conn, dim: usize) -> Result<Built> {
    let mut built = Built::Valid;
    for (name, sql) in vector_index_statements(dim) {
        let valid = validity(client, &name)?;
        if valid == Some(true) {
            continue;
        }
        if building_elsewhere(client, &sql)? {
            built = Built::Elsewhere;
            continue;
        }
        if valid == Some(false) {
            client.batch_execute(&format!("DROP INDEX CONCURRENTLY IF EXISTS {name}"))?;
        }
        match client.batch_execute(&sql) {
            // `IF NOT EXISTS` also passes over an index another connection is still building.
            Ok(()) if validity(client, &name)? == Some(true) => {}
            Ok(()) => built = Built::Elsewhere,
            // Another connection started a build between the check and this one: the two
            // collide on the index's name, or each waits for the other (two builds on one table
            // each wait for the other's transaction, and the server ends one of them).
            Err(e)
                if matches!(
                    e.code(),
                    Some(
                        &SqlState::UNIQUE_VIOLATION
                            | &SqlState::DUPLICATE_TABLE
                            | &SqlState::T_R_DEADLOCK_DETECTED
                    )
                ) =>
            {
                built = Built::Elsewhere;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(built)
}

/// Whether the index `name` is valid; `None` when there is none.
fn validity(client: &mut Conn, name: &str) -> Result<Option<bool>> {
    Ok(client
        .query_opt("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)", &[&name])?
        .map(|r| r.try_get(0))
        .transpose()?)
}

/// Whether another connection is running the statement `sql` now.
fn building_elsewhere(client: &mut Conn, sql: &str) -> Result<bool> {
    let row = client.query_one(
        "SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND state = 'active' \
         AND datname = current_database() AND query = $1",
        &[&sql],
    )?;
    Ok(row.try_get::<_, i64>(0)? > 0)
}

/// The vectors of live items (whole texts and chunks) and the bytes of the HNSW indexes that
/// search them, whatever their dimension.
pub fn searched(client: &mut Conn) -> Result<(i64, i64)> {
    let row = client.query_one(
        "SELECT (SELECT count(*) FROM items WHERE embedding IS NOT NULL AND deleted_at IS NULL) \
              + (SELECT count(*) FROM item_chunks c JOIN items i ON i.id = c.item_id WHERE i.deleted_at IS NULL), \
                (SELECT coalesce(sum(pg_relation_size(indexrelid)), 0)::bigint FROM pg_index \
                 WHERE indrelid IN ('items'::regclass, 'item_chunks'::regclass) \
                 AND indexrelid::regclass::text ~ '^(items|item_chunks)_embedding_[0-9]+$')",
        &[],
    )?;
    Ok((row.try_get(0)?, row.try_get(1)?))
}

/// The partial HNSW indexes for one dimension, by name; `read::search_dense` repeats their
/// expression and predicate so the planner can use them.
fn vector_index_statements(dim: usize) -> [(String, String); 2] {
    ["items", "item_chunks"].map(|table| {
        let name = format!("{table}_embedding_{dim}");
        let sql = format!(
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {table} \
             USING hnsw ((embedding::vector({dim})) vector_cosine_ops) WHERE vector_dims(embedding) = {dim}"
        );
        (name, sql)
    })
}
