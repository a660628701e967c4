//! The holder of an API key stays inside its tenant bound on every path that
//! reads or writes. Each test seeds two orgs and two projects as the local user, then tries,
//! as a key bound to acme/api, to see or touch the other tenants' items — by query at every
//! scope width, by id, by cursor, through suggestions, spelling, the graph, the history and the
//! briefing, and by update, delete, `supersedes`, relation ends, natural keys and duplicates —
//! and shows that nothing of them comes back and nothing of them changes (the export of their
//! items is the same before and after). On every backend.

use super::common::at;
use crate::common::Tools;
use cortex_domain::principal::Principal;
use cortex_domain::tenant::Bound;
use cortex_service::config::embedder_from_env;
use cortex_service::response::{FindResponse, ItemStatus, StoreResponse};
use cortex_service::scope_inference::InferredScope;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Caller, Config, MemoryService, ServiceError};
use cortex_testdb::{TestDb, per_backend};
use serde_json::{Value, json};

per_backend!(
    finds_by_query_never_show_another_tenant,
    reads_by_id_history_and_briefing_of_another_tenant_find_nothing,
    writes_naming_another_tenant_change_nothing,
    duplicates_and_natural_keys_stay_inside_the_tenant,
    cursors_suggestions_and_spelling_stay_inside_the_tenant,
    no_hint_names_a_word_only_another_tenant_or_a_deleted_item_holds,
    finds_by_meaning_never_show_another_tenant,
    a_key_with_several_projects_needs_a_project_to_write,
    session_neighbours_stay_inside_the_tenant,
    a_callers_principal_is_recorded_whatever_the_item_claims,
    places_follow_every_change_and_stay_inside_the_tenant,
);

/// What the local user stored, per tenant.
struct Seeded {
    local: MemoryService,
    /// acme/api: what the key may reach.
    inside: Vec<String>,
    /// acme/web and globex/api: what it may not.
    outside: Vec<String>,
}

fn open(db: &TestDb, embedder: EmbedderChoice) -> MemoryService {
    let scope = InferredScope::fixed("acme", "api", "main");
    MemoryService::open(&Config::new(db.target().clone(), scope, embedder)).unwrap()
}

fn store(service: &MemoryService, items: Value) -> StoreResponse {
    service.store_args(&json!({ "items": items })).unwrap()
}

fn ids(r: &StoreResponse) -> Vec<String> {
    r.results.iter().map(|r| r.id.clone().unwrap_or_else(|| panic!("not stored: {r:?}"))).collect()
}

/// Two tenants' worth of webhook knowledge, alike in words so every search could mix them.
fn seed(db: &TestDb, embedder: EmbedderChoice) -> Seeded {
    let local = open(db, embedder);
    let mut inside = ids(&store(
        &local,
        json!([
            {"kind": "decision", "scope": at("acme", "api"), "data": {"component": "webhooks", "status": "accepted",
             "title": "Retry failed webhook deliveries with exponential backoff", "rationale": "receivers recover"}},
            {"kind": "entity", "scope": at("acme", "api"), "data": {"entity_type": "service", "name": "billing"}},
            {"kind": "issue", "scope": at("acme", "api"), "data": {"tracker": "jira", "external_id": "OPS-1", "status": "open",
             "title": "Webhook retries pile up in the billing queue"}},
        ]),
    ));
    let outside = ids(&store(
        &local,
        json!([
            {"kind": "decision", "scope": at("globex", "api"), "data": {"component": "webhooks", "status": "accepted",
             "title": "Retry failed webhook deliveries from the zanzibar gateway", "rationale": "globex secret plan"}},
            {"kind": "entity", "scope": at("globex", "api"), "data": {"entity_type": "service", "name": "billing"}},
            {"kind": "issue", "scope": at("globex", "api"), "data": {"tracker": "jira", "external_id": "OPS-1", "status": "open",
             "title": "Webhook retries stall at the zanzibar gateway"}},
            {"kind": "section", "scope": at("acme", "web"), "data": {"title": "Webhook retries in the web console",
             "body": "The web console shows failed webhook deliveries and their retries."}},
            {"kind": "todo", "scope": at("globex", "api"), "data": {"title": "Rotate the zanzibar webhook secret", "status": "open"}},
        ]),
    ));
    let relation = store(
        &local,
        json!([{"kind": "relation", "scope": at("globex", "api"), "data": {"from": outside[1], "to": outside[0],
                "relation_type": "implements"}}]),
    );
    inside.truncate(3);
    let mut outside = outside;
    outside.extend(ids(&relation));
    Seeded { local, inside, outside }
}

