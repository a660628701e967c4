//! The index's vocabulary, for a find's hints and `deep`'s typo correction: whether a caller's
//! items hold a word, the terms a few edits from a mistyped word, the terms common in a memory,
//! and a term (a stem) as it is written. Read from each segment's term dictionary (an FST,
//! searched with a Levenshtein automaton) and from the delta, not from the database: scanning
//! the database's vocabulary of every tenant's rows, then counting each candidate there, cost
//! seconds per find while another tenant flooded the store.
//!
//! A term dictionary holds every tenant's terms, and a deleted item's until a merge drops it.
//! So no term leaves this module unless an item that passes the caller's filters (its tenant
//! bound) holds it now: each candidate is looked up in the postings, deleted documents and the
//! delta's stale ones masked and the filters tested, as a search would.

use crate::delta::DeltaDoc;
use crate::filter::SegmentFilter;
use crate::health::guarded;
use crate::schema::terms_of;
use crate::{LexicalIndex, Result, View};
use cortex_domain::spelling::{allowed_edits, edit_distance};
use cortex_store::Filters;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap};
use std::sync::{Arc, PoisonError};
use tantivy::query::FuzzyTermQuery;
use tantivy::schema::IndexRecordOption;
use tantivy::{DocId, DocSet, SegmentReader, TERMINATED, Term};
use uuid::Uuid;

/// The most widespread terms of the whole index, remembered for the commit they were read
/// from: common words are asked for by every find with few hits, and reading them streams
/// every term of every segment.
#[derive(Default)]
pub(crate) struct CommonTerms {
    read: std::sync::Mutex<Option<Remembered>>,
}

/// The terms read for a searcher generation and a number of terms asked for.
struct Remembered {
    key: (u64, usize),
    terms: Arc<Vec<(String, u64)>>,
}

/// Postings of a widespread term looked at for an item of the caller's, at most.
const COMMON_EXAMINED: usize = 50_000;

/// Where an item holding a term was found.
enum Holder<'a> {
    Delta(&'a DeltaDoc),
    Indexed(&'a SegmentReader, DocId),
}

/// The index's vocabulary as a caller's filters see it: borrowed from the index
/// ([`LexicalIndex::vocabulary`]), reading the same view its searches read.
pub struct Vocabulary<'a> {
    index: &'a LexicalIndex,
}

impl LexicalIndex {
    /// The index's terms, for spelling hints and common words.
    pub fn vocabulary(&self) -> Vocabulary<'_> {
        Vocabulary { index: self }
    }
}

