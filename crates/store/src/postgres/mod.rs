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
mod clock;
mod conn;
mod expected;
mod git;
mod graph;
mod keys;
mod limits;
mod migrate;
mod neighbours;
mod params;
mod pool;
mod preflight;
mod purge;
mod read;
mod row;
mod tls;
mod tsquery;
mod ui_sessions;
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
use conn::{Conn, Sql};
use cortex_domain::graph::Cascade;
use pool::{Pool, Pooled};
use uuid::Uuid;

pub use migrate::MIGRATIONS;

/// The database's clock in epoch ms: the one time every client of a shared server agrees on.
pub(crate) const NOW_MS: &str = "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint";

/// The transaction lock the audit chain's trigger takes (migration 0008 repeats the value):
/// a writing transaction takes it first, so writers never wait on each other in a cycle.
pub(crate) const AUDIT_LOCK: i64 = 0x636f_7274_6175;

pub struct PostgresStore {
    label: String,
    primary: Pool,
    /// The same pool as `primary` unless a read replica was given.
    reads: Pool,
    /// Whether `reads` is a replica's pool (not the primary's again).
    replica: bool,
    /// Vector dimensions known to have their HNSW index.
    indexed_dimensions: std::sync::Mutex<Vec<usize>>,
    clock: clock::Clock,
    /// The keys' limits every server over this database shares (on the primary).
    limits: std::sync::Arc<limits::PgLimits>,
    /// The web UI's sessions every server over this database shares (on the primary).
    sessions: std::sync::Arc<ui_sessions::PgSessions>,
}

