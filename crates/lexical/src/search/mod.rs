//! The filtered top-k: each segment's matches come through `Weight::for_each_pruning` (block-max
//! WAND for a union of words), the filter is tested only on those that would enter the top-k,
//! and only a passing match raises the threshold — so the pruning stays exact under any filter.
//! A long question over a large index is split across cores (`parallel`); the items changed
//! since the last commit (`delta`) mask the index's documents of them and rank beside its own.

use crate::delta::{PlanScorer, Stale, Stats};
use crate::filter::SegmentFilter;
use crate::health::guarded;
use crate::parallel::{Running, SharedThreshold, panic_message, search_threads, segment_groups};
use crate::{LexicalError, LexicalIndex, Result, View, query};
use cortex_domain::Scope;
use cortex_domain::scope::SCOPE_FIELDS;
use cortex_store::{LexicalMatch, LexicalQuery};
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use tantivy::query::{EnableScoring, Weight};
use tantivy::{DocId, Score, Searcher, SegmentReader, Term};
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
    /// A damaged index's panic is an error ([`crate::health`]).
    pub fn search(&self, query: &LexicalQuery) -> Result<Vec<LexicalMatch>> {
        guarded(|| self.search_on(query, None))
    }

    /// [`Self::search`] on one core, for a search that runs beside other work (a find's dense
    /// route, which scans on every core itself): splitting it too only made both wait.
    pub fn search_on_one_core(&self, query: &LexicalQuery) -> Result<Vec<LexicalMatch>> {
        guarded(|| self.search_on(query, Some(1)))
    }

    /// [`Self::search`] on `threads` threads, or as many as the index's size calls for.
    fn search_on(&self, query: &LexicalQuery, threads: Option<usize>) -> Result<Vec<LexicalMatch>> {
        let view = self.searched();
        let Some(prepared) = self.prepare(&view, query, true)? else { return Ok(Vec::new()) };
        let k = query.pool.max(1);
        let running = Running::start(&self.searching);
        let threads = match threads {
            Some(threads) => threads,
            None if running.alone => search_threads(prepared.postings(&view.searcher)?),
            None => 1,
        };
        let searcher = &view.searcher;
        let weight = &*prepared.weight;
        let groups = segment_groups(searcher.segment_readers(), threads);
        let shared = SharedThreshold::default();
        let top_of = |group: &[usize]| top_k(&view, weight, group, k, &query.filters, &shared);
        let mut best = match groups.as_slice() {
            [] => Vec::new(),
            [only] => top_of(only)?,
            [first, rest @ ..] => std::thread::scope(|scope| -> Result<Vec<Entry>> {
                let workers: Vec<_> = rest.iter().map(|group| scope.spawn(move || top_of(group))).collect();
                let mut all = top_of(first)?;
                for worker in workers {
                    let found = worker
                        .join()
                        .map_err(|panic| LexicalError::SearchPanicked { message: panic_message(&*panic) })?;
                    all.extend(found?);
                }
                Ok(all)
            })?,
        };
        best.sort_by(|a, b| {
            b.score.total_cmp(&a.score).then_with(|| (a.segment, a.doc).cmp(&(b.segment, b.doc)))
        });
        best.truncate(k);
        let mut found = self.matches(searcher, &best)?;
        if let Some(scorer) = &prepared.delta {
            // The delta's matches rank among the index's by score; at a tie, the index's
            // first, then by id, so the answer does not hang on a hash map's order.
            let mut fresh: Vec<LexicalMatch> = view
                .delta
                .matches(scorer, &query.filters)
                .map(|(doc, score)| LexicalMatch {
                    id: doc.id,
                    score: f64::from(score),
                    updated_at: doc.facts.updated_at,
                    scope: doc.facts.scope.clone(),
                    kind: Some(doc.facts.kind),
                })
                .collect();
            fresh.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
            found.extend(fresh);
            found.sort_by(|a, b| b.score.total_cmp(&a.score));
            found.truncate(k);
        }
        Ok(found)
    }

    /// How many live items match and pass the filters, counting stops at `cap`.
    pub fn count(&self, query: &LexicalQuery, cap: usize) -> Result<usize> {
        guarded(|| self.count_in(query, cap))
    }

    fn count_in(&self, query: &LexicalQuery, cap: usize) -> Result<usize> {
        let view = self.searched();
        let Some(prepared) = self.prepare(&view, query, false)? else { return Ok(0) };
        let mut count = match &prepared.delta {
            Some(scorer) => view.delta.matches(scorer, &query.filters).count(),
            None => 0,
        };
        for segment in view.searcher.segment_readers() {
            if count >= cap {
                break;
            }
            let filter = SegmentFilter::compile(segment, &query.filters)?;
            if filter.passes_nothing() {
                continue;
            }
            let alive = segment.alive_bitset();
            let stale = Stale::of(segment, &view.delta)?;
            prepared.weight.for_each_no_score(segment, &mut |docs| {
                for &doc in docs {
                    if count < cap
                        && !alive.is_some_and(|a| a.is_deleted(doc))
                        && filter.admits(doc)
                        && !stale.masks(doc)
                    {
                        count += 1;
                    }
                }
            })?;
        }
        Ok(count.min(cap))
    }

    /// The query's weight on the view's searcher (BM25 when `scoring`, over the index's
    /// statistics and the delta's together) and, when the delta holds anything, the scorer of
    /// its documents; `None` when no word of the query can match.
    fn prepare(&self, view: &View, query: &LexicalQuery, scoring: bool) -> Result<Option<Prepared>> {
        let mut analyzer = self.analyzer.clone();
        let Some(plan) = query::plan(
            &view.searcher,
            &view.delta,
            &self.fields,
            &mut analyzer,
            &query.query,
            query.combine,
        )?
        else {
            return Ok(None);
        };
        let stats = Stats { searcher: &view.searcher, delta: &view.delta, text: self.fields.text };
        let enable = match scoring {
            true => EnableScoring::enabled_from_statistics_provider(&stats, &view.searcher),
            false => EnableScoring::disabled_from_searcher(&view.searcher),
        };
        let weight = plan.to_query(&self.fields).weight(enable)?;
        let delta = match view.delta.is_empty() {
            true => None,
            false => Some(PlanScorer::new(&plan, &stats, &self.fields)?),
        };
        let terms = plan.terms().map(|t| Term::from_field_text(self.fields.text, t)).collect();
        Ok(Some(Prepared { weight, delta, terms }))
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
            let kind = cols.kind_value(e.doc)?;
            out.push(LexicalMatch {
                id: Uuid::from_u64_pair(hi, lo),
                score: f64::from(e.score),
                updated_at: cols.updated_at.first(e.doc).unwrap_or(0),
                scope,
                kind,
            });
        }
        Ok(out)
    }
}

