//! What a find answers when hits are huge or many, on each backend:
//! snippets stay short however often a word repeats, and a response cut to its budget keeps
//! whole hits, says what it left out and how to get it.

use crate::common::{id_of, memory};
use cortex_domain::limits::{MAX_RESPONSE_CHARS, MAX_SNIPPET_CHARS};
use cortex_testdb::{TestDb, per_backend};
use serde_json::{Value, json};

per_backend!(
    a_default_find_over_real_prose_fits_in_4000_characters,
    a_word_repeated_twenty_thousand_times_gets_a_short_marked_snippet,
    a_cut_search_keeps_whole_hits_and_continues_by_cursor,
    a_cut_read_by_ids_lists_the_ids_left_out,
);

/// A memory of real prose: every paragraph of this project's architecture notes, README and
/// user docs, as decisions (title, rationale) and sections.
fn prose_memory(m: &crate::common::Memory) {
    let text = [
        include_str!("../../../../docs/ARCHITECTURE.md"),
        include_str!("../../../../README.md"),
        include_str!("../../../../docs/HOOKS.md"),
        include_str!("../../../../docs/CONFIGURATION.md"),
        include_str!("../../../../docs/TOOLS.md"),
    ]
    .join("\n\n");
    let items: Vec<Value> = text
        .split("\n\n")
        .map(str::trim)
        .filter(|p| p.split_whitespace().count() > 25)
        .enumerate()
        .map(|(i, p)| match i % 2 {
            0 => json!({"kind": "decision", "data": {"title": p.split('.').next().unwrap_or(p).chars().take(120).collect::<String>(), "component": "store", "status": "accepted", "rationale": p}}),
            _ => json!({"kind": "section", "content": p}),
        })
        .collect();
    assert!(items.len() > 40, "{} paragraphs", items.len());
    for batch in items.chunks(100) {
        m.store(Value::Array(batch.to_vec()));
    }
}

fn a_default_find_over_real_prose_fits_in_4000_characters(db: &TestDb) {
    // What Claude Code hands the model is the structured content: a default search costs at
    // most ~1,000 tokens, and says enough to choose what to read by id.
    let m = memory(db, "main");
    prose_memory(&m);
    for question in [
        "how does the store keep writes atomic when several processes share one database file",
        "which embedding model is used and where do its weights come from",
        "what happens to a decision when a newer one supersedes it",
    ] {
        let r = m.find(json!({ "query": question }));
        assert_eq!(r.hits.len(), 10, "{question}");
        let size = serde_json::to_string(&r).unwrap().len();
        assert!(size <= 4_000, "{size} characters for {question:?}");
        assert!(r.hits.iter().all(|h| h.content.is_none() && !h.title.is_empty() && !h.snippet.is_empty()));
    }
}

fn a_word_repeated_twenty_thousand_times_gets_a_short_marked_snippet(db: &TestDb) {
    // FTS5's snippet() took 32 s on this item (time grew with the square of the repeats).
    let m = memory(db, "main");
    m.store(json!([{"kind": "section", "content": format!("doc {}", "kappa ".repeat(20_000))}]));
    let found = m.find(json!({"query": "kappa"}));
    assert_eq!(found.hits.len(), 1);
    let snippet = &found.hits[0].snippet;
    assert!(snippet.chars().count() <= MAX_SNIPPET_CHARS, "{snippet}");
    assert!(snippet.contains("**kappa**"), "{snippet}");
}

/// 100 items of 30 KB each: `limit: 100` with 20,000 content characters per hit cannot fit.
fn thirty_kb_items(m: &crate::common::Memory) -> Vec<String> {
    let mut ids = Vec::new();
    for batch in 0..2 {
        let items: Vec<Value> = (0..50)
            .map(|i| json!({"kind": "section", "content": format!("budget item {batch}-{i} {}", "lorem ipsum ".repeat(2_500))}))
            .collect();
        let stored = m.store(Value::Array(items));
        ids.extend((0..50).map(|i| id_of(&stored, i)));
    }
    ids
}

fn a_cut_search_keeps_whole_hits_and_continues_by_cursor(db: &TestDb) {
    let m = memory(db, "main");
    let ids = thirty_kb_items(&m);
    let mut seen = Vec::new();
    let mut args = json!({"query": "budget lorem", "limit": 100, "max_content_chars": 20000, "mode": "fast"});
    for _page in 0..100 {
        let r = m.find(args.clone());
        let size = serde_json::to_string(&r).unwrap().len();
        assert!(size <= MAX_RESPONSE_CHARS, "{size}");
        assert!(!r.hits.is_empty());
        for hit in &r.hits {
            // Whole: every kept hit carries its content, cut only at max_content_chars.
            assert_eq!(hit.content.as_ref().map(|c| c.chars().count()), Some(20_000), "{}", hit.id);
            seen.push(hit.id.to_string());
        }
        match &r.next_cursor {
            Some(cursor) => {
                assert!(r.truncated);
                assert!(
                    r.notes.iter().any(|n| n.contains("left out") && n.contains("next_cursor")),
                    "{:?}",
                    r.notes
                );
                args = json!({"query": "budget lorem", "limit": 100, "max_content_chars": 20000, "mode": "fast", "cursor": cursor});
            }
            None => break,
        }
    }
    seen.sort();
    let mut all = ids.clone();
    all.sort();
    assert_eq!(seen, all, "the cursor reaches every hit exactly once");
}

fn a_cut_read_by_ids_lists_the_ids_left_out(db: &TestDb) {
    let m = memory(db, "main");
    let ids = thirty_kb_items(&m);
    let r = m.find(json!({"ids": ids}));
    let size = serde_json::to_string(&r).unwrap().len();
    assert!(size <= MAX_RESPONSE_CHARS, "{size}");
    assert!(r.truncated && !r.hits.is_empty() && !r.omitted_ids.is_empty());
    for hit in &r.hits {
        // Whole up to the lookup's default of 20,000 content characters.
        assert_eq!(hit.content.as_ref().map(|c| c.chars().count()), Some(20_000), "{}", hit.id);
    }
    let returned: Vec<String> =
        r.hits.iter().map(|h| h.id.to_string()).chain(r.omitted_ids.clone()).collect();
    assert_eq!(returned, ids, "kept then omitted, in the order asked");
    assert!(r.notes.iter().any(|n| n.contains("omitted_ids")), "{:?}", r.notes);
    // The omitted ids read in another call come back.
    let rest = m.find(json!({"ids": r.omitted_ids}));
    assert!(!rest.hits.is_empty());
}
