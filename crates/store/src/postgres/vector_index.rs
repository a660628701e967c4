//! The HNSW vector indexes, one per embedding dimension, created on first use outside any
//! batch's transaction (an index build must not hold a batch's locks, nor block writers).

use crate::{Result, WriteOp};
use postgres::Client;
use std::sync::Mutex;

/// pgvector's HNSW index takes vectors of at most this many dimensions.
const HNSW_MAX_DIMENSIONS: usize = 2000;
/// Serializes creating a dimension's vector index across processes.
const INDEX_LOCK: i64 = 0x636f_7274_6579;

/// Creates the HNSW index for each vector dimension in `ops` that has none yet. Outside the
/// batch's transaction: an index build must not hold the batch's locks.
pub fn ensure_vector_indexes(client: &mut Client, ops: &[WriteOp], known: &Mutex<Vec<usize>>) -> Result<()> {
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
/// is `CONCURRENTLY`: writers (of this process and others) go on meanwhile. Two builders of
/// one dimension take turns on an advisory lock; the second finds the index there.
pub fn ensure_dimension_indexes(
    client: &mut Client,
    mut dims: Vec<usize>,
    known: &Mutex<Vec<usize>>,
) -> Result<()> {
    dims.retain(|d| (1..=HNSW_MAX_DIMENSIONS).contains(d));
    dims.sort_unstable();
    dims.dedup();
    dims.retain(|d| !known.lock().unwrap_or_else(|e| e.into_inner()).contains(d));
    for dim in dims {
        take_index_lock(client)?;
        let built = build_vector_indexes(client, dim);
        client.execute("SELECT pg_advisory_unlock($1)", &[&INDEX_LOCK])?;
        built?;
        let mut known = known.lock().unwrap_or_else(|e| e.into_inner());
        if !known.contains(&dim) {
            known.push(dim);
        }
    }
    Ok(())
}

/// Takes [`INDEX_LOCK`] by trying, not by waiting: `CREATE INDEX CONCURRENTLY` waits for every
/// transaction that holds a snapshot, and a `pg_advisory_lock` waiting for the builder's lock
/// is such a statement, so a waiting writer and the builder would wait for each other (a
/// deadlock PostgreSQL ends by failing the writer). Each try ends at once.
fn take_index_lock(client: &mut Client) -> Result<()> {
    loop {
        let taken: bool = client.query_one("SELECT pg_try_advisory_lock($1)", &[&INDEX_LOCK])?.try_get(0)?;
        if taken {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Builds one dimension's indexes (on items and on chunks), outside any transaction as
/// `CREATE INDEX CONCURRENTLY` requires. A build that failed half-way leaves an invalid index
/// that `IF NOT EXISTS` would keep forever: it is dropped and built again.
fn build_vector_indexes(client: &mut Client, dim: usize) -> Result<()> {
    for (name, sql) in vector_index_statements(dim) {
        let valid: Option<bool> = client
            .query_opt("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)", &[&name])?
            .map(|r| r.try_get(0))
            .transpose()?;
        if valid == Some(false) {
            client.batch_execute(&format!("DROP INDEX CONCURRENTLY IF EXISTS {name}"))?;
        }
        client.batch_execute(&sql)?;
    }
    Ok(())
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
