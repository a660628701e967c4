//! The lexicon: every word as written in live items (stopwords left out), with how many items
//! hold it, for spelling suggestions and typo tolerance.
//!
//! Kept by the store rather than by a trigger: a batch adds up its changes in memory and
//! applies them in one statement, in word order, so concurrent batches lock lexicon rows in the
//! same order and cannot deadlock on them.

use crate::Result;
use cortex_domain::query::{is_stopword, words_of};
use postgres::GenericClient;
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

    pub fn apply(self, client: &mut impl GenericClient) -> Result<()> {
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

/// Candidate corrections for `word`, most widespread first: words sharing its first letter and
/// about its length (as the SQLite backend offers), plus words pg_trgm finds similar by
/// trigrams through its index, which also catches a typo in the first letter. The caller picks
/// among them by edit distance.
pub fn words_like(client: &mut impl GenericClient, word: &str) -> Result<Vec<(String, i64)>> {
    let Some(first) = word.chars().next() else {
        return Ok(Vec::new());
    };
    let low = first.to_string();
    let high = char::from_u32(first as u32 + 1)
        .map(|c| c.to_string())
        .unwrap_or_else(|| format!("{first}\u{10FFFF}"));
    let len = word.chars().count() as i32;
    let rows = client.query(
        "SELECT term, docs FROM lexicon WHERE term >= $1 AND term < $2 AND docs > 0 \
           AND char_length(term) BETWEEN $3 AND $4 \
         UNION \
         SELECT term, docs FROM lexicon WHERE term % $5 AND docs > 0 \
         ORDER BY docs DESC LIMIT 5000",
        &[&low, &high, &(len - 3).max(0), &(len + 3), &word],
    )?;
    rows.iter().map(|r| Ok((r.try_get(0)?, r.try_get(1)?))).collect()
}

pub fn top_terms(client: &mut impl GenericClient, limit: usize) -> Result<Vec<(String, i64)>> {
    let rows = client.query(
        "SELECT term, docs FROM lexicon WHERE docs > 0 ORDER BY docs DESC LIMIT $1",
        &[&(limit as i64)],
    )?;
    rows.iter().map(|r| Ok((r.try_get(0)?, r.try_get(1)?))).collect()
}
