//! The knowledge graph through `MemoryService`, on each backend: entities keyed by type and
//! name, relations between any items, observations, expansion in finds, citations, cascade.

use crate::common::{days_ago, id_of, memory, section};
use cortex_service::response::{FindResponse, ItemStatus, StoreResponse};
use cortex_testdb::{TestDb, per_backend};
use serde_json::{Value, json};

per_backend!(
    an_entity_stored_again_merges_into_the_same_item,
    a_decision_implementing_an_entity_is_found_by_expanding_from_the_decision,
    the_same_relation_twice_is_one_relation,
    bad_references_are_refused_per_item,
    a_cycle_ends_and_depth_and_cap_are_honoured,
    observations_are_appended_deduped_searchable_and_shown_with_their_entity,
    incoming_relations_move_an_item_up,
    deleting_an_entity_deletes_its_relations_and_observations_with_audit,
    purging_an_expired_item_deletes_the_links_to_it,
    expansion_never_leaves_the_scope_the_query_covers,
    a_relation_to_an_entity_skipped_for_its_idempotency_key_points_at_the_keys_item,
);

fn entity(entity_type: &str, name: &str) -> Value {
    json!({"kind": "entity", "data": {"entity_type": entity_type, "name": name}})
}

fn named(entity_type: &str, name: &str) -> Value {
    json!({"entity_type": entity_type, "name": name})
}

fn relation(from: Value, to: Value, relation_type: &str) -> Value {
    json!({"kind": "relation", "data": {"from": from, "to": to, "relation_type": relation_type}})
}

fn statuses(r: &StoreResponse) -> Vec<ItemStatus> {
    r.results.iter().map(|x| x.status).collect()
}

fn expanded_ids(r: &FindResponse) -> Vec<String> {
    r.hits.iter().filter(|h| h.expanded).map(|h| h.id.to_string()).collect()
}

fn an_entity_stored_again_merges_into_the_same_item(db: &TestDb) {
    let m = memory(db, "main");
    let first = m.store(json!([{"kind": "entity", "tags": ["team-pay"],
        "data": {"entity_type": "service", "name": "billing", "description": "Charges cards nightly"}}]));
    let id = id_of(&first, 0);
    // Another spelling of the same name, without the description: merged, not duplicated.
    let again = m.store(json!([{"kind": "entity", "data": {"entity_type": "Service", "name": "Billing "}}]));
    assert_eq!(again.results[0].status, ItemStatus::Updated);
    assert_eq!(id_of(&again, 0), id);
    let stored = &m.find(json!({"ids": [id]})).hits[0];
    assert_eq!(stored.data.as_ref().unwrap()["description"], "Charges cards nightly");
    assert_eq!(stored.tags, ["team-pay"]);
    let described = m.store(json!([{"kind": "entity",
        "data": {"entity_type": "service", "name": "billing", "description": "Charges cards hourly"}}]));
    assert_eq!((described.results[0].status, id_of(&described, 0)), (ItemStatus::Updated, id.clone()));
    assert_eq!(m.ids(json!({"query": "hourly"})), vec![id.clone()]);
    assert!(m.ids(json!({"query": "nightly"})).is_empty(), "the old description left the index");
    assert_eq!(m.operations(&id), ["insert", "update", "update"]);
}