fn acme_api() -> Caller {
    Caller::for_key(Bound { org: "acme".into(), projects: vec!["api".into()] }, None, None).unwrap()
}

/// Every stored field of the items outside the key's reach, as the local user exports them.
fn outside_export(s: &Seeded) -> String {
    let lines = s.local.transfer().export_page(None, 10_000).unwrap();
    let outside: Vec<String> = lines
        .iter()
        .filter(|l| s.outside.contains(&l.id.to_string()))
        .map(|l| serde_json::to_string(l).unwrap())
        .collect();
    assert_eq!(outside.len(), s.outside.len(), "every outside item exported");
    outside.join("\n")
}

fn hit_ids(r: &FindResponse) -> Vec<String> {
    let mut out: Vec<String> = r.hits.iter().map(|h| h.id.to_string()).collect();
    if let Some(graph) = &r.graph {
        out.extend(serde_json::to_value(graph).unwrap().to_string().split('"').map(str::to_string));
    }
    out
}

/// No id, title word or text of the other tenants anywhere in the answer, other than the
/// caller's own words and ids said back (which ids were missing, which words no item holds).
fn assert_nothing_outside(s: &Seeded, r: &FindResponse) {
    let mut r = serde_json::to_value(r).unwrap();
    r.as_object_mut().unwrap().remove("missing_ids");
    if let Some(suggestions) = r["suggestions"].as_array_mut() {
        suggestions.retain(|s| !s.as_str().unwrap().starts_with("no stored item contains"));
    }
    let text = r.to_string();
    for id in &s.outside {
        assert!(!text.contains(id.as_str()), "item {id} of another tenant in {text}");
    }
    for word in ["zanzibar", "globex", "console"] {
        assert!(!text.to_lowercase().contains(word), "`{word}` of another tenant in {text}");
    }
}

fn find(service: &MemoryService, args: Value) -> FindResponse {
    service.find_args(&args).unwrap_or_else(|e| panic!("{args}: {e}"))
}

fn finds_by_query_never_show_another_tenant(db: &TestDb) {
    let s = seed(db, EmbedderChoice::None);
    let key = s.local.for_caller(&acme_api());
    for widen in ["branch", "project", "org", "all"] {
        for mode in ["fast", "auto", "deep"] {
            for expand in ["none", "relations", "all"] {
                let r = find(
                    &key,
                    json!({"query": "webhook retries zanzibar gateway console", "widen": widen, "mode": mode,
                           "expand": expand, "detail": "full", "limit": 50}),
                );
                assert!(!r.hits.is_empty(), "{widen}/{mode}: the key's own items are found");
                assert!(hit_ids(&r).iter().any(|id| s.inside.contains(id)));
                assert_nothing_outside(&s, &r);
            }
        }
    }
    // The local user sees both tenants with the same query: the words do match there.
    let all = find(
        &s.local,
        json!({"query": "webhook retries zanzibar gateway console", "widen": "all", "limit": 50}),
    );
    assert!(s.outside.iter().any(|id| all.hits.iter().any(|h| &h.id.to_string() == id)));
    // Naming another tenant's scope is refused, saying why.
    for scope in [json!({"org": "globex"}), json!({"org": "acme", "project": "web"})] {
        match key.find_args(&json!({"query": "webhook", "scope": scope})) {
            Err(ServiceError::Invalid(e)) => assert_eq!(e.code.as_str(), "forbidden_scope", "{e:?}"),
            other => panic!("{scope}: {other:?}"),
        }
    }
}

