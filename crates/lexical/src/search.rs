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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Place;
    use crate::delta::{Delta, DeltaDoc};
    use cortex_domain::Kind;
    use cortex_domain::query::{ParsedQuery, parse_query};
    use cortex_domain::spelling::CORRECTED_WEIGHT;
    use cortex_store::{Combine, Filters, Record, StoredItem};

    const WORDS: &[&str] = &[
        "webhook", "retry", "billing", "queue", "deploy", "cache", "token", "schema", "latency", "index",
        "backoff", "invoice", "tenant", "shard", "replica", "timeout",
    ];

    /// An index of `segments` segments of `per_segment` items each, written in separate
    /// commits, with texts drawn from a small vocabulary so that many items tie or nearly tie.
    fn index_of(segments: usize, per_segment: usize) -> LexicalIndex {
        let index = LexicalIndex::open(&Place::Memory).unwrap();
        let mut writer =
            index.index.writer_with_num_threads::<tantivy::TantivyDocument>(1, 15_000_000).unwrap();
        writer.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
        let mut seed = 0x9e37_79b9_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for s in 0..segments {
            for i in 0..per_segment {
                let words: Vec<&str> = (0..3 + next() % 12).map(|_| WORDS[(next() % 16) as usize]).collect();
                let org = if i % 3 == 0 { "acme" } else { "other" };
                let kind = if i % 2 == 0 { Kind::Decision } else { Kind::Issue };
                let item = item(
                    Uuid::from_u64_pair(s as u64, i as u64),
                    kind,
                    org,
                    words[0],
                    &words[1..].join(" "),
                    i,
                );
                writer.add_document(index.fields.document(&item)).unwrap();
            }
            writer.commit().unwrap();
        }
        index.reader.reload().unwrap();
        assert_eq!(index.reader.searcher().segment_readers().len(), segments);
        index
    }

    fn item(id: Uuid, kind: Kind, org: &str, title: &str, body: &str, updated_at: usize) -> StoredItem {
        let mut scope = Scope::default();
        scope.set("org", org.to_string());
        let record = Record {
            id,
            kind,
            scope,
            title: title.to_string(),
            body: body.to_string(),
            content: None,
            data: serde_json::Value::Null,
            metadata: None,
            source: None,
            tags: Vec::new(),
            status: None,
            content_hash: String::new(),
            idempotency_key: None,
            ttl: None,
            created_at: 0,
            updated_at: updated_at as i64,
            expires_at: None,
            vector: None,
            chunks: Vec::new(),
        };
        StoredItem { record, deleted_at: None, superseded_by: None }
    }

    fn query(text: &str, filters: Filters, pool: usize) -> LexicalQuery {
        LexicalQuery { query: parse_query(text), combine: Combine::Any, filters, pool }
    }

    /// `text` as the user typed it, except `corrected`, put in by typo correction.
    fn query_with_corrected(text: &str, corrected: &str, combine: Combine) -> LexicalQuery {
        let parsed = ParsedQuery { corrected: vec![corrected.to_string()], ..parse_query(text) };
        LexicalQuery {
            query: parsed,
            combine,
            filters: Filters { now: 1, ..Filters::default() },
            pool: 10_000,
        }
    }

    #[test]
    fn a_corrected_word_weighs_less_than_a_typed_one() {
        let index = index_of(2, 200);
        let typed = scored(&index, &query("invoice", Filters { now: 1, ..Filters::default() }, 10_000));
        let corrected = scored(&index, &query_with_corrected("invoice", "invoice", Combine::Any));
        assert!(!typed.is_empty());
        assert_eq!(typed.len(), corrected.len(), "the same matches");
        for ((id, full), (_, less)) in typed.iter().zip(&corrected) {
            let expected = full * f64::from(CORRECTED_WEIGHT);
            assert!((less - expected).abs() < 1e-4 * full, "{id}: {less} for {full} typed");
        }
    }

    fn ranked(found: &[LexicalMatch]) -> Vec<(Uuid, f64)> {
        found.iter().map(|m| (m.id, m.score)).collect()
    }

    #[test]
    fn a_search_split_across_threads_ranks_as_one_thread_does() {
        let index = index_of(5, 400);
        let now = 1;
        let acme = Filters { now, scope_equals: vec![("org", "acme".to_string())], ..Filters::default() };
        let decisions = Filters { now, kinds: vec![Kind::Decision], ..Filters::default() };
        for filters in [Filters { now, ..Filters::default() }, acme, decisions] {
            for (text, pool) in
                [("webhook retry backoff timeout", 10), ("billing invoice tenant", 100), ("cache", 7)]
            {
                let q = query(text, filters.clone(), pool);
                let alone = index.search_on(&q, Some(1)).unwrap();
                assert_eq!(alone.len(), pool, "{text}: the pool is filled");
                for threads in [2, 3, 8] {
                    let split = index.search_on(&q, Some(threads)).unwrap();
                    assert_eq!(ranked(&split), ranked(&alone), "{text} on {threads} threads");
                }
            }
        }
    }

    #[test]
    fn a_merge_into_one_segment_per_core_changes_no_answer() {
        let index = index_of(7, 150);
        let filters = Filters { now: 1, ..Filters::default() };
        // Every match, not a pool: which of several tied items fills a pool's last place
        // follows document order, and a merge renumbers the documents.
        let every = |text: &str| scored(&index, &query(text, filters.clone(), 10_000));
        let queries = ["webhook retry backoff timeout", "billing invoice tenant", "cache"];
        let before: Vec<_> = queries.iter().map(|t| every(t)).collect();
        index.merge_per_core().unwrap();
        index.reader.reload().unwrap();
        let segments = index.reader.searcher().segment_readers().len();
        assert_eq!(segments, crate::parallel::most_threads().min(7));
        let after: Vec<_> = queries.iter().map(|t| every(t)).collect();
        for ((before, after), text) in before.iter().zip(&after).zip(queries) {
            assert_eq!(before.len(), after.len(), "{text}");
            for ((a, x), (b, y)) in before.iter().zip(after) {
                assert_eq!(a, b, "{text}");
                assert!((x - y).abs() < 1e-5, "{text}: {x} against {y}");
            }
        }
    }

    /// Every match with its score, by id.
    fn scored(index: &LexicalIndex, q: &LexicalQuery) -> Vec<(Uuid, f64)> {
        let mut all = ranked(&index.search_on(q, Some(1)).unwrap());
        all.sort_by_key(|(id, _)| *id);
        all
    }

    #[test]
    fn the_delta_ranks_and_counts_as_its_commit_does() {
        let index = index_of(3, 200);
        let base = index.reader.searcher();
        // Changes since the commit: new items, base items rewritten, base items deleted.
        let mut changed = Vec::new();
        for i in 0..30u64 {
            let words =
                [WORDS[(i % 16) as usize], WORDS[((i * 7) % 16) as usize], WORDS[((i * 3) % 16) as usize]];
            let (title, body) = (words[0], format!("{} {} billing invoice", words[1], words[2]));
            let id = match i % 3 {
                0 => Uuid::from_u64_pair(9, i),
                _ => Uuid::from_u64_pair(i % 3, i),
            };
            changed.push((id, (i % 5 != 4).then(|| item(id, Kind::Decision, "acme", title, &body, 7))));
        }
        let mut delta = Delta::empty(cortex_store::ChangeCursor::default());
        let mut analyzer = index.analyzer.clone();
        for (id, item) in &changed {
            delta.put(*id, item.as_ref().map(|item| DeltaDoc::of(item, &mut analyzer)));
        }
        index.set_view(View { searcher: base, delta });
        let now = 1;
        let queries = [
            query("webhook retry backoff timeout", Filters { now, ..Filters::default() }, 10_000),
            query("\"billing invoice\" tenant", Filters { now, ..Filters::default() }, 10_000),
            query("cache -token", Filters { now, ..Filters::default() }, 10_000),
            query("ten* shard", Filters { now, ..Filters::default() }, 10_000),
            query(
                "billing invoice",
                Filters { now, scope_equals: vec![("org", "acme".to_string())], ..Filters::default() },
                10_000,
            ),
            LexicalQuery {
                query: parse_query("billing cache"),
                combine: Combine::All,
                filters: Filters { now, ..Filters::default() },
                pool: 10_000,
            },
            // A typo's correction weighs less, in the delta as in the index.
            query_with_corrected("webhook invoice shard", "invoice", Combine::Any),
            query_with_corrected("billing invoice", "invoice", Combine::All),
        ];
        let before: Vec<_> =
            queries.iter().map(|q| (scored(&index, q), index.count(q, usize::MAX).unwrap())).collect();
        let top: Vec<_> = queries
            .iter()
            .map(|q| ranked(&index.search_on(&LexicalQuery { pool: 5, ..q.clone() }, Some(1)).unwrap()))
            .collect();

        // The fold, by hand: the same changes committed to the index.
        let mut writer =
            index.index.writer_with_num_threads::<tantivy::TantivyDocument>(1, 15_000_000).unwrap();
        writer.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
        for (id, item) in &changed {
            writer.delete_term(index.fields.id_term(*id));
            if let Some(item) = item {
                writer.add_document(index.fields.document(item)).unwrap();
            }
        }
        writer.commit().unwrap();
        index.reader.reload().unwrap();
        index.set_view(View { searcher: index.reader.searcher(), delta: Delta::default() });

        for (i, q) in queries.iter().enumerate() {
            let (matched, count) = &before[i];
            let after = scored(&index, q);
            assert!(!after.is_empty(), "query {i} matches something");
            assert_eq!(
                after.iter().map(|m| m.0).collect::<Vec<_>>(),
                matched.iter().map(|m| m.0).collect::<Vec<_>>(),
                "query {i}: the same items"
            );
            for ((id, folded), (_, held)) in after.iter().zip(matched) {
                assert!(
                    (folded - held).abs() < 1e-4 * folded.abs().max(1.0),
                    "query {i}, {id}: {held} in the delta, {folded} committed"
                );
            }
            assert_eq!(index.count(q, usize::MAX).unwrap(), *count, "query {i}: the same count");
            let folded_top =
                ranked(&index.search_on(&LexicalQuery { pool: 5, ..q.clone() }, Some(1)).unwrap());
            let scores = |r: &[(Uuid, f64)]| r.iter().map(|m| (m.1 * 1e3).round() as i64).collect::<Vec<_>>();
            assert_eq!(scores(&folded_top), scores(&top[i]), "query {i}: the same top scores");
        }
        // A rewritten item's old words and a deleted item are gone before the fold as after.
        let deleted: Vec<Uuid> =
            changed.iter().filter(|(_, item)| item.is_none()).map(|(id, _)| *id).collect();
        assert!(!deleted.is_empty());
        for (matched, _) in &before {
            assert!(matched.iter().all(|(id, _)| !deleted.contains(id)));
        }
    }

    #[test]
    fn segments_are_grouped_by_size_and_no_group_is_empty() {
        let index = index_of(5, 50);
        let searcher = index.reader.searcher();
        let groups = segment_groups(searcher.segment_readers(), 2);
        assert_eq!(groups.len(), 2);
        let sizes: Vec<usize> = groups.iter().map(Vec::len).collect();
        assert_eq!(sizes.iter().sum::<usize>(), 5);
        assert!(sizes.contains(&3) && sizes.contains(&2), "{sizes:?}");
        assert_eq!(segment_groups(searcher.segment_readers(), 8).len(), 5, "one segment per group at most");
        let mut one = segment_groups(searcher.segment_readers(), 1);
        assert_eq!(one.len(), 1);
        one[0].sort_unstable();
        assert_eq!(one[0], vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn the_shared_threshold_only_rises_and_lets_ties_through() {
        let shared = SharedThreshold::default();
        assert!(shared.prune_below(Score::MIN) < Score::MIN, "unset, a group prunes below its own");
        shared.raise(2.0);
        shared.raise(1.0);
        let t = shared.prune_below(0.5);
        assert!(t < 2.0 && t > 1.999, "just below the best k-th score reached: {t}");
        let own = shared.prune_below(3.0);
        assert!(own < 3.0 && own > 2.999, "a group's own higher threshold wins: {own}");
    }
}