fn a_decision_implementing_an_entity_is_found_by_expanding_from_the_decision(db: &TestDb) {
    let m = memory(db, "main");
    let adr = id_of(
        &m.store(json!([{"kind": "decision", "data": {"component": "billing", "status": "accepted",
            "title": "Idempotent charge requests", "rationale": "retries must not charge twice"}}])),
        0,
    );
    // The entity and the relation naming it arrive in one batch.
    let r = m.store(json!([
        entity("service", "payments-gateway"),
        relation(json!(adr), named("service", "payments-gateway"), "implements"),
    ]));
    assert_eq!(statuses(&r), [ItemStatus::Inserted, ItemStatus::Inserted]);
    let (service, rel) = (id_of(&r, 0), id_of(&r, 1));
    let stored = &m.find(json!({"ids": [rel]})).hits[0];
    assert_eq!(stored.data.as_ref().unwrap()["to"], service.as_str(), "references are stored as ids");

    let plain = m.find(json!({"query": "idempotent charge", "types": ["decision"]}));
    assert_eq!(plain.hits.len(), 1);
    assert!(plain.graph.is_none(), "no expansion unless asked");
    let found = m.find(json!({"query": "idempotent charge", "types": ["decision"], "expand": "relations"}));
    assert_eq!(found.hits[0].id.to_string(), adr);
    assert_eq!(
        expanded_ids(&found),
        std::slice::from_ref(&service),
        "types choose the hits, not their neighbours"
    );
    let reached = found.hits.iter().find(|h| h.expanded).unwrap();
    assert_eq!(reached.path.len(), 1);
    assert_eq!(
        (
            reached.path[0].from.to_string().as_str(),
            reached.path[0].to.to_string().as_str(),
            reached.path[0].relation_type.as_str()
        ),
        (adr.as_str(), service.as_str(), "implements")
    );
    let graph = found.graph.as_ref().unwrap();
    assert_eq!((graph.added, graph.edges.len(), graph.nodes.len()), (1, 1, 2));

    // Directions: the service is a child of the decision, the decision a parent of the service.
    assert_eq!(
        expanded_ids(&m.find(json!({"ids": [adr], "expand": "children"}))),
        std::slice::from_ref(&service)
    );
    assert!(expanded_ids(&m.find(json!({"ids": [adr], "expand": "parents"}))).is_empty());
    assert_eq!(
        expanded_ids(&m.find(json!({"ids": [service], "expand": "parents"}))),
        std::slice::from_ref(&adr)
    );
    // Deep mode expands by itself.
    let deep = m.find(json!({"query": "idempotent charge", "types": ["decision"], "mode": "deep"}));
    assert_eq!(expanded_ids(&deep), [service]);
}

fn the_same_relation_twice_is_one_relation(db: &TestDb) {
    let m = memory(db, "main");
    let r = m.store(json!([entity("service", "api"), entity("database", "orders-db")]));
    let (api, orders) = (id_of(&r, 0), id_of(&r, 1));
    let first = m.store(json!([relation(named("service", "api"), named("database", "orders-db"), "reads")]));
    // The same ends by id, and the type in another case: the same relation.
    let again = m.store(json!([
        relation(json!(api), json!(orders), "READS"),
        relation(json!(api), json!(orders), "writes"),
    ]));
    assert_eq!(again.results[0].status, ItemStatus::SkippedDedupe);
    assert_eq!(again.results[0].existing_id, first.results[0].id);
    assert_eq!(again.results[1].status, ItemStatus::Inserted, "another type is another relation");
    let api_hit = &m.find(json!({"ids": [api]})).hits[0];
    let mut types: Vec<&str> = api_hit.relations.iter().map(|r| r.relation_type.as_str()).collect();
    types.sort();
    assert_eq!(types, ["reads", "writes"]);
    assert!(api_hit.relations.iter().all(|r| r.direction == "outgoing" && r.other_id == orders));
}

