//! PostgreSQL ≥ 18 backend: the shared, many-machine system of record.
//!
//! - Lexical: a stored generated `tsvector` (English stemming; title weighted over body) with a
//!   GIN index, queried through parameters only (`tsquery.rs`), ranked by `ts_rank`.
//! - Dense: pgvector HNSW (cosine), one partial index per vector dimension (`vector_index.rs`),
//!   with iterative scans so a filtered `LIMIT` still returns `k` rows.
//! - Concurrency: many processes share the database. Inserts that could duplicate each other
//!   take transaction advisory locks in a fixed order, idempotency keys are decided by a unique
//!   index, and a batch that loses a deadlock is retried whole.
//!
//! Writes use the primary pool; finds use the read pool (a replica when `read_url` is given).

mod chain;
mod changes;
mod expected;
mod graph;
mod keys;
mod migrate;
mod neighbours;
mod params;
mod preflight;
mod purge;
mod read;
mod row;
mod tls;
mod tsquery;
mod unembedded;
mod vector_index;
mod write;

use crate::audit_chain::{ChainRecord, SchemaDrift, TrailMismatch};
use crate::{
    ApiKeyRow, ApiKeys, AuditChain, AuditQuery, AuditRecord, ChangeCursor, ChangeFeed, Changes, DenseMatch,
    DenseSearch, ExportedItem, Filters, GraphLinks, ItemReads, ItemVectors, ItemWrites, LexicalMatch,
    LexicalQuery, LexicalSearch, Link, Maintenance, Metadata, Neighbour, PoolConfig, Reembedding, Result,
    Stats, StoreError, StoredItem, VectorRow, WriteContext, WriteOp, WriteOutcome,
};
use cortex_domain::graph::Cascade;
use r2d2_postgres::PostgresConnectionManager;
use std::time::Duration;
use uuid::Uuid;

pub use migrate::MIGRATIONS;

type Pool = r2d2::Pool<PostgresConnectionManager<tls::Tls>>;

/// The database's clock in epoch ms: the one time every client of a shared server agrees on.
pub(crate) const NOW_MS: &str = "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint";

/// The transaction lock the audit chain's trigger takes (migration 0008 repeats the value):
/// a writing transaction takes it first, so writers never wait on each other in a cycle.
pub(crate) const AUDIT_LOCK: i64 = 0x636f_7274_6175;

/// How long a caller waits for a free pooled connection.
const CHECKOUT_TIMEOUT: Duration = Duration::from_secs(10);

pub struct PostgresStore {
    label: String,
    primary: Pool,
    /// The same pool as `primary` unless a read replica was given.
    reads: Pool,
    /// Whether `reads` is a replica's pool (not the primary's again).
    replica: bool,
    /// Vector dimensions known to have their HNSW index.
    indexed_dimensions: std::sync::Mutex<Vec<usize>>,
}

impl PostgresStore {
    /// Connects, checks the server (version, extensions), migrates, and opens the pools.
    pub fn open(url: &str, read_url: Option<&str>, pool: PoolConfig) -> Result<PostgresStore> {
        let label = redacted(url);
        let (url, tls) = tls::configure(url, &label)?;
        let config: postgres::Config = url
            .parse()
            .map_err(|e| StoreError::Open { path: label.clone(), reason: format!("not a valid URL: {e}") })?;
        // One direct connection first: its error says precisely why (refused, auth, no such
        // database), where a pool would only report a timeout.
        let mut client = config
            .connect(tls.clone())
            .map_err(|e| StoreError::Open { path: label.clone(), reason: connect_reason(&e) })?;
        preflight::check(&mut client, &label)?;
        migrate::run(&mut client)?;
        drop(client);
        let primary = build_pool(config, tls, pool.size, &label)?;
        let reads = match read_url {
            Some(read_url) => {
                let read_label = redacted(read_url);
                let (read_url, read_tls) = tls::configure(read_url, &read_label)?;
                let read_config: postgres::Config = read_url.parse().map_err(|e| StoreError::Open {
                    path: read_label.clone(),
                    reason: format!("not a valid URL: {e}"),
                })?;
                build_pool(read_config, read_tls, pool.size, &read_label)?
            }
            None => primary.clone(),
        };
        Ok(PostgresStore {
            label,
            primary,
            reads,
            replica: read_url.is_some(),
            indexed_dimensions: Default::default(),
        })
    }

