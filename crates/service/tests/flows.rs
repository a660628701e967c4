//! The store and find flows end to end through `MemoryService`, on each backend (a real
//! SQLite file, a real PostgreSQL database).

use cortex_service::response::{FindResponse, ItemStatus, StoreResponse};
use cortex_service::scope_inference::InferredScope;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Config, MemoryService, ServiceError};
use cortex_testdb::{TestDb, per_backend};
use serde_json::{Value, json};

per_backend!(
    expired_items_hide_stay_listable_and_purge_removes_them_with_audit,
    each_kind_gets_its_lifetime_and_stale_runbooks_are_flagged,
    a_superseded_decision_leaves_finds_and_points_to_its_successor,
    an_accepted_decision_keeps_its_rationale_and_the_attempt_is_audited,
    a_section_is_found_by_a_unique_word_with_the_word_marked,
    the_same_item_twice_is_skipped_with_the_first_id,
    one_idempotency_key_stores_one_item,
    an_invalid_item_does_not_block_the_valid_ones,
    branches_are_isolated_until_widened_and_the_own_branch_ranks_first,
    other_projects_and_orgs_need_wider_scopes,
    types_filter_and_its_suggestion,
    limit_and_cursor_page_through_every_hit_once,
    a_nonsense_query_gets_computed_suggestions,
    any_query_text_is_accepted,
    delete_hides_and_update_replaces,
    ids_lookup_returns_items_whole,
    a_response_stays_under_its_budget,
    ttl_sets_an_expiry,
    two_services_on_one_database_see_each_others_writes,
    arbitrary_input_never_panics_and_results_match_items,
);

struct Memory {
    service: MemoryService,
}

/// A service standing at acme/api@`branch` over the test's fresh database.
fn memory(db: &TestDb, branch: &str) -> Memory {
    Memory { service: open_at(db, branch) }
}

/// A new service (as a new process would open it) on the test's database.
fn open_at(db: &TestDb, branch: &str) -> MemoryService {
    let scope = InferredScope::fixed("acme", "api", branch);
    // These flows are lexical; semantic ones live in tests/semantic.rs.
    MemoryService::open(&Config::new(db.target().clone(), scope, EmbedderChoice::None)).unwrap()
}

impl Memory {
    fn store(&self, items: Value) -> StoreResponse {
        self.service.store(&json!({ "items": items })).unwrap()
    }

    fn find(&self, args: Value) -> FindResponse {
        self.service.find(&args).unwrap()
    }

    fn ids(&self, args: Value) -> Vec<String> {
        self.find(args).hits.into_iter().map(|h| h.id).collect()
    }
}

fn section(title: &str, body: &str) -> Value {
    json!({"kind": "section", "data": {"title": title, "body": body}})
}

fn id_of(r: &StoreResponse, i: usize) -> String {
    r.results[i].id.clone().unwrap()
}

fn a_section_is_found_by_a_unique_word_with_the_word_marked(db: &TestDb) {
    let m = memory(db, "main");
    let stored = m.store(json!([section("Payments retries", "Retries use the quokkabackoff schedule")]));
    assert_eq!(stored.results[0].status, ItemStatus::Inserted);
    let found = m.find(json!({"query": "quokkabackoff"}));
    assert_eq!(found.hits.len(), 1);
    let hit = &found.hits[0];
    assert_eq!(hit.id, id_of(&stored, 0));
    assert!(hit.snippet.contains("**quokkabackoff**"), "{}", hit.snippet);
    assert_eq!(hit.scope.branch.as_deref(), Some("main"));
    assert!(hit.score > 0.0 && hit.confidence > 0.5);
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
    assert_eq!(from_feature.hits[0].id, id_of(&feature, 0));
    assert_eq!(serde_json::to_value(from_feature.hits[0].scope_match).unwrap(), "branch");

    let own = m.store(json!([{"kind": "section", "content": "zanzibar cache layout notes"}]));
    let both = m.find(json!({"query": "zanzibar cache", "widen": "project"}));
    assert_eq!(both.hits.len(), 2);
    assert_eq!(both.hits[0].id, id_of(&own, 0), "the caller's branch ranks first");
    assert_eq!(both.hits[0].score_parts.scope_proximity, 1.0);
    assert_eq!(both.hits[1].score_parts.scope_proximity, 0.5);
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
    assert_eq!(incidents.hits[0].kind, "incident");
    assert_eq!(incidents.hits[0].status.as_deref(), Some("resolved"));
    assert!(
        incidents.suggestions.iter().any(|s| s.contains("1 more hit(s) of other kinds")),
        "{:?}",
        incidents.suggestions
    );
    let by_status = m.find(json!({"query": "kafka", "status": "resolved"}));
    assert_eq!(by_status.hits.len(), 1);
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
        seen.extend(page.hits.iter().map(|h| h.id.clone()));
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
        .find(&json!({"query": "other", "cursor": cursor.unwrap_or_else(|| "1.0".into())}))
        .unwrap_err();
    assert!(matches!(err, ServiceError::Invalid(e) if e.field == "cursor"));
}

