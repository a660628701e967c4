//! Every `CORTEX_*` setting: name, flag, kind (with its default and range) and doc. The code
//! reads each one through its constant here; docs/CONFIGURATION.md's settings table is these
//! rows (a test holds them together).

use super::kind::{Choice, Fraction, Optional, Parsed, Refusal, Setting, Whole, http_url, text};
use cortex_domain::api_key::Rate;
use cortex_domain::limits::{FIND_DEADLINE_MS, MAX_MESSAGE_BYTES};
use cortex_domain::near_duplicate::{DEFAULT_THRESHOLD, DEFAULT_WINDOW_DAYS};
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
    doc: "the log level; logs go to stderr only",
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
pub const HTTP_ADDR: Setting<Optional<String>> = Setting {
    name: "CORTEX_HTTP_ADDR",
    flag: Some("--http ADDR"),
    kind: Optional { when_unset: "none: cortex serve speaks MCP on stdio", parse: text, refuses: &[] },
    doc: "`cortex serve` speaks MCP over HTTP at `http://ADDR/mcp` instead of stdio (README, Run it for a team)",
};
pub const HTTP_ALLOW_ORIGIN: Setting<Optional<String>> = Setting {
    name: "CORTEX_HTTP_ALLOW_ORIGIN",
    flag: Some("--allow-origin ORIGIN"),
    kind: Optional { when_unset: "none: requests from web pages are refused", parse: text, refuses: &[] },
    doc: "HTTP: browser origins (`scheme://host[:port]`, comma-separated in the variable) whose pages may call the server; a request with any other `Origin` gets 403",
};
pub const HTTP_RATE: Setting<Parsed<Rate>> = Setting {
    name: "CORTEX_HTTP_RATE",
    flag: None,
    kind: Parsed { default: "50/s", parse: rate, refuses: &["fast", "0/s", "10/h"] },
    doc: "HTTP: requests per key, `N/s` or `N/min`, unless the key has its own `--rate` (a burst of one second's worth)",
};
pub const HTTP_MAX_BODY_BYTES: Setting<Whole> = Setting {
    name: "CORTEX_HTTP_MAX_BODY_BYTES",
    flag: None,
    kind: Whole { default: MAX_MESSAGE_BYTES as u64, min: 1024, max: MAX_MESSAGE_BYTES as u64 },
    doc: "HTTP: the largest request body; larger ones get 413 (the default is stdio's message limit)",
};
pub const HTTP_CALL_TIMEOUT_MS: Setting<Whole> = Setting {
    name: "CORTEX_HTTP_CALL_TIMEOUT_MS",
    flag: None,
    kind: Whole { default: 30_000, min: 100, max: 3_600_000 },
    doc: "HTTP: how long one tool call may run before it is answered with a `timeout` error",
};
pub const HTTP_MAX_CONCURRENT: Setting<Whole> = Setting {
    name: "CORTEX_HTTP_MAX_CONCURRENT",
    flag: None,
    kind: Whole { default: 16, min: 1, max: 4096 },
    doc: "HTTP: calls one key may have running at once; more get 429",
};
pub const HTTP_HEADER_TIMEOUT_MS: Setting<Whole> = Setting {
    name: "CORTEX_HTTP_HEADER_TIMEOUT_MS",
    flag: None,
    kind: Whole { default: 10_000, min: 100, max: 600_000 },
    doc: "HTTP: how long a client may take for a request's headers (and the TLS handshake), from the connection's opening or the first byte after an answer; then it is closed",
};
pub const HTTP_BODY_TIMEOUT_MS: Setting<Whole> = Setting {
    name: "CORTEX_HTTP_BODY_TIMEOUT_MS",
    flag: None,
    kind: Whole { default: 60_000, min: 100, max: 3_600_000 },
    doc: "HTTP: how long a client may take to send a request's body; then 408",
};
pub const HTTP_IDLE_TIMEOUT_MS: Setting<Whole> = Setting {
    name: "CORTEX_HTTP_IDLE_TIMEOUT_MS",
    flag: None,
    kind: Whole { default: 60_000, min: 100, max: 3_600_000 },
    doc: "HTTP: how long a kept-alive connection may wait for its next request",
};
pub const HTTP_MAX_CONNECTIONS: Setting<Whole> = Setting {
    name: "CORTEX_HTTP_MAX_CONNECTIONS",
    flag: None,
    kind: Whole { default: 4096, min: 16, max: 1_000_000 },
    doc: "HTTP: connections open at once, lowered at start to three quarters of the open-file limit (`ulimit -n`); past it the oldest connection without a call running is closed",
};
pub const HTTP_MAX_CONNECTIONS_PER_IP: Setting<Whole> = Setting {
    name: "CORTEX_HTTP_MAX_CONNECTIONS_PER_IP",
    flag: None,
    kind: Whole { default: 256, min: 1, max: 1_000_000 },
    doc: "HTTP: connections open at once from one client address, the same way (behind a proxy all clients share its address)",
};
pub const HTTP_MAX_SESSIONS_PER_KEY: Setting<Whole> = Setting {
    name: "CORTEX_HTTP_MAX_SESSIONS_PER_KEY",
    flag: None,
    kind: Whole { default: 100, min: 1, max: 1_000_000 },
    doc: "HTTP: MCP sessions one key may hold; opening one more ends that key's oldest",
};
pub const HTTP_SESSION_IDLE_TIMEOUT_MS: Setting<Whole> = Setting {
    name: "CORTEX_HTTP_SESSION_IDLE_TIMEOUT_MS",
    flag: None,
    kind: Whole { default: 300_000, min: 100, max: 86_400_000 },
    doc: "HTTP: how long an MCP session may go without a request before it ends and its memory is freed",
};
pub const HTTP_MAX_BYTES_IN_FLIGHT: Setting<Whole> = Setting {
    name: "CORTEX_HTTP_MAX_BYTES_IN_FLIGHT",
    flag: None,
    kind: Whole { default: 128 * 1024 * 1024, min: 1024, max: 1 << 40 },
    doc: "HTTP: request bytes being read or worked on at once, over all keys; a body past it gets 503 with `Retry-After` (at least `CORTEX_HTTP_MAX_BODY_BYTES`)",
};
pub const HTTP_TLS_CERT: Setting<Optional<PathBuf>> = Setting {
    name: "CORTEX_HTTP_TLS_CERT",
    flag: Some("--tls-cert PEM"),
    kind: Optional { when_unset: "none: plain HTTP", parse: path, refuses: &[] },
    doc: "HTTP: serve HTTPS with this certificate (chain); needs `CORTEX_HTTP_TLS_KEY`",
};
pub const HTTP_TLS_KEY: Setting<Optional<PathBuf>> = Setting {
    name: "CORTEX_HTTP_TLS_KEY",
    flag: Some("--tls-key PEM"),
    kind: Optional { when_unset: "none: plain HTTP", parse: path, refuses: &[] },
    doc: "HTTP: the certificate's private key",
};
pub const OAUTH_ISSUER: Setting<Optional<String>> = Setting {
    name: "CORTEX_OAUTH_ISSUER",
    flag: None,
    kind: Optional { when_unset: "none: API keys only", parse: http_url, refuses: &["login.example.com"] },
    doc: "HTTP: also accept OAuth 2.1 access tokens from this identity provider (Claude and ChatGPT connectors, Okta, Entra ID, Keycloak, Auth0): see [OAUTH.md](OAUTH.md)",
};
pub const PUBLIC_URL: Setting<Optional<String>> = Setting {
    name: "CORTEX_PUBLIC_URL",
    flag: None,
    kind: Optional {
        when_unset: "none (needed with CORTEX_OAUTH_ISSUER)",
        parse: http_url,
        refuses: &["memory.example.com"],
    },
    doc: "the base URL clients reach this server at: OAuth's resource URL, and the origin the web UI's forms may post from ([UI.md](UI.md))",
};
pub const OAUTH_AUDIENCE: Setting<Optional<String>> = Setting {
    name: "CORTEX_OAUTH_AUDIENCE",
    flag: None,
    kind: Optional { when_unset: "<CORTEX_PUBLIC_URL>/mcp", parse: text, refuses: &[] },
    doc: "OAuth: what a token's `aud` must hold",
};
pub const OAUTH_ORG_CLAIM: Setting<Parsed<String>> = Setting {
    name: "CORTEX_OAUTH_ORG_CLAIM",
    flag: None,
    kind: Parsed { default: "org", parse: text, refuses: &[] },
    doc: "OAuth: the claim naming the token holder's org",
};
pub const OAUTH_PROJECTS_CLAIM: Setting<Parsed<String>> = Setting {
    name: "CORTEX_OAUTH_PROJECTS_CLAIM",
    flag: None,
    kind: Parsed { default: "projects", parse: text, refuses: &[] },
    doc: "OAuth: the claim naming the token holder's projects",
};
pub const OAUTH_ORG: Setting<Optional<String>> = Setting {
    name: "CORTEX_OAUTH_ORG",
    flag: None,
    kind: Optional { when_unset: "none: each token's org claim", parse: org, refuses: &["a\tb"] },
    doc: "OAuth: every token's org, for a single-tenant server",
};
pub const OAUTH_CLIENT_ID: Setting<Optional<String>> = Setting {
    name: "CORTEX_OAUTH_CLIENT_ID",
    flag: None,
    kind: Optional { when_unset: "none: opaque tokens are not introspected", parse: text, refuses: &[] },
    doc: "OAuth: Cortex's client at the issuer, to introspect opaque tokens with (with the secret)",
};
pub const OAUTH_CLIENT_SECRET: Setting<Optional<String>> = Setting {
    name: "CORTEX_OAUTH_CLIENT_SECRET",
    flag: None,
    kind: Optional { when_unset: "none: opaque tokens are not introspected", parse: text, refuses: &[] },
    doc: "OAuth: that client's secret (never shown by `cortex doctor`)",
};

