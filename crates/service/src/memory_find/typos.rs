//! Typo tolerance for `deep` finds: a query word the index does not know at all is replaced by
//! the closest word it does know (candidates from the lexical index's vocabulary as the caller
//! may see it, `vocabulary`, within the edits allowed of the word or its stem — chosen by edit distance, then,
//! among equally close ones, by edit distance as written, then by how many items hold them;
//! `cortex_domain::spelling`). Replacing rather than adding is safe:
//! an unknown word matches nothing anyway; the dense route embeds the query with the corrections
//! too ([`with_words_replaced`], called by `search`). The lexical index weighs a corrected word
//! below a typed one (`cortex_domain::spelling::CORRECTED_WEIGHT`).
//! What is not corrected, because it is more often a real word or name the memory lacks than a
//! slip (measured on locomo-dev and SciFact train, `cortex-bench eval --per-query`): a longer form of
//! a known word, a word holding a digit, a word of four letters or fewer.

use super::MemoryFind;
use crate::Result;
use cortex_domain::query::{ParsedQuery, Term};
use cortex_domain::spelling::{closest_as_written, closest_words};

/// Equally close candidates compared as written, at most: each is one more read of a few items
/// (a stem spelled out as a word).
const MOST_TIED: usize = 5;

impl MemoryFind<'_> {
    /// The query with unknown single words corrected, and each `(typed, searched)` pair.
    pub(super) fn correct_typos(&self, parsed: &ParsedQuery) -> Result<(ParsedQuery, Vec<(String, String)>)> {
        let mut corrected = parsed.clone();
        let mut changes = Vec::new();
        let Some(vocabulary) = self.vocabulary() else { return Ok((corrected, changes)) };
        for term in &mut corrected.include {
            let Term::Word(word) = term else { continue };
            if vocabulary.knows(word) {
                continue;
            }
            let candidates = vocabulary.near(word);
            let closest = closest_words(word, candidates.iter().map(|(t, n)| (t.as_str(), *n)));
            // Equally close stems are told apart by their words as written, the most common
            // few only (each is one look-up).
            let mut written = Vec::new();
            for (stem, _) in closest.iter().take(MOST_TIED) {
                written.push(vocabulary.written(stem)?);
            }
            let Some(pick) = closest_as_written(word, &written) else { continue };
            let surface = written.swap_remove(pick);
            changes.push((word.clone(), surface.clone()));
            *word = surface;
        }
        // A correction the user also typed elsewhere in the query keeps a typed word's weight.
        corrected.corrected = changes
            .iter()
            .map(|(_, searched)| searched.clone())
            .filter(|searched| !parsed.include.contains(&Term::Word(searched.clone())))
            .collect();
        corrected.include.dedup();
        Ok((corrected, changes))
    }
}

/// `text` with each word typed as the first of a `(typed, searched)` pair (any case) written as
/// the second; everything else kept as it was.
pub(super) fn with_words_replaced(text: &str, changes: &[(String, String)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        let lower = word.to_lowercase();
        match changes.iter().find(|(typed, _)| *typed == lower) {
            Some((_, searched)) => out.push_str(searched),
            None => out.push_str(word),
        }
        word.clear();
    };
    for c in text.chars() {
        if c.is_alphanumeric() {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::with_words_replaced;

    #[test]
    fn corrected_words_replace_the_typed_ones_only() {
        let changes = [("fesetival".to_string(), "festival".to_string())];
        assert_eq!(
            with_words_replaced("When was the Fesetival? fesetivals, fesetival!", &changes),
            "When was the festival? fesetivals, festival!"
        );
        assert_eq!(with_words_replaced("nothing to change", &changes), "nothing to change");
    }
}