impl Vocabulary<'_> {
    /// Whether some item passing `filters` holds `word` (analyzed as a query word is).
    pub fn holds_word(&self, word: &str, filters: &Filters) -> Result<bool> {
        guarded(|| {
            let view = self.index.searched();
            let mut analyzer = self.index.analyzer.clone();
            let Some(term) = terms_of(&mut analyzer, word).pop() else { return Ok(false) };
            Ok(self.holders(&view, &term, filters, 1)? > 0)
        })
    }

    /// The index terms (stems) within the edits `cortex_domain::spelling` allows of `word` as
    /// typed or of its stem, each with how many items passing `filters` hold it (counted up to
    /// `cap`), most widespread first; a term no such item holds is left out.
    pub fn terms_near(&self, word: &str, filters: &Filters, cap: usize) -> Result<Vec<(String, usize)>> {
        guarded(|| {
            let view = self.index.searched();
            let mut analyzer = self.index.analyzer.clone();
            let typed = word.to_lowercase();
            let stem = terms_of(&mut analyzer, word).pop().filter(|s| *s != typed);
            let mut near = BTreeSet::new();
            for form in std::iter::once(typed).chain(stem) {
                let edits = allowed_edits(&form);
                if edits == 0 {
                    continue;
                }
                let term = Term::from_field_text(self.index.fields.text, &form);
                let automaton = FuzzyTermQuery::new(term, edits as u8, true).automaton()?;
                for segment in view.searcher.segment_readers() {
                    let index = segment.inverted_index(self.index.fields.text)?;
                    let mut stream = index.terms().search(&automaton).into_stream()?;
                    while stream.advance() {
                        near.insert(String::from_utf8_lossy(stream.key()).into_owned());
                    }
                }
                let in_delta = view.delta.terms().filter(|t| edit_distance(&form, t, edits).is_some());
                near.extend(in_delta.map(str::to_string));
            }
            let mut out = Vec::new();
            for term in near {
                let held = self.holders(&view, &term, filters, cap)?;
                if held > 0 {
                    out.push((term, held));
                }
            }
            out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            Ok(out)
        })
    }

    /// Of the `scan` most widespread terms of the whole index, up to `most` that are `wanted`
    /// and that some item passing `filters` holds, most widespread first. A term is looked for
    /// among its first [`COMMON_EXAMINED`] postings only: in a large memory of other tenants, a
    /// word common there but held by none of those is no common word of the caller's.
    pub fn common_terms(
        &self,
        filters: &Filters,
        scan: usize,
        wanted: &dyn Fn(&str) -> bool,
        most: usize,
    ) -> Result<Vec<String>> {
        guarded(|| {
            let view = self.index.searched();
            let mut out = Vec::new();
            for term in self.widespread(&view, scan)? {
                if out.len() == most {
                    break;
                }
                if !wanted(&term) {
                    continue;
                }
                let mut held = false;
                self.each_holder(&view, &term, filters, COMMON_EXAMINED, &mut |_| {
                    held = true;
                    Ok(false)
                })?;
                if held {
                    out.push(term);
                }
            }
            Ok(out)
        })
    }

    /// Up to `most` items passing `filters` that hold the index term `term` (the newest
    /// changes first).
    pub fn items_holding(&self, term: &str, filters: &Filters, most: usize) -> Result<Vec<Uuid>> {
        guarded(|| {
            let view = self.index.searched();
            let mut ids = Vec::new();
            let mut columns = None;
            self.each_holder(&view, term, filters, usize::MAX, &mut |holder| {
                match holder {
                    Holder::Delta(doc) => ids.push(doc.id),
                    Holder::Indexed(segment, doc) => {
                        if columns.as_ref().is_none_or(|(id, _, _)| *id != segment.segment_id()) {
                            let fast = segment.fast_fields();
                            columns = Some((segment.segment_id(), fast.u64("id_hi")?, fast.u64("id_lo")?));
                        }
                        if let Some((_, hi, lo)) = &columns
                            && let (Some(hi), Some(lo)) = (hi.first(doc), lo.first(doc))
                        {
                            ids.push(Uuid::from_u64_pair(hi, lo));
                        }
                    }
                }
                Ok(ids.len() < most)
            })?;
            Ok(ids)
        })
    }

    /// The word as written in `texts` that the index holds as `term` (`decis` → `decision`):
    /// of the words analyzed to it, one that starts with the term (the word it was cut from),
    /// else the most frequent; `None` when no word of the texts is.
    pub fn written_form(&self, term: &str, texts: &[&str]) -> Option<String> {
        let mut analyzer = self.index.analyzer.clone();
        let mut seen: HashMap<String, usize> = HashMap::new();
        for text in texts {
            let mut stream = analyzer.token_stream(text);
            while stream.advance() {
                let token = stream.token();
                if token.text == term
                    && let Some(word) = text.get(token.offset_from..token.offset_to)
                {
                    *seen.entry(word.to_lowercase()).or_default() += 1;
                }
            }
        }
        seen.into_iter()
            .max_by(|(a, n), (b, m)| {
                (a.starts_with(term), n, Reverse(a.len()), Reverse(a.as_str())).cmp(&(
                    b.starts_with(term),
                    m,
                    Reverse(b.len()),
                    Reverse(b.as_str()),
                ))
            })
            .map(|(word, _)| word)
    }

    /// How many items passing `filters` hold `term`, counting up to `cap`.
    fn holders(&self, view: &View, term: &str, filters: &Filters, cap: usize) -> Result<usize> {
        let mut count = 0;
        self.each_holder(view, term, filters, usize::MAX, &mut |_| {
            count += 1;
            Ok(count < cap)
        })?;
        Ok(count)
    }

    /// Each item passing `filters` that holds `term`, the delta's first, until `visit`
    /// answers `false` or `examined` postings of the index have been looked at.
    fn each_holder(
        &self,
        view: &View,
        term: &str,
        filters: &Filters,
        mut examined: usize,
        visit: &mut dyn FnMut(Holder<'_>) -> Result<bool>,
    ) -> Result<()> {
        for doc in view.delta.docs() {
            if doc.holds(term) && filters.admits(&doc.facts) && !visit(Holder::Delta(doc))? {
                return Ok(());
            }
        }
        let term = Term::from_field_text(self.index.fields.text, term);
        for segment in view.searcher.segment_readers() {
            let Some(mut postings) = segment
                .inverted_index(self.index.fields.text)?
                .read_postings(&term, IndexRecordOption::Basic)?
            else {
                continue;
            };
            let filter = SegmentFilter::compile(segment, filters)?;
            if filter.passes_nothing() {
                continue;
            }
            let alive = segment.alive_bitset();
            let stale = crate::delta::Stale::of(segment, &view.delta)?;
            let mut doc = postings.doc();
            while doc != TERMINATED {
                if examined == 0 {
                    return Ok(());
                }
                examined -= 1;
                if !alive.is_some_and(|a| a.is_deleted(doc))
                    && !stale.masks(doc)
                    && filter.admits(doc)
                    && !visit(Holder::Indexed(segment, doc))?
                {
                    return Ok(());
                }
                doc = postings.advance();
            }
        }
        Ok(())
    }

    /// The `scan` terms of the whole index held by the most documents (deleted ones counted
    /// until a merge), the delta's documents with them. Each segment offers its own most
    /// widespread few times `scan` (a term common in the memory is common in its large
    /// segments), read once per commit; the delta's are added at each call.
    fn widespread(&self, view: &View, scan: usize) -> Result<Vec<String>> {
        let offered = 4 * scan;
        let mut totals: HashMap<String, u64> =
            self.committed_widespread(view, offered)?.iter().cloned().collect();
        for (term, docs) in most(view.delta.doc_freqs(), offered) {
            *totals.entry(term.to_string()).or_default() += docs;
        }
        Ok(most(totals.iter().map(|(t, n)| (t.as_str(), *n)), scan)
            .into_iter()
            .map(|(t, _)| t.to_string())
            .collect())
    }

    /// Each segment's `offered` most widespread terms, added up across segments.
    fn committed_widespread(&self, view: &View, offered: usize) -> Result<Arc<Vec<(String, u64)>>> {
        let key = (view.searcher.generation().generation_id(), offered);
        let mut read = self.index.common.read.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(remembered) = &*read
            && remembered.key == key
        {
            return Ok(remembered.terms.clone());
        }
        let mut totals: HashMap<String, u64> = HashMap::new();
        for segment in view.searcher.segment_readers() {
            let index = segment.inverted_index(self.index.fields.text)?;
            let mut stream = index.terms().stream()?;
            let mut top: BinaryHeap<Reverse<(u32, Vec<u8>)>> = BinaryHeap::new();
            while stream.advance() {
                let docs = stream.value().doc_freq;
                if top.len() < offered {
                    top.push(Reverse((docs, stream.key().to_vec())));
                } else if top.peek().is_some_and(|Reverse((least, _))| docs > *least) {
                    top.pop();
                    top.push(Reverse((docs, stream.key().to_vec())));
                }
            }
            for Reverse((docs, key)) in top {
                *totals.entry(String::from_utf8_lossy(&key).into_owned()).or_default() += u64::from(docs);
            }
        }
        let terms = Arc::new(totals.into_iter().collect::<Vec<_>>());
        *read = Some(Remembered { key, terms: terms.clone() });
        Ok(terms)
    }
}

/// The `n` terms with the highest counts, highest first (ties by term).
fn most<'a>(terms: impl Iterator<Item = (&'a str, u64)>, n: usize) -> Vec<(&'a str, u64)> {
    let mut all: Vec<(&str, u64)> = terms.collect();
    all.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    all.truncate(n);
    all
}

#[cfg(test)]
mod tests {
    use crate::{LexicalIndex, Place};

    #[test]
    fn a_stem_is_written_as_the_word_it_was_cut_from_else_the_most_frequent() {
        let index = LexicalIndex::open(&Place::Memory).unwrap();
        let texts = ["Decisions decide", "the Decision was made; decisions stand"];
        assert_eq!(index.vocabulary().written_form("decis", &texts).as_deref(), Some("decisions"));
        assert_eq!(
            index.vocabulary().written_form("kubernet", &["Kubernetes upgrade"]).as_deref(),
            Some("kubernetes")
        );
        assert_eq!(index.vocabulary().written_form("absent", &texts), None);
    }
}
