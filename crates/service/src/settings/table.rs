//! The service's `CORTEX_*` settings (the database, scope, logs, embedder, finds and the
//! lexical index): name, flag, kind (with its default and range) and doc. The code reads each
//! one through its constant here; docs/CONFIGURATION.md's settings table is these rows and the
//! HTTP server's (`cortex_server::settings`), a test there holds them together.

use super::kind::{
    Choice, Fraction, Optional, Parsed, Refusal, Setting, Whole, http_url, path, scope_value, text,
};
use cortex_domain::limits::FIND_DEADLINE_MS;
use cortex_domain::near_duplicate::{DEFAULT_THRESHOLD, DEFAULT_WINDOW_DAYS};
use cortex_domain::recall::{DEFAULT_BUDGET_TOKENS, DEFAULT_SESSION_BUDGET_TOKENS};
use cortex_embed::{PRECISION_VALUES, Precision};
use cortex_store::{DEFAULT_POOL_SIZE, DbTarget};
use std::path::PathBuf;
use tracing::Level;

pub const DB: Setting<Optional<DbTarget>> = Setting {
    name: "CORTEX_DB",
    flag: Some("--db PATH|URL"),
    kind: Optional {
        when_unset: "<user data dir>/cortex/memory.db",
        parse: database,
        refuses: &["mysql://root@localhost/memory"],
    },
    doc: "a SQLite file (created with its folder if missing), or a PostgreSQL URL `postgres://user:password@host:port/database`; TLS as libpq: `?sslmode=verify-full&sslrootcert=/path/ca.pem` (or `sslrootcert=system` for a public CA; `require` encrypts without checking the certificate; `disable`, `prefer` is the default)",
};
pub const DB_FILE: Setting<Optional<PathBuf>> = Setting {
    name: "CORTEX_DB_FILE",
    flag: None,
    kind: Optional { when_unset: "none", parse: path, refuses: &[] },
    doc: "a file holding what `CORTEX_DB` would (a PostgreSQL URL with its password: a container's secret), read when neither `--db` nor `CORTEX_DB` is given",
};
pub const DB_POOL_SIZE: Setting<Whole> = Setting {
    name: "CORTEX_DB_POOL_SIZE",
    flag: None,
    kind: Whole { default: DEFAULT_POOL_SIZE as u64, min: 1, max: 1000 },
    doc: "PostgreSQL: connections per pool, per process",
};
pub const DB_READ_URL: Setting<Optional<String>> = Setting {
    name: "CORTEX_DB_READ_URL",
    flag: None,
    kind: Optional {
        when_unset: "none: finds read the primary",
        parse: postgres_url,
        refuses: &["replica.db"],
    },
    doc: "PostgreSQL: a read replica; finds go there, writes and reads by id stay on the primary",
};
pub const DB_WAIT_SECS: Setting<Whole> = Setting {
    name: "CORTEX_DB_WAIT_SECS",
    flag: None,
    kind: Whole { default: 60, min: 0, max: 3600 },
    doc: "PostgreSQL: how long `cortex serve` keeps trying to reach the database at start (a server started before its database, in a container), once a second, before it gives up (`0`: at once)",
};
pub const ORG: Setting<Optional<String>> = Setting {
    name: "CORTEX_ORG",
    flag: None,
    kind: Optional { when_unset: "inferred: git remote, else local", parse: org, refuses: &["a\tb"] },
    doc: "overrides the inferred org",
};
pub const PROJECT: Setting<Optional<String>> = Setting {
    name: "CORTEX_PROJECT",
    flag: None,
    kind: Optional {
        when_unset: "inferred: git remote, else the folder name",
        parse: project,
        refuses: &["a\tb"],
    },
    doc: "overrides the inferred project",
};
pub const BRANCH: Setting<Optional<String>> = Setting {
    name: "CORTEX_BRANCH",
    flag: None,
    kind: Optional { when_unset: "inferred: git HEAD, else main", parse: branch, refuses: &["a\tb"] },
    doc: "overrides the inferred branch",
};
pub const LOG: Setting<Choice<Level>> = Setting {
    name: "CORTEX_LOG",
    flag: None,
    kind: Choice {
        default: Level::INFO,
        choices: &[
            ("error", Level::ERROR),
            ("warn", Level::WARN),
            ("info", Level::INFO),
            ("debug", Level::DEBUG),
            ("trace", Level::TRACE),
        ],
    },
    doc: "the log level; logs go to stderr only; unset, `info` is for `serve`, `ui` and `-v`, and the one-shot commands log `warn` and up",
};
/// The shape of a log line (`CORTEX_LOG_FORMAT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

