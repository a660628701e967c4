//! Credentials in text, found and replaced before anything keeps the text: [`redact`] takes a
//! field's text and gives it back with each secret replaced by a marker naming its rule
//! (`[redacted:github-pat]`), `<private>…</private>` spans removed whole, and the findings
//! (rule and byte span in the text given). Pure: no I/O, no state but the compiled rules.
//!
//! The rules are gitleaks' (`gitleaks.rs`, MIT, its source and commit named there) for the
//! tokens of cloud, VCS and CI, chat, payment and model providers, private key blocks, JWTs and
//! high-entropy values next to secret-like names, beside a few of our own (`own.rs`) for what
//! gitleaks has no rule for: a password inside a URL, `password=`/`secret:` assignments, an
//! AWS secret access key named as one. A rule runs as gitleaks runs it: only when the text
//! holds one of its keywords (case-insensitive), then its regex; the secret is the first
//! capture group that matched (else the whole match), kept only if its Shannon entropy reaches
//! the rule's and no allowlist regex or stopword of the rule matches it. Regexes are ASCII
//! (gitleaks' are Go's RE2, where `\w` and `\s` are ASCII).
//!
//! Secrets that overlap are one span, named by the more specific rule (the order of
//! [`rules`]); a private span takes in every secret inside it.

mod gitleaks;
mod item;
mod own;
#[cfg(test)]
mod tests;

pub use item::{ItemFinding, ItemTexts, redact_item, redact_texts, rederive};

use regex::bytes::{Regex, RegexBuilder};
use std::borrow::Cow;
use std::sync::LazyLock;

/// The rule of a `<private>…</private>` span: removed, not marked.
pub const PRIVATE: &str = "private";

/// One secret found: its rule's id and where it stood in the text given (bytes, `start..end`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub rule: &'static str,
    pub start: usize,
    pub end: usize,
}

/// A text with its secrets replaced, and what was found. `text` borrows the text given when
/// nothing was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redaction<'a> {
    pub text: Cow<'a, str>,
    pub findings: Vec<Finding>,
}

/// What replaces a secret found by `rule`.
pub fn marker(rule: &str) -> String {
    format!("[redacted:{rule}]")
}

/// `text` with every secret replaced by [`marker`] of its rule and every private span removed.
pub fn redact(text: &str) -> Redaction<'_> {
    let findings = scan(text);
    if findings.is_empty() {
        return Redaction { text: Cow::Borrowed(text), findings };
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for f in &findings {
        out.push_str(&text[at..f.start]);
        if f.rule != PRIVATE {
            out.push_str(&marker(f.rule));
        }
        at = f.end;
    }
    out.push_str(&text[at..]);
    Redaction { text: Cow::Owned(out), findings }
}

/// The secrets and private spans of `text`, in order, none overlapping.
pub fn scan(text: &str) -> Vec<Finding> {
    let bytes = text.as_bytes();
    let lower = text.to_ascii_lowercase();
    let mut found: Vec<(usize, Finding)> = Vec::new();
    for m in PRIVATE_SPAN.find_iter(bytes) {
        // `<private>` in backticks is the tag named in prose or docs, not a private span.
        if m.start() > 0 && bytes[m.start() - 1] == b'`' {
            continue;
        }
        found.push((0, Finding { rule: PRIVATE, start: m.start(), end: m.end() }));
    }
    for (rank, rule) in rules().iter().enumerate() {
        if !rule.spec.keywords.is_empty() && !rule.spec.keywords.iter().any(|k| lower.contains(k)) {
            continue;
        }
        for caps in rule.regex.captures_iter(bytes) {
            let Some(whole) = caps.get(0) else { continue };
            let secret = match rule.spec.group {
                Some(g) => caps.get(g),
                None => (1..caps.len()).find_map(|g| caps.get(g)).or(Some(whole)),
            };
            let Some(secret) = secret.filter(|s| !s.is_empty()) else { continue };
            if rule.keeps(secret.as_bytes(), whole.as_bytes()) {
                let (start, end) = snap(text, secret.start(), secret.end());
                found.push((rank + 1, Finding { rule: rule.spec.id, start, end }));
            }
        }
    }
    merge(found)
}

