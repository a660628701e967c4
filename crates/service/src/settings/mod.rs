//! Every setting Cortex reads from its environment, declared once in [`table`]: its name,
//! flag, kind (how its text parses, its default and range) and doc. The code reads each
//! setting through its constant there; [`check_environment`] parses every one at the start of
//! every command, so a bad value stops `cortex` naming the variable whichever command runs.
//! `cortex doctor` prints each with the value in force and where it came from; tests hold
//! docs/CONFIGURATION.md's settings table and every `CORTEX_*` name the code reads to the
//! table.

mod kind;
mod table;

use crate::config::ConfigError;
pub use kind::{Choice, Fraction, Kind, Optional, Parsed, Refusal, Setting, Whole};
use serde::Serialize;
pub use table::*;

/// A setting seen without its value's type: what the checks, the docs and `cortex doctor`
/// need of every row of [`SETTINGS`].
pub trait Declared {
    fn name(&self) -> &'static str;
    fn flag(&self) -> Option<&'static str>;
    fn doc(&self) -> &'static str;
    fn default_text(&self) -> String;
    /// Whether the default is a value (`8`, `info`), not a description of what applies.
    fn default_is_value(&self) -> bool;
    /// Parses `text` as this setting's value, refusing it naming the variable.
    fn check(&self, text: &str) -> Result<(), ConfigError>;
    /// Values refused, for the tests that run the binary with each.
    fn refuses(&self) -> Vec<String>;
}

impl<K: Kind> Declared for Setting<K> {
    fn name(&self) -> &'static str {
        self.name
    }
    fn flag(&self) -> Option<&'static str> {
        self.flag
    }
    fn doc(&self) -> &'static str {
        self.doc
    }
    fn default_text(&self) -> String {
        self.kind.default_text()
    }
    fn default_is_value(&self) -> bool {
        self.kind.default_is_value()
    }
    fn check(&self, text: &str) -> Result<(), ConfigError> {
        self.parse(text).map(drop)
    }
    fn refuses(&self) -> Vec<String> {
        self.kind.refuses()
    }
}

/// Parses every setting the environment sets; the first bad one is the error. Run at the start
/// of every command, before anything is opened: a setting only some command uses is refused by
/// all of them, so a typo shows the first time, not when that command finally runs.
pub fn check_environment(env: impl Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
    for setting in SETTINGS.iter() {
        if let Some(text) = env(setting.name()).filter(|v| !v.trim().is_empty()) {
            setting.check(&text)?;
        }
    }
    Ok(())
}

/// Text for a Markdown table cell: `|` escaped, and `<` outside code (`<user data dir>` would
/// be read as an HTML tag).
fn cell(text: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for c in text.chars() {
        match c {
            '`' => in_code = !in_code,
            '|' => out.push('\\'),
            '<' if !in_code => out.push('\\'),
            _ => {}
        }
        out.push(c);
    }
    out
}

