//! How a setting Cortex reads from its environment is declared — name, flag, kind (how its
//! text parses, its default and range) and doc — and the service's own settings, declared once
//! in [`table`]; the HTTP server's are declared the same way in `cortex_server::settings`. The
//! code reads each setting through its constant; [`check_environment`] parses every one at the
//! start of every command, so a bad value stops `cortex` naming the variable whichever command
//! runs. `cortex doctor` prints each with the value in force and where it came from
//! ([`in_force`]); docs/CONFIGURATION.md's settings table is [`markdown_table`] of them all
//! (tests in `cortex_server::settings` hold the docs and every `CORTEX_*` name the code reads
//! to the tables).

mod kind;
mod table;

use crate::config::ConfigError;
pub use kind::{
    Choice, Fraction, Kind, Optional, Parsed, Refusal, Setting, Whole, http_url, path, scope_value, text,
};
use serde::Serialize;
pub use table::*;

/// A setting seen without its value's type: what the checks, the docs and `cortex doctor`
/// need of every row of a table ([`SETTINGS`], the server's).
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

/// Parses every one of `settings` the environment sets; the first bad one is the error. Run at
/// the start of every command, before anything is opened, over every setting of the binary: a
/// setting only some command uses is refused by all of them, so a typo shows the first time,
/// not when that command finally runs.
pub fn check_environment(
    settings: impl IntoIterator<Item = &'static (dyn Declared + Sync)>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<(), ConfigError> {
    for setting in settings {
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

/// The settings table of docs/CONFIGURATION.md, made from `settings` (every setting of the
/// binary).
pub fn markdown_table(settings: impl IntoIterator<Item = &'static (dyn Declared + Sync)>) -> String {
    let mut table = String::from("| setting | default | meaning |\n|---|---|---|\n");
    for s in settings {
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

/// Each of `settings`' value and source. `db_flag` is the `--db` value the command line
/// resolved (clap fills it from `CORTEX_DB` too: it came from the flag when it differs from the
/// variable).
pub fn in_force(
    settings: impl IntoIterator<Item = &'static (dyn Declared + Sync)>,
    env: impl Fn(&str) -> Option<String>,
    db_flag: Option<&str>,
) -> Vec<SettingInForce> {
    settings
        .into_iter()
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

    #[test]
    fn the_typed_defaults_the_code_falls_back_to_are_the_ones_the_docs_show() {
        let none = |_: &str| None;
        assert_eq!(DB_POOL_SIZE.get(none).unwrap().to_string(), DB_POOL_SIZE.default_text());
        assert_eq!(EMBED_PRECISION.get(none).unwrap(), cortex_embed::Precision::Auto);
        assert_eq!(OPENAI_BASE_URL.get(none).unwrap(), OPENAI_BASE_URL.default_text());
        assert_eq!(
            NEAR_DUP_THRESHOLD.get(none).unwrap(),
            cortex_domain::near_duplicate::NearDuplicatePolicy::default().threshold
        );
        assert_eq!(cortex_store::PoolConfig::default().size as u64, DB_POOL_SIZE.kind.default);
    }
}
