//! The store and find flows end to end through `MemoryService`, on each backend (a real
//! SQLite file, a real PostgreSQL database).

use crate::common::Tools;
use crate::common::{Lcg, id_of, memory, open_at, section};
use cortex_service::ServiceError;
use cortex_service::response::ItemStatus;
use cortex_testdb::{TestDb, per_backend};
use serde_json::{Value, json};

per_backend!(
    a_section_is_found_by_a_unique_word_with_the_word_marked,
    the_same_item_twice_is_skipped_with_the_first_id,
    one_idempotency_key_stores_one_item,
    an_invalid_item_does_not_block_the_valid_ones,
    branches_are_isolated_until_widened_and_the_own_branch_ranks_first,
    other_projects_and_orgs_need_wider_scopes,
    types_filter_and_its_suggestion,
    kinds_without_a_query_list_the_newest_of_those_kinds_page_by_page,
    limit_and_cursor_page_through_every_hit_once,
    a_nonsense_query_gets_computed_suggestions,
    deep_mode_corrects_a_mistyped_word,
    any_query_text_is_accepted,
    delete_hides_and_update_replaces,
    ids_lookup_returns_items_whole,
    two_services_on_one_database_see_each_others_writes,
    arbitrary_input_never_panics_and_results_match_items,
);

fn a_section_is_found_by_a_unique_word_with_the_word_marked(db: &TestDb) {
    let m = memory(db, "main");
    let stored = m.store(json!([section("Payments retries", "Retries use the quokkabackoff schedule")]));
    assert_eq!(stored.results[0].status, ItemStatus::Inserted);
    let found = m.find(json!({"query": "quokkabackoff"}));
    assert_eq!(found.hits.len(), 1);
    let hit = &found.hits[0];
    assert_eq!(hit.id.to_string(), id_of(&stored, 0));
    assert!(hit.snippet.contains("**quokkabackoff**"), "{}", hit.snippet);
    // A search answers briefly by default: what it takes to choose what to read.
    assert!(hit.content.is_none() && hit.scope.is_none() && hit.score.is_none());
    assert_eq!(hit.title, "Payments retries");
    let full = m.find(json!({"query": "quokkabackoff", "detail": "full"}));
    let hit = &full.hits[0];
    assert_eq!(hit.scope.as_ref().unwrap().branch.as_deref(), Some("main"));
    assert!(hit.score.unwrap() > 0.0 && hit.confidence.unwrap() > 0.5);
    assert_eq!(hit.content.as_deref(), Some("Retries use the quokkabackoff schedule"));
    assert_eq!(found.route_used, "lexical");
    assert!(!found.notes.is_empty(), "auto mode says semantic search did not run");
    assert!(m.find(json!({"query": "quokkabackoff", "mode": "fast"})).notes.is_empty());
}

fn the_same_item_twice_is_skipped_with_the_first_id(db: &TestDb) {
    let m = memory(db, "main");
    let first = m.store(json!([section("Deploy", "make deploy")]));
    let again = m.store(json!([section("Deploy", "  MAKE   deploy ")]));
    assert_eq!(again.results[0].status, ItemStatus::SkippedDedupe);
    assert_eq!(again.results[0].existing_id, Some(id_of(&first, 0)));
    assert_eq!(again.summary.skipped_dedupe, 1);
    let forced = m.store(
        json!([{"kind": "section", "data": {"title": "Deploy", "body": "make deploy"}, "dedupe": false}]),
    );
    assert_eq!(forced.results[0].status, ItemStatus::Inserted);
}

fn one_idempotency_key_stores_one_item(db: &TestDb) {
    let m = memory(db, "main");
    let a = m.store(json!([{"kind": "todo", "content": "write docs", "idempotency_key": "k1"}]));
    let b = m.store(json!([{"kind": "todo", "content": "something else", "idempotency_key": "k1"}]));
    assert_eq!(b.results[0].status, ItemStatus::SkippedDedupe);
    assert_eq!(b.results[0].id, a.results[0].id);
    assert!(b.results[0].reason.as_deref().unwrap().contains("idempotency_key"));
}