fn reads_by_id_history_and_briefing_of_another_tenant_find_nothing(db: &TestDb) {
    let s = seed(db, EmbedderChoice::None);
    let key = s.local.for_caller(&acme_api());
    let all: Vec<&String> = s.inside.iter().chain(&s.outside).collect();
    let r = find(&key, json!({"ids": all, "expand": "all"}));
    let mut missing = r.missing_ids.clone();
    missing.sort();
    let mut outside = s.outside.clone();
    outside.sort();
    assert_eq!(missing, outside, "another tenant's ids read as ids of no item");
    assert_eq!(r.hits.len(), s.inside.len());
    assert_nothing_outside(&s, &r);
    for id in &s.outside {
        let id = uuid::Uuid::parse_str(id).unwrap();
        assert!(key.audit().records(Some(id), None, 100).unwrap().is_empty(), "history of {id}");
        assert!(!s.local.audit().records(Some(id), None, 100).unwrap().is_empty(), "the local user sees it");
    }
    let briefing = key.briefing().context(None, 4_000).unwrap();
    assert!(briefing.contains("exponential backoff"), "{briefing}");
    assert!(!briefing.contains("zanzibar") && !briefing.contains("console"), "{briefing}");
    let globex = cortex_domain::Scope { org: Some("globex".into()), ..Default::default() };
    assert!(matches!(key.briefing().context(Some(&globex), 4_000), Err(ServiceError::Invalid(_))));
}

fn writes_naming_another_tenant_change_nothing(db: &TestDb) {
    let s = seed(db, EmbedderChoice::None);
    let before = outside_export(&s);
    let key = s.local.for_caller(&acme_api());
    let (decision, entity, _issue, web, todo, relation) =
        (&s.outside[0], &s.outside[1], &s.outside[2], &s.outside[3], &s.outside[4], &s.outside[5]);
    let r = store(
        &key,
        json!([
            {"kind": "decision", "id": decision, "data": {"component": "webhooks", "status": "accepted",
             "title": "Overwritten", "rationale": "taken over"}},
            {"kind": "section", "id": web, "data": {"title": "Overwritten", "body": "taken over"}},
            {"kind": "todo", "operation": "delete", "id": todo},
            {"kind": "relation", "operation": "delete", "id": relation},
            {"kind": "decision", "data": {"component": "webhooks", "status": "accepted", "title": "Replaces theirs",
             "rationale": "taken over"}, "supersedes": decision},
            {"kind": "relation", "data": {"from": s.inside[1], "to": entity, "relation_type": "calls"}},
            {"kind": "observation", "data": {"entity": entity, "text": "taken over"}},
            {"kind": "section", "scope": {"org": "globex"}, "data": {"title": "Planted", "body": "in globex"}},
            {"kind": "section", "scope": {"project": "web"}, "data": {"title": "Planted", "body": "in web"}},
            {"kind": "decision", "id": s.inside[0], "scope": {"org": "globex"}, "data": {"component": "webhooks",
             "status": "accepted", "title": "Moved", "rationale": "moved out"}},
            {"kind": "section", "data": {"title": "Mine", "body": "a section of acme/api"}},
        ]),
    );
    let codes: Vec<Option<String>> = r
        .results
        .iter()
        .map(|r| {
            r.error.as_ref().map(|e| serde_json::to_value(e).unwrap()["code"].as_str().unwrap().to_string())
        })
        .collect();
    let expect =
        |i: usize, code: &str| assert_eq!(codes[i].as_deref(), Some(code), "item {i}: {:?}", r.results[i]);
    for i in 0..7 {
        expect(i, "not_found");
    }
    for i in 7..10 {
        expect(i, "forbidden_scope");
    }
    assert_eq!(r.results[10].status, ItemStatus::Inserted, "the batch's valid item is written");
    for (i, result) in r.results.iter().enumerate().take(10) {
        assert_eq!(result.status, ItemStatus::ValidationError, "item {i}");
        let text = serde_json::to_string(result).unwrap();
        assert!(!text.contains("globex secret") && !text.contains("another project"), "{text}");
    }
    assert_eq!(outside_export(&s), before, "nothing of another tenant changed");
    // The key's own decision was not moved out either.
    let mine = find(&s.local, json!({"ids": [s.inside[0]]}));
    assert_eq!(mine.hits[0].scope.as_ref().unwrap().org.as_deref(), Some("acme"));
}

