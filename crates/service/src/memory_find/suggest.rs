//! Hints for a find with few hits, computed from the index: what a wider scope or fewer
//! filters would give, close spellings of unknown query words, words common in this memory.

use super::COUNT_CAP;
use super::MemoryFind;
use super::vocabulary::Vocabulary;
use crate::Result;
use crate::response::Suggestion;
use cortex_domain::query::{ParsedQuery, is_stopword};
use cortex_domain::spelling::best_correction;
use cortex_domain::{FindRequest, ScopeFilter, ScopeLevel};
use cortex_store::{Combine, Filters, LexicalQuery};

impl MemoryFind<'_> {
    /// Hints computed from the index: hits a wider scope or fewer filters would give, and
    /// close spellings of query words the index does not know.
    pub(super) fn suggestions(
        &self,
        req: &FindRequest,
        parsed: &ParsedQuery,
        filter: &ScopeFilter,
        filters: &Filters,
        found: usize,
    ) -> Result<Vec<Suggestion>> {
        let mut out = Vec::new();
        let count = |filters: Filters| -> Result<usize> {
            let query = LexicalQuery { query: parsed.clone(), combine: Combine::Any, filters, pool: 0 };
            Ok(self.service.shared.lexical.count(&query, COUNT_CAP, self.service.view.as_ref())?)
        };
        let show = |n: usize| {
            if n >= COUNT_CAP { format!("{COUNT_CAP}+") } else { n.to_string() }
        };
        let mut level = filter.level;
        while let Some(wider) = level.wider() {
            level = wider;
            let wider_filter = filter.at_level(wider);
            let n = count(Filters { scope_equals: wider_filter.equals.clone(), ..filters.clone() })?;
            if n > found {
                out.push(Suggestion::Widen { more: show(n - found), level: wider });
                break;
            }
        }
        if !req.filter.types.is_empty() {
            let n = count(Filters { kinds: Vec::new(), ..filters.clone() })?;
            if n > found {
                out.push(Suggestion::OtherKinds { more: show(n - found) });
            }
        }
        let narrowing = req.filter.narrowing();
        if !narrowing.is_empty() {
            let n = count(filters.clone().with_find_filter(&req.filter.without_narrowing()))?;
            if n > found {
                out.push(Suggestion::Unfiltered { more: show(n - found), filters: narrowing });
            }
        }
        let vocabulary = self.vocabulary();
        let mut unknown = Vec::new();
        if let Some(vocabulary) = &vocabulary {
            for word in parsed.words().into_iter().take(8) {
                if vocabulary.knows(word) {
                    continue;
                }
                unknown.push(word);
                let candidates = vocabulary.near(word);
                if let Some(term) = best_correction(word, candidates.iter().map(|(t, n)| (t.as_str(), *n))) {
                    let surface = vocabulary.written(term)?;
                    out.push(Suggestion::Text(format!("did you mean \"{surface}\" instead of \"{word}\"?")));
                }
            }
        }
        if out.is_empty() {
            if !unknown.is_empty() {
                out.push(Suggestion::Text(format!(
                    "no stored item contains {}: try the words the knowledge was written with",
                    unknown.iter().map(|w| format!("\"{w}\"")).collect::<Vec<_>>().join(", ")
                )));
            } else if filter.level != ScopeLevel::All {
                out.push(Suggestion::Text(format!(
                    "only {found} hit(s) in {} scope and none elsewhere: try other words",
                    filter.level.as_str()
                )));
            }
            let common = match &vocabulary {
                Some(vocabulary) => common_words(vocabulary)?,
                None => Vec::new(),
            };
            if !common.is_empty() {
                out.push(Suggestion::Text(format!("words common in this memory: {}", common.join(", "))));
            }
        }
        Ok(out)
    }
}

/// Up to five words common in the caller's memory, as written: not short, not stopwords, not
/// numbers.
fn common_words(vocabulary: &Vocabulary<'_>) -> Result<Vec<String>> {
    let mut words = Vec::new();
    let wanted = |term: &str| {
        term.chars().count() >= 4 && !is_stopword(term) && !term.chars().all(|c| c.is_ascii_digit())
    };
    // A few more than shown: two stems may be written as one word.
    for term in vocabulary.common(60, &wanted, 8) {
        let word = vocabulary.written(&term)?;
        if !words.contains(&word) {
            words.push(word);
        }
        if words.len() == 5 {
            break;
        }
    }
    Ok(words)
}
