//! Every operation the stores record is one the typed [`AuditOperation`] knows, read back from
//! the stored text, and the chain those texts are hashed into verifies whole, on every backend.

use crate::common::{days_ago, id_of, memory, section};
use cortex_service::audit::VerifyOptions;
use cortex_store::AuditOperation;
use cortex_testdb::{TestDb, per_backend};
use serde_json::json;

per_backend!(every_recorded_operation_is_typed_and_the_chain_verifies);

fn every_recorded_operation_is_typed_and_the_chain_verifies(db: &TestDb) {
    let m = memory(db, "main");
    let s = &m.service;
    let id = id_of(&m.store(json!([section("One", "first body")])), 0);
    m.store(json!([{"kind": "section", "id": id, "data": {"title": "One", "body": "changed"}}]));
    m.store(json!([{"operation": "delete", "id": id}]));
    m.store(json!([{"operation": "restore", "id": id}]));
    m.store(json!([{"operation": "confirm", "id": id}]));
    // A merge recorded and undone (what `cortex git sync` and `cortex git unmerge` write).
    let store = cortex_store::open(db.target()).unwrap();
    let merge = cortex_domain::provenance::BranchMerge {
        id: 0,
        org: "acme".into(),
        project: "api".into(),
        from_branch: "feature".into(),
        into_branch: "main".into(),
        commit: "c".repeat(40),
        how: cortex_domain::provenance::MergeHow::Merge,
        detected_at: store.now().unwrap(),
        undone_at: None,
    };
    let context = cortex_store::WriteContext::default();
    assert!(store.record_merge(&merge, &context).unwrap().is_some());
    let place = cortex_domain::provenance::RepoBranch {
        org: "acme".into(),
        project: "api".into(),
        branch: "main".into(),
    };
    assert_eq!(store.undo_merges(&place, "feature", store.now().unwrap(), &context).unwrap(), 1);
    drop(store);
    let adr = |title: &str, rationale: &str, supersedes: Option<&str>| {
        let mut data =
            json!({"component": "sessions", "status": "accepted", "title": title, "rationale": rationale});
        if let Some(old) = supersedes {
            data["supersedes"] = json!(old);
        }
        json!({"kind": "decision", "data": data})
    };
    let old = id_of(&m.store(json!([adr("Sessions in Redis", "fast lookups", None)])), 0);
    let mut blocked = adr("Sessions in Redis", "we changed our minds", None);
    blocked["id"] = json!(old);
    m.store(json!([blocked]));
    m.store(json!([adr("Sessions in Postgres", "one database", Some(&old))]));
    m.store(json!([{"kind": "pr_context", "data": {"pr_number": 1, "title": "Refactor zeppelin",
        "status": "merged", "base_branch": "main", "head_branch": "zeppelin", "merged_at": days_ago(40)}}]));
    assert_eq!(s.lifecycle().purge(false).unwrap().purged, 1);
    let mut line = s.transfer().export_page(None, 1).unwrap().remove(0);
    line.id = uuid::Uuid::now_v7();
    s.transfer().import_batch(vec![line]).unwrap();
    let key = cortex_service::keys::KeySpec {
        name: "reader".into(),
        org: "acme".into(),
        projects: vec!["api".into()],
        role: "read".into(),
        ..Default::default()
    };
    s.keys().create(&key).unwrap();
    s.keys().revoke(None, "reader").unwrap();
    s.keys().restore(None, "reader").unwrap();
    s.keys().record_admin_sign_in("acme", "with an API key").unwrap();

    let records = s.audit().records(None, None, 1_000).unwrap();
    let seen: Vec<AuditOperation> = records
        .iter()
        .map(|r| r.op().unwrap_or_else(|| panic!("record {} holds {:?}", r.seq, r.operation)))
        .collect();
    for op in AuditOperation::ALL {
        if op != AuditOperation::Baseline {
            assert!(seen.contains(&op), "no {op:?} record in {seen:?}");
        }
    }
    for (record, op) in records.iter().zip(&seen) {
        assert_eq!(record.operation, op.as_str(), "the stored text is the typed one's");
        assert_eq!(op.is_key_operation(), record.kind.as_deref() == Some("api_key"), "{record:?}");
    }
    for full in [false, true] {
        let v = s.audit().verify(&VerifyOptions { full, anchor: None }).unwrap();
        assert!(v.ok, "{:?}", v.problems);
        assert_eq!(v.records_checked, records.len() as u64);
        assert!(v.keys_without_trail.is_empty(), "{:?}", v.keys_without_trail);
    }
}