pub const LOG_FORMAT: Setting<Choice<LogFormat>> = Setting {
    name: "CORTEX_LOG_FORMAT",
    flag: None,
    kind: Choice {
        default: LogFormat::Text,
        choices: &[("text", LogFormat::Text), ("json", LogFormat::Json)],
    },
    doc: "`text` for people, or `json`: one JSON object per line, for a log shipper (fields and redaction: [LOGGING.md](LOGGING.md))",
};
/// Which embedder computes vectors (`CORTEX_EMBEDDER`); its own settings are read with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbedderKind {
    Local,
    OpenAi,
    None,
}

pub const EMBEDDER: Setting<Choice<EmbedderKind>> = Setting {
    name: "CORTEX_EMBEDDER",
    flag: None,
    kind: Choice {
        default: EmbedderKind::Local,
        choices: &[
            ("local", EmbedderKind::Local),
            ("openai", EmbedderKind::OpenAi),
            ("none", EmbedderKind::None),
        ],
    },
    doc: "`local`: all-MiniLM-L6-v2 in-process, loaded on first use; `openai`: an OpenAI-compatible endpoint; `none`: lexical only. Changing it on a memory that has vectors needs `cortex reindex`",
};
pub const OPENAI_BASE_URL: Setting<Parsed<String>> = Setting {
    name: "CORTEX_OPENAI_BASE_URL",
    flag: None,
    kind: Parsed { default: "https://api.openai.com/v1", parse: http_url, refuses: &["localhost:11434"] },
    doc: "`openai`: the API root up to `/v1` (Ollama: `http://localhost:11434/v1`)",
};
pub const OPENAI_MODEL: Setting<Parsed<String>> = Setting {
    name: "CORTEX_OPENAI_MODEL",
    flag: None,
    kind: Parsed { default: "text-embedding-3-small", parse: text, refuses: &[] },
    doc: "`openai`: the embedding model",
};
pub const OPENAI_API_KEY_ENV: Setting<Parsed<String>> = Setting {
    name: "CORTEX_OPENAI_API_KEY_ENV",
    flag: None,
    kind: Parsed { default: "OPENAI_API_KEY", parse: text, refuses: &[] },
    doc: "`openai`: the name of the variable holding the API key (none sent when that is unset)",
};
pub const MODEL_DIR: Setting<Optional<PathBuf>> = Setting {
    name: "CORTEX_MODEL_DIR",
    flag: None,
    kind: Optional {
        when_unset: "<user cache dir>/cortex/models/all-MiniLM-L6-v2",
        parse: path,
        refuses: &[],
    },
    doc: "the model folder",
};
pub const EMBED_PRECISION: Setting<Parsed<Precision>> = Setting {
    name: "CORTEX_EMBED_PRECISION",
    flag: None,
    kind: Parsed { default: "auto", parse: precision, refuses: &["int4", "garbage"] },
    doc: "the local model's matrix products: `auto` (`int8` where the CPU has AVX-512 VNNI, else `bf16` where it has AVX-512 BF16, else `f32`), `f32` (the reference), `bf16` (weights and activations rounded to bf16, sums in f32) or `int8` (AVX-512 VNNI: weights per output column, activations per row, sums in i32, the query/key/value and feed-forward inputs smoothed per channel from a calibration text at packing; slightly further from `f32`, BENCHMARKS.md); without the CPU feature a slow scalar kernel. No `cortex reindex` is needed to switch. The weights are packed once per precision into `<user cache dir>/cortex/packs/` (by `cortex model install` or at the first load)",
};
pub const PURGE_INTERVAL_SECS: Setting<Whole> = Setting {
    name: "CORTEX_PURGE_INTERVAL_SECS",
    flag: None,
    kind: Whole { default: 3600, min: 0, max: 31_536_000 },
    doc: "how often `cortex serve` removes expired items, in seconds (`0` turns it off; at most a year)",
};
pub const NEAR_DUP_THRESHOLD: Setting<Fraction> = Setting {
    name: "CORTEX_NEAR_DUP_THRESHOLD",
    flag: None,
    kind: Fraction { default: DEFAULT_THRESHOLD, min: 0.0, max: 1.0 },
    doc: "cosine at or above which a new item is a near-duplicate (1: identical vectors only)",
};
pub const NEAR_DUP_WINDOW_DAYS: Setting<Whole> = Setting {
    name: "CORTEX_NEAR_DUP_WINDOW_DAYS",
    flag: None,
    kind: Whole { default: DEFAULT_WINDOW_DAYS as u64, min: 0, max: 36_500 },
    doc: "only items updated this recently count: an agent re-storing what a recent session stored is the case to catch; months later a similar item is more often a new event",
};
pub const FIND_DEADLINE: Setting<Whole> = Setting {
    name: "CORTEX_FIND_DEADLINE_MS",
    flag: None,
    kind: Whole { default: FIND_DEADLINE_MS, min: 0, max: 600_000 },
    doc: "how long a find may run before it answers with what it has, saying in `notes` what it left out",
};
pub const LEXICAL_INDEX: Setting<Optional<String>> = Setting {
    name: "CORTEX_LEXICAL_INDEX",
    flag: None,
    kind: Optional {
        when_unset: "beside the SQLite file (<file>.lexical); for PostgreSQL, a folder per database in the cache folder",
        parse: text,
        refuses: &[],
    },
    doc: "where the lexical index lives: a folder, `memory` (built at each start) or `off` (the database's own full-text search, and no spelling hints or typo correction: their words come from the index). It is derived from the database and rebuilt from it when missing (`cortex reindex --lexical`)",
};
pub const RECALL_BUDGET_TOKENS: Setting<Whole> = Setting {
    name: "CORTEX_RECALL_BUDGET_TOKENS",
    flag: Some("cortex recall --budget-tokens"),
    kind: Whole { default: DEFAULT_BUDGET_TOKENS as u64, min: 0, max: 100_000 },
    doc: "the most the prompt-submit hook (`cortex recall`) adds to one prompt, in tokens (characters / 3); 0 turns it off",
};
pub const RECALL_SESSION_BUDGET_TOKENS: Setting<Whole> = Setting {
    name: "CORTEX_RECALL_SESSION_BUDGET_TOKENS",
    flag: None,
    kind: Whole { default: DEFAULT_SESSION_BUDGET_TOKENS as u64, min: 0, max: 10_000_000 },
    doc: "the most the prompt-submit hook adds to one agent session (by the hook's `session_id`) until it is compacted or cleared; `cortex stats` counts the sessions that reach it",
};
/// What a store does with a credential found in an item's text (`CORTEX_SECRETS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretsMode {
    Redact,
    Refuse,
    Off,
}

