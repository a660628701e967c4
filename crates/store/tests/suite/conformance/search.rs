//! Lexical search, recent items, counts, session neighbours.

use super::*;
use cortex_domain::Kind;
use cortex_domain::dedupe;
use cortex_domain::graph::Cascade;
use cortex_store::*;
use cortex_testdb::{TestDb, per_backend};
use serde_json::json;
use uuid::Uuid;

per_backend!(
    search_ranks_better_matches_first_and_honours_filters,
    recent_items_pass_the_filters_newest_first,
    lexical_counts_are_capped,
    session_neighbours_are_the_nearest_of_the_session_on_either_side,
);

fn search_ranks_better_matches_first_and_honours_filters(db: &TestDb) {
    let store = db.open();
    let both = record("Redis sessions", "We dropped redis for sessions", "main");
    let one = record("Cache notes", "redis is used as a cache", "main");
    let other_branch = record("Redis sessions again", "redis sessions on a branch", "feature");
    let decision = Record {
        kind: Kind::Decision,
        status: Some("accepted".into()),
        tags: vec!["db".into()],
        ..record("Sessions in postgres", "sessions move to postgres", "main")
    };
    for r in [&both, &one, &other_branch, &decision] {
        insert(&*store, r);
    }
    let all = store.search_lexical(&query("redis sessions", filters())).unwrap();
    assert_eq!(all.len(), 4);
    let conjunctive = LexicalQuery { combine: Combine::All, ..query("redis sessions", filters()) };
    let every_term = ids(&store.search_lexical(&conjunctive).unwrap());
    assert_eq!(every_term.len(), 2, "only items holding both words");
    assert!(every_term.contains(&both.id) && every_term.contains(&other_branch.id));
    assert!(!every_term.contains(&decision.id));
    assert!(all.windows(2).all(|w| w[0].score >= w[1].score), "best first");
    assert!(all.iter().position(|m| m.id == both.id) < all.iter().position(|m| m.id == one.id));

    let main_only = Filters { scope_equals: vec![("branch", "main".into())], ..filters() };
    assert!(!ids(&store.search_lexical(&query("redis", main_only)).unwrap()).contains(&other_branch.id));

    let decisions = Filters { kinds: vec![Kind::Decision], ..filters() };
    assert_eq!(ids(&store.search_lexical(&query("sessions", decisions)).unwrap()), vec![decision.id]);

    let tagged = Filters { tags: vec!["db".into()], status: Some("accepted".into()), ..filters() };
    assert_eq!(ids(&store.search_lexical(&query("sessions", tagged)).unwrap()), vec![decision.id]);

    let later = Filters { since: Some(NOW + 1), ..filters() };
    assert!(store.search_lexical(&query("sessions", later)).unwrap().is_empty());

    let excluded = store.search_lexical(&query("sessions -postgres", filters())).unwrap();
    assert!(!ids(&excluded).contains(&decision.id));
}

fn recent_items_pass_the_filters_newest_first(db: &TestDb) {
    let store = db.open();
    let older = Record { updated_at: NOW - 20, ..record("Older note", "first", "main") };
    let newer = Record { updated_at: NOW - 10, ..record("Newer note", "second", "main") };
    let elsewhere = Record { updated_at: NOW - 5, ..record("Other branch", "third", "feature") };
    let decision =
        Record { kind: Kind::Decision, updated_at: NOW - 1, ..record("A decision", "fourth", "main") };
    for r in [&older, &newer, &elsewhere, &decision] {
        insert(&*store, r);
    }
    let main_sections = Filters {
        kinds: vec![Kind::Section],
        scope_equals: vec![("branch", "main".to_string())],
        ..filters()
    };
    let found: Vec<Uuid> = store.recent(&main_sections, 10).unwrap().iter().map(|i| i.record.id).collect();
    assert_eq!(found, vec![newer.id, older.id]);
    assert_eq!(store.recent(&main_sections, 1).unwrap().len(), 1, "the limit holds");
    assert_eq!(store.recent(&filters(), 10).unwrap().len(), 4);
}