/// The rules in the order they name a span: the specific ones first, the generic one last.
fn rules() -> &'static [Rule] {
    &RULES
}

/// Overlapping spans become one, named by the rule of lowest rank (private first).
fn merge(mut found: Vec<(usize, Finding)>) -> Vec<Finding> {
    found.sort_by_key(|(rank, f)| (f.start, *rank));
    let mut merged: Vec<(usize, Finding)> = Vec::new();
    for (rank, f) in found {
        match merged.last_mut() {
            Some((last_rank, last)) if f.start < last.end => {
                last.end = last.end.max(f.end);
                if rank < *last_rank {
                    *last_rank = rank;
                    last.rule = f.rule;
                }
            }
            _ => merged.push((rank, f)),
        }
    }
    merged.into_iter().map(|(_, f)| f).collect()
}

/// A span widened to whole characters (a byte class may stop inside one).
fn snap(text: &str, mut start: usize, mut end: usize) -> (usize, usize) {
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    while end < text.len() && !text.is_char_boundary(end) {
        end += 1;
    }
    (start, end)
}

/// Shannon entropy of `bytes`, in bits per byte.
pub fn entropy(bytes: &[u8]) -> f64 {
    if bytes.is_empty() {
        return 0.0;
    }
    let mut counts = [0usize; 256];
    for b in bytes {
        counts[*b as usize] += 1;
    }
    let n = bytes.len() as f64;
    counts.iter().filter(|c| **c > 0).map(|c| *c as f64 / n).map(|p| -p * p.log2()).sum()
}

/// A rule as written: gitleaks' fields.
pub(crate) struct RuleSpec {
    /// The marker's name.
    pub id: &'static str,
    pub regex: &'static str,
    /// Lowercase; the rule runs only on a text holding one (none: always).
    pub keywords: &'static [&'static str],
    /// The least Shannon entropy (bits per byte) of a secret.
    pub entropy: f64,
    /// The capture group that is the secret (none: the first that matched, else the whole).
    pub group: Option<usize>,
    /// A secret matching one of these is not one.
    pub allow_secret: &'static [&'static str],
    /// A whole match matching one of these is not one.
    pub allow_match: &'static [&'static str],
    /// A secret holding one of these (lowercase) is a word, not a secret.
    pub stopwords: &'static [&'static str],
}

struct Rule {
    spec: &'static RuleSpec,
    regex: Regex,
    allow_secret: Vec<Regex>,
    allow_match: Vec<Regex>,
}

impl Rule {
    fn keeps(&self, secret: &[u8], whole: &[u8]) -> bool {
        if entropy(secret) < self.spec.entropy {
            return false;
        }
        if self.allow_secret.iter().any(|r| r.is_match(secret))
            || self.allow_match.iter().any(|r| r.is_match(whole))
        {
            return false;
        }
        if !self.spec.stopwords.is_empty() {
            let lower = secret.to_ascii_lowercase();
            let text = String::from_utf8_lossy(&lower);
            if self.spec.stopwords.iter().any(|w| text.contains(w)) {
                return false;
            }
        }
        true
    }
}

fn compile(pattern: &str) -> Regex {
    // The patterns are this module's constants, each compiled by the tests: a failure here is
    // a bug in a rule, caught before a build ships.
    RegexBuilder::new(pattern)
        .unicode(false)
        .size_limit(64 << 20)
        .build()
        .unwrap_or_else(|e| panic!("secret rule pattern {pattern:?} does not compile: {e}"))
}

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    gitleaks::RULES
        .iter()
        .chain(own::RULES)
        .chain(gitleaks::GENERIC)
        .map(|spec| Rule {
            spec,
            regex: compile(spec.regex),
            allow_secret: spec.allow_secret.iter().map(|p| compile(p)).collect(),
            allow_match: spec.allow_match.iter().map(|p| compile(p)).collect(),
        })
        .collect()
});

/// `<private>…</private>`, or an unclosed `<private>` to the end of the text.
static PRIVATE_SPAN: LazyLock<Regex> = LazyLock::new(|| compile(r"(?is)<private>(?:.*?</private>|.*\z)"));