fn duplicates_and_natural_keys_stay_inside_the_tenant(db: &TestDb) {
    let s = seed(db, EmbedderChoice::None);
    let globex_key = s.local.for_caller(
        &Caller::for_key(Bound { org: "globex".into(), projects: vec![] }, Some("api"), None).unwrap(),
    );
    let before = outside_export(&s);
    let r = store(
        &s.local.for_caller(&acme_api()),
        json!([
            // The same text as globex's decision: a duplicate only of what the key can see.
            {"kind": "decision", "data": {"component": "webhooks", "status": "accepted",
             "title": "Retry failed webhook deliveries from the zanzibar gateway", "rationale": "globex secret plan"}},
            // The same natural key as globex's issue (tracker + external_id), and as acme's own.
            {"kind": "issue", "data": {"tracker": "jira", "external_id": "OPS-1", "status": "open", "title": "Webhook retries, again"}},
            {"kind": "entity", "data": {"entity_type": "service", "name": "billing"}},
        ]),
    );
    assert_eq!(r.results[0].status, ItemStatus::Inserted, "{:?}", r.results[0]);
    assert_eq!(r.results[1].id.as_deref(), Some(s.inside[2].as_str()), "merged into acme's own issue");
    assert_eq!(r.results[2].id.as_deref(), Some(s.inside[1].as_str()), "acme's own billing entity");
    let text = serde_json::to_string(&r).unwrap();
    for id in &s.outside {
        assert!(!text.contains(id.as_str()), "{text}");
    }
    assert_eq!(outside_export(&s), before);
    // And the other way round: globex's key merges into globex's own issue.
    let r = store(
        &globex_key,
        json!([{"kind": "issue", "data": {"tracker": "jira", "external_id": "OPS-1", "status": "open",
                                        "title": "Webhook retries stall, still"}}]),
    );
    assert_eq!(r.results[0].id.as_deref(), Some(s.outside[2].as_str()));
}

fn cursors_suggestions_and_spelling_stay_inside_the_tenant(db: &TestDb) {
    let s = seed(db, EmbedderChoice::None);
    let key = s.local.for_caller(&acme_api());
    let globex_key = s.local.for_caller(
        &Caller::for_key(Bound { org: "globex".into(), projects: vec!["api".into()] }, None, None).unwrap(),
    );
    // A cursor from globex's pages, replayed by acme's key.
    let first = find(&globex_key, json!({"query": "webhook", "limit": 1}));
    let cursor = first.next_cursor.clone().expect("globex has more than one page");
    match key.find_args(&json!({"query": "webhook", "limit": 1, "cursor": cursor})) {
        Ok(r) => assert_nothing_outside(&s, &r),
        Err(ServiceError::Invalid(e)) => assert_eq!(e.code.as_str(), "bad_cursor"),
        Err(e) => panic!("{e}"),
    }
    // A word only globex holds: no hit, no count, no spelling fix, no common word of theirs.
    for mode in ["fast", "deep"] {
        for query in ["zanzibar", "zanzibr gateway", "zanzibar -webhook"] {
            let r = find(&key, json!({"query": query, "mode": mode, "widen": "all"}));
            assert_nothing_outside(&s, &r);
        }
    }
    // The same words do reach globex's own key.
    let theirs = find(&globex_key, json!({"query": "zanzibr", "mode": "deep"}));
    assert!(!theirs.hits.is_empty(), "{theirs:?}");
}