fn an_invalid_item_does_not_block_the_valid_ones(db: &TestDb) {
    let m = memory(db, "main");
    let r = m.store(json!([
        section("One", "alpha"),
        {"kind": "decision", "data": {"component": "db", "status": "accepted", "title": "Use PG"}},
        section("Two", "beta"),
    ]));
    let statuses: Vec<ItemStatus> = r.results.iter().map(|x| x.status).collect();
    assert_eq!(statuses, vec![ItemStatus::Inserted, ItemStatus::ValidationError, ItemStatus::Inserted]);
    let error = r.results[1].error.as_ref().unwrap();
    assert_eq!(r.results[1].kind.as_deref(), Some("decision"));
    assert_eq!(error.field, "items[1].data.rationale");
    assert!(error.human_hint.contains("rationale"));
    assert_eq!((r.summary.inserted, r.summary.validation_error, r.summary.total), (2, 1, 3));
    assert_eq!(m.find(json!({"query": "alpha beta"})).hits.len(), 2);
}

fn branches_are_isolated_until_widened_and_the_own_branch_ranks_first(db: &TestDb) {
    let m = memory(db, "main");
    let feature = m.store(
        json!([{"kind": "section", "content": "zanzibar cache layout", "scope": {"branch": "feature-a"}}]),
    );
    assert!(m.find(json!({"query": "zanzibar"})).hits.is_empty());
    let widened = m.find(json!({"query": "zanzibar", "widen": "project"}));
    assert_eq!(widened.hits.len(), 1);
    assert_eq!(serde_json::to_value(widened.hits[0].scope_match).unwrap(), "project");
    let from_feature = m.find(json!({"query": "zanzibar", "scope": {"branch": "feature-a"}}));
    assert_eq!(from_feature.hits[0].id.to_string(), id_of(&feature, 0));
    assert_eq!(serde_json::to_value(from_feature.hits[0].scope_match).unwrap(), "branch");

    let own = m.store(json!([{"kind": "section", "content": "zanzibar cache layout notes"}]));
    let both = m.find(json!({"query": "zanzibar cache", "widen": "project", "detail": "full"}));
    assert_eq!(both.hits.len(), 2);
    assert_eq!(both.hits[0].id.to_string(), id_of(&own, 0), "the caller's branch ranks first");
    assert_eq!(both.hits[0].score_parts.as_ref().unwrap().scope_proximity, 1.0);
    assert_eq!(both.hits[1].score_parts.as_ref().unwrap().scope_proximity, 0.5);
}

fn other_projects_and_orgs_need_wider_scopes(db: &TestDb) {
    let m = memory(db, "main");
    m.store(json!([{"kind": "section", "content": "yokohama timeout", "scope": {"project": "web"}}]));
    m.store(json!([{"kind": "section", "content": "yokohama timeout elsewhere", "scope": {"org": "other", "project": "x"}}]));
    assert_eq!(m.find(json!({"query": "yokohama", "widen": "project"})).hits.len(), 0);
    assert_eq!(m.find(json!({"query": "yokohama", "widen": "org"})).hits.len(), 1);
    assert_eq!(m.find(json!({"query": "yokohama", "widen": "all"})).hits.len(), 2);
    assert_eq!(m.find(json!({"query": "yokohama", "scope": {"project": "web"}})).hits.len(), 1);
}

fn types_filter_and_its_suggestion(db: &TestDb) {
    let m = memory(db, "main");
    m.store(json!([
        section("Kafka consumer lag", "lag grows at night"),
        {"kind": "incident", "data": {"title": "Kafka lag incident", "severity": "high", "impact": "delayed emails", "resolution_status": "resolved"}},
    ]));
    let incidents = m.find(json!({"query": "kafka lag", "types": ["incident"]}));
    assert_eq!(incidents.hits.len(), 1);
    assert_eq!(incidents.hits[0].kind.as_str(), "incident");
    assert_eq!(incidents.hits[0].status.as_deref(), Some("resolved"));
    assert!(
        incidents.suggestions.iter().any(|s| s.to_string().contains("1 more hit(s) of other kinds")),
        "{:?}",
        incidents.suggestions
    );
    let by_status = m.find(json!({"query": "kafka", "status": "resolved"}));
    assert_eq!(by_status.hits.len(), 1);
}

