//! Every setting Cortex reads from its environment, declared once: its name and its default.
//! `cortex doctor` prints each with the value in force and where it came from; tests hold the
//! settings table of docs/CONFIGURATION.md and every `CORTEX_*` name the code reads to this list.
//! (How each value is checked lives where it is parsed: `config.rs`, `purge.rs`, the CLI's log
//! set-up; all refuse a bad value with [`crate::config::ConfigError`].)

use serde::Serialize;

pub struct Setting {
    pub name: &'static str,
    /// What applies when the variable is unset.
    pub default: &'static str,
}

const fn setting(name: &'static str, default: &'static str) -> Setting {
    Setting { name, default }
}

pub const SETTINGS: [Setting; 43] = [
    setting("CORTEX_DB", "<user data dir>/cortex/memory.db"),
    setting("CORTEX_DB_POOL_SIZE", "8"),
    setting("CORTEX_DB_READ_URL", "none: finds read the primary"),
    setting("CORTEX_ORG", "inferred: git remote, else local"),
    setting("CORTEX_PROJECT", "inferred: git remote, else the folder name"),
    setting("CORTEX_BRANCH", "inferred: git HEAD, else main"),
    setting("CORTEX_LOG", "info"),
    setting("CORTEX_LOG_FORMAT", "text"),
    setting("CORTEX_EMBEDDER", "local"),
    setting("CORTEX_OPENAI_BASE_URL", "https://api.openai.com/v1"),
    setting("CORTEX_OPENAI_MODEL", "text-embedding-3-small"),
    setting("CORTEX_OPENAI_API_KEY_ENV", "OPENAI_API_KEY"),
    setting("CORTEX_MODEL_DIR", "<user cache dir>/cortex/models/all-MiniLM-L6-v2"),
    setting("CORTEX_EMBED_PRECISION", "auto"),
    setting("CORTEX_PURGE_INTERVAL_SECS", "3600"),
    setting("CORTEX_NEAR_DUP_THRESHOLD", "0.85"),
    setting("CORTEX_NEAR_DUP_WINDOW_DAYS", "30"),
    setting("CORTEX_FIND_DEADLINE_MS", "5000"),
    setting(
        "CORTEX_LEXICAL_INDEX",
        "beside the SQLite file (<file>.lexical); for PostgreSQL, a folder per database in the cache folder",
    ),
    setting("CORTEX_HTTP_ADDR", "none: cortex serve speaks MCP on stdio"),
    setting("CORTEX_HTTP_ALLOW_ORIGIN", "none: requests from web pages are refused"),
    setting("CORTEX_HTTP_RATE", "50/s per key"),
    setting("CORTEX_HTTP_MAX_BODY_BYTES", "67108864"),
    setting("CORTEX_HTTP_CALL_TIMEOUT_MS", "30000"),
    setting("CORTEX_HTTP_MAX_CONCURRENT", "16 calls per key"),
    setting("CORTEX_HTTP_HEADER_TIMEOUT_MS", "10000"),
    setting("CORTEX_HTTP_BODY_TIMEOUT_MS", "60000"),
    setting("CORTEX_HTTP_IDLE_TIMEOUT_MS", "60000"),
    setting("CORTEX_HTTP_MAX_CONNECTIONS", "4096, lowered to fit the open-file limit"),
    setting("CORTEX_HTTP_MAX_CONNECTIONS_PER_IP", "256"),
    setting("CORTEX_HTTP_MAX_SESSIONS_PER_KEY", "100"),
    setting("CORTEX_HTTP_SESSION_IDLE_TIMEOUT_MS", "300000"),
    setting("CORTEX_HTTP_MAX_BYTES_IN_FLIGHT", "134217728"),
    setting("CORTEX_HTTP_TLS_CERT", "none: plain HTTP"),
    setting("CORTEX_HTTP_TLS_KEY", "none: plain HTTP"),
    setting("CORTEX_OAUTH_ISSUER", "none: API keys only"),
    setting("CORTEX_PUBLIC_URL", "none (needed with CORTEX_OAUTH_ISSUER)"),
    setting("CORTEX_OAUTH_AUDIENCE", "<CORTEX_PUBLIC_URL>/mcp"),
    setting("CORTEX_OAUTH_ORG_CLAIM", "org"),
    setting("CORTEX_OAUTH_PROJECTS_CLAIM", "projects"),
    setting("CORTEX_OAUTH_ORG", "none: each token's org claim"),
    setting("CORTEX_OAUTH_CLIENT_ID", "none: opaque tokens are not introspected"),
    setting("CORTEX_OAUTH_CLIENT_SECRET", "none: opaque tokens are not introspected"),
];

/// A setting as it applies to this process.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SettingInForce {
    pub name: &'static str,
    /// The value, with any password in a database URL masked.
    pub value: String,
    /// `--db`, `environment` or `default`.
    pub from: &'static str,
}