    fn primary(&self) -> Result<r2d2::PooledConnection<PostgresConnectionManager<tls::Tls>>> {
        Ok(self.primary.get()?)
    }

    fn reads(&self) -> Result<r2d2::PooledConnection<PostgresConnectionManager<tls::Tls>>> {
        Ok(self.reads.get()?)
    }

    /// Removes every item, vector and recorded embedding model: for a scratch
    /// database, which `cortex-bench bench --postgres` empties before each size. On this type only,
    /// not on the store's roles: no service path may empty a store.
    pub fn empty_scratch_database(&self) -> Result<()> {
        // A key left by an earlier run would make the next run's keyless server refuse every
        // request (a server with any key, revoked or not, asks every request for one). Keys
        // are never deleted by design; a scratch database lifts its guard for that moment.
        self.primary()?.batch_execute(
            "BEGIN;
             TRUNCATE items, item_chunks; DELETE FROM store_meta;
             ALTER TABLE api_keys DISABLE TRIGGER api_keys_no_truncate;
             TRUNCATE api_keys;
             ALTER TABLE api_keys ENABLE TRIGGER api_keys_no_truncate;
             COMMIT;",
        )?;
        Ok(())
    }

    /// `VACUUM ANALYZE` of the whole database: what an operator runs after a bulk import, so
    /// that a benchmark loading the database right after measures the server, not autovacuum
    /// catching up with the import.
    pub fn vacuum_analyze(&self) -> Result<()> {
        self.primary()?.batch_execute("VACUUM ANALYZE")?;
        Ok(())
    }
}

fn build_pool(config: postgres::Config, tls: tls::Tls, size: u32, label: &str) -> Result<Pool> {
    r2d2::Pool::builder()
        .max_size(size.max(1))
        .min_idle(Some(1))
        .connection_timeout(CHECKOUT_TIMEOUT)
        .build(PostgresConnectionManager::new(config, tls))
        .map_err(|e| StoreError::Open { path: label.to_string(), reason: e.to_string() })
}

/// The URL without its password, for logs and `stats`.
pub fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    match rest.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
            format!("{scheme}://{user}@{host}")
        }
        None => url.to_string(),
    }
}

fn connect_reason(e: &postgres::Error) -> String {
    let detail = e.as_db_error().map_or_else(|| e.to_string(), |db| db.message().to_string());
    if detail.contains("certificate") || detail.contains("TLS") || detail.contains("tls") {
        return format!(
            "{detail}. The TLS connection failed: with sslmode=verify-ca or verify-full, sslrootcert must name the CA that signed the server's certificate (and, for verify-full, the URL's host must be a name in that certificate); a server without TLS needs sslmode=disable or prefer"
        );
    }
    format!(
        "{detail}. Check that the server is running and reachable, and that the URL's user, password and database are right"
    )
}

impl ItemWrites for PostgresStore {
    fn write_batch_as(&self, ops: &[WriteOp], context: &WriteContext) -> Result<Vec<WriteOutcome>> {
        let mut conn = self.primary()?;
        vector_index::ensure_vector_indexes(&mut conn, ops, &self.indexed_dimensions)?;
        write::apply_batch(&mut conn, ops, context)
    }

    fn now(&self) -> Result<i64> {
        Ok(self.primary()?.query_one(NOW_MS, &[])?.try_get(0)?)
    }
}