fn a_nonsense_query_gets_computed_suggestions(db: &TestDb) {
    let m = memory(db, "main");
    m.store(json!([section("Cluster upgrade", "kubernetes cluster upgrade procedure")]));
    let none = m.find(json!({"query": "zzqxw vlorp"}));
    assert!(none.hits.is_empty());
    assert!(none.suggestions.iter().any(|s| s.contains("zzqxw")), "{:?}", none.suggestions);
    assert!(none.suggestions.iter().any(|s| s.contains("kubernetes")), "{:?}", none.suggestions);
    let typo = m.find(json!({"query": "procedxre"}));
    assert!(
        typo.suggestions.iter().any(|s| s.contains("did you mean \"procedure\"")),
        "{:?}",
        typo.suggestions
    );
    m.store(json!([{"kind": "section", "content": "procedure for kubernetes in web", "scope": {"project": "web"}}]));
    let scoped =
        m.find(json!({"query": "procedure kubernetes", "scope": {"project": "web"}, "widen": "branch"}));
    assert!(scoped.suggestions.iter().any(|s| s.contains("more hit(s) in")), "{:?}", scoped.suggestions);
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
        let r = m.service.find(&json!({"query": q}));
        assert!(r.is_ok(), "{q}: {:?}", r.err());
    }
    assert_eq!(m.find(json!({"query": "foo:bar"})).hits.len(), 1);
    let too_long = m.service.find(&json!({"query": "x".repeat(1001)})).unwrap_err();
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

fn an_accepted_decision_keeps_its_rationale_and_the_attempt_is_audited(db: &TestDb) {
    let m = memory(db, "main");
    let adr = |status: &str, rationale: &str, consequences: &str| {
        json!({"component": "sessions", "status": status, "title": "Sessions in Postgres",
               "rationale": rationale, "consequences": consequences})
    };
    let r = m.store(json!([{"kind": "decision", "data": adr("accepted", "one database to run", "none")}]));
    let id = id_of(&r, 0);
    let edit = m.store(json!([
        {"kind": "decision", "id": id, "data": adr("accepted", "we changed our minds", "none"),
         "source": {"actor": "eve"}},
        {"kind": "todo", "content": "still stored beside a refused item"},
    ]));
    let refused = &edit.results[0];
    assert_eq!(refused.status, ItemStatus::BusinessRuleBlocked);
    let error = refused.error.as_ref().unwrap();
    assert_eq!(
        (error.code.as_str(), error.field.as_str()),
        ("business_rule_blocked", "items[0].data.rationale")
    );
    assert!(error.human_hint.contains(&format!("\"supersedes\": \"{id}\"")), "{}", error.human_hint);
    assert_eq!((edit.summary.business_rule_blocked, edit.summary.inserted), (1, 1));
    let stored = m.find(json!({"ids": [id]}));
    assert_eq!(stored.hits[0].data.as_ref().unwrap()["rationale"], "one database to run");

    // What may still change: consequences and status.
    let allowed = m.store(
        json!([{"kind": "decision", "id": id, "data": adr("deprecated", "one database to run", "ops load")}]),
    );
    assert_eq!(allowed.results[0].status, ItemStatus::Updated);

    let uuid = uuid::Uuid::parse_str(&id).unwrap();
    let history = m.service.audit(Some(uuid), None, 100).unwrap();
    let ops: Vec<&str> = history.iter().map(|r| r.operation.as_str()).collect();
    assert_eq!(ops, ["insert", "blocked", "update"]);
    assert_eq!(history[1].actor.as_deref(), Some("eve"));
    assert!(history[1].summary.contains("cannot change"), "{}", history[1].summary);
    assert!(history[1].batch_id.is_some());
}

