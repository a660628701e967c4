//! Rules of our own, for credentials gitleaks' default rules leave to its generic rule or do
//! not find: a password inside a URL (`postgres://user:password@host`), `password=` and
//! `secret:` assignments whatever the value's entropy, and an AWS secret access key named as
//! one. Placeholders (`$PASSWORD`, `<password>`, `{{secret}}`, `%s`, `***`, `changeme`, the
//! word `password` itself) are not secrets.

use super::RuleSpec;

/// Values that stand for a secret in documentation and templates, not one (`\xE2\x80\xA6` is
/// `…`, the elision a document writes for a value it leaves out; the rules match bytes).
const PLACEHOLDER: &str = r"(?i)^(?:[$<{%*\[(].*|.*[>}\])]|password|passwd|pass|secret|changeme|example|redacted|x{3,}|\*+|\.\.\.+|(?:\xE2\x80\xA6)+)$";

pub(super) const RULES: &[RuleSpec] = &[
    RuleSpec {
        id: "aws-secret-access-key",
        regex: r#"(?i)\baws_?(?:secret_?access_?key|secret_?key|secret)\b[ \t]*["']?[ \t]*(?:=|:|=>)[ \t]*["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"#,
        keywords: &["aws"],
        entropy: 3.0,
        group: Some(1),
        allow_secret: &[r"EXAMPLEKEY$"],
        allow_match: &[],
        stopwords: &[],
    },
    RuleSpec {
        id: "password-in-url",
        regex: r#"\b[a-zA-Z][a-zA-Z0-9+.-]{1,30}://[^\s:/@'"]{0,128}:([^\s/@'"]{3,256})@[a-zA-Z0-9.\[\]-]"#,
        keywords: &["://"],
        entropy: 0.0,
        group: Some(1),
        allow_secret: &[PLACEHOLDER],
        allow_match: &[],
        stopwords: &[],
    },
    RuleSpec {
        id: "password-assignment",
        regex: r#"(?i)\b(?:password|passwd|pwd|secret|client_secret|secret_key)\b["']?[ \t]*(?:=|:|=>)[ \t]*["']?([^\s"'\x60,;]{6,200})"#,
        keywords: &["passw", "pwd", "secret"],
        entropy: 2.0,
        group: Some(1),
        allow_secret: &[PLACEHOLDER, r"^[a-zA-Z_.-]+$"],
        allow_match: &[],
        stopwords: &[],
    },
];
