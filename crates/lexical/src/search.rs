//! The filtered top-k: each segment's matches come through `Weight::for_each_pruning` (block-max
//! WAND for a union of words), the filter is tested only on those that would enter the top-k,
//! and only a passing match raises the threshold — so the pruning stays exact under any filter.

use crate::filter::SegmentFilter;
use crate::{LexicalIndex, Result, query};
use cortex_domain::Scope;
use cortex_domain::scope::SCOPE_FIELDS;
use cortex_store::{LexicalMatch, LexicalQuery};
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use tantivy::query::{EnableScoring, Weight};
use tantivy::{DocId, Score, Searcher, SegmentReader};
use uuid::Uuid;

/// A match in the heap: the worst on top.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Entry {
    score: Score,
    segment: u32,
    doc: DocId,
}

impl Eq for Entry {}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap and the top must be the worst match.
        other
            .score
            .total_cmp(&self.score)
            .then_with(|| (self.segment, self.doc).cmp(&(other.segment, other.doc)))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl LexicalIndex {
    /// The `query.pool` best matches that pass `query.filters`, best first, ranked by BM25.
    pub fn search(&self, query: &LexicalQuery) -> Result<Vec<LexicalMatch>> {
        let Some((searcher, weight)) = self.weight(query, true)? else { return Ok(Vec::new()) };
        let k = query.pool.max(1);
        let mut heap: BinaryHeap<Entry> = BinaryHeap::with_capacity(k + 1);
        let mut threshold = Score::MIN;
        for (ord, segment) in searcher.segment_readers().iter().enumerate() {
            let filter = SegmentFilter::compile(segment, &query.filters)?;
            if filter.passes_nothing() {
                continue;
            }
            let alive = segment.alive_bitset();
            weight.for_each_pruning(threshold, segment, &mut |doc, score| {
                if alive.is_some_and(|a| a.is_deleted(doc)) || !filter.admits(doc) {
                    return threshold;
                }
                heap.push(Entry { score, segment: ord as u32, doc });
                if heap.len() > k {
                    heap.pop();
                }
                if heap.len() == k {
                    threshold = heap.peek().map_or(Score::MIN, |e| e.score);
                }
                threshold
            })?;
        }
        let mut best = heap.into_vec();
        best.sort_by(|a, b| {
            b.score.total_cmp(&a.score).then_with(|| (a.segment, a.doc).cmp(&(b.segment, b.doc)))
        });
        self.matches(&searcher, &best)
    }

    /// How many live items match and pass the filters, counting stops at `cap`.
    pub fn count(&self, query: &LexicalQuery, cap: usize) -> Result<usize> {
        let Some((searcher, weight)) = self.weight(query, false)? else { return Ok(0) };
        let mut count = 0usize;
        for segment in searcher.segment_readers() {
            if count >= cap {
                break;
            }
            let filter = SegmentFilter::compile(segment, &query.filters)?;
            if filter.passes_nothing() {
                continue;
            }
            let alive = segment.alive_bitset();
            weight.for_each_no_score(segment, &mut |docs| {
                for &doc in docs {
                    if count < cap && !alive.is_some_and(|a| a.is_deleted(doc)) && filter.admits(doc) {
                        count += 1;
                    }
                }
            })?;
        }
        Ok(count.min(cap))
    }

    /// The searcher of the last reload and the query's weight on it (BM25 when `scoring`);
    /// `None` when no word of the query can match.
    fn weight(&self, query: &LexicalQuery, scoring: bool) -> Result<Option<(Searcher, Box<dyn Weight>)>> {
        let searcher = self.reader.searcher();
        let mut analyzer = self.analyzer.clone();
        let Some(built) = query::build(&searcher, &self.fields, &mut analyzer, &query.query, query.combine)?
        else {
            return Ok(None);
        };
        let scoring = match scoring {
            true => EnableScoring::enabled_from_searcher(&searcher),
            false => EnableScoring::disabled_from_searcher(&searcher),
        };
        let weight = built.weight(scoring)?;
        Ok(Some((searcher, weight)))
    }

    /// The ids, update times and scopes of the best matches, read from fast fields; each
    /// distinct scope value is spelled out once.
    fn matches(&self, searcher: &Searcher, best: &[Entry]) -> Result<Vec<LexicalMatch>> {
        let mut out = Vec::with_capacity(best.len());
        let mut columns: HashMap<u32, SegmentColumns> = HashMap::new();
        for e in best {
            let segment = searcher.segment_reader(e.segment);
            let cols = match columns.entry(e.segment) {
                std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::hash_map::Entry::Vacant(v) => v.insert(SegmentColumns::of(segment)?),
            };
            let (Some(hi), Some(lo)) = (cols.id_hi.first(e.doc), cols.id_lo.first(e.doc)) else { continue };
            let mut scope = Scope::default();
            for (i, field) in SCOPE_FIELDS.iter().enumerate() {
                if let Some(value) = cols.scope_value(i, e.doc)? {
                    scope.set(field, value);
                }
            }
            out.push(LexicalMatch {
                id: Uuid::from_u64_pair(hi, lo),
                score: f64::from(e.score),
                updated_at: cols.updated_at.first(e.doc).unwrap_or(0),
                scope,
            });
        }
        Ok(out)
    }
}

/// The columns a hit is read from, for one segment, with the scope values spelled out so far.
struct SegmentColumns {
    id_hi: tantivy::columnar::Column<u64>,
    id_lo: tantivy::columnar::Column<u64>,
    updated_at: tantivy::columnar::Column<i64>,
    scope: Vec<Option<tantivy::columnar::StrColumn>>,
    spelled: HashMap<(usize, u64), String>,
}

impl SegmentColumns {
    fn of(segment: &SegmentReader) -> Result<SegmentColumns> {
        let fast = segment.fast_fields();
        let mut scope = Vec::with_capacity(SCOPE_FIELDS.len());
        for field in SCOPE_FIELDS {
            scope.push(fast.str(&crate::schema::scope_column(field))?);
        }
        Ok(SegmentColumns {
            id_hi: fast.u64("id_hi")?,
            id_lo: fast.u64("id_lo")?,
            updated_at: fast.i64("updated_at")?,
            scope,
            spelled: HashMap::new(),
        })
    }

    fn scope_value(&mut self, field: usize, doc: DocId) -> Result<Option<String>> {
        let Some(column) = &self.scope[field] else { return Ok(None) };
        let Some(ord) = column.term_ords(doc).next() else { return Ok(None) };
        if let Some(value) = self.spelled.get(&(field, ord)) {
            return Ok(Some(value.clone()));
        }
        let mut value = String::new();
        column.ord_to_str(ord, &mut value)?;
        self.spelled.insert((field, ord), value.clone());
        Ok(Some(value))
    }
}
