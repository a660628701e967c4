//! The one error type for everything a caller can get wrong.
//!
//! Every refusal names the field (as a path like `items[2].data.rationale`) and carries a
//! `human_hint` that says how to fix it. [`ErrorCode`] is the one table of codes, shared by
//! the tools, the CLI and docs/TOOL_CONTRACT.md (a test holds the document to it).

use serde::Serialize;

/// Stable, machine-readable reason for a refusal. Serialized in snake_case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    MissingField,
    WrongType,
    InvalidValue,
    UnknownField,
    UnknownKind,
    TooLong,
    TooLarge,
    TooMany,
    Empty,
    ControlCharacter,
    NotFound,
    KindMismatch,
    BadCursor,
    /// Valid input that a governance rule refuses (an accepted decision's rationale, …).
    BusinessRuleBlocked,
    /// A scope (or an item named by id) outside what the caller's API key may reach.
    ForbiddenScope,
    /// A tool the caller's API key's role does not include (`memory_store` with a read key).
    ForbiddenRole,
    /// A call that ran past the server's time limit and was abandoned.
    Timeout,
    /// The server's embedder cannot be loaded or reached: its configuration, not the input.
    EmbedderUnavailable,
    /// Not the caller's input: the server failed (the message says how).
    Internal,
}

impl ErrorCode {
    /// Every code, in the order the tool contract lists them.
    pub const ALL: [ErrorCode; 19] = [
        ErrorCode::MissingField,
        ErrorCode::WrongType,
        ErrorCode::InvalidValue,
        ErrorCode::UnknownField,
        ErrorCode::UnknownKind,
        ErrorCode::TooLong,
        ErrorCode::TooLarge,
        ErrorCode::TooMany,
        ErrorCode::Empty,
        ErrorCode::ControlCharacter,
        ErrorCode::NotFound,
        ErrorCode::KindMismatch,
        ErrorCode::BadCursor,
        ErrorCode::BusinessRuleBlocked,
        ErrorCode::ForbiddenScope,
        ErrorCode::ForbiddenRole,
        ErrorCode::Timeout,
        ErrorCode::EmbedderUnavailable,
        ErrorCode::Internal,
    ];

    /// The code as it is sent: `missing_field`, …
    pub fn as_str(self) -> &'static str {
        self.entry().0
    }

    /// What the code means, as the tool contract's table says it.
    pub fn meaning(self) -> &'static str {
        self.entry().1
    }

    /// The one table of codes and meanings.
    fn entry(self) -> (&'static str, &'static str) {
        match self {
            ErrorCode::MissingField => ("missing_field", "a required field or argument is absent"),
            ErrorCode::WrongType => ("wrong_type", "a value has the wrong JSON type"),
            ErrorCode::InvalidValue => ("invalid_value", "a value is outside what the field accepts"),
            ErrorCode::UnknownField => ("unknown_field", "a field or argument the server does not know"),
            ErrorCode::UnknownKind => ("unknown_kind", "not one of the 16 kinds or their aliases"),
            ErrorCode::TooLong => ("too_long", "a text is longer than its limit"),
            ErrorCode::TooLarge => ("too_large", "a value or message is larger than its limit in bytes"),
            ErrorCode::TooMany => ("too_many", "a list has more entries than its limit"),
            ErrorCode::Empty => ("empty", "a value that must not be empty is"),
            ErrorCode::ControlCharacter => {
                ("control_character", "a text holds a NUL or another control character")
            }
            ErrorCode::NotFound => ("not_found", "an id names no live item"),
            ErrorCode::KindMismatch => {
                ("kind_mismatch", "an item named by id is of another kind than required")
            }
            ErrorCode::BadCursor => ("bad_cursor", "a cursor from another query, or damaged"),
            ErrorCode::BusinessRuleBlocked => {
                ("business_rule_blocked", "valid input that a governance rule refuses")
            }
            ErrorCode::ForbiddenScope => {
                ("forbidden_scope", "a scope outside what the caller's API key may reach")
            }
            ErrorCode::ForbiddenRole => {
                ("forbidden_role", "a tool the caller's API key's role does not include")
            }
            ErrorCode::Timeout => {
                ("timeout", "a call that ran past the server's time limit and was abandoned")
            }
            ErrorCode::EmbedderUnavailable => (
                "embedder_unavailable",
                "the server's embedder is misconfigured or unreachable, not the input",
            ),
            ErrorCode::Internal => ("internal", "a server-side failure, not the caller's input"),
        }
    }
}

/// A refusal of one item or one request, with enough detail for an agent to correct it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ValidationError {
    pub code: ErrorCode,
    pub field: String,
    pub message: String,
    pub human_hint: String,
}

impl ValidationError {
    pub fn new(
        code: ErrorCode,
        field: impl Into<String>,
        message: impl Into<String>,
        human_hint: impl Into<String>,
    ) -> Self {
        Self { code, field: field.into(), message: message.into(), human_hint: human_hint.into() }
    }

    pub fn missing(field: impl Into<String>, hint: impl Into<String>) -> Self {
        let field = field.into();
        Self::new(ErrorCode::MissingField, field.clone(), format!("`{field}` is required"), hint)
    }

    /// The value at `field` has the wrong JSON type. A nested validator passes `""` for the
    /// value it was given (its caller adds the path with [`ValidationError::under`]), so the
    /// text then says "this value" rather than naming an empty field.
    pub fn wrong_type(field: impl Into<String>, expected: &str, got: &serde_json::Value) -> Self {
        let field = field.into();
        if field.is_empty() {
            return Self::new(
                ErrorCode::WrongType,
                field,
                format!("this value must be {expected}, got {}", json_type_name(got)),
                format!("send {expected} here"),
            );
        }
        Self::new(
            ErrorCode::WrongType,
            field.clone(),
            format!("`{field}` must be {expected}, got {}", json_type_name(got)),
            format!("send `{field}` as {expected}"),
        )
    }

    /// Prefixes the field path, so nested validators can report paths relative to themselves.
    pub fn under(mut self, prefix: &str) -> Self {
        self.field = if self.field.is_empty() {
            prefix.to_string()
        } else if self.field.starts_with('[') {
            format!("{prefix}{}", self.field)
        } else {
            format!("{prefix}.{}", self.field)
        };
        self
    }
}

/// A key or value the caller sent, as a field path and a message can show it: itself when it
/// is plain text, else quoted with its control characters escaped (an empty key is `""`, an ANSI escape
/// is shown, not run) and cut to 64 characters.
pub fn shown(key: &str) -> String {
    let plain = !key.is_empty()
        && key.chars().count() <= 64
        && !key.chars().any(|c| c.is_control() || c == '`' || c.is_whitespace());
    if plain {
        return key.to_string();
    }
    let cut: String = key.chars().take(64).collect();
    format!("{cut:?}")
}

/// The JSON type of a value, as an agent would name it.
pub fn json_type_name(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod code_table {
    use super::ErrorCode;

    #[test]
    fn every_code_is_sent_as_its_table_name() {
        for code in ErrorCode::ALL {
            assert_eq!(serde_json::to_value(code).unwrap(), code.as_str());
        }
    }

    #[test]
    fn the_tool_contract_lists_every_code_with_its_meaning() {
        let doc = include_str!("../../../docs/TOOL_CONTRACT.md");
        let rows: Vec<String> = doc.lines().filter(|l| l.starts_with("| `")).map(str::to_string).collect();
        for code in ErrorCode::ALL {
            let row = format!("| `{}` | {} |", code.as_str(), code.meaning());
            assert!(rows.contains(&row), "docs/TOOL_CONTRACT.md lacks the row {row}");
        }
    }
}
