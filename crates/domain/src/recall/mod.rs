//! Recall for a prompt (`cortex recall`, an agent's prompt-submit hook): which of a prompt's
//! matches are relevant enough to put in front of the agent unasked ([`select`]), how they are
//! cut to a small budget ([`render`]), and what a session has seen and spent ([`session`]).
//!
//! A hook that injects memories into every prompt costs context on every turn, and an
//! unrelated memory is worse than none: it pulls the agent off the task. So a prompt about
//! nothing stored must inject nothing, and a prompt about something stored few items, the
//! most likely first.
//!
//! - [`select`]: the relevance rule, lexical (the share of the prompt's words a match holds,
//!   [`strength`]) or hybrid (the prompt's resemblance to the memory, then the fused ranking)
//! - [`render`]: the text an agent reads: kind, title, passage, age and id of each memory
//! - [`session`]: what one session was shown already, and the tokens it spent

pub mod render;
pub mod select;
pub mod session;

pub use render::{Injection, render};
pub use select::{DEFAULT_FLOOR, Hybrid, Rule, select};

use crate::query::words_of;
use crate::text::truncate_chars;

/// The default budget of what is printed per prompt, in tokens (counted as characters / 3).
pub const DEFAULT_BUDGET_TOKENS: usize = 400;
/// The default ceiling of what one session is given, in tokens: past it, nothing more is
/// injected until the session is compacted or cleared.
pub const DEFAULT_SESSION_BUDGET_TOKENS: usize = 4_000;
/// At most this many memories per prompt.
pub const MAX_RECALLED: usize = 3;
/// Candidates weighed per prompt.
pub const POOL: usize = 10;
/// A long prompt's share is counted against this many of its words: a memory that holds six
/// meaningful words of a pasted paragraph is as strong a match as one holding six of a
/// six-word question.
pub const WORDS_COUNTED: usize = 6;
/// A prompt's share is counted against at least this many words: one or two meaningful words
/// ("tell me a joke", "fix the function") say too little of what the prompt is about, and a
/// memory that happens to hold them is not thereby relevant.
pub const MIN_WORDS_COUNTED: usize = 3;
/// The prompt's first characters are searched (a pasted log can be megabytes).
pub const MAX_PROMPT_CHARS: usize = 2_000;

/// Words of requests to an agent that say what to do, not what about: left out of the
/// search and of the share, so "please write me a function" matches nothing by itself.
const FILLER: &[&str] = &[
    "about",
    "add",
    "after",
    "again",
    "all",
    "also",
    "am",
    "any",
    "anything",
    "back",
    "been",
    "before",
    "being",
    "can",
    "change",
    "check",
    "could",
    "create",
    "currently",
    "each",
    "explain",
    "find",
    "fix",
    "get",
    "give",
    "go",
    "going",
    "good",
    "help",
    "here",
    "hey",
    "hi",
    "just",
    "know",
    "last",
    "let",
    "like",
    "look",
    "make",
    "me",
    "more",
    "most",
    "much",
    "my",
    "need",
    "new",
    "next",
    "no",
    "now",
    "ok",
    "okay",
    "one",
    "only",
    "other",
    "out",
    "over",
    "please",
    "put",
    "read",
    "really",
    "right",
    "run",
    "say",
    "see",
    "should",
    "show",
    "some",
    "something",
    "still",
    "sure",
    "take",
    "tell",
    "than",
    "thank",
    "thanks",
    "them",
    "they",
    "thing",
    "think",
    "try",
    "up",
    "us",
    "use",
    "using",
    "very",
    "want",
    "way",
    "well",
    "would",
    "write",
    "yes",
    "yet",
    "your",
];

/// The prompt as a plain query: its first [`MAX_PROMPT_CHARS`] characters as words (no quote,
/// prefix or exclusion syntax: a prompt is not a query), without filler words, each once.
pub fn prompt_query(prompt: &str) -> String {
    let mut seen: Vec<String> = Vec::new();
    for word in words_of(truncate_chars(prompt, MAX_PROMPT_CHARS).0) {
        if FILLER.binary_search(&word.as_str()).is_err() && !seen.contains(&word) {
            seen.push(word);
        }
    }
    seen.join(" ")
}

/// How strongly a memory matches: the share of the query's words (`words`, stopwords already
/// out) found in it, counted against at least [`MIN_WORDS_COUNTED`] and at most
/// [`WORDS_COUNTED`] words. A word is found when
/// the text holds its first characters (all but a short suffix), as a hit's coverage counts.
pub fn strength(words: &[&str], text_lower: &str) -> f64 {
    if words.is_empty() {
        return 0.0;
    }
    let found = words.iter().filter(|w| text_lower.contains(stem_of(w).as_str())).count();
    (found as f64 / words.len().clamp(MIN_WORDS_COUNTED, WORDS_COUNTED) as f64).min(1.0)
}

fn stem_of(word: &str) -> String {
    let n = word.chars().count();
    let keep = if n > 5 { n - 2 } else { n };
    word.chars().take(keep).collect()
}

/// One match of the prompt, as the hook may show it.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub id: String,
    pub kind: String,
    pub title: String,
    /// The passage around its best match.
    pub passage: String,
    /// The share of the prompt's words it holds ([`strength`]).
    pub strength: f64,
    /// Its relevance among the prompt's candidates, 0–1 (the best: 1): the find's fused
    /// relevance, or its BM25 over the best's when the lexical route ran alone.
    pub relevance: f64,
    /// Its cosine with the prompt, when the dense route ran (`None`: lexical only, or no
    /// vector).
    pub cosine: Option<f64>,
    /// When it was last updated (epoch milliseconds), for its age.
    pub updated_at: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filler_list_is_sorted_for_binary_search() {
        assert!(FILLER.windows(2).all(|w| w[0] < w[1]), "FILLER must stay sorted");
    }

    #[test]
    fn a_prompt_becomes_plain_words_without_filler_or_syntax() {
        assert_eq!(
            prompt_query("Please fix the \"deploy\" -script; deploy fails: TLS handshake"),
            "the deploy script fails tls handshake"
        );
        assert_eq!(prompt_query("please help me write something"), "");
        let long = "word ".repeat(5_000) + "tail";
        assert!(!prompt_query(&long).contains("tail"), "only the first characters are read");
    }

    #[test]
    fn strength_counts_a_long_prompt_against_a_few_words() {
        let text = "the deploy to staging fails with a tls handshake timeout";
        assert_eq!(strength(&["deploy", "staging", "notes"], "deploy to staging: notes"), 1.0);
        assert_eq!(strength(&["deploy", "staging"], text), 2.0 / 3.0, "two words say too little");
        assert_eq!(strength(&["deploy", "weather"], text), 1.0 / 3.0);
        assert_eq!(strength(&["deploys"], "deployment notes"), 1.0 / 3.0);
        let long = ["deploy", "staging", "tls", "handshake", "a1", "a2", "a3", "a4", "a5", "a6"];
        assert_eq!(strength(&long, text), 4.0 / 6.0);
        assert_eq!(strength(&[], text), 0.0);
    }
}
