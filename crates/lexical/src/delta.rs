//! The items changed since the index's last commit, held in memory and scored as tantivy scores
//! the index's own documents.
//!
//! A find must see every write committed before it, but a tantivy commit costs 10–20 ms (a new
//! segment's memory, file creation, `fdatasync`): paid on a find's path after every store, it
//! queued the finds of a busy team server behind it. So a find reads the change log into this
//! delta instead (a millisecond for a few items), and a background fold commits it a moment
//! later. A search masks the index's documents of every changed item and scores the delta's
//! live ones with the same BM25 weights, taken over the index and the delta together — so an
//! item ranks the same before and after its fold, up to the statistics the fold moves.

use crate::query::{Clause, Plan};
use crate::schema::{Fields, searchable_text};
use cortex_store::{ChangeCursor, Filters, ItemFacts, StoredItem};
use std::collections::HashMap;
use std::sync::Arc;
use tantivy::fieldnorm::FieldNormReader;
use tantivy::query::{Bm25StatisticsProvider, Bm25Weight};
use tantivy::schema::Field;
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{DocId, Score, Searcher, SegmentReader, Term};
use uuid::Uuid;

/// One live item as the index would hold it: its terms with their positions, and its facts.
#[derive(Debug)]
pub(crate) struct DeltaDoc {
    pub id: Uuid,
    pub facts: ItemFacts,
    terms: HashMap<String, Vec<u32>>,
    /// Tokens of its text: the field norm BM25 normalizes by.
    tokens: u32,
}

impl DeltaDoc {
    pub(crate) fn of(item: &StoredItem, analyzer: &mut TextAnalyzer) -> DeltaDoc {
        let text = searchable_text(item);
        let mut stream = analyzer.token_stream(&text);
        let mut terms: HashMap<String, Vec<u32>> = HashMap::new();
        let mut tokens = 0u32;
        while stream.advance() {
            let token = stream.token();
            terms.entry(token.text.clone()).or_default().push(token.position as u32);
            tokens += 1;
        }
        DeltaDoc { id: item.record.id, facts: ItemFacts::of(item), terms, tokens }
    }

    /// Whether the document holds the index term `term`.
    pub(crate) fn holds(&self, term: &str) -> bool {
        self.terms.contains_key(term)
    }

    fn freq(&self, term: &str) -> u32 {
        self.terms.get(term).map_or(0, |p| p.len() as u32)
    }

    /// How often `terms` occur side by side, in order.
    fn phrase_freq(&self, terms: &[String]) -> u32 {
        let Some((first, rest)) = terms.split_first() else { return 0 };
        let Some(starts) = self.terms.get(first) else { return 0 };
        let mut count = 0;
        'start: for &start in starts {
            for (offset, term) in rest.iter().enumerate() {
                let at = start + offset as u32 + 1;
                if !self.terms.get(term).is_some_and(|p| p.contains(&at)) {
                    continue 'start;
                }
            }
            count += 1;
        }
        count
    }
}

/// Every item changed after the index's last commit, up to `cursor`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Delta {
    /// Where the change log has been read to.
    pub cursor: ChangeCursor,
    /// Each changed item: its current document, or `None` when it is no longer live (deleted,
    /// purged). Either way the index's own document of it is out of date.
    changed: HashMap<Uuid, Option<Arc<DeltaDoc>>>,
    /// Of the live documents: how many, their tokens, and the documents holding each term.
    live: u64,
    tokens: u64,
    doc_freq: HashMap<String, u64>,
}

impl Delta {
    pub(crate) fn empty(cursor: ChangeCursor) -> Delta {
        Delta { cursor, ..Delta::default() }
    }

    /// Items changed since the commit.
    pub(crate) fn len(&self) -> usize {
        self.changed.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.changed.is_empty()
    }

    /// Whether the index's document of `id` is out of date.
    pub(crate) fn masks(&self, id: &Uuid) -> bool {
        self.changed.contains_key(id)
    }

    /// Records the current state of a changed item.
    pub(crate) fn put(&mut self, id: Uuid, doc: Option<DeltaDoc>) {
        if let Some(Some(old)) = self.changed.remove(&id) {
            self.count(&old, false);
        }
        let doc = doc.map(Arc::new);
        if let Some(doc) = &doc {
            self.count(doc, true);
        }
        self.changed.insert(id, doc);
    }

    fn count(&mut self, doc: &DeltaDoc, add: bool) {
        let step = |n: &mut u64, by: u64| *n = if add { *n + by } else { n.saturating_sub(by) };
        step(&mut self.live, 1);
        step(&mut self.tokens, u64::from(doc.tokens));
        for term in doc.terms.keys() {
            let n = self.doc_freq.entry(term.clone()).or_default();
            step(n, 1);
            if *n == 0 {
                self.doc_freq.remove(term);
            }
        }
    }

    /// The live documents.
    pub(crate) fn docs(&self) -> impl Iterator<Item = &DeltaDoc> {
        self.changed.values().flatten().map(|doc| &**doc)
    }

    /// The terms the delta's live documents hold.
    pub(crate) fn terms(&self) -> impl Iterator<Item = &str> {
        self.doc_freq.keys().map(String::as_str)
    }

    /// The terms the delta's live documents hold, with how many hold each.
    pub(crate) fn doc_freqs(&self) -> impl Iterator<Item = (&str, u64)> {
        self.doc_freq.iter().map(|(t, n)| (t.as_str(), *n))
    }

