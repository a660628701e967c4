//! The words a find's hints and `deep`'s typo corrections may name: the lexical index's
//! vocabulary (`cortex_lexical`'s term dictionaries, the same on both backends), as the caller
//! may see it. Every word offered is held by a live item inside the caller's tenant bound —
//! the index checks each against the bound as a filter — and a stem is spelled out from such
//! an item, read through the caller's bounded view. So no hint names a word that only another
//! tenant's or a deleted item holds.
//!
//! Without a usable index (`CORTEX_LEXICAL_INDEX=off`, or one being built or repaired) there
//! is no vocabulary: finds then offer no spelling hints and correct no typos. Hints are a
//! convenience, so a failure of the index here is logged and answered as "nothing to offer"
//! rather than failing the find.

use super::MemoryFind;
use crate::Result;
use cortex_lexical::{LexicalError, LexicalIndex};
use cortex_store::{Filters, TenantStore};
use std::sync::Arc;

/// Items a term's holders are counted up to: enough to rank close spellings by how common
/// they are in the caller's memory.
const HOLDERS_COUNTED: usize = 100;

/// Items read to spell a stem out.
const ITEMS_READ_FOR_A_WORD: usize = 3;

pub(super) struct Vocabulary<'a> {
    index: Arc<LexicalIndex>,
    /// Every live item the caller may see: its bound, expired and superseded items included.
    filters: Filters,
    store: &'a dyn TenantStore,
}

impl MemoryFind<'_> {
    /// The vocabulary as this caller may see it, when the lexical index can answer.
    pub(super) fn vocabulary(&self) -> Option<Vocabulary<'_>> {
        let index = self.service.shared.lexical.current()?;
        let filters = Filters {
            include_expired: true,
            include_superseded: true,
            bound: self.service.bound.clone(),
            ..Filters::default()
        };
        Some(Vocabulary { index, filters, store: self.service.view.as_ref() })
    }
}

fn logged<T>(what: &str, answer: std::result::Result<T, LexicalError>, otherwise: T) -> T {
    answer.unwrap_or_else(|e| {
        tracing::warn!("the lexical index could not {what}; the find goes without that hint: {e}");
        otherwise
    })
}

impl Vocabulary<'_> {
    /// Whether some item the caller may see holds `word`. When the index cannot tell, `true`:
    /// a find must not claim that no item holds a word.
    pub(super) fn knows(&self, word: &str) -> bool {
        logged("look a word up", self.index.vocabulary().holds_word(word, &self.filters), true)
    }

    /// Index terms (stems) close to `word` that the caller's items hold, with how many hold
    /// each (counted up to a hundred), most common first.
    pub(super) fn near(&self, word: &str) -> Vec<(String, i64)> {
        let near = self.index.vocabulary().terms_near(word, &self.filters, HOLDERS_COUNTED);
        let near = logged("find close spellings", near, Vec::new());
        near.into_iter().map(|(term, n)| (term, n as i64)).collect()
    }

    /// An index term as one of the caller's items writes it (`kubernet` → `kubernetes`); the
    /// term itself when none can be read.
    pub(super) fn written(&self, term: &str) -> Result<String> {
        let ids = self.index.vocabulary().items_holding(term, &self.filters, ITEMS_READ_FOR_A_WORD);
        let ids = logged("find the items holding a word", ids, Vec::new());
        if ids.is_empty() {
            return Ok(term.to_string());
        }
        let items = self.store.get(&ids)?;
        let texts: Vec<&str> = items
            .iter()
            .filter(|i| i.deleted_at.is_none())
            .flat_map(|i| [i.record.title.as_str(), i.record.body.as_str()])
            .collect();
        Ok(self.index.vocabulary().written_form(term, &texts).unwrap_or_else(|| term.to_string()))
    }

    /// Of the `scan` most widespread terms of the whole memory, up to `most` that are `wanted`
    /// and that the caller's items hold.
    pub(super) fn common(&self, scan: usize, wanted: &dyn Fn(&str) -> bool, most: usize) -> Vec<String> {
        let common = self.index.vocabulary().common_terms(&self.filters, scan, wanted, most);
        logged("read the common words", common, Vec::new())
    }
}