/// What the session briefing's "+N more" line tells an agent to send: `types` alone.
fn kinds_without_a_query_list_the_newest_of_those_kinds_page_by_page(db: &TestDb) {
    let m = memory(db, "main");
    for i in 0..5 {
        let steps = json!([{"description": "Restart", "command": "systemctl restart billing"}]);
        let stored = m.store(json!([{"kind": "runbook", "data": {"title": format!("Runbook {i}"), "service": "billing", "steps": steps}}]));
        assert_eq!(stored.results[0].status, ItemStatus::Inserted);
    }
    m.store(json!([section("Not a runbook", "kafka lag")]));
    let first = m.find(json!({"types": ["runbook"], "limit": 3}));
    assert_eq!(first.route_used, "recent");
    let cursor = first.next_cursor.clone().expect("two more runbooks");
    let rest = m.find(json!({"types": ["runbook"], "limit": 3, "cursor": cursor}));
    assert!(rest.next_cursor.is_none());
    let hits: Vec<_> = first.hits.iter().chain(&rest.hits).collect();
    let mut titles: Vec<&str> = hits.iter().map(|h| h.title.as_str()).collect();
    assert_eq!((first.hits.len(), rest.hits.len()), (3, 2));
    assert!(hits.windows(2).all(|w| w[0].updated_at >= w[1].updated_at), "newest first");
    titles.sort();
    assert_eq!(titles, ["Runbook 0", "Runbook 1", "Runbook 2", "Runbook 3", "Runbook 4"], "each once");
    let err = m.service.find_args(&json!({})).unwrap_err();
    assert!(matches!(err, ServiceError::Invalid(e) if e.human_hint.contains("`types` alone")));
}

fn limit_and_cursor_page_through_every_hit_once(db: &TestDb) {
    let m = memory(db, "main");
    let items: Vec<Value> =
        (0..7).map(|i| section(&format!("Helm chart {i}"), &format!("helm values variant {i}"))).collect();
    m.store(Value::Array(items));
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = json!({"query": "helm", "limit": 3});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let page = m.find(args);
        assert!(page.hits.len() <= 3);
        seen.extend(page.hits.iter().map(|h| h.id.to_string()));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!((seen.len(), unique.len()), (7, 7));
    let err = m
        .service
        .find_args(&json!({"query": "other", "cursor": cursor.unwrap_or_else(|| "1.0".into())}))
        .unwrap_err();
    assert!(matches!(err, ServiceError::Invalid(e) if e.field == "cursor"));
}

fn a_nonsense_query_gets_computed_suggestions(db: &TestDb) {
    let m = memory(db, "main");
    m.store(json!([section("Cluster upgrade", "kubernetes cluster upgrade procedure")]));
    let none = m.find(json!({"query": "zzqxw vlorp"}));
    assert!(none.hits.is_empty());
    assert!(none.suggestions.iter().any(|s| s.to_string().contains("zzqxw")), "{:?}", none.suggestions);
    assert!(none.suggestions.iter().any(|s| s.to_string().contains("kubernetes")), "{:?}", none.suggestions);
    // A dropped letter and two swapped letters (from the former Python test).
    for typo in ["kubernets", "kuberntes"] {
        let found = m.find(json!({"query": typo, "mode": "fast"}));
        assert!(
            found.suggestions.iter().any(|s| s.to_string().contains("kubernetes")),
            "{typo}: {:?}",
            found.suggestions
        );
    }
    let typo = m.find(json!({"query": "procedxre"}));
    assert!(
        typo.suggestions.iter().any(|s| s.to_string().contains("did you mean \"procedure\"")),
        "{:?}",
        typo.suggestions
    );
    m.store(json!([{"kind": "section", "content": "procedure for kubernetes in web", "scope": {"project": "web"}}]));
    let scoped =
        m.find(json!({"query": "procedure kubernetes", "scope": {"project": "web"}, "widen": "branch"}));
    assert!(
        scoped.suggestions.iter().any(|s| s.to_string().contains("more hit(s) in")),
        "{:?}",
        scoped.suggestions
    );
}