fn bad_references_are_refused_per_item(db: &TestDb) {
    let m = memory(db, "main");
    let api = id_of(&m.store(json!([entity("service", "api")])), 0);
    let note = id_of(&m.store(json!([section("Deploys", "how we deploy the api")])), 0);
    let ghost = uuid::Uuid::now_v7().to_string();
    let other_project = id_of(
        &m.store(json!([{"kind": "entity", "scope": {"project": "web"},
            "data": {"entity_type": "service", "name": "frontend"}}])),
        0,
    );
    let r = m.store(json!([
        relation(json!(api), json!(ghost), "calls"),
        relation(named("service", "nowhere"), json!(api), "calls"),
        relation(json!(api), named("service", "api"), "calls"),
        relation(json!(api), json!(other_project), "calls"),
        {"kind": "observation", "data": {"entity": note, "text": "sections are not entities"}},
        relation(json!(api), json!(note), "documented_in"),
    ]));
    let fields: Vec<(ItemStatus, String, String)> = r
        .results
        .iter()
        .map(|x| {
            let e = x.error.as_ref();
            (
                x.status,
                e.map(|e| e.field.clone()).unwrap_or_default(),
                e.map(|e| e.code.clone()).unwrap_or_default(),
            )
        })
        .collect();
    let refused =
        |field: &str, code: &str| (ItemStatus::ValidationError, field.to_string(), code.to_string());
    assert_eq!(
        fields,
        [
            refused("items[0].data.to", "not_found"),
            refused("items[1].data.from", "not_found"),
            refused("items[2].data.to", "invalid_value"),
            refused("items[3].data.to", "not_found"),
            refused("items[4].data.entity", "kind_mismatch"),
            (ItemStatus::Inserted, String::new(), String::new()),
        ]
    );
    for result in &r.results[..5] {
        let error = result.error.as_ref().unwrap();
        assert!(!error.human_hint.is_empty() && !error.message.is_empty(), "{error:?}");
    }
    assert!(r.results[1].error.as_ref().unwrap().message.contains("nowhere"));
}

fn a_cycle_ends_and_depth_and_cap_are_honoured(db: &TestDb) {
    let m = memory(db, "main");
    let names = ["a", "b", "c", "d", "e"];
    let r = m.store(Value::Array(names.iter().map(|n| entity("step", n)).collect()));
    let ids: Vec<String> = (0..names.len()).map(|i| id_of(&r, i)).collect();
    // a → b → c → d → e, and d → a closes a cycle.
    let mut links: Vec<Value> =
        names.windows(2).map(|w| relation(named("step", w[0]), named("step", w[1]), "then")).collect();
    links.push(relation(named("step", "d"), named("step", "a"), "then"));
    assert_eq!(m.store(Value::Array(links)).summary.inserted, 5);

    let walk = |expand: &str, depth: i64, limit: i64| {
        let found = m.find(json!({"ids": [ids[0]], "expand": expand, "depth": depth, "expand_limit": limit}));
        let mut got = expanded_ids(&found);
        got.sort();
        got
    };
    let sorted = |idx: &[usize]| {
        let mut v: Vec<String> = idx.iter().map(|&i| ids[i].clone()).collect();
        v.sort();
        v
    };
    assert_eq!(walk("children", 1, 20), sorted(&[1]));
    assert_eq!(walk("children", 3, 20), sorted(&[1, 2, 3]));
    assert_eq!(walk("all", 1, 20), sorted(&[1, 3]), "b ahead, d behind");
    assert_eq!(walk("all", 3, 20), sorted(&[1, 2, 3, 4]), "the cycle is walked once");
    assert_eq!(walk("all", 3, 2).len(), 2, "the cap holds");
    let deep = m.find(json!({"ids": [ids[0]], "expand": "children", "depth": 3}));
    let d = deep.hits.iter().find(|h| h.id.to_string() == ids[3]).unwrap();
    assert_eq!(d.path.len(), 3, "the path from a to d is every link on the way");
    assert_eq!(d.path[0].from.to_string(), ids[0]);
    assert_eq!(d.path[2].to.to_string(), ids[3]);
}

fn observations_are_appended_deduped_searchable_and_shown_with_their_entity(db: &TestDb) {
    let m = memory(db, "main");
    let billing = id_of(&m.store(json!([entity("service", "billing")])), 0);
    let observe = |text: &str| json!({"kind": "observation", "data": {"entity": named("service", "billing"), "text": text}});
    let r = m.store(json!([
        observe("Retries failed charges three times with backoff"),
        observe("Owned by the payments team"),
    ]));
    assert_eq!(r.summary.inserted, 2);
    let again = m.store(json!([observe("retries failed charges  three times with BACKOFF")]));
    assert_eq!(again.results[0].status, ItemStatus::SkippedDedupe);
    assert_eq!(again.results[0].existing_id, r.results[0].id);

    assert_eq!(m.ids(json!({"query": "backoff", "types": ["observation"]})), vec![id_of(&r, 0)]);
    let read = &m.find(json!({"ids": [billing]})).hits[0];
    let texts: Vec<&str> = read.observations.iter().map(|o| o.text.as_str()).collect();
    assert_eq!(texts, ["Retries failed charges three times with backoff", "Owned by the payments team"]);
    // From an observation, its entity is the parent.
    let up = m.find(json!({"query": "payments team", "types": ["observation"], "expand": "parents"}));
    assert_eq!(expanded_ids(&up), std::slice::from_ref(&billing));
    assert_eq!(up.hits[1].path[0].relation_type, "has_observation");
    // Relations never include observations.
    let across = m.find(json!({"ids": [billing], "expand": "relations"}));
    assert!(expanded_ids(&across).is_empty());
}

