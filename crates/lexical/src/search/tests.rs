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
    let mut writer = index.index.writer_with_num_threads::<tantivy::TantivyDocument>(1, 15_000_000).unwrap();
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
            let item =
                item(Uuid::from_u64_pair(s as u64, i as u64), kind, org, words[0], &words[1..].join(" "), i);
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
        occurred_at: None,
        vector: None,
        chunks: Vec::new(),
    };
    StoredItem { record, deleted_at: None, superseded_by: None, governed_since: None, author: None }
}

fn query(text: &str, filters: Filters, pool: usize) -> LexicalQuery {
    LexicalQuery { query: parse_query(text), combine: Combine::Any, filters, pool }
}

/// `text` as the user typed it, except `corrected`, put in by typo correction.
fn query_with_corrected(text: &str, corrected: &str, combine: Combine) -> LexicalQuery {
    let parsed = ParsedQuery { corrected: vec![corrected.to_string()], ..parse_query(text) };
    LexicalQuery { query: parsed, combine, filters: Filters { now: 1, ..Filters::default() }, pool: 10_000 }
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
    let mut writer = index.index.writer_with_num_threads::<tantivy::TantivyDocument>(1, 15_000_000).unwrap();
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
        let folded_top = ranked(&index.search_on(&LexicalQuery { pool: 5, ..q.clone() }, Some(1)).unwrap());
        let scores = |r: &[(Uuid, f64)]| r.iter().map(|m| (m.1 * 1e3).round() as i64).collect::<Vec<_>>();
        assert_eq!(scores(&folded_top), scores(&top[i]), "query {i}: the same top scores");
    }
    // A rewritten item's old words and a deleted item are gone before the fold as after.
    let deleted: Vec<Uuid> = changed.iter().filter(|(_, item)| item.is_none()).map(|(id, _)| *id).collect();
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