fn deep_mode_corrects_a_mistyped_word(db: &TestDb) {
    let m = memory(db, "main");
    let id =
        id_of(&m.store(json!([section("Rollbacks", "The kubernetes rollback procedure for payments")])), 0);
    m.store(json!([section("Billing", "Invoices are generated nightly")]));
    assert!(
        m.ids(json!({"query": "kubrenetes", "mode": "fast"})).is_empty(),
        "fast mode takes words as typed"
    );
    let deep = m.find(json!({"query": "kubrenetes", "mode": "deep"}));
    assert_eq!(deep.hits.iter().map(|h| h.id.to_string()).collect::<Vec<_>>(), [id]);
    assert!(
        deep.notes.iter().any(|n| n.contains("\"kubernetes\" for \"kubrenetes\"")),
        "the correction is said: {:?}",
        deep.notes
    );
    // A longer form of a stored word is a word the memory lacks, not a typo: searched as typed.
    m.store(json!([section("Founders", "The entrepreneur pitched the payments idea")]));
    let longer = m.find(json!({"query": "entrepreneurial", "mode": "deep"}));
    assert!(
        !longer.notes.iter().any(|n| n.starts_with("deep: searched")),
        "not replaced by \"entrepreneur\": {:?}",
        longer.notes
    );
    let known = m.find(json!({"query": "invoices", "mode": "deep"}));
    assert!(
        !known.notes.iter().any(|n| n.starts_with("deep: searched")),
        "known words stay: {:?}",
        known.notes
    );
}

fn any_query_text_is_accepted(db: &TestDb) {
    let m = memory(db, "main");
    m.store(json!([section("Odd text", "foo bar (baz) AND \"quoted\" -dash star*")]));
    let long = "x".repeat(1000);
    for q in [
        "\"unbalanced",
        "-",
        "*",
        "foo:bar",
        "(",
        "AND",
        "OR NOT",
        "🚀 emoji",
        "NEAR(a b)",
        "a\"b",
        "^x",
        &long,
    ] {
        let r = m.service.find_args(&json!({"query": q}));
        assert!(r.is_ok(), "{q}: {:?}", r.err());
    }
    assert_eq!(m.find(json!({"query": "foo:bar"})).hits.len(), 1);
    let too_long = m.service.find_args(&json!({"query": "x".repeat(1001)})).unwrap_err();
    assert!(matches!(too_long, ServiceError::Invalid(e) if e.field == "query"));
}

fn delete_hides_and_update_replaces(db: &TestDb) {
    let m = memory(db, "main");
    let r = m.store(json!([section("Vault rotation", "rotate vault tokens monthly")]));
    let id = id_of(&r, 0);
    let upd = m.store(json!([{"kind": "section", "id": id, "data": {"title": "Vault rotation", "body": "rotate vault tokens weekly"}}]));
    assert_eq!(upd.results[0].status, ItemStatus::Updated);
    assert_eq!(m.ids(json!({"query": "weekly"})), vec![id.clone()]);
    assert!(m.ids(json!({"query": "monthly"})).is_empty());
    let del = m.store(json!([{"operation": "delete", "id": id}]));
    assert_eq!(del.results[0].status, ItemStatus::Deleted);
    assert!(m.ids(json!({"query": "vault"})).is_empty());
    let lookup = m.find(json!({"ids": [id]}));
    assert!(lookup.hits.is_empty());
    assert_eq!(lookup.missing_ids, vec![id.clone()]);
    let wrong_kind = m.store(json!([{"kind": "todo", "id": id, "content": "x"}]));
    assert_eq!(wrong_kind.results[0].status, ItemStatus::ValidationError);
}

fn ids_lookup_returns_items_whole(db: &TestDb) {
    let m = memory(db, "main");
    let body = "line one\n".repeat(500);
    let r = m.store(json!([{"kind": "runbook", "content": body, "data": {"title": "Restart billing", "service": "billing", "steps": [{"description": "restart", "command": "systemctl restart billing"}]}}]));
    let found = m.find(json!({"ids": [id_of(&r, 0)]}));
    assert_eq!(found.route_used, "ids");
    assert_eq!(found.hits[0].content.as_deref(), Some(body.as_str()));
    assert_eq!(found.hits[0].data.as_ref().unwrap()["steps"][0]["command"], "systemctl restart billing");
    let cut = m.find(json!({"query": "line", "max_content_chars": 20}));
    assert!(cut.hits[0].content_truncated);
    assert_eq!(cut.hits[0].content.as_ref().unwrap().chars().count(), 20);
}