    /// The delta's terms starting with `prefix`, with the documents holding each.
    pub(crate) fn terms_starting_with<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = (&'a str, u64)> {
        self.doc_freq.iter().filter(move |(t, _)| t.starts_with(prefix)).map(|(t, n)| (t.as_str(), *n))
    }

    /// The live documents that match `plan` and pass `filters`, with their scores.
    pub(crate) fn matches<'a>(
        &'a self,
        scorer: &'a PlanScorer,
        filters: &'a Filters,
    ) -> impl Iterator<Item = (&'a DeltaDoc, Score)> {
        self.docs()
            .filter(|doc| filters.admits(&doc.facts))
            .filter_map(|doc| scorer.score(doc).map(|score| (doc, score)))
    }
}

/// The documents of one segment that the delta holds a newer state of: their ids are read
/// only while the delta holds anything.
pub(crate) struct Stale<'a> {
    ids: Option<(tantivy::columnar::Column<u64>, tantivy::columnar::Column<u64>)>,
    delta: &'a Delta,
}

impl<'a> Stale<'a> {
    pub(crate) fn of(segment: &SegmentReader, delta: &'a Delta) -> crate::Result<Stale<'a>> {
        let ids = match delta.is_empty() {
            true => None,
            false => Some((segment.fast_fields().u64("id_hi")?, segment.fast_fields().u64("id_lo")?)),
        };
        Ok(Stale { ids, delta })
    }

    pub(crate) fn masks(&self, doc: DocId) -> bool {
        let Some((hi, lo)) = &self.ids else { return false };
        match (hi.first(doc), lo.first(doc)) {
            (Some(hi), Some(lo)) => self.delta.masks(&Uuid::from_u64_pair(hi, lo)),
            _ => false,
        }
    }
}

/// What BM25 weighs with: the index's statistics and the delta's together (a changed item's
/// old document still counts in the index's until the fold; tantivy counts deleted documents
/// the same way until a merge).
pub(crate) struct Stats<'a> {
    pub searcher: &'a Searcher,
    pub delta: &'a Delta,
    pub text: Field,
}

impl Bm25StatisticsProvider for Stats<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        let delta = if field == self.text { self.delta.tokens } else { 0 };
        Ok(Bm25StatisticsProvider::total_num_tokens(self.searcher, field)? + delta)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(Bm25StatisticsProvider::total_num_docs(self.searcher)? + self.delta.live)
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        let delta = term.value().as_str().and_then(|t| self.delta.doc_freq.get(t)).copied().unwrap_or(0);
        Ok(self.searcher.doc_freq(term)? + delta)
    }
}

/// A plan with its BM25 weights, to score the delta's documents as tantivy scores the index's:
/// a term by its frequency, a phrase by its occurrences with the summed weight of its terms, a
/// prefix by the sum of its expansions found; clauses add up, each times its weight.
pub(crate) struct PlanScorer {
    all: bool,
    clauses: Vec<(Clause, Vec<Bm25Weight>)>,
    exclude: Vec<String>,
}

impl PlanScorer {
    pub(crate) fn new(plan: &Plan, stats: &Stats<'_>, fields: &Fields) -> tantivy::Result<PlanScorer> {
        let term = |t: &String| Term::from_field_text(fields.text, t);
        let mut clauses = Vec::with_capacity(plan.clauses.len());
        for (clause, boost) in &plan.clauses {
            let weights: Vec<Bm25Weight> = match clause {
                Clause::Term(t) => vec![Bm25Weight::for_terms(stats, &[term(t)])?],
                Clause::Phrase(terms) => {
                    vec![Bm25Weight::for_terms(stats, &terms.iter().map(term).collect::<Vec<_>>())?]
                }
                Clause::AnyOf(terms) => terms
                    .iter()
                    .map(|t| Bm25Weight::for_terms(stats, &[term(t)]))
                    .collect::<Result<_, _>>()?,
            };
            let weights = weights.iter().map(|w| w.boost_by(*boost)).collect();
            clauses.push((clause.clone(), weights));
        }
        Ok(PlanScorer { all: plan.all, clauses, exclude: plan.exclude.clone() })
    }

    /// The document's score, or `None` when it does not match.
    pub(crate) fn score(&self, doc: &DeltaDoc) -> Option<Score> {
        if self.exclude.iter().any(|t| doc.freq(t) > 0) {
            return None;
        }
        let norm = FieldNormReader::fieldnorm_to_id(doc.tokens);
        let (mut total, mut matched) = (0.0, 0);
        for (clause, weights) in &self.clauses {
            let score = match clause {
                Clause::Term(t) => Some(doc.freq(t)).filter(|&f| f > 0).map(|f| weights[0].score(norm, f)),
                Clause::Phrase(terms) => {
                    Some(doc.phrase_freq(terms)).filter(|&f| f > 0).map(|f| weights[0].score(norm, f))
                }
                Clause::AnyOf(terms) => terms
                    .iter()
                    .zip(weights)
                    .filter_map(|(t, w)| Some(doc.freq(t)).filter(|&f| f > 0).map(|f| w.score(norm, f)))
                    .reduce(|a, b| a + b),
            };
            match score {
                Some(score) => {
                    total += score;
                    matched += 1;
                }
                None if self.all => return None,
                None => {}
            }
        }
        (matched > 0).then_some(total)
    }
}
