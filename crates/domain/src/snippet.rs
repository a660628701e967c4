//! The snippet rule, one for both backends: the passage of a hit's text that holds the most
//! query terms, a few words long, with the matched words marked `**`. The text's own `*`
//! (Markdown emphasis) is left out of a passage, so that every `**` in it is a mark, in pairs:
//! a passage starting inside a `**bold**` span cannot turn the marks around.
//!
//! Why not the engines' own snippet functions: FTS5's `snippet()` and PostgreSQL's
//! `ts_headline` score candidate windows in time that grows with the square of how often a
//! query word occurs, so one 255 KB item repeating a word took 32 s to cut. This rule makes
//! one pass over the words with a sliding window, so its cost is linear in the text's length
//! (bounded by the item size limit), and both backends show the same passage.
//!
//! Words are matched as the lexical index matches them: lowercase, English-stemmed (Porter2,
//! the stemmer PostgreSQL's `english` configuration uses; FTS5's `porter` differs only in rare
//! endings), and a prefix term (`migrat*`) matches every word that starts with it.

use crate::limits::{MAX_SNIPPET_CHARS, SNIPPET_WORDS};
use crate::query::{ParsedQuery, Term};
use crate::text::truncate_chars;
use rust_stemmers::{Algorithm, Stemmer};
use std::collections::HashMap;

/// The query's terms in the form a text word is compared with.
pub struct SnippetTerms {
    /// Stems of whole words and phrase words, each one term.
    stems: Vec<String>,
    /// The first two letters of each stem (`*` second for a stem of one letter), sorted.
    /// Stemming keeps a word's first letter, and its first two in a word of three or more
    /// letters save Porter2's exceptional forms whose second letter is a `y` ("dying" → "die"):
    /// a text word that cannot begin any stem so is not stemmed at all. Most words of a text
    /// are not query words, and stemming them was a fifth of a find's time.
    heads: Vec<(char, char)>,
    /// Lowercase prefixes of `word*` terms, each one term.
    prefixes: Vec<String>,
    stemmer: Stemmer,
}

impl SnippetTerms {
    pub fn of(query: &ParsedQuery) -> SnippetTerms {
        let stemmer = Stemmer::create(Algorithm::English);
        let mut stems = Vec::new();
        let mut prefixes = Vec::new();
        for term in &query.include {
            match term {
                Term::Word(w) => stems.push(stemmer.stem(&w.to_lowercase()).into_owned()),
                Term::Phrase(words) => {
                    stems.extend(words.iter().map(|w| stemmer.stem(&w.to_lowercase()).into_owned()))
                }
                Term::Prefix(p) => prefixes.push(p.to_lowercase()),
            }
        }
        stems.sort();
        stems.dedup();
        let mut heads: Vec<(char, char)> = stems
            .iter()
            .map(|s| {
                let mut chars = s.chars();
                let first = chars.next().unwrap_or(' ');
                // A one-letter stem matches any second letter: `*` stands for that.
                (first, chars.next().unwrap_or('*'))
            })
            .collect();
        heads.sort();
        heads.dedup();
        SnippetTerms { stems, heads, prefixes, stemmer }
    }

    /// No terms: a passage is then the text's beginning (hits read by id or reached by links).
    pub fn none() -> SnippetTerms {
        SnippetTerms::of(&ParsedQuery::default())
    }

    /// Whether a text word could match a term at all, read from its first letters alone: most
    /// words of a text cannot, and are then neither lowercased nor looked up.
    fn may_match(&self, word: &str) -> bool {
        !self.prefixes.is_empty() || self.may_stem_to_one(word)
    }

    /// Whether the stem of a text word could be one of the query's stems, by `heads`.
    fn may_stem_to_one(&self, word: &str) -> bool {
        let mut chars = word.chars().flat_map(char::to_lowercase);
        let (Some(first), second, third) = (chars.next(), chars.next(), chars.next()) else {
            return false;
        };
        let of_first = || self.heads.iter().any(|&(f, _)| f == first);
        match (second, third) {
            // Words of fewer than three letters are their own stem.
            (None, _) | (_, None) | (Some('y'), _) => of_first(),
            (Some(second), _) => {
                self.heads.binary_search(&(first, second)).is_ok()
                    || self.heads.binary_search(&(first, '*')).is_ok()
            }
        }
    }

    /// Which term a (lowercase) text word matches, if any.
    fn term_of(&self, lower: &str) -> Option<usize> {
        if let Some(i) = self.prefixes.iter().position(|p| lower.starts_with(p.as_str())) {
            return Some(self.stems.len() + i);
        }
        if !self.may_stem_to_one(lower) {
            return None;
        }
        let stem = self.stemmer.stem(lower);
        self.stems.iter().position(|s| *s == stem)
    }

    fn count(&self) -> usize {
        self.stems.len() + self.prefixes.len()
    }
}

/// A word of the text: its byte range and the term it matches.
struct Word {
    start: usize,
    end: usize,
    term: Option<usize>,
}