/// The hints' vocabulary is the lexical index's term dictionary, which holds every tenant's
/// words and a deleted item's until a merge: each word must be checked against the caller's
/// bound before it is offered. Words a typo away from the query, and words common enough to
/// top the whole memory, held only by globex or only by a deleted item of acme's.
fn no_hint_names_a_word_only_another_tenant_or_a_deleted_item_holds(db: &TestDb) {
    let s = seed(db, EmbedderChoice::None);
    let theirs: Vec<Value> = (0..12)
        .map(|i| {
            json!({"kind": "section", "scope": at("globex", "api"), "data": {"title": format!("Marmalade ledger {i}"),
                   "body": "marmalade quokkaroo ledger reconciliation"}})
        })
        .collect();
    let outside = ids(&store(&s.local, Value::Array(theirs)));
    let deleted = ids(&store(
        &s.local,
        json!([{"kind": "section", "scope": at("acme", "api"), "data": {"title": "Wombatix rollout",
                "body": "the wombatix rollout plan"}}]),
    ));
    let r = store(&s.local, json!([{"operation": "delete", "id": deleted[0]}]));
    assert_eq!(r.results[0].status, ItemStatus::Deleted, "{:?}", r.results[0]);
    let key = s.local.for_caller(&acme_api());
    let secret = ["marmalade", "quokkaroo", "ledger", "reconciliation", "wombatix", "zanzibar"];
    let leaks = |r: &FindResponse| -> Vec<String> {
        let mut text = serde_json::to_value(r).unwrap();
        text.as_object_mut().unwrap().remove("missing_ids");
        // The caller's own words said back ("no stored item contains ...") are not a leak.
        if let Some(suggestions) = text["suggestions"].as_array_mut() {
            suggestions.retain(|s| !s.as_str().unwrap().starts_with("no stored item contains"));
        }
        let text = text.to_string().to_lowercase();
        let mut found: Vec<String> =
            secret.iter().filter(|w| text.contains(*w)).map(|w| w.to_string()).collect();
        found.extend(outside.iter().filter(|id| text.contains(id.as_str())).cloned());
        found
    };
    for mode in ["fast", "deep"] {
        for query in ["marmalde", "quokaroo", "wombatx", "zanzibr", "reconcilation ledgr", "zzqxw vlorp"] {
            let r = find(&key, json!({"query": query, "mode": mode, "widen": "all"}));
            assert!(leaks(&r).is_empty(), "{query} ({mode}) told acme {:?}: {r:?}", leaks(&r));
            assert!(!r.suggestions.is_empty(), "{query} ({mode}): a find with no hit gets hints");
        }
    }
    // The common words acme is offered are its own.
    let r = find(&key, json!({"query": "zzqxw vlorp", "widen": "all"}));
    let common = r
        .suggestions
        .iter()
        .map(ToString::to_string)
        .find(|s| s.starts_with("words common"))
        .expect("common words");
    assert!(common.contains("webhook") || common.contains("retri"), "{common}");
    // The same hints do reach globex's own key: the words are there to leak.
    let globex = s.local.for_caller(
        &Caller::for_key(Bound { org: "globex".into(), projects: vec!["api".into()] }, None, None).unwrap(),
    );
    let r = find(&globex, json!({"query": "quokaroo", "mode": "fast"}));
    assert!(
        r.suggestions.iter().any(|s| s.to_string().contains("did you mean \"quokkaroo\"")),
        "{:?}",
        r.suggestions
    );
    let r = find(&globex, json!({"query": "zzqxw vlorp"}));
    assert!(r.suggestions.iter().any(|s| s.to_string().contains("marmalade")), "{:?}", r.suggestions);
    let r = find(&globex, json!({"query": "marmalde", "mode": "deep"}));
    assert!(!r.hits.is_empty(), "deep corrects globex's own word: {r:?}");
    // The local user, who owns the whole store, is offered them too; never the deleted word.
    let r = find(&s.local, json!({"query": "wombatx quokaroo", "widen": "all"}));
    assert!(r.suggestions.iter().any(|s| s.to_string().contains("quokkaroo")), "{:?}", r.suggestions);
    assert!(!r.suggestions.iter().any(|s| s.to_string().contains("wombatix")), "{:?}", r.suggestions);
}

