//! `memory_store`'s `restore` operation: a deleted item comes back as it was, audited as
//! `restore` with the caller as principal; never over a live item that took its natural key, never
//! for a caller who cannot see it. On every backend.

use crate::common::Tools;
use crate::common::{id_of, memory};
use cortex_domain::principal::Principal;
use cortex_domain::tenant::Bound;
use cortex_service::Caller;
use cortex_service::response::ItemStatus;
use cortex_testdb::{TestDb, per_backend};
use serde_json::json;

per_backend!(
    a_deleted_item_is_restored_and_audited,
    a_restore_never_brings_back_a_second_holder_of_a_natural_key,
    links_deleted_with_an_item_come_back_one_by_one,
    a_key_cannot_restore_what_it_cannot_see,
);

fn a_deleted_item_is_restored_and_audited(db: &TestDb) {
    let m = memory(db, "main");
    let stored = m.store(json!([{"kind": "section", "data": {"title": "Quokka rotation",
        "body": "rotate the quokka keys monthly"}, "source": {"actor": "bob"}}]));
    let id = id_of(&stored, 0);
    // Someone other than the item's author deletes and restores it: the trail names them.
    let alice = m.service.local_caller().as_principal(Principal::Local { user: Some("alice".into()) });
    let alice = m.service.for_caller(&alice);
    let deleted = alice.store_args(&json!({"items": [{"operation": "delete", "id": id}]})).unwrap();
    assert_eq!(deleted.results[0].status, ItemStatus::Deleted);
    assert!(m.ids(json!({"query": "quokka"})).is_empty());
    let listed = m.service.lifecycle().recently_deleted(0, 10).unwrap();
    assert_eq!(listed.items.len(), 1);
    let item = &listed.items[0];
    assert_eq!((item.id.to_string(), item.title.as_str()), (id.clone(), "Quokka rotation"));
    assert_eq!(item.deleted_by.as_deref(), Some("local:alice"));

    let restored = alice.store_args(&json!({"items": [{"operation": "restore", "id": id}]})).unwrap();
    let result = &restored.results[0];
    assert_eq!((result.status, result.id.as_deref()), (ItemStatus::Updated, Some(id.as_str())), "{result:?}");
    assert!(result.reason.as_deref().unwrap_or_default().contains("restored"), "{result:?}");
    assert_eq!(m.ids(json!({"query": "quokka"})), vec![id.clone()], "finds see it again");
    let hit = &m.find(json!({"ids": [id], "detail": "full"})).hits[0];
    assert_eq!(hit.title, "Quokka rotation");
    assert_eq!(m.operations(&id), ["insert", "delete", "restore"]);
    assert!(
        m.service.lifecycle().recently_deleted(0, 10).unwrap().items.is_empty(),
        "restored: no longer listed"
    );
    let uuid = uuid::Uuid::parse_str(&id).unwrap();
    let records = m.service.audit().records(Some(uuid), None, 10).unwrap();
    let who: Vec<(Option<String>, Option<String>)> =
        records.into_iter().map(|r| (r.principal, r.claimed.actor)).collect();
    let me = m.service.local_caller().principal.map(|p| p.to_string());
    assert_eq!(
        who,
        [(me, Some("bob".into())), (Some("local:alice".into()), None), (Some("local:alice".into()), None)],
        "who stored it claimed to be bob; who deleted and restored it is alice, who claimed nothing"
    );
    assert!(m.service.audit().verify(&Default::default()).unwrap().ok, "the chain holds");

    let again = m.store(json!([{"operation": "restore", "id": id}]));
    assert_eq!(again.results[0].status, ItemStatus::Updated);
    assert!(again.results[0].reason.as_deref().unwrap_or_default().contains("not deleted"));
    assert_eq!(m.operations(&id).len(), 3, "restoring a live item changes nothing");

    let unknown = uuid::Uuid::now_v7().to_string();
    let missing = m.store(json!([{"operation": "restore", "id": unknown}]));
    assert_eq!(missing.results[0].status, ItemStatus::ValidationError);
    let wrong_kind = m.store(json!([{"operation": "restore", "id": id, "kind": "todo"}]));
    assert_eq!(wrong_kind.results[0].status, ItemStatus::ValidationError);
    let no_id = m.service.store_args(&json!({"items": [{"operation": "restore"}]})).unwrap();
    assert_eq!(no_id.results[0].error.as_ref().unwrap().field, "items[0].id");
}

