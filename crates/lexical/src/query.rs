//! A parsed query (`cortex_domain::query`) as a plan over index terms, and that plan as a
//! tantivy query over the text field. Words go through the index's own analyzer, so a query
//! word meets the stem its occurrences were indexed under. Plain words become a union of term
//! queries — what block-max WAND prunes — or, when every word must match, an intersection;
//! phrases need their words in order; excluded words remove a match. The same plan scores the
//! items changed since the last commit (`delta`), as tantivy would.

use crate::delta::Delta;
use crate::schema::{Fields, terms_of};
use cortex_domain::query::{ParsedQuery, Term as QueryTerm};
use cortex_domain::spelling::CORRECTED_WEIGHT;
use cortex_store::Combine;
use std::collections::HashMap;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, PhraseQuery, Query, TermQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{Score, Searcher, Term};

/// Index terms one prefix may stand for at most (the most widespread are kept): a one-letter
/// prefix must not turn a find into a scan of the whole vocabulary.
const PREFIX_EXPANSIONS: usize = 64;

/// What a document must hold, in index terms.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    /// Every clause must match (`Combine::All`), or any one.
    pub all: bool,
    /// Each clause with the weight its BM25 score is multiplied by: 1 for what the user typed,
    /// less for a word typo correction put in (`ParsedQuery::corrected`).
    pub clauses: Vec<(Clause, Score)>,
    /// Terms no match may hold.
    pub exclude: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Clause {
    Term(String),
    /// Two or more terms, in this order, side by side.
    Phrase(Vec<String>),
    /// A prefix's expansions: any of them.
    AnyOf(Vec<String>),
}

impl Plan {
    /// Every term the plan searches for (not the excluded ones).
    pub(crate) fn terms(&self) -> impl Iterator<Item = &String> {
        self.clauses.iter().flat_map(|(clause, _)| match clause {
            Clause::Term(t) => std::slice::from_ref(t).iter(),
            Clause::Phrase(terms) | Clause::AnyOf(terms) => terms.iter(),
        })
    }

    /// The plan as a tantivy query.
    pub(crate) fn to_query(&self, fields: &Fields) -> Box<dyn Query> {
        let occur = if self.all { Occur::Must } else { Occur::Should };
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = self
            .clauses
            .iter()
            .map(|(clause, weight)| {
                let query: Box<dyn Query> = match clause {
                    Clause::Term(t) => term_query(fields, t),
                    Clause::Phrase(terms) => Box::new(PhraseQuery::new(
                        terms.iter().map(|t| Term::from_field_text(fields.text, t)).collect(),
                    )),
                    Clause::AnyOf(terms) => Box::new(BooleanQuery::new(
                        terms.iter().map(|t| (Occur::Should, term_query(fields, t))).collect(),
                    )),
                };
                // A boosted term query still scores through a plain term scorer (the boost
                // scales its BM25 weight), so the union stays one WAND can prune.
                let query = match *weight == 1.0 {
                    true => query,
                    false => Box::new(BoostQuery::new(query, *weight)),
                };
                (occur, query)
            })
            .collect();
        clauses.extend(self.exclude.iter().map(|t| (Occur::MustNot, term_query(fields, t))));
        Box::new(BooleanQuery::new(clauses))
    }
}

/// The plan, or `None` when no word of the query can match anything (all too long, or a prefix
/// no term starts with). Prefixes expand over the index's terms and the delta's.
pub(crate) fn plan(
    searcher: &Searcher,
    delta: &Delta,
    fields: &Fields,
    analyzer: &mut TextAnalyzer,
    parsed: &ParsedQuery,
    combine: Combine,
) -> tantivy::Result<Option<Plan>> {
    let all = combine == Combine::All;
    let mut clauses = Vec::new();
    for term in &parsed.include {
        let weight = match term {
            QueryTerm::Word(word) if parsed.corrected.contains(word) => CORRECTED_WEIGHT,
            _ => 1.0,
        };
        let clause = match term {
            QueryTerm::Word(word) => terms_of(analyzer, word).pop().map(Clause::Term),
            QueryTerm::Phrase(words) => {
                let mut terms: Vec<String> = words.iter().flat_map(|w| terms_of(analyzer, w)).collect();
                match terms.len() {
                    0 => None,
                    1 => terms.pop().map(Clause::Term),
                    _ => Some(Clause::Phrase(terms)),
                }
            }
            QueryTerm::Prefix(prefix) => {
                let expanded = expand_prefix(searcher, delta, fields, prefix)?;
                (!expanded.is_empty()).then_some(Clause::AnyOf(expanded))
            }
        };
        match clause {
            Some(clause) => clauses.push((clause, weight)),
            None if all => return Ok(None),
            None => {}
        }
    }
    if !all {
        drop_single_characters(&mut clauses);
    }
    if clauses.is_empty() {
        return Ok(None);
    }
    let exclude = parsed.exclude.iter().flat_map(|word| terms_of(analyzer, word)).collect();
    Ok(Some(Plan { all, clauses, exclude }))
}