pub const SECRETS: Setting<Choice<SecretsMode>> = Setting {
    name: "CORTEX_SECRETS",
    flag: None,
    kind: Choice {
        default: SecretsMode::Redact,
        choices: &[
            ("redact", SecretsMode::Redact),
            ("refuse", SecretsMode::Refuse),
            ("off", SecretsMode::Off),
        ],
    },
    doc: "credentials in a stored item's text (cloud keys, VCS, chat and payment tokens, private keys, JWTs, passwords in URLs and `password=` assignments): `redact` replaces each with `[redacted:<rule>]` before anything is stored, indexed or audited, and the item's result lists them in `redacted`; `refuse` refuses the item (`validation_error` naming the field and the rule); `off` stores them as given. `<private>…</private>` spans are removed unless `off`. Covers every `memory_store` (MCP, HTTP, CLI, web UI, `cortex ingest`) and `cortex import` (under `refuse` an import file holding one is refused whole), every text an item keeps: content, `data`, `metadata`, `source`, their object keys, tags. `cortex secrets scan [--redact]` finds (and replaces) what was stored before (docs/CLI.md)",
};
/// The service's settings, in the docs' order (the HTTP server's follow them, in
/// `cortex_server::settings`).
pub static SETTINGS: [&(dyn super::Declared + Sync); 24] = [
    &DB,
    &DB_FILE,
    &DB_POOL_SIZE,
    &DB_READ_URL,
    &DB_WAIT_SECS,
    &ORG,
    &PROJECT,
    &BRANCH,
    &LOG,
    &LOG_FORMAT,
    &EMBEDDER,
    &OPENAI_BASE_URL,
    &OPENAI_MODEL,
    &OPENAI_API_KEY_ENV,
    &MODEL_DIR,
    &EMBED_PRECISION,
    &PURGE_INTERVAL_SECS,
    &NEAR_DUP_THRESHOLD,
    &NEAR_DUP_WINDOW_DAYS,
    &FIND_DEADLINE,
    &LEXICAL_INDEX,
    &RECALL_BUDGET_TOKENS,
    &RECALL_SESSION_BUDGET_TOKENS,
    &SECRETS,
];

fn database(value: &str) -> Result<DbTarget, Refusal> {
    crate::config::db_target(value).map_err(|e| Refusal::new(e.problem, e.hint))
}

fn postgres_url(value: &str) -> Result<String, Refusal> {
    match DbTarget::parse(value) {
        DbTarget::Postgres { url, .. } => Ok(url),
        DbTarget::Sqlite(_) => Err(Refusal::new(
            "is not a PostgreSQL URL",
            "give the read replica as postgres://…, or unset it to read from the primary",
        )),
    }
}

fn org(value: &str) -> Result<String, Refusal> {
    scope_value("org", value)
}

fn project(value: &str) -> Result<String, Refusal> {
    scope_value("project", value)
}

fn branch(value: &str) -> Result<String, Refusal> {
    scope_value("branch", value)
}

fn precision(value: &str) -> Result<Precision, Refusal> {
    Precision::parse(value).ok_or_else(|| {
        Refusal::new(
            "is not a precision",
            format!("expected {PRECISION_VALUES} (auto: int8 where the CPU has AVX-512 VNNI, else bf16 where it has AVX-512 BF16, else f32)"),
        )
    })
}