/// Words are runs of letters and digits, as the index tokenizers split them. Without terms
/// only the first window is shown, so the scan stops after it.
fn words_of(text: &str, terms: &SnippetTerms) -> Vec<Word> {
    let enough = if terms.count() == 0 { SNIPPET_WORDS + 1 } else { usize::MAX };
    // Texts repeat words: each distinct word is stemmed once.
    let mut seen: HashMap<String, Option<usize>> = HashMap::new();
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                let word = &text[s..i];
                let term = if !terms.may_match(word) {
                    None
                } else {
                    let lower = word.to_lowercase();
                    match seen.get(&lower) {
                        Some(term) => *term,
                        None => {
                            let term = terms.term_of(&lower);
                            seen.insert(lower, term);
                            term
                        }
                    }
                };
                out.push(Word { start: s, end: i, term });
                if out.len() == enough {
                    break;
                }
                start = None;
            }
            _ => {}
        }
    }
    out
}

/// The first word of the best window of `size` words: the most distinct terms, then the
/// most matched words, then the earliest. One pass, counts kept per term.
fn best_window(words: &[Word], size: usize, term_count: usize) -> usize {
    if words.len() <= size || term_count == 0 {
        return 0;
    }
    let mut per_term = vec![0usize; term_count];
    let (mut distinct, mut matched) = (0usize, 0usize);
    let mut add = |term: Option<usize>, delta: isize, distinct: &mut usize, matched: &mut usize| {
        let Some(t) = term else { return };
        if delta > 0 {
            per_term[t] += 1;
            *matched += 1;
            if per_term[t] == 1 {
                *distinct += 1;
            }
        } else {
            per_term[t] -= 1;
            *matched -= 1;
            if per_term[t] == 0 {
                *distinct -= 1;
            }
        }
    };
    for w in &words[..size] {
        add(w.term, 1, &mut distinct, &mut matched);
    }
    let (mut best, mut best_score) = (0, (distinct, matched));
    for start in 1..=words.len() - size {
        add(words[start - 1].term, -1, &mut distinct, &mut matched);
        add(words[start + size - 1].term, 1, &mut distinct, &mut matched);
        if (distinct, matched) > best_score {
            best = start;
            best_score = (distinct, matched);
        }
    }
    // A window that matches nothing better starts at the text's beginning.
    if best_score.1 == 0 { 0 } else { best }
}

/// The passage of `text` around the best match of `terms`: about [`SNIPPET_WORDS`] words, at
/// most [`MAX_SNIPPET_CHARS`] characters, whitespace collapsed, matched words in `**`, `…`
/// where the text goes on. A text matching no term gives its beginning.
pub fn best_passage(text: &str, terms: &SnippetTerms) -> String {
    let words = words_of(text, terms);
    if words.is_empty() {
        return collapse(truncate_chars(text, MAX_SNIPPET_CHARS).0).trim().to_string();
    }
    let first = best_window(&words, SNIPPET_WORDS, terms.count());
    let last = (first + SNIPPET_WORDS).min(words.len()) - 1;
    // Punctuation next to the window's ends belongs to it: from the previous word's end to
    // the next word's start.
    let from = if first == 0 { 0 } else { words[first - 1].end };
    let to = words.get(last + 1).map_or(text.len(), |w| w.start);
    let mut out = String::new();
    let mut at = from;
    for w in words[first..=last].iter() {
        out.push_str(&collapse(&text[at..w.start]));
        if w.term.is_some() {
            out.push_str("**");
            out.push_str(&text[w.start..w.end]);
            out.push_str("**");
        } else {
            out.push_str(&text[w.start..w.end]);
        }
        at = w.end;
    }
    out.push_str(&collapse(&text[at..to]));
    let mut out = if first > 0 { format!("…{}", out.trim()) } else { out.trim().to_string() };
    let goes_on = last + 1 < words.len();
    if goes_on || out.chars().nth(MAX_SNIPPET_CHARS).is_some() {
        let mut cut = truncate_chars(&out, MAX_SNIPPET_CHARS - 1).0.to_string();
        // A cut inside a marked word closes its mark (in the same length).
        if cut.matches("**").count() % 2 == 1 {
            cut = truncate_chars(cut.trim_end_matches('*'), MAX_SNIPPET_CHARS - 3).0.to_string();
            if cut.matches("**").count() % 2 == 1 {
                cut.push_str("**");
            }
        }
        out = cut;
        out.push('…');
    }
    out
}

