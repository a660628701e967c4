//! A parsed query (`cortex_domain::query`) as a tantivy query over the text field. Words go
//! through the index's own analyzer, so a query word meets the stem its occurrences were
//! indexed under. Plain words become a union of term queries — what block-max WAND prunes —
//! or, when every word must match, an intersection; phrases need their words in order;
//! excluded words remove a match.

use crate::schema::{Fields, terms_of};
use cortex_domain::query::{ParsedQuery, Term as QueryTerm};
use cortex_store::Combine;
use tantivy::query::{BooleanQuery, Occur, PhraseQuery, Query, TermQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{Searcher, Term};

/// Index terms one prefix may stand for at most (the most widespread are kept): a one-letter
/// prefix must not turn a find into a scan of the whole vocabulary.
const PREFIX_EXPANSIONS: usize = 64;

/// The query, or `None` when no word of it can match anything (all too long, or a prefix
/// no term starts with).
pub(crate) fn build(
    searcher: &Searcher,
    fields: &Fields,
    analyzer: &mut TextAnalyzer,
    parsed: &ParsedQuery,
    combine: Combine,
) -> tantivy::Result<Option<Box<dyn Query>>> {
    let occur = match combine {
        Combine::All => Occur::Must,
        Combine::Any => Occur::Should,
    };
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    for term in &parsed.include {
        let query: Box<dyn Query> = match term {
            QueryTerm::Word(word) => match terms_of(analyzer, word).pop() {
                Some(t) => term_query(fields, &t),
                None if combine == Combine::All => return Ok(None),
                None => continue,
            },
            QueryTerm::Phrase(words) => {
                let terms: Vec<Term> = words
                    .iter()
                    .flat_map(|w| terms_of(analyzer, w))
                    .map(|t| Term::from_field_text(fields.text, &t))
                    .collect();
                match terms.len() {
                    0 if combine == Combine::All => return Ok(None),
                    0 => continue,
                    1 => Box::new(TermQuery::new(terms[0].clone(), IndexRecordOption::WithFreqs)),
                    _ => Box::new(PhraseQuery::new(terms)),
                }
            }
            QueryTerm::Prefix(prefix) => {
                let expanded = expand_prefix(searcher, fields, prefix)?;
                if expanded.is_empty() {
                    if combine == Combine::All {
                        return Ok(None);
                    }
                    continue;
                }
                let any: Vec<(Occur, Box<dyn Query>)> =
                    expanded.iter().map(|t| (Occur::Should, term_query(fields, t))).collect();
                Box::new(BooleanQuery::new(any))
            }
        };
        clauses.push((occur, query));
    }
    if clauses.is_empty() {
        return Ok(None);
    }
    for word in &parsed.exclude {
        for t in terms_of(analyzer, word) {
            clauses.push((Occur::MustNot, term_query(fields, &t)));
        }
    }
    Ok(Some(Box::new(BooleanQuery::new(clauses))))
}

fn term_query(fields: &Fields, text: &str) -> Box<dyn Query> {
    Box::new(TermQuery::new(Term::from_field_text(fields.text, text), IndexRecordOption::WithFreqs))
}

/// The index terms starting with `prefix` (lowercased and folded, not stemmed: a stem is itself
/// a prefix of the words it stands for), the most widespread first.
fn expand_prefix(searcher: &Searcher, fields: &Fields, prefix: &str) -> tantivy::Result<Vec<String>> {
    let prefix = prefix.to_lowercase();
    let mut found: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
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
    let mut terms: Vec<(String, u64)> = found.into_iter().collect();
    terms.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    terms.truncate(PREFIX_EXPANSIONS);
    Ok(terms.into_iter().map(|(t, _)| t).collect())
}