/// Other words a question needs for its one-character words to be left out of a union.
const SINGLE_CHARACTER_NEIGHBOURS: usize = 2;

/// Leaves out the one-character words of a longer question ("type 1", "T cells", "vitamin D"):
/// such a word matches a large share of any memory, so it moves the ranking little while its
/// postings are the longest block-max WAND walks (on SciFact claims over 100k items, a fifth
/// of a find's time). A short query keeps them: "vitamin D" still needs its "D".
fn drop_single_characters(clauses: &mut Vec<(Clause, Score)>) {
    let single = |(c, _): &(Clause, Score)| matches!(c, Clause::Term(t) if t.chars().count() == 1);
    let others = clauses.iter().filter(|c| !single(c)).count();
    if others >= SINGLE_CHARACTER_NEIGHBOURS {
        clauses.retain(|c| !single(c));
    }
}

fn term_query(fields: &Fields, text: &str) -> Box<dyn Query> {
    Box::new(TermQuery::new(Term::from_field_text(fields.text, text), IndexRecordOption::WithFreqs))
}

/// The index terms starting with `prefix` (lowercased and folded, not stemmed: a stem is itself
/// a prefix of the words it stands for), the most widespread first.
fn expand_prefix(
    searcher: &Searcher,
    delta: &Delta,
    fields: &Fields,
    prefix: &str,
) -> tantivy::Result<Vec<String>> {
    let prefix = prefix.to_lowercase();
    let mut found: HashMap<String, u64> = HashMap::new();
    for segment in searcher.segment_readers() {
        let index = segment.inverted_index(fields.text)?;
        let mut stream = index.terms().range().ge(prefix.as_bytes()).into_stream()?;
        while stream.advance() {
            let key = stream.key();
            if !key.starts_with(prefix.as_bytes()) {
                break;
            }
            let term = String::from_utf8_lossy(key).into_owned();
            *found.entry(term).or_default() += u64::from(stream.value().doc_freq);
        }
    }
    for (term, docs) in delta.terms_starting_with(&prefix) {
        *found.entry(term.to_string()).or_default() += docs;
    }
    let mut terms: Vec<(String, u64)> = found.into_iter().collect();
    terms.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    terms.truncate(PREFIX_EXPANSIONS);
    Ok(terms.into_iter().map(|(t, _)| t).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(words: &[&str]) -> Vec<(Clause, Score)> {
        words.iter().map(|w| (Clause::Term(w.to_string()), 1.0)).collect()
    }

    #[test]
    fn a_longer_question_leaves_its_one_character_words_out() {
        let mut clauses = terms(&["type", "1", "diabet", "t", "cell"]);
        drop_single_characters(&mut clauses);
        assert_eq!(clauses, terms(&["type", "diabet", "cell"]));
    }

    #[test]
    fn a_short_query_and_a_phrase_keep_them() {
        let mut short = terms(&["vitamin", "d"]);
        drop_single_characters(&mut short);
        assert_eq!(short, terms(&["vitamin", "d"]));
        let mut alone = terms(&["x"]);
        drop_single_characters(&mut alone);
        assert_eq!(alone, terms(&["x"]));
        let phrase = Clause::Phrase(vec!["t".into(), "cell".into()]);
        let mut clauses = vec![(phrase.clone(), 1.0), (Clause::Term("respons".into()), 1.0)];
        clauses.extend(terms(&["b"]));
        drop_single_characters(&mut clauses);
        assert_eq!(clauses, vec![(phrase, 1.0), (Clause::Term("respons".into()), 1.0)]);
    }
}