fn incoming_relations_move_an_item_up(db: &TestDb) {
    let m = memory(db, "main");
    let text = "Rotate the signing keys every quarter";
    // The older of two equal items loses on recency until it is cited.
    let cited = id_of(
        &m.store(
            json!([{"kind": "section", "dedupe": false, "data": {"title": "Key rotation", "body": text}}]),
        ),
        0,
    );
    std::thread::sleep(std::time::Duration::from_millis(5));
    let plain = id_of(
        &m.store(
            json!([{"kind": "section", "dedupe": false, "data": {"title": "Key rotation", "body": text}}]),
        ),
        0,
    );
    let before = m.find(json!({"query": "signing keys rotation", "detail": "full"}));
    assert_eq!(
        before.hits.iter().map(|h| h.id.to_string()).collect::<Vec<_>>(),
        [plain.clone(), cited.clone()]
    );
    assert_eq!(before.hits[1].score_parts.as_ref().unwrap().citations, 0.0);

    let users: Vec<Value> = ["auth", "gateway", "billing"].iter().map(|n| entity("service", n)).collect();
    m.store(Value::Array(users));
    let links: Vec<Value> = ["auth", "gateway", "billing"]
        .iter()
        .map(|n| relation(named("service", n), json!(cited), "follows"))
        .collect();
    assert_eq!(m.store(Value::Array(links)).summary.inserted, 3);
    let after = m.find(json!({"query": "signing keys rotation", "detail": "full"}));
    assert_eq!(after.hits[0].id.to_string(), cited);
    assert!(after.hits[0].score_parts.as_ref().unwrap().citations > 0.5, "{:?}", after.hits[0].score_parts);
    assert_eq!(after.hits[1].score_parts.as_ref().unwrap().citations, 0.0);
}

fn deleting_an_entity_deletes_its_relations_and_observations_with_audit(db: &TestDb) {
    let m = memory(db, "main");
    let r = m.store(json!([
        entity("service", "legacy-cron"),
        entity("service", "scheduler"),
        relation(named("service", "scheduler"), named("service", "legacy-cron"), "replaces"),
        {"kind": "observation", "data": {"entity": named("service", "legacy-cron"), "text": "Runs at 3am"}},
    ]));
    assert_eq!(r.summary.inserted, 4);
    let (cron, scheduler, rel, obs) = (id_of(&r, 0), id_of(&r, 1), id_of(&r, 2), id_of(&r, 3));
    let gone = m.store(json!([{"operation": "delete", "id": cron}]));
    assert_eq!(gone.results[0].status, ItemStatus::Deleted);
    assert!(gone.results[0].reason.as_deref().unwrap_or("").contains('2'), "{:?}", gone.results[0].reason);
    let after = m.find(json!({"ids": [rel, obs, scheduler]}));
    assert_eq!(after.missing_ids, [rel.clone(), obs.clone()]);
    assert!(after.hits[0].relations.is_empty(), "the scheduler lost the relation");
    assert_eq!(m.operations(&rel), ["insert", "delete"]);
    assert_eq!(m.operations(&obs), ["insert", "delete"]);
}