fn finds_by_meaning_never_show_another_tenant(db: &TestDb) {
    let s = seed(db, embedder_from_env().unwrap());
    let key = s.local.for_caller(&acme_api());
    for query in ["how do we handle deliveries that fail at the gateway?", "what does the web console show?"]
    {
        for mode in ["auto", "deep"] {
            let r = find(&key, json!({"query": query, "mode": mode, "widen": "all", "detail": "full"}));
            assert_eq!(r.route_used.as_str(), "hybrid", "{r:?}");
            assert_nothing_outside(&s, &r);
        }
    }
    // A paraphrase of globex's text stored by acme's key is no near-duplicate of it.
    let r = store(
        &key,
        json!([{"kind": "decision", "data": {"component": "webhooks", "status": "accepted",
        "title": "Retry failed webhook deliveries coming from the zanzibar gateway", "rationale": "globex secret plan"}}]),
    );
    assert_eq!(r.results[0].status, ItemStatus::Inserted, "{:?}", r.results[0]);
}

fn a_key_with_several_projects_needs_a_project_to_write(db: &TestDb) {
    let s = seed(db, EmbedderChoice::None);
    let bound = Bound { org: "acme".into(), projects: vec!["api".into(), "web".into()] };
    let key = s.local.for_caller(&Caller::for_key(bound.clone(), None, None).unwrap());
    let r =
        store(&key, json!([{"kind": "todo", "data": {"title": "Where does this go?", "status": "open"}}]));
    let error = serde_json::to_value(r.results[0].error.as_ref().unwrap()).unwrap();
    assert_eq!(error["code"], "missing_field", "{error}");
    assert!(error["human_hint"].as_str().unwrap().contains("X-Cortex-Project"), "{error}");
    // With the header, or naming the project, it is written there.
    let web = s.local.for_caller(&Caller::for_key(bound, Some("web"), None).unwrap());
    let r = store(&web, json!([{"kind": "todo", "data": {"title": "Goes to web", "status": "open"}}]));
    assert_eq!(r.results[0].status, ItemStatus::Inserted);
    let r = store(
        &key,
        json!([{"kind": "todo", "scope": {"project": "api"}, "data": {"title": "Goes to api", "status": "open"}}]),
    );
    assert_eq!(r.results[0].status, ItemStatus::Inserted);
    // Both projects are found by the key; globex never is.
    let r = find(&key, json!({"query": "goes", "widen": "org"}));
    assert_eq!(r.hits.len(), 2, "{r:?}");
}

fn session_neighbours_stay_inside_the_tenant(db: &TestDb) {
    let mut s = seed(db, embedder_from_env().unwrap());
    // Two conversations under the same session name, one per tenant: a hit's neighbours are
    // looked up by session, and the other tenant's turns must never be among them.
    let turn = |org: &str, text: &str| {
        json!({"kind": "section", "scope": at(org, "api"), "dedupe": false, "source": {"session": "conv-1:D1"},
               "data": {"title": text, "body": text}})
    };
    store(
        &s.local,
        json!([
            turn("acme", "Caroline: I went to the support group yesterday"),
            turn("acme", "Melanie: how did it feel to be there?")
        ]),
    );
    let theirs = ids(&store(
        &s.local,
        json!([
            turn("globex", "Caroline: the zanzibar support group met again"),
            turn("globex", "Melanie: the zanzibar plans are secret")
        ]),
    ));
    s.outside.extend(theirs);
    let key = s.local.for_caller(&acme_api());
    for mode in ["auto", "deep"] {
        let r = find(&key, json!({"query": "support group", "mode": mode, "widen": "all", "detail": "full"}));
        assert!(r.hits.iter().any(|h| h.title.starts_with("Caroline: I went")), "{r:?}");
        assert_nothing_outside(&s, &r);
    }
}