impl ItemReads for PostgresStore {
    fn get(&self, ids: &[Uuid]) -> Result<Vec<StoredItem>> {
        // The primary: a caller reading what it just wrote must see it.
        read::get(&mut *self.primary()?, ids)
    }

    fn recent(&self, filters: &Filters, limit: usize) -> Result<Vec<StoredItem>> {
        read::recent(&mut *self.reads()?, filters, limit)
    }

    fn natural_key_owner(&self, scope: &cortex_domain::Scope, key: &str) -> Result<Option<Uuid>> {
        // The primary: the answer decides a write.
        read::natural_key_owner(&mut *self.primary()?, scope, key)
    }

    fn idempotency_owner(&self, scope: &cortex_domain::Scope, key: &str) -> Result<Option<Uuid>> {
        // The primary: the answer decides a write.
        read::idempotency_owner(&mut *self.primary()?, scope, key)
    }

    fn session_neighbours(&self, ids: &[Uuid], filters: &Filters, window: usize) -> Result<Vec<Neighbour>> {
        neighbours::session_neighbours(&mut *self.reads()?, ids, filters, window)
    }

    fn audit(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>> {
        chain::audit(&mut *self.reads()?, query)
    }
}

impl LexicalSearch for PostgresStore {
    fn search_lexical(&self, query: &LexicalQuery) -> Result<Vec<LexicalMatch>> {
        read::search(&mut *self.reads()?, query)
    }

    fn count_lexical(&self, query: &LexicalQuery, cap: usize) -> Result<usize> {
        read::count(&mut *self.reads()?, query, cap)
    }
}

impl ChangeFeed for PostgresStore {
    fn vector_rows(&self, ids: Option<&[Uuid]>) -> Result<Vec<VectorRow>> {
        read::vector_rows(&mut *self.primary()?, ids)
    }

    // The primary, not a replica: a replica's snapshot does not say which transactions of the
    // primary are still running.
    fn change_head(&self) -> Result<ChangeCursor> {
        changes::head(&mut *self.primary()?)
    }

    fn changes_since(&self, cursor: ChangeCursor, limit: usize) -> Result<Changes> {
        changes::since(&mut *self.primary()?, cursor, limit)
    }

    fn change_counter(&self) -> Result<i64> {
        changes::counter(&mut *self.primary()?)
    }
}

impl DenseSearch for PostgresStore {
    fn vectors_of(&self, ids: &[Uuid]) -> Result<Vec<ItemVectors>> {
        read::vectors_of(&mut *self.reads()?, ids)
    }

    fn search_dense(&self, vector: &[f32], filters: &Filters, k: usize) -> Result<Option<Vec<DenseMatch>>> {
        read::search_dense(&mut *self.reads()?, vector, filters, k).map(Some)
    }
}

impl Reembedding for PostgresStore {
    fn set_vectors(&self, vectors: &[ItemVectors]) -> Result<()> {
        let mut conn = self.primary()?;
        let dims = vectors.iter().map(|r| r.vector.len()).collect();
        vector_index::ensure_dimension_indexes(&mut conn, dims, &self.indexed_dimensions)?;
        write::set_vectors(&mut conn, vectors)
    }

    // The primary: what a replica has not yet received would be embedded twice.
    fn unembedded(&self, after: Option<Uuid>, limit: usize) -> Result<Vec<Uuid>> {
        unembedded::page(&mut *self.primary()?, after, limit)
    }

    fn count_unembedded(&self) -> Result<i64> {
        unembedded::count(&mut *self.primary()?)
    }
}

impl GraphLinks for PostgresStore {
    fn links(&self, ids: &[Uuid]) -> Result<Vec<Link>> {
        graph::links(&mut *self.reads()?, ids)
    }

    fn incoming_links(&self, ids: &[Uuid], relations: &Filters) -> Result<Vec<(Uuid, i64)>> {
        graph::incoming_links(&mut *self.reads()?, ids, relations)
    }
}

impl AuditChain for PostgresStore {
    fn audit_chain(&self, after: i64, limit: usize) -> Result<Vec<ChainRecord>> {
        chain::chain_page(&mut *self.primary()?, after, limit)
    }

