//! The service's configuration, resolved once from flags and environment and passed down.
//!
//! Settings are validated like requests: a bad value is an error at start that names the
//! variable, shows the value (escaped) and says what is accepted. Nothing falls back to a
//! default with a warning nobody sees under `serve`.

use crate::scope_inference::{self, InferredScope};
use crate::semantic::EmbedderChoice;
use crate::settings;
use cortex_domain::limits::FIND_DEADLINE_MS;
use cortex_domain::near_duplicate::NearDuplicatePolicy;
use cortex_embed::OpenAiConfig;
use cortex_lexical::Place;
use cortex_store::{DbTarget, PoolConfig};
use sha2::Digest;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A setting that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}={value}: {problem}; {hint}")]
pub struct ConfigError {
    /// The variable or flag, e.g. `CORTEX_EMBEDDER`.
    pub name: &'static str,
    /// The value as given, escaped (control characters and ANSI escapes shown, not run) and cut.
    pub value: String,
    pub problem: String,
    /// What is accepted instead.
    pub hint: String,
}

impl ConfigError {
    pub fn new(
        name: &'static str,
        value: &str,
        problem: impl Into<String>,
        hint: impl Into<String>,
    ) -> ConfigError {
        let shown: String = value.chars().take(80).collect();
        let cut = if value.chars().count() > 80 { "…" } else { "" };
        ConfigError { name, value: format!("{:?}{cut}", shown), problem: problem.into(), hint: hint.into() }
    }
}

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
    /// Where the lexical index lives (`CORTEX_LEXICAL_INDEX`); `None`: lexical finds ask the
    /// database's own full-text search instead.
    pub lexical: Option<Place>,
    /// Where the in-process vector index is kept between processes: beside a SQLite file
    /// (`<file>.vectors`) whose lexical index is a folder; `None` for PostgreSQL (the database
    /// searches its own vectors) or an index kept in memory.
    pub vector_file: Option<PathBuf>,
    /// The prompt-submit hook's budgets and where it keeps its sessions and counts.
    pub recall: RecallConfig,
    /// What a store does with a credential in an item's text (`CORTEX_SECRETS`).
    pub secrets: settings::SecretsMode,
}

/// The prompt-submit hook's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecallConfig {
    /// Tokens one prompt may be given (`CORTEX_RECALL_BUDGET_TOKENS`).
    pub budget_tokens: usize,
    /// Tokens one session may be given until compacted (`CORTEX_RECALL_SESSION_BUDGET_TOKENS`).
    pub session_budget_tokens: usize,
    /// Where the sessions' ledgers and the per-project counts are kept (the user's cache
    /// folder, `cortex/recall`); `None`: nothing is kept (each prompt is on its own, and not
    /// counted), as for a config given outright.
    pub state: Option<PathBuf>,
}

impl RecallConfig {
    /// The defaults, keeping nothing.
    pub fn defaults() -> RecallConfig {
        RecallConfig {
            budget_tokens: cortex_domain::recall::DEFAULT_BUDGET_TOKENS,
            session_budget_tokens: cortex_domain::recall::DEFAULT_SESSION_BUDGET_TOKENS,
            state: None,
        }
    }

    /// From the environment, kept in the user's cache folder.
    fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<RecallConfig, ConfigError> {
        Ok(RecallConfig {
            budget_tokens: settings::RECALL_BUDGET_TOKENS.get(&var)? as usize,
            session_budget_tokens: settings::RECALL_SESSION_BUDGET_TOKENS.get(&var)? as usize,
            state: recall_state_dir(),
        })
    }
}

/// Where the prompt-submit hook keeps the sessions' ledgers and the per-project counts: the
/// user's cache folder, `cortex/recall`.
pub fn recall_state_dir() -> Option<PathBuf> {
    dirs::cache_dir().map(|d| d.join("cortex").join("recall"))
}

