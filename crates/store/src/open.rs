//! Choosing a backend from what the user wrote: a `postgres://` URL or a SQLite file path.

use crate::{PostgresStore, Result, SqliteStore, Store};
use std::path::PathBuf;
use std::sync::Arc;

/// Which database a store is, for what differs between them beyond the contract (the name of
/// its own text search, for `doctor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
}

impl Engine {
    /// The database's own lexical search, which answers finds when there is no index.
    pub fn text_search(self) -> &'static str {
        match self {
            Engine::Sqlite => "SQLite FTS5 BM25",
            Engine::Postgres => "PostgreSQL tsvector, ts_rank",
        }
    }
}

/// Where the memory lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbTarget {
    /// The embedded default: one SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL ≥ 18 server; finds may go to a read replica.
    Postgres { url: String, read_url: Option<String>, pool: PoolConfig },
}

/// Connections per pool unless `CORTEX_DB_POOL_SIZE` says otherwise.
pub const DEFAULT_POOL_SIZE: u32 = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolConfig {
    /// Connections kept per pool (writes, and reads when there is no replica).
    pub size: u32,
}

impl Default for PoolConfig {
    fn default() -> PoolConfig {
        PoolConfig { size: DEFAULT_POOL_SIZE }
    }
}

impl DbTarget {
    /// `postgres://…` or `postgresql://…` is a server; anything else is a file path
    /// (`sqlite:` prefix optional).
    pub fn parse(text: &str) -> DbTarget {
        let text = text.trim();
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            DbTarget::Postgres { url: text.to_string(), read_url: None, pool: PoolConfig::default() }
        } else {
            DbTarget::Sqlite(PathBuf::from(text.strip_prefix("sqlite:").unwrap_or(text)))
        }
    }
}

impl DbTarget {
    /// The schema version this build migrates this backend to.
    pub fn latest_schema_version(&self) -> i64 {
        let migrations = match self {
            DbTarget::Sqlite(_) => crate::sqlite::MIGRATIONS,
            DbTarget::Postgres { .. } => crate::postgres::MIGRATIONS,
        };
        migrations.last().map_or(0, |m| m.0)
    }
}

/// Creates the database (or brings it) to schema `version` and no further, without opening a
/// store on it: what an older build left, for tests of what the next migrations do with it.
#[doc(hidden)]
pub fn migrate_to(target: &DbTarget, version: i64) -> Result<()> {
    match target {
        DbTarget::Sqlite(path) => {
            let mut conn = crate::sqlite::connect::writer(path)?;
            crate::sqlite::migrate::run_to(&mut conn, version)
        }
        DbTarget::Postgres { url, .. } => crate::postgres::migrate_to(url, version),
    }
}

/// Opens the store, creating and migrating it as needed.
pub fn open(target: &DbTarget) -> Result<Arc<dyn Store>> {
    Ok(match target {
        DbTarget::Sqlite(path) => Arc::new(SqliteStore::open(path)?),
        DbTarget::Postgres { url, read_url, pool } => {
            Arc::new(PostgresStore::open(url, read_url.as_deref(), *pool)?)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_servers_and_everything_else_is_a_file() {
        assert!(matches!(DbTarget::parse("postgres://u@h/db"), DbTarget::Postgres { .. }));
        assert!(matches!(DbTarget::parse("postgresql://h/db"), DbTarget::Postgres { .. }));
        assert_eq!(DbTarget::parse("sqlite:m.db"), DbTarget::Sqlite("m.db".into()));
        assert_eq!(DbTarget::parse("./data/m.db"), DbTarget::Sqlite("./data/m.db".into()));
    }
}