/// Brings the database at `url` to schema `version` and no further (see `crate::migrate_to`).
pub(crate) fn migrate_to(url: &str, version: i64) -> Result<()> {
    let label = redacted(url);
    let client = postgres::Client::connect(url, postgres::NoTls)
        .map_err(|e| StoreError::Open { path: label.clone(), reason: e.to_string() })?;
    let mut conn = Conn::new(client);
    preflight::check(&mut conn, &label)?;
    migrate::run_to(&mut conn, version)
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
        let client = config.connect(tls.clone()).map_err(|e| {
            let reason = connect_reason(&e);
            match unreachable(&e) {
                true => StoreError::Unreachable { path: label.clone(), reason },
                false => StoreError::Open { path: label.clone(), reason },
            }
        })?;
        let mut conn = Conn::new(client);
        // A server (or a pooler's) that lets the connection in but is not ready yet fails the
        // first statements the same way.
        let ready = preflight::check(&mut conn, &label).and_then(|()| migrate::run(&mut conn));
        if let Err(StoreError::Postgres(e)) = &ready
            && unreachable(e)
        {
            return Err(StoreError::Unreachable { path: label, reason: connect_reason(e) });
        }
        ready?;
        drop(conn);
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
            limits: std::sync::Arc::new(limits::PgLimits::new(primary.clone())),
            sessions: std::sync::Arc::new(ui_sessions::PgSessions::new(primary.clone())),
            primary,
            reads,
            replica: read_url.is_some(),
            indexed_dimensions: Default::default(),
            clock: Default::default(),
        })
    }

    /// A connection of the primary for a write, asked whether it is alive even if it answered
    /// lately: a write that fails part way through is not simply run again.
    fn primary(&self) -> Result<Pooled> {
        let mut last = None;
        for _ in 0..=self.primary.max_size() {
            let mut conn = self.primary.get()?;
            match conn.ping() {
                Ok(()) => return Ok(conn),
                // Dropped, the broken connection leaves the pool.
                Err(e) => last = Some(e),
            }
        }
        Err(last.map_or_else(|| StoreError::Corrupt("no connection".into()), StoreError::from))
    }

    /// Runs a read on a connection of `pool`, again on another one while the connection it
    /// ran on turns out closed (the server restarted, or ended its backend, since it last
    /// answered): a read can be repeated, and the pool's other idle connections may be as dead.
    fn read<T>(&self, pool: &Pool, read: impl Fn(&mut Conn) -> Result<T>) -> Result<T> {
        let mut attempts = pool.max_size() + 1;
        loop {
            let mut conn = pool.get()?;
            match read(&mut conn) {
                Err(e) if conn.is_lost() && attempts > 1 => {
                    tracing::debug!("a pooled connection was closed; reading on another: {e}");
                    attempts -= 1;
                }
                other => return other,
            }
        }
    }

    /// A read on the primary (see [`Self::read`]).
    fn on_primary<T>(&self, read: impl Fn(&mut Conn) -> Result<T>) -> Result<T> {
        self.read(&self.primary, read)
    }

    /// A read on the read pool (a replica when there is one; see [`Self::read`]).
    fn on_reads<T>(&self, read: impl Fn(&mut Conn) -> Result<T>) -> Result<T> {
        self.read(&self.reads, read)
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
             TRUNCATE items, item_chunks, item_provenance, git_paths, git_heads, git_merges; DELETE FROM store_meta;
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
    pool::build(config, tls, size)
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

/// Whether connecting failed for a reason that may pass: nothing answered at the address (a
/// refused or timed-out connection, a name not resolved yet: no answer from a database at
/// all), or the server answered that it cannot take connections now (starting up, shutting
/// down, recovering; a pooler that cannot reach it).
fn unreachable(e: &postgres::Error) -> bool {
    use postgres::error::SqlState;
    match e.as_db_error() {
        None => {
            let io = std::error::Error::source(e).and_then(|s| s.downcast_ref::<std::io::Error>());
            // Any failure to reach the address: refused, timed out, reset, or a name that does
            // not resolve yet (a container's peer not started; the resolver's errors have no
            // kind of their own). Not a TLS handshake that failed (invalid data) or a URL the
            // driver cannot use.
            io.is_some_and(|io| {
                use std::io::ErrorKind::*;
                !matches!(io.kind(), InvalidData | InvalidInput | PermissionDenied | Unsupported)
            })
        }
        Some(db) => {
            let code = db.code();
            *code == SqlState::CANNOT_CONNECT_NOW
                || *code == SqlState::ADMIN_SHUTDOWN
                || *code == SqlState::CRASH_SHUTDOWN
                || code.code().starts_with("08")
        }
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
        self.clock.now(|| self.on_primary(|c| Ok(c.query_one(NOW_MS, &[])?.try_get(0)?)))
    }
}

impl ItemReads for PostgresStore {
    fn get(&self, ids: &[Uuid]) -> Result<Vec<StoredItem>> {
        // The primary: a caller reading what it just wrote must see it.
        self.on_primary(|c| read::get(c, ids))
    }

    fn recent(&self, filters: &Filters, limit: usize) -> Result<Vec<StoredItem>> {
        self.on_reads(|c| read::recent(c, filters, limit))
    }

    fn natural_key_owner(&self, scope: &cortex_domain::Scope, key: &str) -> Result<Option<Uuid>> {
        // The primary: the answer decides a write.
        self.on_primary(|c| read::natural_key_owner(c, scope, key))
    }

    fn idempotency_owner(&self, scope: &cortex_domain::Scope, key: &str) -> Result<Option<Uuid>> {
        // The primary: the answer decides a write.
        self.on_primary(|c| read::idempotency_owner(c, scope, key))
    }

    fn session_neighbours(&self, ids: &[Uuid], filters: &Filters, window: usize) -> Result<Vec<Neighbour>> {
        self.on_reads(|c| neighbours::session_neighbours(c, ids, filters, window))
    }

    fn audit(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>> {
        self.on_reads(|c| chain::audit(c, query))
    }

    /// On the primary: the service keeps the places until the change counter (read on the
    /// primary) moves, and a replica behind it would have them kept without the newest change.
    fn places(&self) -> Result<Vec<crate::Place>> {
        self.on_primary(read::places)
    }
}

impl LexicalSearch for PostgresStore {
    fn search_lexical(&self, query: &LexicalQuery) -> Result<Vec<LexicalMatch>> {
        self.on_reads(|c| read::search(c, query))
    }

    fn count_lexical(&self, query: &LexicalQuery, cap: usize) -> Result<usize> {
        self.on_reads(|c| read::count(c, query, cap))
    }
}

impl ChangeFeed for PostgresStore {
    fn vector_rows(&self, ids: Option<&[Uuid]>) -> Result<Vec<VectorRow>> {
        self.on_primary(|c| read::vector_rows(c, ids))
    }

    // The primary, not a replica: a replica's snapshot does not say which transactions of the
    // primary are still running.
    fn change_head(&self) -> Result<ChangeCursor> {
        self.on_primary(changes::head)
    }

    fn changes_since(&self, cursor: ChangeCursor, limit: usize) -> Result<Changes> {
        self.on_primary(|c| changes::since(c, cursor, limit))
    }

    fn change_counter(&self) -> Result<i64> {
        self.on_primary(changes::counter)
    }
}

impl DenseSearch for PostgresStore {
    fn vectors_of(&self, ids: &[Uuid]) -> Result<Vec<ItemVectors>> {
        self.on_reads(|c| read::vectors_of(c, ids))
    }

    fn search_dense(&self, vector: &[f32], filters: &Filters, k: usize) -> Result<Option<Vec<DenseMatch>>> {
        self.on_reads(|c| read::search_dense(c, vector, filters, k).map(Some))
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
        self.on_primary(|c| unembedded::page(c, after, limit))
    }

    fn count_unembedded(&self) -> Result<i64> {
        self.on_primary(unembedded::count)
    }

    fn searched_vectors(&self) -> Result<Option<(i64, i64)>> {
        self.on_reads(vector_index::searched).map(Some)
    }
}

impl GraphLinks for PostgresStore {
    fn links(&self, ids: &[Uuid]) -> Result<Vec<Link>> {
        self.on_reads(|c| graph::links(c, ids))
    }

    fn incoming_links(&self, ids: &[Uuid], relations: &Filters) -> Result<Vec<(Uuid, i64)>> {
        self.on_reads(|c| graph::incoming_links(c, ids, relations))
    }
}

impl AuditChain for PostgresStore {
    fn audit_chain(&self, after: i64, limit: usize) -> Result<Vec<ChainRecord>> {
        self.on_primary(|c| chain::chain_page(c, after, limit))
    }

    fn audit_record(&self, seq: i64) -> Result<Option<ChainRecord>> {
        self.on_primary(|c| chain::chain_record_at(c, seq))
    }

    fn audit_record_before_last(&self, n: usize) -> Result<Option<ChainRecord>> {
        self.on_primary(|c| chain::record_before_last(c, n))
    }

    fn audit_trail_mismatches(&self, limit: usize) -> Result<Vec<TrailMismatch>> {
        self.on_primary(|c| chain::trail_mismatches(c, limit))
    }

    fn schema_drift(&self) -> Result<Vec<SchemaDrift>> {
        self.on_primary(migrate::audit_schema_drift)
    }
}

impl Maintenance for PostgresStore {
    fn purge_expired(
        &self,
        now: i64,
        limit: usize,
        dry_run: bool,
        cascade: Cascade,
        context: &WriteContext,
    ) -> Result<Vec<(String, i64)>> {
        if dry_run {
            return self.on_primary(|c| read::expired_by_kind(c, now));
        }
        purge::purge_expired(&mut *self.primary()?, now, limit, cascade, context)
    }

    fn stats(&self) -> Result<Stats> {
        self.on_primary(read::stats)
    }

    fn export_page(&self, after: Option<Uuid>, limit: usize) -> Result<Vec<ExportedItem>> {
        self.on_primary(|c| read::export_page(c, after, limit))
    }

    fn label(&self) -> String {
        self.label.clone()
    }

    fn engine(&self) -> crate::Engine {
        crate::Engine::Postgres
    }

    fn ready(&self) -> Result<crate::Readiness> {
        Ok(crate::Readiness { schema_version: self.on_primary(migrate::current_version)? })
    }

    fn integrity_problems(&self, _full: bool) -> Result<Vec<String>> {
        self.on_primary(chain::integrity_problems)
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
        self.on_primary(|c| {
            let row = c.query_opt("SELECT value FROM store_meta WHERE key = $1", &[&key])?;
            Ok(row.map(|r| r.try_get(0)).transpose()?)
        })
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
impl crate::GitReads for PostgresStore {
    fn provenance_of(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, cortex_domain::provenance::Provenance)>> {
        self.on_primary(|c| git::provenance_of(c, ids))
    }

    fn path_changes(
        &self,
        at: &cortex_domain::provenance::RepoBranch,
        paths: &[String],
    ) -> Result<Vec<cortex_domain::provenance::PathChange>> {
        self.on_reads(|c| git::path_changes(c, at, paths))
    }

    fn path_head(
        &self,
        at: &cortex_domain::provenance::RepoBranch,
    ) -> Result<Option<cortex_domain::provenance::PathHead>> {
        self.on_primary(|c| git::path_head(c, at))
    }

    fn merges(&self, org: &str, project: &str) -> Result<Vec<cortex_domain::provenance::BranchMerge>> {
        self.on_primary(|c| git::merges(c, org, project))
    }
}

impl crate::GitHistory for PostgresStore {
    fn write_paths(
        &self,
        at: &cortex_domain::provenance::RepoBranch,
        head: &cortex_domain::provenance::PathHead,
        rows: &[cortex_domain::provenance::PathChange],
        whole: bool,
    ) -> Result<()> {
        git::write_paths(&mut *self.primary()?, at, head, rows, whole)
    }

    fn record_merge(
        &self,
        merge: &cortex_domain::provenance::BranchMerge,
        context: &WriteContext,
    ) -> Result<Option<i64>> {
        git::record_merge(&mut *self.primary()?, merge, context)
    }

    fn undo_merges(
        &self,
        place: &cortex_domain::provenance::RepoBranch,
        from: &str,
        at: i64,
        context: &WriteContext,
    ) -> Result<u64> {
        git::undo_merges(&mut *self.primary()?, place, from, at, context)
    }

    fn provenance_page(
        &self,
        after: Option<Uuid>,
        limit: usize,
    ) -> Result<Vec<(Uuid, cortex_domain::provenance::Provenance)>> {
        self.on_primary(|c| git::provenance_page(c, after, limit))
    }

    fn git_tables(&self) -> Result<crate::GitTables> {
        self.on_primary(git::git_tables)
    }

    fn import_git_tables(&self, tables: &crate::GitTables, context: &WriteContext) -> Result<()> {
        git::import_git_tables(&mut *self.primary()?, tables, context)
    }
}

impl ApiKeys for PostgresStore {
    fn create_key(&self, key: &ApiKeyRow, context: &WriteContext) -> Result<bool> {
        keys::create(&mut *self.primary()?, key, context)
    }

    fn keys(&self) -> Result<Vec<ApiKeyRow>> {
        self.on_primary(keys::all)
    }

    fn key_by_lookup(&self, lookup: &str) -> Result<Option<ApiKeyRow>> {
        self.on_primary(|c| keys::by_lookup(c, lookup))
    }

    fn revoke_key(&self, org: &str, name: &str, at: i64, context: &WriteContext) -> Result<bool> {
        keys::revoke(&mut *self.primary()?, org, name, at, context)
    }

    fn restore_key(&self, org: &str, name: &str, context: &WriteContext) -> Result<crate::KeyRestore> {
        keys::restore(&mut *self.primary()?, org, name, context)
    }

    fn any_key(&self) -> Result<bool> {
        self.on_primary(keys::any)
    }

    fn record_sign_in(&self, org: &str, summary: &str, context: &WriteContext) -> Result<()> {
        keys::record_sign_in(&mut *self.primary()?, org, summary, context)
    }

    fn shared_limits(&self) -> Option<std::sync::Arc<dyn crate::SharedLimits>> {
        Some(self.limits.clone())
    }

    fn shared_sessions(&self) -> Option<std::sync::Arc<dyn crate::SharedSessions>> {
        Some(self.sessions.clone())
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