/// An OAuth token's holder is a bounded caller with a principal (its subject at its issuer,
/// and its client): the audit trail records it for every change, and what an item claims
/// (`source.actor`, another key's name, an admin's) only as its claim, beside it.
fn a_callers_principal_is_recorded_whatever_the_item_claims(db: &TestDb) {
    let s = seed(db, EmbedderChoice::None);
    let alice = Principal::OAuth {
        issuer: "https://id.acme.example/".into(),
        subject: "alice".into(),
        client: Some("claude".into()),
    };
    let token = s.local.for_caller(&acme_api().as_principal(alice));
    let r = store(
        &token,
        json!([
            {"kind": "todo", "data": {"title": "Recorded as alice", "status": "open"}},
            {"kind": "todo", "source": {"actor": "key:acme/admin", "tool": "cortex keys"},
             "data": {"title": "Claiming to be the admin", "status": "open"}}
        ]),
    );
    let [mine, forged] = [0, 1].map(|i| r.results[i].id.clone().unwrap().parse().unwrap());
    let first = |id| s.local.audit().records(Some(id), None, 10).unwrap().remove(0);
    let alice = "oauth:alice at https://id.acme.example/ (client claude)";
    let plain = first(mine);
    assert_eq!((plain.principal.as_deref(), plain.via.as_deref()), (Some(alice), Some("memory_store")));
    assert!(plain.claimed.is_empty());
    let claimed = first(forged);
    assert_eq!(claimed.principal.as_deref(), Some(alice), "the claim never takes the principal's place");
    assert_eq!(
        (claimed.claimed.actor.as_deref(), claimed.claimed.tool.as_deref()),
        (Some("key:acme/admin"), Some("cortex keys"))
    );
}

/// The places a picker lists (remembered by the service until the store changes) follow every
/// store and delete at once, whoever made it, and a key's holder sees only its own.
fn places_follow_every_change_and_stay_inside_the_tenant(db: &TestDb) {
    let s = seed(db, EmbedderChoice::None);
    let key = s.local.for_caller(&acme_api());
    let counts = |service: &MemoryService| -> Vec<(String, i64)> {
        let places = service.memory_find().places().unwrap();
        places
            .into_iter()
            .map(|p| {
                let name = |v: Option<String>| v.unwrap_or_default();
                (format!("{}/{}", name(p.scope.org), name(p.scope.project)), p.items)
            })
            .collect()
    };
    let owned = |pairs: &[(&str, i64)]| pairs.iter().map(|(p, n)| (p.to_string(), *n)).collect::<Vec<_>>();
    assert_eq!(counts(&s.local), owned(&[("acme/api", 3), ("acme/web", 1), ("globex/api", 5)]));
    assert_eq!(counts(&key), owned(&[("acme/api", 3)]));
    store(
        &s.local,
        json!([{"kind": "todo", "scope": at("globex", "billing"), "data": {"title": "New place", "status": "open"}}]),
    );
    assert_eq!(counts(&s.local)[2..], owned(&[("globex/api", 5), ("globex/billing", 1)]));
    assert_eq!(counts(&key), owned(&[("acme/api", 3)]), "another tenant's new place stays out of sight");
    store(&key, json!([{"kind": "todo", "data": {"title": "Stored by the key", "status": "open"}}]));
    assert_eq!(counts(&s.local)[0], ("acme/api".to_string(), 4), "the key's store is counted for everyone");
    store(&s.local, json!([{"operation": "delete", "id": s.inside[0]}]));
    assert_eq!(counts(&key), owned(&[("acme/api", 3)]), "a delete is counted at once");
}