fn a_superseded_decision_leaves_finds_and_points_to_its_successor(db: &TestDb) {
    let m = memory(db, "main");
    let old = id_of(
        &m.store(json!([{"kind": "decision", "data": {"component": "sessions", "status": "accepted",
            "title": "Sessions in Redis", "rationale": "fast session lookups"}}])),
        0,
    );
    let r = m.store(json!([{"kind": "decision", "data": {"component": "sessions", "status": "accepted",
        "title": "Sessions in Postgres", "rationale": "one database for sessions", "supersedes": old}}]));
    assert_eq!(r.results[0].status, ItemStatus::Inserted);
    assert!(r.results[0].reason.as_deref().unwrap_or("").contains(&old), "{:?}", r.results[0].reason);
    let new = id_of(&r, 0);

    assert_eq!(m.ids(json!({"query": "sessions"})), vec![new.clone()], "the superseded one left finds");
    let all = m.find(json!({"query": "sessions", "include_superseded": true}));
    let former = all.hits.iter().find(|h| h.id == old).expect("asked for, it comes back");
    assert_eq!(former.superseded_by.as_deref(), Some(new.as_str()));
    assert_eq!(former.status.as_deref(), Some("superseded"));
    assert_eq!(former.data.as_ref().unwrap()["status"], "superseded");
    let by_id = m.find(json!({"ids": [old]}));
    assert_eq!(by_id.hits[0].superseded_by.as_deref(), Some(new.as_str()));

    let again = m.store(json!([{"kind": "decision", "data": {"component": "sessions", "status": "proposed",
        "title": "Sessions in memory", "rationale": "no database", "supersedes": old}}]));
    assert_eq!(again.results[0].status, ItemStatus::ValidationError);
    let error = again.results[0].error.as_ref().unwrap();
    assert_eq!(error.field, "items[0].data.supersedes");
    assert!(error.message.contains("already superseded"), "{}", error.message);
    let missing = uuid::Uuid::now_v7().to_string();
    let nowhere = m.store(json!([{"kind": "decision", "data": {"component": "x", "status": "proposed",
        "title": "t", "rationale": "r", "supersedes": missing}}]));
    assert!(nowhere.results[0].error.as_ref().unwrap().message.contains("no item"));

    let history = m.service.audit(Some(uuid::Uuid::parse_str(&old).unwrap()), None, 10).unwrap();
    let ops: Vec<&str> = history.iter().map(|r| r.operation.as_str()).collect();
    assert_eq!(ops, ["insert", "supersede"]);
    assert_eq!(history[1].summary, format!("superseded by {new}"));
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

fn a_response_stays_under_its_budget(db: &TestDb) {
    let m = memory(db, "main");
    for batch in 0..2 {
        let items: Vec<Value> = (0..50)
            .map(|i| json!({"kind": "section", "content": format!("budget item {batch}-{i} {}", "lorem ipsum ".repeat(1800))}))
            .collect();
        m.store(Value::Array(items));
    }
    let r = m.find(json!({"query": "budget lorem", "limit": 100, "max_content_chars": 20000}));
    let size = serde_json::to_string(&r).unwrap().len();
    assert!(size <= cortex_domain::limits::MAX_RESPONSE_CHARS, "{size}");
    assert!(r.truncated);
    assert!(!r.hits.is_empty());
}

const DAY_MS: i64 = 86_400_000;

fn days_ago(days: i64) -> String {
    cortex_domain::time::format_instant(chrono::Utc::now().timestamp_millis() - days * DAY_MS)
}

fn expired_items_hide_stay_listable_and_purge_removes_them_with_audit(db: &TestDb) {
    let m = memory(db, "main");
    let pr = |number: i64, merged_days_ago: i64| {
        json!({"kind": "pr_context", "data": {"pr_number": number, "title": format!("Refactor zeppelin module {number}"),
            "status": "merged", "base_branch": "main", "head_branch": format!("zeppelin-{number}"),
            "merged_at": days_ago(merged_days_ago)}})
    };
    let r = m.store(json!([pr(1, 40), pr(2, 10)]));
    let (gone, live) = (id_of(&r, 0), id_of(&r, 1));
    assert_eq!(
        m.ids(json!({"query": "zeppelin", "mode": "fast"})),
        vec![live.clone()],
        "merged 40 days ago: expired"
    );
    let listed = m.ids(json!({"query": "zeppelin", "mode": "fast", "include_expired": true}));
    assert!(listed.contains(&gone) && listed.contains(&live));

    let dry = m.service.purge(true).unwrap();
    assert_eq!((dry.dry_run, dry.purged), (true, 1));
    assert_eq!((dry.by_kind[0].kind.as_str(), dry.by_kind[0].items), ("pr_context", 1));
    assert_eq!(
        m.ids(json!({"query": "zeppelin", "mode": "fast", "include_expired": true})).len(),
        2,
        "dry run keeps"
    );

    let done = m.service.purge(false).unwrap();
    assert_eq!((done.dry_run, done.purged), (false, 1));
    assert_eq!(m.ids(json!({"query": "zeppelin", "mode": "fast", "include_expired": true})), vec![live]);
    assert!(m.find(json!({"ids": [gone]})).hits.is_empty(), "removed for good");
    let history = m.service.audit(Some(uuid::Uuid::parse_str(&gone).unwrap()), None, 10).unwrap();
    let ops: Vec<&str> = history.iter().map(|r| r.operation.as_str()).collect();
    assert_eq!(ops, ["insert", "purge"]);
    assert_eq!(history[1].tool.as_deref(), Some("purge"));
    assert_eq!(m.service.purge(false).unwrap().purged, 0, "nothing left to purge");
}

fn each_kind_gets_its_lifetime_and_stale_runbooks_are_flagged(db: &TestDb) {
    let m = memory(db, "main");
    let now = chrono::Utc::now().timestamp_millis();
    let expiry = |item: Value| -> Option<i64> {
        let id = id_of(&m.store(json!([item])), 0);
        let hit = m.find(json!({"ids": [id]})).hits.remove(0);
        hit.expires_at.map(|t| cortex_domain::time::parse_instant(&t).unwrap())
    };
    let days = |at: Option<i64>| at.map(|t| (t - now + DAY_MS / 2) / DAY_MS);
    assert_eq!(days(expiry(section("Long lived", "sections live a year"))), Some(365));
    assert_eq!(
        days(expiry(json!({"kind": "todo", "data": {"title": "Open task", "status": "open"}}))),
        Some(90)
    );
    assert_eq!(
        days(expiry(json!({"kind": "todo", "data": {"title": "Closed task", "status": "done"}}))),
        Some(90)
    );
    assert_eq!(expiry(json!({"kind": "todo", "content": "forever task", "ttl": "permanent"})), None);
    let explicit =
        expiry(json!({"kind": "todo", "content": "until then", "expires_at": "2099-01-01T00:00:00Z"}));
    assert_eq!(explicit, Some(cortex_domain::time::parse_instant("2099-01-01T00:00:00Z").unwrap()));

    let runbook = |title: &str, verified: String| {
        json!({"kind": "runbook", "data": {"title": title, "service": "api", "last_verified_at": verified,
            "steps": [{"description": "restart the quokka service"}]}})
    };
    m.store(json!([
        runbook("Quokka restart old", days_ago(120)),
        runbook("Quokka restart fresh", days_ago(5))
    ]));
    let hits = m.find(json!({"query": "quokka", "mode": "fast"})).hits;
    let stale: Vec<(&str, bool)> = hits.iter().map(|h| (h.title.as_str(), h.stale)).collect();
    assert!(
        stale.contains(&("Quokka restart old", true)) && stale.contains(&("Quokka restart fresh", false)),
        "{stale:?}"
    );
}

fn ttl_sets_an_expiry(db: &TestDb) {
    let m = memory(db, "main");
    m.store(json!([{"kind": "todo", "content": "short lived wombat", "ttl": "short"}]));
    let hit = &m.find(json!({"query": "wombat"})).hits[0];
    assert!(hit.expires_at.is_some());
}

fn two_services_on_one_database_see_each_others_writes(db: &TestDb) {
    let a = open_at(db, "main");
    let b = open_at(db, "main");
    a.store(&json!({"items": [section("Shared", "written by process a")]})).unwrap();
    let found = b.find(&json!({"query": "process"})).unwrap();
    assert_eq!(found.hits.len(), 1);
    let dup = b.store(&json!({"items": [section("Shared", "written by process a")]})).unwrap();
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
        let before = m.service.stats().unwrap().items;
        match m.service.store(&json!({ "items": items })) {
            Ok(r) => {
                assert_eq!(r.results.len(), count, "round {round}");
                let stored = r.summary.inserted;
                assert_eq!(m.service.stats().unwrap().items, before + stored, "round {round}");
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
        let _ = m.service.find(&random_value(&mut rng, 3));
        let _ = m.service.store(&random_value(&mut rng, 3));
        let query = random_text(&mut rng);
        let _ = m.service.find(&json!({"query": query, "limit": rng.below(120) as i64 - 10}));
    }
}

struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
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