/// Runs of whitespace as one space (a snippet is one line), the text's own `*` left out
/// (`**` marks matches).
fn collapse(gap: &str) -> String {
    let mut out = String::with_capacity(gap.len());
    let mut space = false;
    for c in gap.chars().filter(|c| *c != '*') {
        if c.is_whitespace() {
            space = true;
        } else {
            if space {
                out.push(' ');
                space = false;
            }
            out.push(c);
        }
    }
    if space {
        out.push(' ');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::parse_query;

    fn passage(text: &str, query: &str) -> String {
        best_passage(text, &SnippetTerms::of(&parse_query(query)))
    }

    #[test]
    fn the_texts_own_emphasis_never_turns_the_marks_around() {
        // The window starts inside a bold span: its closing `**` would open a mark.
        let text =
            format!("{} **the webhook retries** use backoff and **jitter** always", "filler ".repeat(40));
        let cut = passage(&text, "backoff");
        assert!(!cut.contains("**webhook") && cut.contains("**backoff**"), "{cut}");
        assert_eq!(cut.matches("**").count(), 2, "{cut}");
        let long = format!("{} backoff", "a".repeat(2 * MAX_SNIPPET_CHARS));
        assert_eq!(passage(&long, "backoff").matches("**").count() % 2, 0);
        let marked = passage(&format!("start {}", "backoffs ".repeat(200)), "backoff");
        assert_eq!(marked.matches("**").count() % 2, 0, "{marked}");
    }

    #[test]
    fn marks_query_words_and_their_stems() {
        assert_eq!(
            passage("We moved sessions to Postgres last year.", "session postgres"),
            "We moved **sessions** to **Postgres** last year."
        );
        assert_eq!(
            passage("Running migrations nightly", "migration run"),
            "**Running** **migrations** nightly"
        );
    }

    #[test]
    fn words_whose_stem_is_spelled_otherwise_still_match() {
        // Porter2 turns a final y into i, and these three into a shorter word: the first
        // letter, which the stemming is skipped on, never changes.
        assert_eq!(passage("The studies were early.", "study early"), "The **studies** were **early**.");
        assert_eq!(passage("Lying and dying.", "lie die"), "**Lying** and **dying**.");
        assert_eq!(passage("Yearly yields.", "yearly yield"), "**Yearly** **yields**.");
    }

    #[test]
    fn every_word_matches_itself_and_the_words_sharing_its_stem() {
        // Porter2's suffix rules, its y handling and its exceptional forms: a word of the
        // text must be stemmed whenever its stem can equal a query word's.
        let same_stem: &[&[&str]] = &[
            &["die", "dying", "dies"],
            &["lie", "lying", "lies"],
            &["tie", "tying"],
            &["sky", "skies"],
            &["cry", "cries", "cried"],
            &["fly", "flies"],
            &["yield", "yields", "Yielding"],
            &["happy", "happiness", "happily"],
            &["hop", "hopping", "hopped"],
            &["ugly", "ugli"],
            &["gently", "gentl"],
            &["early", "earli"],
            &["being", "beings"],
            &["agreed", "agree"],
            &["generously", "generous"],
            &["news"],
            &["éclair", "éclairs"],
            &["ox", "oxen"],
            &["go", "goes", "us"],
        ];
        for words in same_stem {
            for query in *words {
                for word in *words {
                    let stem =
                        |w: &str| Stemmer::create(Algorithm::English).stem(&w.to_lowercase()).into_owned();
                    if stem(query) != stem(word) {
                        continue;
                    }
                    let text = format!("x {word} y");
                    assert_eq!(passage(&text, query), format!("x **{word}** y"), "{word} for {query}");
                }
            }
        }
    }

    #[test]
    fn prefix_terms_match_words_that_start_with_them() {
        assert_eq!(passage("the migrator ran", "migrat*"), "the **migrator** ran");
    }

    #[test]
    fn picks_the_window_with_the_most_distinct_terms() {
        let text =
            format!("redis {} redis cache eviction policy {}", "filler ".repeat(60), "tail ".repeat(60));
        let s = passage(&text, "redis eviction");
        assert!(s.starts_with('…') && s.ends_with('…'), "{s}");
        assert!(s.contains("**redis** cache **eviction**"), "{s}");
    }

    #[test]
    fn a_text_without_a_match_gives_its_beginning() {
        let s = passage(&"alpha beta ".repeat(50), "gamma");
        assert!(s.starts_with("alpha beta") && s.ends_with('…'), "{s}");
        assert_eq!(s.split_whitespace().count(), SNIPPET_WORDS);
    }

    #[test]
    fn bounded_in_length_and_one_line() {
        let long_word = "x".repeat(1_000);
        let s = passage(&format!("needle\n\n{long_word}"), "needle");
        assert!(s.chars().count() <= MAX_SNIPPET_CHARS, "{}", s.len());
        assert!(!s.contains('\n'));
        assert!(s.starts_with("**needle** x"));
    }

    #[test]
    fn a_word_repeated_fifty_thousand_times_is_cut_in_one_pass() {
        // The case that made FTS5's snippet() take 32 s: it must stay linear.
        let text = format!("doc {}", "kappa ".repeat(50_000));
        let s = passage(&text, "kappa");
        assert!(s.starts_with("…**kappa** **kappa**"), "{s}");
        assert_eq!(s.matches("**kappa**").count(), SNIPPET_WORDS);
    }

    #[test]
    fn multibyte_text_is_cut_on_character_boundaries() {
        let s = passage(&format!("{} Ünïcödé needle", "日本語 ".repeat(200)), "needle");
        assert!(s.contains("**needle**"), "{s}");
        let s = passage(&"é".repeat(2_000), "needle");
        assert_eq!(s.chars().count(), MAX_SNIPPET_CHARS);
    }
}