    fn audit_record(&self, seq: i64) -> Result<Option<ChainRecord>> {
        chain::chain_record_at(&mut *self.primary()?, seq)
    }

    fn audit_record_before_last(&self, n: usize) -> Result<Option<ChainRecord>> {
        chain::record_before_last(&mut *self.primary()?, n)
    }

    fn audit_trail_mismatches(&self, limit: usize) -> Result<Vec<TrailMismatch>> {
        chain::trail_mismatches(&mut *self.primary()?, limit)
    }

    fn schema_drift(&self) -> Result<Vec<SchemaDrift>> {
        migrate::audit_schema_drift(&mut *self.primary()?)
    }
}

impl Maintenance for PostgresStore {
    fn purge_expired(
        &self,
        now: i64,
        limit: usize,
        dry_run: bool,
        cascade: Cascade,
    ) -> Result<Vec<(String, i64)>> {
        if dry_run {
            return read::expired_by_kind(&mut *self.primary()?, now);
        }
        purge::purge_expired(&mut *self.primary()?, now, limit, cascade)
    }

    fn stats(&self) -> Result<Stats> {
        read::stats(&mut *self.primary()?)
    }

    fn export_page(&self, after: Option<Uuid>, limit: usize) -> Result<Vec<ExportedItem>> {
        read::export_page(&mut *self.primary()?, after, limit)
    }

    fn label(&self) -> String {
        self.label.clone()
    }

    fn engine(&self) -> crate::Engine {
        crate::Engine::Postgres
    }

    fn ready(&self) -> Result<crate::Readiness> {
        Ok(crate::Readiness { schema_version: migrate::current_version(&mut *self.primary()?)? })
    }

    fn integrity_problems(&self, _full: bool) -> Result<Vec<String>> {
        chain::integrity_problems(&mut *self.primary()?)
    }

    fn pool_state(&self) -> Vec<crate::PoolState> {
        let state = |pool: &'static str, p: &Pool| {
            let s = p.state();
            crate::PoolState { pool, connections: s.connections, idle: s.idle_connections }
        };
        let mut out = vec![state("primary", &self.primary)];
        if self.replica {
            out.push(state("replica", &self.reads));
        }
        out
    }

    fn connections(&self) -> usize {
        self.primary.max_size() as usize
    }
}

impl Metadata for PostgresStore {
    fn meta(&self, key: &str) -> Result<Option<String>> {
        let row = self.primary()?.query_opt("SELECT value FROM store_meta WHERE key = $1", &[&key])?;
        Ok(row.map(|r| r.try_get(0)).transpose()?)
    }

    fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        self.primary()?.execute(
            "INSERT INTO store_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            &[&key, &value],
        )?;
        Ok(())
    }
}

// On the primary: a revoked key must stop working at once, not after a replica's delay.
impl ApiKeys for PostgresStore {
    fn create_key(&self, key: &ApiKeyRow) -> Result<bool> {
        keys::create(&mut *self.primary()?, key)
    }

    fn keys(&self) -> Result<Vec<ApiKeyRow>> {
        keys::all(&mut *self.primary()?)
    }

    fn key_by_lookup(&self, lookup: &str) -> Result<Option<ApiKeyRow>> {
        keys::by_lookup(&mut *self.primary()?, lookup)
    }

    fn revoke_key(&self, name: &str, at: i64) -> Result<bool> {
        keys::revoke(&mut *self.primary()?, name, at)
    }

    fn any_key(&self) -> Result<bool> {
        keys::any(&mut *self.primary()?)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn passwords_never_reach_labels() {
        assert_eq!(super::redacted("postgres://bob:s3cret@db:5432/m"), "postgres://bob@db:5432/m");
        assert_eq!(super::redacted("postgres://db/m"), "postgres://db/m");
    }
}