/// A query made ready to run on the view it was made for.
struct Prepared {
    weight: Box<dyn Weight>,
    /// The scorer of the delta's documents, when it holds any.
    delta: Option<PlanScorer>,
    terms: Vec<Term>,
}

impl Prepared {
    /// Postings of the query's terms, all segments together: how much work its search is.
    /// Looked up only when a search may split (a count, or a search kept on one core, needs
    /// no more than its weight).
    fn postings(&self, searcher: &Searcher) -> Result<u64> {
        let mut postings = 0;
        for term in &self.terms {
            postings += searcher.doc_freq(term)?;
        }
        Ok(postings)
    }
}

/// The best `k` matches in the segments `group` (ordinals in the searcher), in no order.
fn top_k(
    view: &View,
    weight: &dyn Weight,
    group: &[usize],
    k: usize,
    filters: &cortex_store::Filters,
    shared: &SharedThreshold,
) -> Result<Vec<Entry>> {
    let mut heap: BinaryHeap<Entry> = BinaryHeap::with_capacity(k + 1);
    let mut local = Score::MIN;
    for &ord in group {
        let segment = view.searcher.segment_reader(ord as u32);
        let filter = SegmentFilter::compile(segment, filters)?;
        if filter.passes_nothing() {
            continue;
        }
        let alive = segment.alive_bitset();
        let stale = Stale::of(segment, &view.delta)?;
        weight.for_each_pruning(shared.prune_below(local), segment, &mut |doc, score| {
            if alive.is_some_and(|a| a.is_deleted(doc)) || !filter.admits(doc) || stale.masks(doc) {
                return shared.prune_below(local);
            }
            heap.push(Entry { score, segment: ord as u32, doc });
            if heap.len() > k {
                heap.pop();
            }
            if heap.len() == k {
                local = heap.peek().map_or(Score::MIN, |e| e.score);
                shared.raise(local);
            }
            shared.prune_below(local)
        })?;
    }
    Ok(heap.into_vec())
}

/// The columns a hit is read from, for one segment, with the scope values spelled out so far.
struct SegmentColumns {
    id_hi: tantivy::columnar::Column<u64>,
    id_lo: tantivy::columnar::Column<u64>,
    updated_at: tantivy::columnar::Column<i64>,
    scope: Vec<Option<tantivy::columnar::StrColumn>>,
    kind: Option<tantivy::columnar::StrColumn>,
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
            kind: fast.str("kind")?,
            spelled: HashMap::new(),
        })
    }

    /// The document's kind, spelled once per segment and kind.
    fn kind_value(&mut self, doc: DocId) -> Result<Option<cortex_domain::Kind>> {
        let Some(column) = &self.kind else { return Ok(None) };
        let Some(ord) = column.term_ords(doc).next() else { return Ok(None) };
        let spelled = match self.spelled.entry((usize::MAX, ord)) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                let mut value = String::new();
                column.ord_to_str(ord, &mut value)?;
                v.insert(value)
            }
        };
        Ok(cortex_domain::Kind::parse(spelled))
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

#[cfg(test)]
mod tests;