fn expansion_never_leaves_the_scope_the_query_covers(db: &TestDb) {
    let main = memory(db, "main");
    let feature = memory(db, "feature-x");
    let queue = id_of(&main.store(json!([entity("queue", "jobs-queue")])), 0);
    // On another branch of the same project: a decision about the queue and the link to it.
    let adr = id_of(
        &feature.store(json!([{"kind": "decision", "data": {"component": "jobs", "status": "proposed",
            "title": "Move jobs-queue to streams", "rationale": "consumer groups"}}])),
        0,
    );
    let r = feature.store(json!([relation(json!(adr), json!(queue), "changes")]));
    assert_eq!(r.results[0].status, ItemStatus::Inserted);

    let from_main = main.find(json!({"ids": [queue], "expand": "all", "depth": 3}));
    assert!(expanded_ids(&from_main).is_empty(), "the branch's decision stayed out");
    let widened = main.find(json!({"ids": [queue], "expand": "all", "widen": "project"}));
    assert_eq!(expanded_ids(&widened), [adr]);
    // Another project is never reachable: links there are refused at store time.
    let elsewhere = main.store(json!([{"kind": "decision", "scope": {"project": "web"},
        "data": {"component": "ui", "status": "proposed", "title": "Poll the queue", "rationale": "simple"}}]));
    let link = main.store(json!([relation(json!(id_of(&elsewhere, 0)), json!(queue), "reads")]));
    assert_eq!(link.results[0].status, ItemStatus::ValidationError);
}

fn purging_an_expired_item_deletes_the_links_to_it(db: &TestDb) {
    let m = memory(db, "main");
    let r = m.store(json!([
        entity("service", "api"),
        {"kind": "entity", "expires_at": days_ago(1), "data": {"entity_type": "service", "name": "old-proxy"}},
        relation(named("service", "api"), named("service", "old-proxy"), "calls"),
    ]));
    assert_eq!(r.summary.inserted, 3);
    let (api, proxy, rel) = (id_of(&r, 0), id_of(&r, 1), id_of(&r, 2));
    let report = m.service.lifecycle().purge(false).unwrap();
    assert_eq!(report.purged, 1);
    let after = m.find(json!({"ids": [api, rel.clone(), proxy]}));
    assert_eq!(after.missing_ids.len(), 2, "the proxy is gone and so is the link to it");
    assert!(after.hits[0].relations.is_empty());
    assert_eq!(m.operations(&rel), ["insert", "delete"]);
}

/// An entity of a batch that the store will skip (its idempotency key is taken) stands for
/// the item holding the key: a relation naming it must point there, not at an id that is
/// never written.
fn a_relation_to_an_entity_skipped_for_its_idempotency_key_points_at_the_keys_item(db: &TestDb) {
    let m = memory(db, "main");
    let keyed = |name: &str, key: &str| json!({"kind": "entity", "idempotency_key": key, "data": {"entity_type": "service", "name": name}});
    let first = m.store(json!([keyed("billing", "k-billing"), entity("database", "ledger-db")]));
    let (billing, ledger) = (id_of(&first, 0), id_of(&first, 1));
    let batch = m.store(json!([
        keyed("billing-v2", "k-billing"),
        relation(named("service", "billing-v2"), named("database", "ledger-db"), "writes"),
        keyed("payments", "k-payments"),
        keyed("payments-v2", "k-payments"),
        relation(named("service", "payments-v2"), named("database", "ledger-db"), "reads"),
    ]));
    use ItemStatus::*;
    assert_eq!(statuses(&batch), [SkippedDedupe, Inserted, Inserted, SkippedDedupe, Inserted]);
    assert_eq!(batch.results[0].existing_id.as_deref(), Some(billing.as_str()));
    let payments = id_of(&batch, 2);
    assert_eq!(batch.results[3].existing_id.as_deref(), Some(payments.as_str()));
    for (relation, from) in [(id_of(&batch, 1), &billing), (id_of(&batch, 4), &payments)] {
        let hit = &m.find(json!({"ids": [relation]})).hits[0];
        let data = hit.data.as_ref().unwrap();
        assert_eq!(
            (data["from"].as_str(), data["to"].as_str()),
            (Some(from.as_str()), Some(ledger.as_str()))
        );
        assert_eq!(
            m.find(json!({"ids": [from]})).hits[0].relations.len(),
            1,
            "the relation is walked from {from}"
        );
    }
}