fn two_services_on_one_database_see_each_others_writes(db: &TestDb) {
    let a = open_at(db, "main");
    let b = open_at(db, "main");
    a.store_args(&json!({"items": [section("Shared", "written by process a")]})).unwrap();
    let found = b.find_args(&json!({"query": "process"})).unwrap();
    assert_eq!(found.hits.len(), 1);
    let dup = b.store_args(&json!({"items": [section("Shared", "written by process a")]})).unwrap();
    assert_eq!(dup.results[0].status, ItemStatus::SkippedDedupe);
}

/// Fuzz-style property: arbitrary JSON never panics the store or find flow, a valid
/// envelope always gets one result per item, and a failed request stores nothing.
fn arbitrary_input_never_panics_and_results_match_items(db: &TestDb) {
    let m = memory(db, "main");
    let mut rng = Lcg(0x5eed);
    for round in 0..400 {
        let items: Vec<Value> = (0..rng.below(6) + 1).map(|_| random_item(&mut rng)).collect();
        let count = items.len();
        let before = m.service.administration().stats().unwrap().items;
        match m.service.store_args(&json!({ "items": items })) {
            Ok(r) => {
                assert_eq!(r.results.len(), count, "round {round}");
                let stored = r.summary.inserted;
                assert_eq!(
                    m.service.administration().stats().unwrap().items,
                    before + stored,
                    "round {round}"
                );
                for (i, res) in r.results.iter().enumerate() {
                    assert_eq!(res.index as usize, i);
                    if res.status == ItemStatus::ValidationError {
                        let e = res.error.as_ref().unwrap();
                        assert!(e.field.starts_with(&format!("items[{i}]")), "{}", e.field);
                        assert!(!e.human_hint.is_empty());
                    }
                }
            }
            Err(e) => panic!("a valid envelope was refused whole: {e}"),
        }
        let _ = m.service.find_args(&random_value(&mut rng, 3));
        let _ = m.service.store_args(&random_value(&mut rng, 3));
        let query = random_text(&mut rng);
        let _ = m.service.find_args(&json!({"query": query, "limit": rng.below(120) as i64 - 10}));
    }
}

const WORDS: &[&str] = &[
    "kind",
    "content",
    "data",
    "scope",
    "tags",
    "title",
    "body",
    "status",
    "id",
    "operation",
    "delete",
    "decision",
    "section",
    "todo",
    "entity",
    "relation",
    "accepted",
    "\"",
    "-",
    "*",
    "(",
    ":",
    "AND",
    "🚀",
    "\u{0}",
    "\n",
    "redis",
    "deploy",
    "x",
    "",
    "branch",
    "metadata",
    "ttl",
    "short",
    "idempotency_key",
];

fn random_text(rng: &mut Lcg) -> String {
    (0..rng.below(8)).map(|_| WORDS[rng.below(WORDS.len())]).collect::<Vec<_>>().join(" ")
}

fn random_value(rng: &mut Lcg, depth: usize) -> Value {
    match if depth == 0 { rng.below(4) } else { rng.below(7) } {
        0 => Value::Null,
        1 => json!(rng.below(3) == 0),
        2 => json!(rng.below(300) as i64 - 100),
        3 => json!(random_text(rng)),
        4 => Value::Array((0..rng.below(4)).map(|_| random_value(rng, depth - 1)).collect()),
        _ => {
            let mut map = serde_json::Map::new();
            for _ in 0..rng.below(5) {
                map.insert(WORDS[rng.below(WORDS.len())].to_string(), random_value(rng, depth - 1));
            }
            Value::Object(map)
        }
    }
}

/// Mostly plausible items with random damage, so both the valid and invalid paths run.
fn random_item(rng: &mut Lcg) -> Value {
    let kinds = ["section", "decision", "todo", "entity", "relation", "bogus", "issue", "runbook"];
    let mut item = json!({"kind": kinds[rng.below(kinds.len())]});
    if rng.below(2) == 0 {
        item["content"] = json!(random_text(rng));
    }
    if rng.below(2) == 0 {
        item["data"] = random_value(rng, 2);
    }
    if rng.below(4) == 0 {
        item["scope"] = random_value(rng, 1);
    }
    if rng.below(5) == 0 {
        item[WORDS[rng.below(WORDS.len())]] = random_value(rng, 2);
    }
    item
}
