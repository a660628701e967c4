//! The service's configuration, resolved once from flags and environment and passed down.

use crate::scope_inference::{self, InferredScope};
use crate::semantic::EmbedderChoice;
use cortex_domain::limits::FIND_DEADLINE_MS;
use cortex_domain::near_duplicate::NearDuplicatePolicy;
use cortex_embed::OpenAiConfig;
use cortex_store::{DbTarget, PoolConfig};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Config {
    /// The SQLite file or the PostgreSQL server.
    pub db: DbTarget,
    pub scope: InferredScope,
    pub embedder: EmbedderChoice,
    pub near_duplicates: NearDuplicatePolicy,
    /// How long a find may take before it answers with what it has
    /// ([`cortex_domain::limits::FIND_DEADLINE_MS`]; tests and benchmarks shorten it).
    pub find_deadline: Duration,
}

impl Config {
    /// A config given outright, with the default near-duplicate policy.
    pub fn new(db: DbTarget, scope: InferredScope, embedder: EmbedderChoice) -> Config {
        Config {
            db,
            scope,
            embedder,
            near_duplicates: NearDuplicatePolicy::default(),
            find_deadline: Duration::from_millis(FIND_DEADLINE_MS),
        }
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
        Config {
            db,
            scope,
            embedder: embedder_from_env(),
            near_duplicates: near_duplicates_from_env(),
            find_deadline: find_deadline_from_env(),
        }
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

/// `CORTEX_EMBEDDER`: `local` (default: the model folder from `CORTEX_MODEL_DIR`, else the
/// user's cache dir), `openai` (`CORTEX_OPENAI_BASE_URL`, default `https://api.openai.com/v1`;
/// `CORTEX_OPENAI_MODEL`, default `text-embedding-3-small`; the key from the variable named by
/// `CORTEX_OPENAI_API_KEY_ENV`, default `OPENAI_API_KEY`, none when unset), or `none`.
pub fn embedder_from_env() -> EmbedderChoice {
    embedder_from_vars(|key| std::env::var(key).ok())
}

fn embedder_from_vars(var: impl Fn(&str) -> Option<String>) -> EmbedderChoice {
    let read = |key: &str| var(key).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
    match read("CORTEX_EMBEDDER").map(|e| e.to_ascii_lowercase()).as_deref() {
        Some("none") => EmbedderChoice::None,
        Some("openai") => EmbedderChoice::OpenAi(OpenAiConfig {
            base_url: read("CORTEX_OPENAI_BASE_URL").unwrap_or_else(|| "https://api.openai.com/v1".into()),
            model: read("CORTEX_OPENAI_MODEL").unwrap_or_else(|| "text-embedding-3-small".into()),
            api_key: read(&read("CORTEX_OPENAI_API_KEY_ENV").unwrap_or_else(|| "OPENAI_API_KEY".into())),
        }),
        other => {
            if let Some(other) = other.filter(|o| *o != "local") {
                tracing::warn!("CORTEX_EMBEDDER={other} is not local, openai or none; using local");
            }
            EmbedderChoice::Local {
                model_dir: cortex_embed::locate_model(read("CORTEX_MODEL_DIR").map(PathBuf::from)).dir,
            }
        }
    }
}

/// `CORTEX_NEAR_DUP_THRESHOLD` (cosine, default 0.85) and `CORTEX_NEAR_DUP_WINDOW_DAYS`
/// (default 30); unparsable values fall back to the defaults with a warning.
/// `CORTEX_FIND_DEADLINE_MS`, for tests and benchmarks that need a find to run out of time;
/// the default is [`FIND_DEADLINE_MS`].
pub fn find_deadline_from_env() -> Duration {
    let default = Duration::from_millis(FIND_DEADLINE_MS);
    let Ok(v) = std::env::var("CORTEX_FIND_DEADLINE_MS") else { return default };
    match v.trim().parse::<u64>() {
        Ok(ms) => Duration::from_millis(ms),
        Err(_) => {
            tracing::warn!(
                "CORTEX_FIND_DEADLINE_MS={v} is not a whole number of milliseconds; using {FIND_DEADLINE_MS}"
            );
            default
        }
    }
}

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

    #[test]
    fn the_embedder_comes_from_the_environment() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |key: &str| pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| v.to_string())
        };
        assert!(matches!(embedder_from_vars(vars(&[("CORTEX_EMBEDDER", "none")])), EmbedderChoice::None));
        assert!(matches!(embedder_from_vars(vars(&[])), EmbedderChoice::Local { .. }));
        let remote = embedder_from_vars(vars(&[
            ("CORTEX_EMBEDDER", "OpenAI"),
            ("CORTEX_OPENAI_BASE_URL", "http://localhost:11434/v1"),
            ("CORTEX_OPENAI_MODEL", "nomic-embed-text"),
            ("CORTEX_OPENAI_API_KEY_ENV", "MY_KEY"),
            ("MY_KEY", "sk-test"),
        ]));
        let EmbedderChoice::OpenAi(config) = remote else { panic!("openai expected") };
        assert_eq!(
            config,
            OpenAiConfig {
                base_url: "http://localhost:11434/v1".into(),
                model: "nomic-embed-text".into(),
                api_key: Some("sk-test".into()),
            }
        );
    }
}
