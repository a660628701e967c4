//! Typo tolerance for `deep` finds: a query word the index does not know at all is replaced by
//! the closest word it does know (candidates from the index vocabulary — words sharing the
//! first letter on SQLite, pg_trgm neighbours on PostgreSQL — chosen by edit distance, then by
//! how many items hold them; `cortex_domain::spelling`). Replacing rather than adding is safe:
//! an unknown word matches nothing anyway; the dense route embeds the query with the corrections
//! too (`search`).
//! What is not corrected, because it is more often a real word or name the memory lacks than a
//! slip (measured on locomo-dev and SciFact train, `cortex eval --per-query`): a longer form of
//! a known word, a word holding a digit, a word of four letters or fewer.

use crate::{MemoryService, Result};
use cortex_domain::query::{ParsedQuery, Term};
use cortex_domain::spelling::best_correction;

impl MemoryService {
    /// The query with unknown single words corrected, and each `(typed, searched)` pair.
    pub(crate) fn correct_typos(&self, parsed: &ParsedQuery) -> Result<(ParsedQuery, Vec<(String, String)>)> {
        let mut corrected = parsed.clone();
        let mut changes = Vec::new();
        for term in &mut corrected.include {
            let Term::Word(word) = term else { continue };
            if self.store.knows_word(word)? {
                continue;
            }
            let candidates = self.store.words_like(word)?;
            let Some(stem) = best_correction(word, candidates.iter().map(|(t, n)| (t.as_str(), *n))) else {
                continue;
            };
            let surface = self.store.surface_word(stem)?;
            changes.push((word.clone(), surface.clone()));
            *word = surface;
        }
        corrected.include.dedup();
        Ok((corrected, changes))
    }
}