impl Config {
    /// A config given outright, with the default near-duplicate policy.
    pub fn new(db: DbTarget, scope: InferredScope, embedder: EmbedderChoice) -> Config {
        Config {
            scope,
            embedder,
            near_duplicates: NearDuplicatePolicy::default(),
            find_deadline: Duration::from_millis(FIND_DEADLINE_MS),
            lexical: Some(match &db {
                DbTarget::Sqlite(path) => Place::Dir(beside(path, ".lexical")),
                // Tests and benchmarks make many short-lived databases: no folder is left behind.
                DbTarget::Postgres { .. } => Place::Memory,
            }),
            vector_file: vector_file_for(&db, true),
            recall: RecallConfig::defaults(),
            secrets: settings::SecretsMode::Redact,
            db,
        }
    }

    /// `db` from `--db` (the CLI also reads `CORTEX_DB` into it): a SQLite file path or a
    /// `postgres://` URL; else the SQLite file in the user's data dir. For PostgreSQL,
    /// [`postgres_from_env`] adds the read replica and pool size. Scope from the environment
    /// and the git checkout around `workdir`.
    pub fn resolve(db: Option<String>, workdir: &Path) -> Result<Config, ConfigError> {
        let env = |key: &str| std::env::var(key).ok();
        let db = match db {
            Some(text) => postgres_from_vars(db_target(&text)?, env)?,
            None => DbTarget::Sqlite(default_db_path()),
        };
        let scope = scope_inference::infer(workdir, env)?;
        let lexical = lexical_from_vars(&db, env)?;
        Ok(Config {
            vector_file: vector_file_for(&db, matches!(lexical, Some(Place::Dir(_)))),
            recall: RecallConfig::from_vars(env)?,
            lexical,
            db,
            scope,
            embedder: embedder_from_env()?,
            near_duplicates: near_duplicates_from_env()?,
            find_deadline: find_deadline_from_env()?,
            secrets: settings::SECRETS.get(env)?,
        })
    }
}

impl Config {
    /// The SQLite file this config would create, when it names one that does not exist yet.
    pub fn new_sqlite_file(&self) -> Option<&Path> {
        match &self.db {
            DbTarget::Sqlite(path) if !path.exists() => Some(path),
            _ => None,
        }
    }

    /// This config on the SQLite file `path` instead, its lexical index in memory: a dry run's
    /// stand-in for a memory that does not exist yet, so that nothing is made where it would be.
    pub fn on_scratch_file(self, path: PathBuf) -> Config {
        Config { db: DbTarget::Sqlite(path), lexical: Some(Place::Memory), ..self }
    }
}

/// `CORTEX_LEXICAL_INDEX`: `off` (the database's own full-text search), `memory` (built at
/// each start), or a folder; unset, the folder beside a SQLite file (`<file>.lexical`), or one
/// per PostgreSQL database in the user's cache folder.
pub fn lexical_from_env(db: &DbTarget) -> Result<Option<Place>, ConfigError> {
    lexical_from_vars(db, |key| std::env::var(key).ok())
}

fn lexical_from_vars(
    db: &DbTarget,
    var: impl Fn(&str) -> Option<String>,
) -> Result<Option<Place>, ConfigError> {
    let Some(v) = settings::LEXICAL_INDEX.get(var)? else {
        return Ok(Some(match db {
            DbTarget::Sqlite(path) => Place::Dir(beside(path, ".lexical")),
            DbTarget::Postgres { url, .. } => {
                let digest = sha2::Sha256::digest(cortex_store::postgres::redacted(url).as_bytes());
                let name: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
                Place::Dir(
                    dirs::cache_dir()
                        .unwrap_or_else(|| PathBuf::from("."))
                        .join("cortex")
                        .join("lexical")
                        .join(name),
                )
            }
        }));
    };
    match v.trim() {
        "off" => Ok(None),
        "memory" => Ok(Some(Place::Memory)),
        dir => Ok(Some(Place::Dir(PathBuf::from(dir)))),
    }
}

