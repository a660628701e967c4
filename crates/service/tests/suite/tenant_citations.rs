//! Citations count for ranking only inside the caller's tenant bound: relations another org
//! stores pointing at my items must not lift them in my finds. On every backend.

use super::common::{at, open_at, section, stored_ids};
use crate::common::Tools;
use cortex_domain::Scope;
use cortex_domain::ranking;
use cortex_domain::tenant::Bound;
use cortex_service::response::FindResponse;
use cortex_service::scope_inference::InferredScope;
use cortex_service::semantic::EmbedderChoice;
use cortex_service::{Caller, Config, MemoryService};
use cortex_testdb::{TestDb, per_backend};
use serde_json::{Value, json};

per_backend!(another_orgs_relations_pointing_at_my_item_do_not_change_my_ranking,);

/// A service standing in `org`, outside any project.
fn org_only(org: &str) -> InferredScope {
    InferredScope {
        scope: Scope { org: Some(org.into()), ..Scope::default() },
        ..InferredScope::fixed(org, "-", "-")
    }
}

fn relation(scope: Value, from: &str, to: &str, relation_type: &str) -> Value {
    json!({"kind": "relation", "scope": scope, "data": {"from": from, "to": to, "relation_type": relation_type}})
}

/// Each hit's id with its score and citations part, best first.
fn ranked(service: &MemoryService, args: Value) -> Vec<(String, f64, f64)> {
    let r: FindResponse = service.find_args(&args).unwrap();
    r.hits
        .into_iter()
        .map(|h| {
            let parts = h.score_parts.expect("score parts with detail: full");
            (h.id.to_string(), h.score.unwrap(), parts.citations)
        })
        .collect()
}

fn citations_of(hits: &[(String, f64, f64)], id: &str) -> f64 {
    hits.iter().find(|h| h.0 == id).unwrap_or_else(|| panic!("{id} not in {hits:?}")).2
}

fn another_orgs_relations_pointing_at_my_item_do_not_change_my_ranking(db: &TestDb) {
    let local = open_at(db, "main");
    let mine = stored_ids(
        &local,
        json!([
            section("Webhook retry policy", "Retries back off."),
            {"kind": "section", "dedupe": false, "data": {"title": "Webhook retry policy", "body": "Retries back off."}},
            section("Webhook consumers", "They read the policy."),
        ]),
    );
    let (plain, cited, my_source) = (&mine[0], &mine[1], &mine[2]);
    // One relation of my own tenant pointing at `cited`.
    stored_ids(&local, json!([relation(at("acme", "api"), my_source, cited, "cites")]));
    // Three of another org's: the local user may link from outside any project to anywhere.
    let globex =
        MemoryService::open(&Config::new(db.target().clone(), org_only("globex"), EmbedderChoice::None))
            .unwrap();
    let theirs = stored_ids(
        &globex,
        json!([{"kind": "entity", "data": {"entity_type": "service", "name": "gateway"}}]),
    );
    let foreign = stored_ids(
        &globex,
        json!(["cites", "uses", "extends"].map(|t| relation(json!({"org": "globex"}), &theirs[0], cited, t))),
    );

    let query = json!({"query": "webhook retry policy", "detail": "full", "types": ["section"]});
    let by_ids = json!({"ids": [plain, cited], "detail": "full"});
    // The local user owns the whole store: all four relations count.
    let everyone = ranked(&local, query.clone());
    assert_eq!(citations_of(&everyone, cited), ranking::citations(4), "{everyone:?}");
    assert_eq!(citations_of(&ranked(&local, by_ids.clone()), cited), ranking::citations(4));

    let key = local.for_caller(
        &Caller::for_key(Bound { org: "acme".into(), projects: vec!["api".into()] }, None, None).unwrap(),
    );
    let with_theirs = ranked(&key, query.clone());
    assert_eq!(citations_of(&with_theirs, cited), ranking::citations(1), "only my relation: {with_theirs:?}");
    assert_eq!(citations_of(&with_theirs, plain), 0.0);
    assert_eq!(citations_of(&ranked(&key, by_ids), cited), ranking::citations(1));

    // The other org takes its relations back: my order and every citations part stay as they
    // were. (Relevance may move a little: BM25 weighs words over the whole index.)
    let deletes: Vec<Value> = foreign.iter().map(|id| json!({"operation": "delete", "id": id})).collect();
    stored_ids(&local, Value::from(deletes));
    let without_theirs = ranked(&key, query);
    let parts = |hits: &[(String, f64, f64)]| hits.iter().map(|h| (h.0.clone(), h.2)).collect::<Vec<_>>();
    assert_eq!(parts(&with_theirs), parts(&without_theirs));
}