fn lexical_counts_are_capped(db: &TestDb) {
    let store = db.open();
    for i in 0..5 {
        insert(&*store, &record(&format!("Kubernetes note {i}"), "kubernetes cluster upgrade", "main"));
    }
    assert_eq!(store.count_lexical(&query("kubernetes", filters()), 1000).unwrap(), 5);
    assert_eq!(store.count_lexical(&query("kubernetes", filters()), 3).unwrap(), 3);
    assert_eq!(store.count_lexical(&query("zzqxw", filters()), 1000).unwrap(), 0);
    let stats = store.stats().unwrap();
    assert_eq!((stats.items, stats.schema_version), (5, db.target().latest_schema_version()));
}

/// The items stored right before and after an item in its session: others' items in between
/// are skipped, filters hold, items without a session have none, the window bounds the look.
fn session_neighbours_are_the_nearest_of_the_session_on_either_side(db: &TestDb) {
    use cortex_domain::neighbours::Side;
    let store = db.open();
    let turn = |text: &str, session: Option<&str>, branch: &str| Record {
        source: session.map(|s| json!({ "session": s })),
        ..record(text, text, branch)
    };
    // Stored in this order (ids are UUIDv7: creation order).
    let a1 = turn("Ann asks whether Bob plays an instrument", Some("s1"), "main");
    let b1 = turn("Someone else talks in another session", Some("s2"), "main");
    let a2 = turn("Bob says he plays the clarinet", Some("s1"), "main");
    let a3 = turn("Ann says she loves clarinets", Some("s1"), "main");
    let x = turn("A note with no session", None, "main");
    let a4 = turn("Bob says goodbye from another branch", Some("s1"), "dev");
    let a5 = turn("Ann says goodbye", Some("s1"), "main");
    let all = [&a1, &b1, &a2, &a3, &x, &a4, &a5];
    let ops: Vec<WriteOp> =
        all.iter().map(|r| WriteOp::Insert { record: (*r).clone(), checks: dedupe::INSERT }).collect();
    store.write_batch(&ops).unwrap();
    let found = |ids: &[Uuid], filters: Filters, window: usize| -> Vec<(Uuid, Side, Uuid)> {
        let mut out: Vec<(Uuid, Side, Uuid)> = store
            .session_neighbours(ids, &filters, window)
            .unwrap()
            .into_iter()
            .map(|n| (n.of, n.side, n.id))
            .collect();
        out.sort_by_key(|(of, side, _)| (*of, *side == Side::After));
        out
    };
    assert_eq!(found(&[a2.id], filters(), 16), [(a2.id, Side::Before, a1.id), (a2.id, Side::After, a3.id)]);
    // The scope and facts come along, for the find's candidate.
    let n = store.session_neighbours(&[a1.id], &filters(), 16).unwrap();
    assert_eq!(n.len(), 1);
    assert_eq!((n[0].id, n[0].side, n[0].updated_at), (a2.id, Side::After, NOW));
    assert_eq!(n[0].scope, scope("main"));
    // After a3: the note has no session; a4 is the next of s1, unless the find is on main.
    assert_eq!(found(&[a3.id], filters(), 16)[1], (a3.id, Side::After, a4.id));
    let main = Filters { scope_equals: vec![("branch", "main".into())], ..filters() };
    assert_eq!(found(&[a3.id], main.clone(), 16)[1], (a3.id, Side::After, a5.id));
    // A deleted item is no neighbour.
    store
        .write_batch(&[WriteOp::Delete { id: a5.id, kind: None, at: NOW + 1, cascade: Cascade::DeleteLinks }])
        .unwrap();
    assert_eq!(found(&[a3.id], main, 16), [(a3.id, Side::Before, a2.id)]);
    // No session, no neighbours; an unknown id has none either.
    assert!(found(&[x.id, Uuid::now_v7()], filters(), 16).is_empty());
    // The window bounds the look: one item before a2 is b1, of another session.
    assert_eq!(found(&[a2.id], filters(), 1), [(a2.id, Side::After, a3.id)]);
}