/// Each setting's value and source. `db_flag` is the `--db` value the command line resolved
/// (clap fills it from `CORTEX_DB` too: it came from the flag when it differs from the
/// variable).
pub fn in_force(env: impl Fn(&str) -> Option<String>, db_flag: Option<&str>) -> Vec<SettingInForce> {
    SETTINGS
        .iter()
        .map(|s| {
            let from_env = env(s.name).filter(|v| !v.trim().is_empty());
            let (value, from) = match (s.name, db_flag, from_env) {
                ("CORTEX_DB", Some(flag), env) if env.as_deref() != Some(flag) => (flag.to_string(), "--db"),
                (_, _, Some(v)) => (v, "environment"),
                (_, _, None) => (s.default.to_string(), "default"),
            };
            // A secret is shown as set, never as itself: doctor output gets pasted into issues.
            let value = if s.name.ends_with("_SECRET") && from != "default" {
                "***".into()
            } else {
                mask_password(&value)
            };
            SettingInForce { name: s.name, value, from }
        })
        .collect()
}

/// `postgres://user:secret@host/db` → `postgres://user:***@host/db`: doctor output gets pasted
/// into issues.
fn mask_password(value: &str) -> String {
    let Some((scheme, rest)) = value.split_once("://") else { return value.to_string() };
    let Some((credentials, host)) = rest.rsplit_once('@') else { return value.to_string() };
    match credentials.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => value.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find<'a>(all: &'a [SettingInForce], name: &str) -> &'a SettingInForce {
        all.iter().find(|s| s.name == name).unwrap()
    }

    #[test]
    fn each_value_says_where_it_came_from_and_passwords_are_masked() {
        let env = |k: &str| match k {
            "CORTEX_DB" => Some("postgres://cortex:s3cret@db:5432/memory".to_string()),
            "CORTEX_EMBEDDER" => Some("none".to_string()),
            "CORTEX_ORG" => Some("  ".to_string()),
            "CORTEX_OAUTH_CLIENT_SECRET" => Some("s3cret".to_string()),
            _ => None,
        };
        let all = in_force(env, Some("postgres://cortex:s3cret@db:5432/memory"));
        assert_eq!(all.len(), SETTINGS.len());
        let db = find(&all, "CORTEX_DB");
        assert_eq!((db.value.as_str(), db.from), ("postgres://cortex:***@db:5432/memory", "environment"));
        assert_eq!(find(&all, "CORTEX_EMBEDDER").from, "environment");
        assert_eq!(find(&all, "CORTEX_ORG").from, "default", "blank counts as unset");
        assert_eq!(find(&all, "CORTEX_LOG").value, "info");
        assert_eq!(find(&all, "CORTEX_OAUTH_CLIENT_SECRET").value, "***");
        let flagged = in_force(|_| None, Some("other.db"));
        assert_eq!(
            (find(&flagged, "CORTEX_DB").value.as_str(), find(&flagged, "CORTEX_DB").from),
            ("other.db", "--db")
        );
    }

    #[test]
    fn the_documented_settings_table_lists_every_setting_and_nothing_else() {
        let doc = include_str!("../../../docs/CONFIGURATION.md");
        let section = doc.split("## Settings").nth(1).unwrap().split("\n## ").next().unwrap();
        let mut listed: Vec<String> = section
            .lines()
            .filter(|l| l.starts_with('|'))
            .map(|l| l.replace("\\|", "/"))
            .flat_map(|l| {
                l.split('|').nth(1).unwrap_or("").split('`').map(str::to_string).collect::<Vec<_>>()
            })
            .filter(|w| w.starts_with("CORTEX_"))
            .collect();
        listed.sort();
        listed.dedup();
        let mut declared: Vec<String> = SETTINGS.iter().map(|s| s.name.to_string()).collect();
        declared.sort();
        assert_eq!(listed, declared);
    }

    #[test]
    fn every_cortex_variable_the_code_reads_is_declared() {
        // Test and benchmark plumbing, not settings of the product.
        const PLUMBING: [&str; 4] =
            ["CORTEX_TEST_DATABASE_URL", "CORTEX_BENCH_POSTGRES", "CORTEX_BIN", "CORTEX_FUZZ"];
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        let mut unknown = Vec::new();
        for krate in std::fs::read_dir(root).unwrap() {
            let src = krate.unwrap().path().join("src");
            let mut stack = vec![src];
            while let Some(dir) = stack.pop() {
                let Ok(entries) = std::fs::read_dir(&dir) else { continue };
                for entry in entries {
                    let path = entry.unwrap().path();
                    if path.is_dir() {
                        stack.push(path);
                    } else if path.extension().is_some_and(|e| e == "rs") {
                        let text = std::fs::read_to_string(&path).unwrap();
                        for (at, _) in text.match_indices("CORTEX_") {
                            let name: String = text[at..]
                                .chars()
                                .take_while(|c| c.is_ascii_uppercase() || *c == '_' || c.is_ascii_digit())
                                .collect();
                            let name = name.trim_end_matches('_');
                            if name.len() > "CORTEX_".len()
                                && !SETTINGS.iter().any(|s| s.name == name)
                                && !PLUMBING.iter().any(|p| name.starts_with(p))
                            {
                                unknown.push(format!("{}: {name}", path.display()));
                            }
                        }
                    }
                }
            }
        }
        assert!(
            unknown.is_empty(),
            "declare these in SETTINGS (and docs/CONFIGURATION.md) or as plumbing: {unknown:?}"
        );
    }
}