/// Every setting, in the docs' order.
pub static SETTINGS: [&(dyn super::Declared + Sync); 43] = [
    &DB,
    &DB_POOL_SIZE,
    &DB_READ_URL,
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
    &HTTP_ADDR,
    &HTTP_ALLOW_ORIGIN,
    &HTTP_RATE,
    &HTTP_MAX_BODY_BYTES,
    &HTTP_CALL_TIMEOUT_MS,
    &HTTP_MAX_CONCURRENT,
    &HTTP_HEADER_TIMEOUT_MS,
    &HTTP_BODY_TIMEOUT_MS,
    &HTTP_IDLE_TIMEOUT_MS,
    &HTTP_MAX_CONNECTIONS,
    &HTTP_MAX_CONNECTIONS_PER_IP,
    &HTTP_MAX_SESSIONS_PER_KEY,
    &HTTP_SESSION_IDLE_TIMEOUT_MS,
    &HTTP_MAX_BYTES_IN_FLIGHT,
    &HTTP_TLS_CERT,
    &HTTP_TLS_KEY,
    &OAUTH_ISSUER,
    &PUBLIC_URL,
    &OAUTH_AUDIENCE,
    &OAUTH_ORG_CLAIM,
    &OAUTH_PROJECTS_CLAIM,
    &OAUTH_ORG,
    &OAUTH_CLIENT_ID,
    &OAUTH_CLIENT_SECRET,
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

fn path(value: &str) -> Result<PathBuf, Refusal> {
    text(value).map(PathBuf::from)
}

/// A scope value is checked as a request's would be (length, control characters).
fn scope_value(field: &str, value: &str) -> Result<String, Refusal> {
    cortex_domain::scope::check_value(field, value)
        .map_err(|e| Refusal::new(e.message.replace(&format!("scope `{field}` "), ""), e.human_hint))
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

fn rate(value: &str) -> Result<Rate, Refusal> {
    Rate::parse(value, "CORTEX_HTTP_RATE").map_err(|e| Refusal::new(e.message, e.human_hint))
}
