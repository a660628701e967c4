//! The query parser: turns any user text into terms a lexical index can match, without ever
//! producing a syntax error.
//!
//! Accepted syntax: `"exact phrase"`, `-excluded`, `prefix*`. Everything else is split into
//! words on non-alphanumeric characters, as the index tokenizer does; English stopwords and
//! the bare operators `AND`, `OR`, `NOT` are dropped, since ranking already rewards hits that
//! match more words. Backends render the parsed form in their own syntax (FTS5, tsquery).

use crate::error::{ErrorCode, ValidationError};
use crate::limits::MAX_QUERY_CHARS;

/// Terms beyond this are ignored: they cost index time and barely move ranking.
pub const MAX_TERMS: usize = 32;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Term {
    Word(String),
    Prefix(String),
    Phrase(Vec<String>),
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedQuery {
    /// Terms a hit should match (any of them; more is better).
    pub include: Vec<Term>,
    /// Words a hit must not contain.
    pub exclude: Vec<String>,
    /// Words of `include` that typo correction put in place of a typed word no item holds
    /// (`deep`): the lexical index weighs them at [`crate::spelling::CORRECTED_WEIGHT`] of a
    /// typed word. Empty for a query as the user typed it.
    pub corrected: Vec<String>,
}

impl ParsedQuery {
    /// Every word of the positive terms, for coverage and spelling suggestions.
    pub fn words(&self) -> Vec<&str> {
        let mut out = Vec::new();
        for term in &self.include {
            match term {
                Term::Word(w) | Term::Prefix(w) => out.push(w.as_str()),
                Term::Phrase(ws) => out.extend(ws.iter().map(String::as_str)),
            }
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.include.is_empty()
    }
}

/// Checks the query's length: 1 to 1,000 characters, not only whitespace.
pub fn validate_query(query: &str) -> Result<(), ValidationError> {
    if query.trim().is_empty() {
        return Err(ValidationError::new(
            ErrorCode::Empty,
            "query",
            "`query` is empty",
            "say what you are looking for in a few words, or pass `ids` to fetch items by id",
        ));
    }
    let count = query.chars().count();
    if count > MAX_QUERY_CHARS {
        return Err(ValidationError::new(
            ErrorCode::TooLong,
            "query",
            format!("`query` is {count} characters; at most {MAX_QUERY_CHARS}"),
            "use the key words of what you are looking for, not a whole document",
        ));
    }
    Ok(())
}

/// Parses any text. Never fails: text with no searchable word gives an empty query.
pub fn parse_query(text: &str) -> ParsedQuery {
    let mut parsed = ParsedQuery::default();
    let mut rest = text;
    while !rest.is_empty() && parsed.include.len() < MAX_TERMS {
        rest = rest.trim_start();
        if let Some(after_quote) = rest.strip_prefix('"') {
            let (inside, remainder) = match after_quote.find('"') {
                Some(end) => (&after_quote[..end], &after_quote[end + 1..]),
                None => (after_quote, ""),
            };
            let words = words_of(inside);
            match words.len() {
                0 => {}
                1 => parsed.include.push(Term::Word(words.into_iter().next().unwrap_or_default())),
                _ => parsed.include.push(Term::Phrase(words)),
            }
            rest = remainder;
            continue;
        }
        let end = rest.find(|c: char| c.is_whitespace() || c == '"').unwrap_or(rest.len());
        let token = &rest[..end];
        rest = &rest[end..];
        if token.is_empty() {
            continue;
        }
        if let Some(excluded) = token.strip_prefix('-') {
            parsed.exclude.extend(words_of(excluded));
            continue;
        }
        let is_prefix = token.ends_with('*');
        let words = words_of(token);
        let last = words.len().saturating_sub(1);
        for (i, word) in words.into_iter().enumerate() {
            if is_prefix && i == last && word.chars().count() >= 2 {
                parsed.include.push(Term::Prefix(word));
            } else if !is_stopword(&word) {
                parsed.include.push(Term::Word(word));
            }
        }
    }
    parsed.include.truncate(MAX_TERMS);
    parsed.include.dedup();
    parsed
}

/// Splits on anything that is not a letter or a digit, lowercased.
/// Whether the text asks something: it ends with `?`, or starts with a question word
/// ("why", "how", "what", "which", "where", "when", "who", "should", "can", "does", "is" …).
pub fn is_question(text: &str) -> bool {
    const OPENERS: &[&str] = &[
        "why", "how", "what", "which", "where", "when", "who", "whom", "whose", "should", "can", "could",
        "does", "do", "did", "is", "are", "was", "were", "will", "would",
    ];
    let text = text.trim();
    let first = text.split(|c: char| !c.is_alphanumeric()).find(|w| !w.is_empty()).unwrap_or("");
    text.ends_with('?') || OPENERS.iter().any(|o| first.eq_ignore_ascii_case(o))
}

pub fn words_of(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "did", "do", "does", "for", "from", "had", "has",
    "have", "how", "i", "if", "in", "into", "is", "it", "its", "not", "of", "on", "or", "our", "so", "that",
    "the", "their", "then", "there", "these", "this", "those", "to", "was", "we", "were", "what", "when",
    "where", "which", "who", "why", "will", "with", "you",
];

pub fn is_stopword(word: &str) -> bool {
    STOPWORDS.binary_search(&word).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_by_their_first_word_or_mark() {
        for q in [
            "why tantivy instead of SQLite FTS5",
            "How are API keys stored",
            "retry on 503?",
            "  Which suite owns what",
        ] {
            assert!(is_question(q), "{q}");
        }
        for q in ["tantivy FTS5", "API keys", "whyever not", "\"how\" docs"] {
            assert!(!is_question(q) || q.starts_with('"'), "{q}");
        }
    }

    #[test]
    fn stopword_list_is_sorted_for_binary_search() {
        assert!(STOPWORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn parses_phrases_exclusions_and_prefixes() {
        let q = parse_query(r#"why did we drop "redis sessions" -memcached deploy* AND"#);
        assert_eq!(
            q.include,
            vec![
                Term::Word("drop".into()),
                Term::Phrase(vec!["redis".into(), "sessions".into()]),
                Term::Prefix("deploy".into()),
            ]
        );
        assert_eq!(q.exclude, vec!["memcached".to_string()]);
    }

    #[test]
    fn hostile_text_never_fails() {
        for text in
            ["\"unbalanced", "-", "*", "foo:bar", "(", "AND", "OR NOT", "🚀🔥", "\"\"", "a\"b\"c", "-\"x y\""]
        {
            let q = parse_query(text);
            assert!(q.include.len() <= MAX_TERMS, "{text}");
        }
        assert_eq!(parse_query("foo:bar").words(), vec!["foo", "bar"]);
        assert!(parse_query("🚀🔥").is_empty());
        let long = "word ".repeat(200);
        assert!(parse_query(&long).include.len() <= MAX_TERMS);
    }

    #[test]
    fn query_length_is_bounded() {
        assert_eq!(validate_query("  ").unwrap_err().field, "query");
        assert!(validate_query(&"a".repeat(1000)).is_ok());
        assert_eq!(validate_query(&"a".repeat(1001)).unwrap_err().code, ErrorCode::TooLong);
    }
}
