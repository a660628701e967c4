//! Recall for a prompt (`cortex recall`, an agent's prompt-submit hook): which of a prompt's
//! lexical matches are relevant enough to put in front of the agent unasked, and how they are
//! cut to a small budget.
//!
//! A hook that injects memories into every prompt costs context on every turn, and an
//! unrelated memory is worse than none: it pulls the agent off the task. So the rule keeps
//! only matches that hold a good share of the prompt's meaningful words ([`strength`]), and
//! prints nothing when none does. Strength is counted on words, not on BM25 scores, because a
//! BM25 score has no fixed scale: the best match of an unrelated prompt scores as high,
//! relative to the others, as the best match of a related one.

use crate::query::words_of;
use crate::text::truncate_chars;

/// The default budget of what is printed, in tokens (counted as characters / 3).
pub const DEFAULT_BUDGET_TOKENS: usize = 400;
/// The default floor on [`strength`]: all of a prompt's three or four meaningful words, four
/// of five, five of six. The lowest floor at which prompts about nothing stored inject
/// nothing on the conversational and the scientific dev sets alike (BENCHMARKS.md has the
/// table, from `cortex-bench eval --recall-hook`): below it, generic prompts drag memories in.
pub const DEFAULT_FLOOR: f64 = 0.8;
/// At most this many memories per prompt.
pub const MAX_RECALLED: usize = 3;
/// Lexical matches weighed per prompt.
pub const POOL: usize = 10;
/// A long prompt's share is counted against this many of its words: a memory that holds six
/// meaningful words of a pasted paragraph is as strong a match as one holding six of a
/// six-word question.
pub const WORDS_COUNTED: usize = 6;
/// A prompt's share is counted against at least this many words: one or two meaningful words
/// ("tell me a joke", "fix the function") say too little of what the prompt is about, and a
/// memory that happens to hold them is not thereby relevant. Such a prompt recalls nothing.
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

/// One lexical match of the prompt, as the hook may show it.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub id: String,
    pub kind: String,
    pub title: String,
    /// The passage around its best match.
    pub passage: String,
    pub strength: f64,
    /// Said after the title, never cut: `may be out of date: src/auth.rs changed in 3 commits`.
    pub note: Option<String>,
}

/// The candidates (in lexical order) at or above `floor`, strongest first, at most
/// [`MAX_RECALLED`]; none when none reaches it.
pub fn select(candidates: Vec<Candidate>, floor: f64) -> Vec<Candidate> {
    let mut kept: Vec<Candidate> = candidates.into_iter().filter(|c| c.strength >= floor).collect();
    // A stable sort: equally strong matches keep the lexical order.
    kept.sort_by(|a, b| b.strength.total_cmp(&a.strength));
    kept.truncate(MAX_RECALLED);
    kept
}

/// The text printed for the agent: a line saying what this is and how to read a whole item,
/// then each memory's kind, id and title, then its passage, within `budget_tokens`. The
/// heads come first: a memory whose head no longer fits is left out (the first is always
/// shown), and the passages share what the heads leave. Empty when nothing was selected.
pub fn render(selected: &[Candidate], budget_tokens: usize) -> String {
    if selected.is_empty() {
        return String::new();
    }
    let budget = budget_tokens.saturating_mul(3);
    let mut out = String::from(
        "Cortex memory recalled for this prompt (may be relevant; read an item whole with memory_find {\"ids\": [\"<id>\"]}):\n",
    );
    let mut used = out.chars().count();
    let mut heads: Vec<(String, &Candidate)> = Vec::new();
    for c in selected {
        let note = c.note.as_deref().map(|n| format!(" ({n})")).unwrap_or_default();
        let head =
            format!("- [{}] {} {}{note}", c.kind, c.id, truncate_chars(one_line(&c.title).as_str(), 120).0);
        let len = head.chars().count() + 1;
        if !heads.is_empty() && used + len > budget {
            break;
        }
        used += len;
        heads.push((head, c));
    }
    let per_passage = budget.saturating_sub(used) / heads.len();
    for (head, c) in &heads {
        out.push_str(head);
        let passage = one_line(&c.passage);
        // " — " and an ellipsis take 4 characters; a passage cut below 40 says too little.
        if per_passage >= 44 && !passage.is_empty() && passage != one_line(&c.title) {
            let (cut, was_cut) = truncate_chars(&passage, per_passage - 4);
            out.push_str(" — ");
            out.push_str(cut.trim_end());
            if was_cut {
                out.push('…');
            }
        }
        out.push('\n');
    }
    out.trim_end().to_string()
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(id: &str, strength: f64) -> Candidate {
        Candidate {
            id: id.into(),
            kind: "decision".into(),
            title: format!("title of {id}"),
            passage: "a passage of several words ".repeat(20),
            strength,
            note: None,
        }
    }

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

    #[test]
    fn nothing_below_the_floor_is_kept_and_the_strongest_come_first() {
        let picked = select(vec![candidate("a", 0.3), candidate("b", 0.6), candidate("c", 0.9)], 0.5);
        assert_eq!(picked.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["c", "b"]);
        assert!(select(vec![candidate("a", 0.49)], 0.5).is_empty());
        let many: Vec<Candidate> = (0..9).map(|i| candidate(&i.to_string(), 1.0)).collect();
        assert_eq!(select(many, 0.5).len(), MAX_RECALLED);
    }

    #[test]
    fn a_note_follows_the_title() {
        let mut stale = candidate("id-1", 1.0);
        stale.note = Some("may be out of date: src/auth.rs changed in 1 commit".into());
        let text = render(&[stale], 400);
        assert!(
            text.contains("- [decision] id-1 title of id-1 (may be out of date: src/auth.rs changed in 1 commit) — a passage"),
            "{text}"
        );
    }

    #[test]
    fn nothing_selected_prints_nothing() {
        assert_eq!(render(&[], 400), "");
    }

    #[test]
    fn the_text_stays_within_budget_and_keeps_every_id() {
        let picked = vec![candidate("id-1", 1.0), candidate("id-2", 0.8), candidate("id-3", 0.7)];
        for budget in [100, 400] {
            let text = render(&picked, budget);
            for c in &picked {
                assert!(text.contains(&c.id), "{budget}: {text}");
                assert!(text.contains("[decision]"));
            }
            assert!(text.chars().count() <= budget * 3, "{budget}: {} chars", text.chars().count());
        }
        let roomy = render(&picked, 400);
        assert!(roomy.contains("a passage of several words"), "{roomy}");
        assert!(roomy.contains('…'), "a passage cut says so: {roomy}");
        let tight = render(&picked, 50);
        assert!(
            tight.contains("id-1") && !tight.contains("id-3"),
            "the first always, then what fits: {tight}"
        );
        assert!(!tight.contains("a passage"), "ids and titles before passages: {tight}");
    }
}