/// A derived index's place beside a SQLite file: `memory.db` → `memory.db.lexical`.
fn beside(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.file_name().map(|n| n.to_os_string()).unwrap_or_else(|| "memory.db".into());
    name.push(suffix);
    db.with_file_name(name)
}

/// The vector index file of a SQLite file kept beside it when its lexical index is kept on
/// disk too (`lexical_on_disk`); none for PostgreSQL, which searches its own vectors.
pub fn vector_file_for(db: &DbTarget, lexical_on_disk: bool) -> Option<PathBuf> {
    match db {
        DbTarget::Sqlite(path) if lexical_on_disk => Some(beside(path, ".vectors")),
        _ => None,
    }
}

/// `--db` / `CORTEX_DB`: a SQLite file (a path, or `sqlite:<path>`) or a PostgreSQL URL.
/// Empty, or a URL of another database, is refused rather than read as a file name.
pub fn db_target(text: &str) -> Result<DbTarget, ConfigError> {
    const HINT: &str = "give a SQLite file path or a postgres:// URL, or leave --db and CORTEX_DB unset for the default file";
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(ConfigError::new("--db / CORTEX_DB", text, "is empty", HINT));
    }
    if trimmed.chars().any(char::is_control) {
        return Err(ConfigError::new("--db / CORTEX_DB", text, "contains a control character", HINT));
    }
    if let Some((scheme, _)) = trimmed.split_once("://")
        && !matches!(scheme.to_ascii_lowercase().as_str(), "postgres" | "postgresql")
    {
        return Err(ConfigError::new(
            "--db / CORTEX_DB",
            text,
            format!("names a `{scheme}` database, which Cortex does not support"),
            HINT,
        ));
    }
    Ok(DbTarget::parse(trimmed))
}

/// For a PostgreSQL target: `CORTEX_DB_READ_URL` (finds go to this replica; writes and
/// reads-after-write stay on the primary) and `CORTEX_DB_POOL_SIZE` (connections per pool).
/// Other targets are returned as they are.
pub fn postgres_from_env(target: DbTarget) -> Result<DbTarget, ConfigError> {
    postgres_from_vars(target, |key| std::env::var(key).ok())
}

fn postgres_from_vars(
    target: DbTarget,
    var: impl Fn(&str) -> Option<String>,
) -> Result<DbTarget, ConfigError> {
    let DbTarget::Postgres { url, .. } = target else { return Ok(target) };
    // The table bounds the size to what a u32 holds.
    let pool = PoolConfig { size: settings::DB_POOL_SIZE.get(&var)? as u32 };
    let read_url = settings::DB_READ_URL.get(&var)?;
    Ok(DbTarget::Postgres { url, read_url, pool })
}

/// `<data dir>/cortex/memory.db`: `~/.local/share/cortex/memory.db` on Linux,
/// `~/Library/Application Support/cortex/memory.db` on macOS.
pub fn default_db_path() -> PathBuf {
    dirs::data_dir().unwrap_or_else(|| PathBuf::from(".")).join("cortex").join("memory.db")
}

/// `CORTEX_EMBEDDER`: `local` (the model folder from `CORTEX_MODEL_DIR`, else the user's cache
/// dir), `openai` (`CORTEX_OPENAI_BASE_URL`, `CORTEX_OPENAI_MODEL`, the key from the variable
/// named by `CORTEX_OPENAI_API_KEY_ENV`, none when that is unset), or `none`.
pub fn embedder_from_env() -> Result<EmbedderChoice, ConfigError> {
    embedder_from_vars(|key| std::env::var(key).ok())
}

