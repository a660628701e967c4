//! The service's configuration, resolved once from flags and environment and passed down.

use crate::scope_inference::{self, InferredScope};
use crate::semantic::EmbedderChoice;
use cortex_domain::near_duplicate::NearDuplicatePolicy;
use cortex_store::{DbTarget, PoolConfig};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct Config {
    /// The SQLite file or the PostgreSQL server.
    pub db: DbTarget,
    pub scope: InferredScope,
    pub embedder: EmbedderChoice,
    pub near_duplicates: NearDuplicatePolicy,
}

impl Config {
    /// A config given outright, with the default near-duplicate policy.
    pub fn new(db: DbTarget, scope: InferredScope, embedder: EmbedderChoice) -> Config {
        Config { db, scope, embedder, near_duplicates: NearDuplicatePolicy::default() }
    }

    /// `db` from `--db` (the CLI also reads `CORTEX_DB` into it): a SQLite file path or a
    /// `postgres://` URL; else the SQLite file in the user's data dir. For PostgreSQL,
    /// [`postgres_from_env`] adds the read replica and pool size. Scope from the environment
    /// and the git checkout around `workdir`.
    pub fn resolve(db: Option<String>, workdir: &Path) -> Config {
        let db = match db.as_deref().map(str::trim).filter(|d| !d.is_empty()) {
            Some(text) => postgres_from_env(DbTarget::parse(text)),
            None => DbTarget::Sqlite(default_db_path()),
        };
        let scope = scope_inference::infer(workdir, |k| std::env::var(k).ok());
        Config { db, scope, embedder: embedder_from_env(), near_duplicates: near_duplicates_from_env() }
    }
}

/// For a PostgreSQL target: `CORTEX_DB_READ_URL` (finds go to this replica; writes and
/// reads-after-write stay on the primary) and `CORTEX_DB_POOL_SIZE` (connections per pool,
/// default 8). Other targets are returned as they are.
pub fn postgres_from_env(target: DbTarget) -> DbTarget {
    postgres_from_vars(target, |key| std::env::var(key).ok())
}

fn postgres_from_vars(target: DbTarget, var: impl Fn(&str) -> Option<String>) -> DbTarget {
    let DbTarget::Postgres { url, .. } = target else { return target };
    let read = |key: &str| var(key).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
    let mut pool = PoolConfig::default();
    if let Some(v) = read("CORTEX_DB_POOL_SIZE") {
        match v.parse::<u32>() {
            Ok(n) if (1..=1000).contains(&n) => pool.size = n,
            _ => {
                tracing::warn!("CORTEX_DB_POOL_SIZE={v} is not a number from 1 to 1000; using {}", pool.size)
            }
        }
    }
    DbTarget::Postgres { url, read_url: read("CORTEX_DB_READ_URL"), pool }
}

/// `<data dir>/cortex/memory.db`: `~/.local/share/cortex/memory.db` on Linux,
/// `~/Library/Application Support/cortex/memory.db` on macOS.
pub fn default_db_path() -> PathBuf {
    dirs::data_dir().unwrap_or_else(|| PathBuf::from(".")).join("cortex").join("memory.db")
}

/// `CORTEX_EMBEDDER`: `local` (default) or `none`; the model folder from `CORTEX_MODEL_DIR`,
/// else the user's cache dir.
pub fn embedder_from_env() -> EmbedderChoice {
    match std::env::var("CORTEX_EMBEDDER").ok().as_deref().map(str::trim) {
        Some("none") => EmbedderChoice::None,
        _ => EmbedderChoice::Local {
            model_dir: cortex_embed::locate_model(std::env::var_os("CORTEX_MODEL_DIR").map(PathBuf::from))
                .dir,
        },
    }
}

/// `CORTEX_NEAR_DUP_THRESHOLD` (cosine, default 0.85) and `CORTEX_NEAR_DUP_WINDOW_DAYS`
/// (default 30); unparsable values fall back to the defaults with a warning.
pub fn near_duplicates_from_env() -> NearDuplicatePolicy {
    let mut policy = NearDuplicatePolicy::default();
    let read = |key: &str| std::env::var(key).ok().map(|v| v.trim().to_string());
    if let Some(v) = read("CORTEX_NEAR_DUP_THRESHOLD") {
        match v.parse::<f64>() {
            Ok(t) if (0.0..=1.0).contains(&t) => policy.threshold = t,
            _ => tracing::warn!(
                "CORTEX_NEAR_DUP_THRESHOLD={v} is not a number from 0 to 1; using {}",
                policy.threshold
            ),
        }
    }
    if let Some(v) = read("CORTEX_NEAR_DUP_WINDOW_DAYS") {
        match v.parse::<i64>() {
            Ok(d) if d >= 0 => policy.window_days = d,
            _ => tracing::warn!(
                "CORTEX_NEAR_DUP_WINDOW_DAYS={v} is not a whole number of days; using {}",
                policy.window_days
            ),
        }
    }
    policy
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_reads_its_replica_and_pool_size_from_the_environment() {
        let vars = |key: &str| match key {
            "CORTEX_DB_READ_URL" => Some("postgres://replica/db".to_string()),
            "CORTEX_DB_POOL_SIZE" => Some(" 16 ".to_string()),
            _ => None,
        };
        let target = postgres_from_vars(DbTarget::parse("postgres://primary/db"), vars);
        assert_eq!(
            target,
            DbTarget::Postgres {
                url: "postgres://primary/db".into(),
                read_url: Some("postgres://replica/db".into()),
                pool: PoolConfig { size: 16 },
            }
        );
        let bad = postgres_from_vars(DbTarget::parse("postgres://p/db"), |_| Some("lots".to_string()));
        assert!(matches!(bad, DbTarget::Postgres { pool: PoolConfig { size: 8 }, .. }));
        let file = postgres_from_vars(DbTarget::parse("m.db"), vars);
        assert_eq!(file, DbTarget::Sqlite("m.db".into()));
    }
}
