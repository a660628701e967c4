//! Relations and observations: found by either end, gone with their item.

use super::*;
use cortex_domain::Kind;
use cortex_domain::graph::Cascade;
use cortex_domain::tenant::Bound;
use cortex_store::*;
use cortex_testdb::{TestDb, per_backend};
use serde_json::json;
use uuid::Uuid;

per_backend!(links_are_found_by_either_end_and_die_with_their_item,);

/// A relation or observation record whose ends are already ids (as the service writes them).
fn link(kind: Kind, data: serde_json::Value) -> Record {
    Record { kind, data, ..record("link", &Uuid::now_v7().to_string(), "main") }
}

fn links_are_found_by_either_end_and_die_with_their_item(db: &TestDb) {
    let store = db.open();
    let (a, b, c) = (record("a", "one", "main"), record("b", "two", "main"), record("c", "three", "main"));
    for r in [&a, &b, &c] {
        insert(&*store, r);
    }
    let ab = link(
        Kind::Relation,
        json!({"from": a.id.to_string(), "to": b.id.to_string(), "relation_type": "uses"}),
    );
    let cb = link(
        Kind::Relation,
        json!({"from": c.id.to_string(), "to": b.id.to_string(), "relation_type": "uses"}),
    );
    let obs = link(Kind::Observation, json!({"entity": a.id.to_string(), "text": "noted"}));
    for r in [&ab, &cb, &obs] {
        assert_eq!(insert(&*store, r), WriteOutcome::Inserted { id: r.id });
    }
    let ends = |ids: &[Uuid]| -> Vec<(Uuid, Uuid, Option<Uuid>)> {
        let mut got: Vec<_> = store.links(ids).unwrap().into_iter().map(|l| (l.id, l.from, l.to)).collect();
        got.sort();
        got
    };
    let mut from_a = vec![(ab.id, a.id, Some(b.id)), (obs.id, a.id, None)];
    from_a.sort();
    assert_eq!(ends(&[a.id]), from_a);
    let mut to_b = vec![(ab.id, a.id, Some(b.id)), (cb.id, c.id, Some(b.id))];
    to_b.sort();
    assert_eq!(ends(&[b.id]), to_b);
    assert_eq!(ends(&[obs.id]), vec![(obs.id, a.id, None)], "an observation finds itself");
    let link_of = store.links(&[b.id]).unwrap();
    assert!(link_of.iter().all(|l| l.title == "link" && l.facts.kind == Kind::Relation));
    let relations = Filters { now: NOW, include_superseded: true, ..Filters::default() };
    assert_eq!(store.incoming_links(&[a.id, b.id], &relations).unwrap(), vec![(b.id, 2)]);
    let bound =
        |org: &str| Filters { bound: Some(Bound { org: org.into(), projects: vec![] }), ..relations.clone() };
    assert_eq!(store.incoming_links(&[b.id], &bound("acme")).unwrap(), vec![(b.id, 2)]);
    assert!(
        store.incoming_links(&[b.id], &bound("globex")).unwrap().is_empty(),
        "relations outside the bound"
    );

    let out = store
        .write_batch(&[WriteOp::Delete { id: a.id, kind: None, at: NOW + 1, cascade: Cascade::DeleteLinks }])
        .unwrap();
    assert_eq!(out[0], WriteOutcome::Deleted { id: a.id, already: false, cascaded: 2 });
    assert!(store.get(&[ab.id, obs.id]).unwrap().iter().all(|i| i.deleted_at == Some(NOW + 1)));
    assert_eq!(ends(&[b.id]), vec![(cb.id, c.id, Some(b.id))]);
    assert_eq!(store.incoming_links(&[b.id], &relations).unwrap(), vec![(b.id, 1)]);
}