fn embedder_from_vars(var: impl Fn(&str) -> Option<String>) -> Result<EmbedderChoice, ConfigError> {
    Ok(match settings::EMBEDDER.get(&var)? {
        settings::EmbedderKind::None => EmbedderChoice::None,
        settings::EmbedderKind::OpenAi => {
            let key_variable = settings::OPENAI_API_KEY_ENV.get(&var)?;
            EmbedderChoice::OpenAi(OpenAiConfig {
                base_url: settings::OPENAI_BASE_URL.get(&var)?,
                model: settings::OPENAI_MODEL.get(&var)?,
                api_key: var(&key_variable).map(|v| v.trim().to_string()).filter(|v| !v.is_empty()),
            })
        }
        settings::EmbedderKind::Local => EmbedderChoice::Local {
            model_dir: cortex_embed::locate_model(settings::MODEL_DIR.get(&var)?).dir,
            precision: settings::EMBED_PRECISION.get(&var)?,
        },
    })
}

/// `CORTEX_FIND_DEADLINE_MS`, for tests and benchmarks that need a find to run out of time;
/// the default is [`FIND_DEADLINE_MS`].
pub fn find_deadline_from_env() -> Result<Duration, ConfigError> {
    settings::FIND_DEADLINE.get(|key| std::env::var(key).ok()).map(Duration::from_millis)
}

/// `CORTEX_NEAR_DUP_THRESHOLD` (cosine) and `CORTEX_NEAR_DUP_WINDOW_DAYS`.
pub fn near_duplicates_from_env() -> Result<NearDuplicatePolicy, ConfigError> {
    near_duplicates_from_vars(|key| std::env::var(key).ok())
}