/// The settings table of docs/CONFIGURATION.md, made from [`SETTINGS`].
pub fn markdown_table() -> String {
    let mut table = String::from("| setting | default | meaning |\n|---|---|---|\n");
    for s in SETTINGS.iter() {
        let name = match s.flag() {
            Some(flag) => format!("`{flag}` / `{}`", s.name()),
            None => format!("`{}`", s.name()),
        };
        let default =
            if s.default_is_value() { format!("`{}`", s.default_text()) } else { cell(&s.default_text()) };
        table.push_str(&format!("| {} | {default} | {} |\n", cell(&name), cell(s.doc())));
    }
    table
}

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
            let name = s.name();
            let from_env = env(name).filter(|v| !v.trim().is_empty());
            let (value, from) = match (name, db_flag, from_env) {
                ("CORTEX_DB", Some(flag), env) if env.as_deref() != Some(flag) => (flag.to_string(), "--db"),
                (_, _, Some(v)) => (v, "environment"),
                (_, _, None) => (s.default_text(), "default"),
            };
            // A secret is shown as set, never as itself: doctor output gets pasted into issues.
            let value = if name.ends_with("_SECRET") && from != "default" {
                "***".into()
            } else {
                mask_password(&value)
            };
            SettingInForce { name, value, from }
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
    fn the_documented_settings_table_is_the_table_in_the_code() {
        let doc = include_str!("../../../../docs/CONFIGURATION.md");
        let section = doc.split("## Settings\n").nth(1).unwrap();
        let documented: String = section
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(
            documented == markdown_table(),
            "docs/CONFIGURATION.md's settings table differs from the code's; it should read:\n{}",
            markdown_table()
        );
    }

    #[test]
    fn every_default_is_accepted_and_every_example_of_a_bad_value_refused() {
        for s in SETTINGS.iter() {
            if s.default_is_value() {
                s.check(&s.default_text()).unwrap_or_else(|e| panic!("the default of {}: {e}", s.name()));
            }
            for bad in s.refuses() {
                let e = s.check(&bad).expect_err(&format!("{}={bad:?} accepted", s.name()));
                assert_eq!(e.name, s.name());
            }
        }
        // The typed defaults the code falls back to are the ones the docs show.
        let none = |_: &str| None;
        assert_eq!(DB_POOL_SIZE.get(none).unwrap().to_string(), DB_POOL_SIZE.default_text());
        assert_eq!(HTTP_RATE.get(none).unwrap(), HTTP_RATE.parse("50/s").unwrap());
        assert_eq!(EMBED_PRECISION.get(none).unwrap(), cortex_embed::Precision::Auto);
        assert_eq!(OPENAI_BASE_URL.get(none).unwrap(), OPENAI_BASE_URL.default_text());
        assert_eq!(
            NEAR_DUP_THRESHOLD.get(none).unwrap(),
            cortex_domain::near_duplicate::NearDuplicatePolicy::default().threshold
        );
        assert_eq!(cortex_store::PoolConfig::default().size as u64, DB_POOL_SIZE.kind.default);
    }

    #[test]
    fn check_environment_refuses_the_first_bad_value_and_ignores_blank_ones() {
        let env = |k: &str| match k {
            "CORTEX_LOG" => Some(" ".to_string()),
            "CORTEX_HTTP_RATE" => Some("fast".to_string()),
            "CORTEX_DB_POOL_SIZE" => Some("8".to_string()),
            _ => None,
        };
        let e = check_environment(env).unwrap_err();
        assert_eq!(e.name, "CORTEX_HTTP_RATE");
        assert!(e.to_string().starts_with("CORTEX_HTTP_RATE=\"fast\": "), "{e}");
        assert!(check_environment(|_| None).is_ok());
    }

    #[test]
    fn no_code_reads_a_cortex_variable_but_through_the_table() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        let mut direct = Vec::new();
        for path in rust_sources(root) {
            let text = std::fs::read_to_string(&path).unwrap();
            // `.env("CORTEX_…", …)` sets a child process's variable: not a read.
            for read in ["var(\"CORTEX_", "var_os(\"CORTEX_", "env(\"CORTEX_"] {
                for (at, _) in text.match_indices(read) {
                    if text[..at].ends_with('.') && read.starts_with("env") {
                        continue;
                    }
                    let line = text[..at].lines().count();
                    let plumbing =
                        PLUMBING.iter().any(|p| text[at + read.len() - "CORTEX_".len()..].starts_with(p));
                    if !plumbing && !is_test_code(&text, at) {
                        direct.push(format!("{}:{line}", path.display()));
                    }
                }
            }
        }
        assert!(direct.is_empty(), "read these through cortex_service::settings: {direct:?}");
    }

    /// Test and benchmark plumbing, not settings of the product.
    const PLUMBING: [&str; 5] = [
        "CORTEX_TEST_DATABASE_URL",
        "CORTEX_TEST_POOLED",
        "CORTEX_BENCH_POSTGRES",
        "CORTEX_BIN",
        "CORTEX_FUZZ",
    ];

    /// Every `.rs` file under the crates' `src` folders.
    fn rust_sources(root: &str) -> Vec<std::path::PathBuf> {
        let mut files = Vec::new();
        for krate in std::fs::read_dir(root).unwrap() {
            let mut stack = vec![krate.unwrap().path().join("src")];
            while let Some(dir) = stack.pop() {
                let Ok(entries) = std::fs::read_dir(&dir) else { continue };
                for entry in entries {
                    let path = entry.unwrap().path();
                    if path.is_dir() {
                        stack.push(path);
                    } else if path.extension().is_some_and(|e| e == "rs") {
                        files.push(path);
                    }
                }
            }
        }
        files
    }

    /// Whether `at` lies in a file's `#[cfg(test)]` module (by convention its last part).
    fn is_test_code(text: &str, at: usize) -> bool {
        text.find("#[cfg(test)]").is_some_and(|start| start < at)
    }

    #[test]
    fn every_cortex_variable_the_code_reads_is_declared() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        let mut unknown = Vec::new();
        for path in rust_sources(root) {
            let text = std::fs::read_to_string(&path).unwrap();
            for (at, _) in text.match_indices("CORTEX_") {
                let name: String = text[at..]
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || *c == '_' || c.is_ascii_digit())
                    .collect();
                let name = name.trim_end_matches('_');
                if name.len() > "CORTEX_".len()
                    && !is_test_code(&text, at)
                    && !SETTINGS.iter().any(|s| s.name() == name)
                    && !PLUMBING.iter().any(|p| name.starts_with(p))
                {
                    unknown.push(format!("{}: {name}", path.display()));
                }
            }
        }
        assert!(
            unknown.is_empty(),
            "declare these in SETTINGS (and docs/CONFIGURATION.md) or as plumbing: {unknown:?}"
        );
    }
}
