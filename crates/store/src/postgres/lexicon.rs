//! The lexicon: every word as written in live items (stopwords left out), with how many items
//! hold it. Spelling hints and typo tolerance read the lexical index's vocabulary now (the same
//! on both backends, and cheap under a flood of stores); nothing reads this table, which is kept
//! until a migration drops it.
//!
//! Kept by the store rather than by a trigger: a batch adds up its changes in memory and
//! applies them in one statement, in word order, so concurrent batches lock lexicon rows in the
//! same order and cannot deadlock on them.

use super::conn::Sql;
use crate::Result;
use cortex_domain::query::{is_stopword, words_of};
use std::collections::{BTreeMap, BTreeSet};

/// Longer "words" are identifiers or noise, never worth suggesting.
const MAX_WORD_CHARS: usize = 40;

#[derive(Default)]
pub struct LexiconDelta(BTreeMap<String, i64>);

fn distinct_words(title: &str, body: &str) -> BTreeSet<String> {
    words_of(title)
        .into_iter()
        .chain(words_of(body))
        .filter(|w| !is_stopword(w) && w.chars().count() <= MAX_WORD_CHARS)
        .collect()
}

impl LexiconDelta {
    pub fn add(&mut self, title: &str, body: &str) {
        for word in distinct_words(title, body) {
            *self.0.entry(word).or_default() += 1;
        }
    }

    pub fn remove(&mut self, title: &str, body: &str) {
        for word in distinct_words(title, body) {
            *self.0.entry(word).or_default() -= 1;
        }
    }

    pub fn apply(self, client: &mut impl Sql) -> Result<()> {
        let (terms, counts): (Vec<String>, Vec<i64>) = self.0.into_iter().filter(|(_, n)| *n != 0).unzip();
        if terms.is_empty() {
            return Ok(());
        }
        client.execute(
            "INSERT INTO lexicon (term, docs) SELECT * FROM unnest($1::text[], $2::bigint[]) ORDER BY 1 \
             ON CONFLICT (term) DO UPDATE SET docs = lexicon.docs + excluded.docs",
            &[&terms, &counts],
        )?;
        Ok(())
    }
}