fn near_duplicates_from_vars(
    var: impl Fn(&str) -> Option<String>,
) -> Result<NearDuplicatePolicy, ConfigError> {
    let policy = NearDuplicatePolicy {
        threshold: settings::NEAR_DUP_THRESHOLD.get(&var)?,
        // The table bounds the window far below what an i64 holds.
        window_days: settings::NEAR_DUP_WINDOW_DAYS.get(&var)? as i64,
    };
    Ok(policy)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cortex_embed::Precision;

    #[test]
    fn the_vector_file_lives_beside_a_sqlite_file_whose_lexical_index_is_on_disk() {
        let sqlite = DbTarget::Sqlite(PathBuf::from("/data/memory.db"));
        assert_eq!(vector_file_for(&sqlite, true), Some(PathBuf::from("/data/memory.db.vectors")));
        assert_eq!(vector_file_for(&sqlite, false), None, "an index kept in memory keeps no file");
        let pg = DbTarget::parse("postgres://u@h/db");
        assert_eq!(vector_file_for(&pg, true), None, "PostgreSQL searches its own vectors");
        let scope = InferredScope::fixed("o", "p", "b");
        assert_eq!(Config::new(pg, scope, EmbedderChoice::None).vector_file, None);
    }

    #[test]
    fn postgres_reads_its_replica_and_pool_size_from_the_environment() {
        let vars = |key: &str| match key {
            "CORTEX_DB_READ_URL" => Some("postgres://replica/db".to_string()),
            "CORTEX_DB_POOL_SIZE" => Some(" 16 ".to_string()),
            _ => None,
        };
        let target = postgres_from_vars(DbTarget::parse("postgres://primary/db"), vars).unwrap();
        assert_eq!(
            target,
            DbTarget::Postgres {
                url: "postgres://primary/db".into(),
                read_url: Some("postgres://replica/db".into()),
                pool: PoolConfig { size: 16 },
            }
        );
        let bad = postgres_from_vars(DbTarget::parse("postgres://p/db"), |_| Some("lots".to_string()));
        assert_eq!(bad.unwrap_err().name, "CORTEX_DB_POOL_SIZE");
        let file = postgres_from_vars(DbTarget::parse("m.db"), vars).unwrap();
        assert_eq!(file, DbTarget::Sqlite("m.db".into()));
    }

    #[test]
    fn the_embedder_comes_from_the_environment() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |key: &str| pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| v.to_string())
        };
        assert!(matches!(embedder_from_vars(vars(&[("CORTEX_EMBEDDER", "none")])), Ok(EmbedderChoice::None)));
        assert!(matches!(
            embedder_from_vars(vars(&[])),
            Ok(EmbedderChoice::Local { precision: Precision::Auto, .. })
        ));
        assert!(matches!(
            embedder_from_vars(vars(&[("CORTEX_EMBED_PRECISION", "f32")])),
            Ok(EmbedderChoice::Local { precision: Precision::F32, .. })
        ));
        let remote = embedder_from_vars(vars(&[
            ("CORTEX_EMBEDDER", "OpenAI"),
            ("CORTEX_OPENAI_BASE_URL", "http://localhost:11434/v1"),
            ("CORTEX_OPENAI_MODEL", "nomic-embed-text"),
            ("CORTEX_OPENAI_API_KEY_ENV", "MY_KEY"),
            ("MY_KEY", "sk-test"),
        ]));
        let Ok(EmbedderChoice::OpenAi(config)) = remote else { panic!("openai expected") };
        assert_eq!(
            config,
            OpenAiConfig {
                base_url: "http://localhost:11434/v1".into(),
                model: "nomic-embed-text".into(),
                api_key: Some("sk-test".into()),
            }
        );
    }

    #[test]
    fn bad_settings_are_errors_that_name_the_variable_and_the_accepted_values() {
        let garbage =
            embedder_from_vars(|k| (k == "CORTEX_EMBEDDER").then(|| "garbage".to_string())).unwrap_err();
        assert_eq!(garbage.name, "CORTEX_EMBEDDER");
        assert!(garbage.hint.contains("local") && garbage.hint.contains("none"), "{garbage}");
        let precision =
            embedder_from_vars(|k| (k == "CORTEX_EMBED_PRECISION").then(|| "int4".to_string())).unwrap_err();
        assert_eq!(precision.name, "CORTEX_EMBED_PRECISION");
        assert!(precision.hint.contains("f32") && precision.hint.contains("bf16"), "{precision}");
        let not_http = embedder_from_vars(|k| match k {
            "CORTEX_EMBEDDER" => Some("openai".into()),
            "CORTEX_OPENAI_BASE_URL" => Some("localhost:11434".into()),
            _ => None,
        });
        assert_eq!(not_http.unwrap_err().name, "CORTEX_OPENAI_BASE_URL");
        let threshold = near_duplicates_from_vars(|k| (k == "CORTEX_NEAR_DUP_THRESHOLD").then(|| "2".into()));
        assert_eq!(threshold.unwrap_err().name, "CORTEX_NEAR_DUP_THRESHOLD");
        let days = near_duplicates_from_vars(|k| (k == "CORTEX_NEAR_DUP_WINDOW_DAYS").then(|| "-1".into()));
        assert_eq!(days.unwrap_err().name, "CORTEX_NEAR_DUP_WINDOW_DAYS");
        let replica = postgres_from_vars(DbTarget::parse("postgres://p/db"), |k| {
            (k == "CORTEX_DB_READ_URL").then(|| "replica.db".into())
        });
        assert_eq!(replica.unwrap_err().name, "CORTEX_DB_READ_URL");
    }

    #[test]
    fn the_database_setting_is_a_file_or_a_postgres_url() {
        assert_eq!(db_target(" m.db ").unwrap(), DbTarget::Sqlite("m.db".into()));
        assert!(matches!(db_target("postgresql://h/db").unwrap(), DbTarget::Postgres { .. }));
        for bad in ["", "   ", "mysql://u@h/db", "ma\nin.db", "redis://h"] {
            let e = db_target(bad).unwrap_err();
            assert_eq!(e.name, "--db / CORTEX_DB", "{bad:?}");
            assert!(e.hint.contains("postgres://"), "{e}");
        }
    }

    #[test]
    fn shown_values_are_escaped_and_cut() {
        let e = ConfigError::new("CORTEX_ORG", &format!("\u{1b}[31m{}", "x".repeat(300)), "is bad", "fix it");
        assert!(e.value.starts_with("\"\\u{1b}[31m"), "{}", e.value);
        assert!(e.value.chars().count() < 100 && e.value.ends_with('…'));
    }
}