fn a_restore_never_brings_back_a_second_holder_of_a_natural_key(db: &TestDb) {
    let m = memory(db, "main");
    let entity = json!({"kind": "entity", "data": {"entity_type": "Service", "name": "Billing"}});
    let old = id_of(&m.store(json!([entity])), 0);
    m.store(json!([{"operation": "delete", "id": old}]));
    let new = id_of(&m.store(json!([entity])), 0);
    assert_ne!(old, new, "the deleted entity's name is free for a new one");

    let refused = m.store(json!([{"operation": "restore", "id": old}]));
    let result = &refused.results[0];
    assert_eq!(result.status, ItemStatus::SkippedDedupe, "{result:?}");
    assert_eq!(result.existing_id.as_deref(), Some(new.as_str()));
    assert!(m.find(json!({"ids": [old]})).hits.is_empty(), "still deleted");
    assert_eq!(m.operations(&old), ["insert", "delete"]);

    m.store(json!([{"operation": "delete", "id": new}]));
    assert_eq!(m.store(json!([{"operation": "restore", "id": old}])).results[0].status, ItemStatus::Updated);
    assert_eq!(m.find(json!({"ids": [old]})).hits.len(), 1);
}

fn links_deleted_with_an_item_come_back_one_by_one(db: &TestDb) {
    let m = memory(db, "main");
    let ends = m.store(json!([
        {"kind": "entity", "data": {"entity_type": "Service", "name": "Ledger"}},
        {"kind": "entity", "data": {"entity_type": "Service", "name": "Vault"}},
    ]));
    let (ledger, vault) = (id_of(&ends, 0), id_of(&ends, 1));
    let link = id_of(
        &m.store(
            json!([{"kind": "relation", "data": {"from": ledger, "to": vault, "relation_type": "uses"}}]),
        ),
        0,
    );
    let deleted = m.store(json!([{"operation": "delete", "id": ledger}]));
    assert!(deleted.results[0].reason.as_deref().unwrap_or_default().contains("1 relation"), "{deleted:?}");
    assert!(m.find(json!({"ids": [link]})).hits.is_empty());

    m.store(json!([{"operation": "restore", "id": ledger}]));
    assert!(m.find(json!({"ids": [link]})).hits.is_empty(), "the relation is an item of its own");
    assert_eq!(m.store(json!([{"operation": "restore", "id": link}])).results[0].status, ItemStatus::Updated);
    let hit = &m.find(json!({"ids": [ledger], "detail": "full"})).hits[0];
    assert_eq!(hit.relations.len(), 1, "{hit:?}");
}

fn a_key_cannot_restore_what_it_cannot_see(db: &TestDb) {
    let m = memory(db, "main");
    let other = id_of(
        &m.store(json!([{"kind": "section", "data": {"title": "Globex plan", "body": "the globex plan"},
            "scope": {"org": "globex", "project": "api", "branch": "main"}}])),
        0,
    );
    m.store(json!([{"operation": "delete", "id": other}]));
    let key = m.service.for_caller(
        &Caller::for_key(Bound { org: "acme".into(), projects: vec!["api".into()] }, None, None).unwrap(),
    );
    let refused = key.store_args(&json!({"items": [{"operation": "restore", "id": other}]})).unwrap();
    assert_eq!(refused.results[0].status, ItemStatus::ValidationError);
    let unknown = uuid::Uuid::now_v7().to_string();
    let missing = key.store_args(&json!({"items": [{"operation": "restore", "id": unknown}]})).unwrap();
    let (a, b) = (refused.results[0].error.as_ref().unwrap(), missing.results[0].error.as_ref().unwrap());
    assert_eq!(a.code, b.code, "the same answer as for an id that names nothing");
    assert!(
        key.lifecycle().recently_deleted(0, 10).unwrap().items.is_empty(),
        "another tenant's deletions are not listed"
    );
    assert_eq!(m.service.lifecycle().recently_deleted(0, 10).unwrap().items.len(), 1);
    assert_eq!(m.operations(&other), ["insert", "delete"], "nothing written");
}
