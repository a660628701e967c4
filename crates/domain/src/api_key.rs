//! API keys of the HTTP team server: what a key may do (its [`Role`]), how fast (its
//! [`Rate`]), how it is named, and the shape of the token a client sends. The secret itself
//! is made and hashed by the service; only its SHA-256 is ever stored.

use crate::error::{ErrorCode, ValidationError};
use serde::Serialize;

/// What the holder of a key may do. Each role includes the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// `memory_find`, listing tools, reading resources, getting prompts.
    Read,
    /// Also `memory_store` (every operation: insert, update, delete, supersede).
    Write,
    /// Also the server's metrics (`GET /metrics`) from any address.
    Admin,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Read, Role::Write, Role::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Read => "read",
            Role::Write => "write",
            Role::Admin => "admin",
        }
    }

    /// `field` names where the text came from (`--role`, a stored row).
    pub fn parse(text: &str, field: &str) -> Result<Role, ValidationError> {
        Role::ALL.into_iter().find(|r| r.as_str() == text.trim()).ok_or_else(|| {
            ValidationError::new(
                ErrorCode::InvalidValue,
                field,
                format!("`{text}` is not a role"),
                "use read (memory_find only), write (memory_find and memory_store) or admin (also /metrics)",
            )
        })
    }

    /// Whether this role includes `needed`.
    pub fn covers(self, needed: Role) -> bool {
        self >= needed
    }
}

/// Requests per second a key may make on average; a burst of up to one second's worth
/// (at least one request) is allowed on top of an idle bucket.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rate {
    pub per_second: f64,
}

/// The fastest rate a key may be given: beyond it the limit means nothing.
pub const MAX_RATE_PER_SECOND: f64 = 100_000.0;

impl Rate {
    /// `N/s` (N a positive number, fractions allowed: `0.5/s` is one request every two
    /// seconds) or `N/min`.
    pub fn parse(text: &str, field: &str) -> Result<Rate, ValidationError> {
        let bad = |problem: String| {
            ValidationError::new(
                ErrorCode::InvalidValue,
                field,
                problem,
                format!(
                    "write a rate as requests per second or minute: `20/s`, `0.5/s` or `120/min` (at most {MAX_RATE_PER_SECOND}/s)"
                ),
            )
        };
        let text = text.trim();
        let (number, per) = text.split_once('/').ok_or_else(|| bad(format!("`{text}` is not a rate")))?;
        let seconds = match per.trim() {
            "s" | "sec" | "second" => 1.0,
            "m" | "min" | "minute" => 60.0,
            other => return Err(bad(format!("`{other}` in `{text}` is not a unit of time"))),
        };
        let n: f64 =
            number.trim().parse().map_err(|_| bad(format!("`{number}` in `{text}` is not a number")))?;
        let per_second = n / seconds;
        if !per_second.is_finite() || per_second <= 0.0 || per_second > MAX_RATE_PER_SECOND {
            return Err(bad(format!("`{text}` is not a rate above zero")));
        }
        Ok(Rate { per_second })
    }

    /// How many requests an idle bucket holds.
    pub fn burst(self) -> f64 {
        self.per_second.max(1.0)
    }
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/s", self.per_second)
    }
}

/// How long after its revocation a key can still be restored (`cortex keys restore`, the web
/// UI's Undo), by the database's clock; after it, never. The migrations' key guard holds the
/// same figure (`key_restore` migration), so no path around the service restores an older one.
pub const RESTORE_WINDOW_MS: i64 = 10 * 60 * 1000;
/// The window in a person's words.
pub const RESTORE_WINDOW_TEXT: &str = "10 minutes";
/// How far ahead of the database's clock a revocation may be stamped and still be restored:
/// the writer's clock and the database's agree to well within it, and a revocation stamped
/// further ahead (planted to stay restorable) never is.
pub const RESTORE_CLOCK_SLACK_MS: i64 = 60 * 1000;

/// Key names: what logs, `cortex keys list` and `revoke` show; never secret.
pub const MAX_NAME_CHARS: usize = 64;

pub fn check_name(name: &str, field: &str) -> Result<String, ValidationError> {
    let ok = !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@'));
    if ok {
        Ok(name.to_string())
    } else {
        Err(ValidationError::new(
            ErrorCode::InvalidValue,
            field,
            format!("`{}` is not a key name", crate::error::shown(name)),
            format!(
                "use 1–{MAX_NAME_CHARS} letters, digits and - _ . @ (e.g. the person or agent it is for: `ci-bot`, `ana@laptop`)"
            ),
        ))
    }
}

/// The token a client sends is `cortex_<lookup>_<secret>`: `lookup` (16 hex digits) finds the
/// key's row without the secret; `secret` (64 hex digits, 32 random bytes) is checked against
/// the stored hash in constant time.
pub const TOKEN_PREFIX: &str = "cortex_";
pub const LOOKUP_HEX: usize = 16;
pub const SECRET_HEX: usize = 64;

/// The token made of a lookup id and a secret.
pub fn token(lookup: &str, secret: &str) -> String {
    format!("{TOKEN_PREFIX}{lookup}_{secret}")
}

/// `(lookup, secret)` of a well-formed token; `None` for anything else.
pub fn parse_token(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix(TOKEN_PREFIX)?;
    let (lookup, secret) = rest.split_once('_')?;
    let hex = |s: &str, n: usize| {
        s.len() == n && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    (hex(lookup, LOOKUP_HEX) && hex(secret, SECRET_HEX)).then_some((lookup, secret))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_include_the_ones_before_them() {
        assert!(Role::Admin.covers(Role::Write) && Role::Write.covers(Role::Read));
        assert!(!Role::Read.covers(Role::Write));
        assert_eq!(Role::parse(" write ", "--role").unwrap(), Role::Write);
        let e = Role::parse("owner", "--role").unwrap_err();
        assert_eq!((e.field.as_str(), e.code), ("--role", ErrorCode::InvalidValue));
        assert!(e.human_hint.contains("read"));
    }

    #[test]
    fn rates_are_per_second_or_minute_and_positive() {
        assert_eq!(Rate::parse("20/s", "--rate").unwrap().per_second, 20.0);
        assert_eq!(Rate::parse("120/min", "--rate").unwrap().per_second, 2.0);
        assert_eq!(Rate::parse("0.5/s", "--rate").unwrap().burst(), 1.0);
        for bad in ["20", "0/s", "-1/s", "x/s", "5/h", "inf/s", "1e9/s"] {
            let e = Rate::parse(bad, "--rate").unwrap_err();
            assert_eq!(e.field, "--rate", "{bad}");
            assert!(e.human_hint.contains("20/s"), "{bad}");
        }
    }

    #[test]
    fn names_are_short_plain_words() {
        assert!(check_name("ci-bot", "--name").is_ok());
        assert!(check_name("ana@laptop.1", "--name").is_ok());
        for bad in ["", "a b", "x\n", &"n".repeat(65)] {
            assert_eq!(check_name(bad, "--name").unwrap_err().field, "--name");
        }
    }

    #[test]
    fn tokens_parse_only_in_their_exact_shape() {
        let lookup = "0123456789abcdef";
        let secret = "ab".repeat(32);
        let t = token(lookup, &secret);
        assert_eq!(parse_token(&t), Some((lookup, secret.as_str())));
        assert_eq!(parse_token(&t.to_uppercase()), None);
        assert_eq!(parse_token(&t[..t.len() - 1]), None);
        assert_eq!(parse_token(&format!("{t}0")), None);
        assert_eq!(parse_token("Bearer x"), None);
        assert_eq!(parse_token(&format!("cortex_{lookup}{secret}")), None);
    }
}
