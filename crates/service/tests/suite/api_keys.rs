//! API keys on every backend: made with a secret shown once, listed without it, revoked once,
//! checked by token (malformed, unknown, revoked, expired named as such), recorded in the
//! audit trail that still verifies, and out of reach of a key's holder.

use crate::common::Tools;
use crate::common::open_at;
use cortex_domain::api_key::Role;
use cortex_service::Caller;
use cortex_service::ServiceError;
use cortex_service::audit::VerifyOptions;
use cortex_service::keys::{AuthFailure, KeySpec};
use cortex_testdb::{TestDb, per_backend};

per_backend!(
    a_key_is_made_listed_checked_and_revoked,
    bad_specs_name_their_flag_and_names_are_unique,
    keys_are_audited_and_the_trail_verifies,
    rows_cannot_be_deleted_or_changed_but_by_revoking,
    a_key_holder_cannot_see_or_make_keys,
    a_store_refused_for_its_role_is_audited_on_the_items_it_named,
    a_read_keys_flood_of_refused_stores_adds_a_bounded_number_of_audit_rows,
    names_are_unique_per_org_and_never_tell_of_another_org,
    one_orgs_refused_stores_are_counted_apart_from_anothers_key_of_the_same_name,
);

fn spec(name: &str, role: &str) -> KeySpec {
    KeySpec {
        name: name.into(),
        org: "acme".into(),
        projects: vec!["api".into(), "web".into()],
        role: role.into(),
        ..KeySpec::default()
    }
}

fn invalid_field(e: ServiceError) -> String {
    match e {
        ServiceError::Invalid(v) => v.field,
        other => panic!("expected a refusal naming a field, got {other:?}"),
    }
}

fn a_key_is_made_listed_checked_and_revoked(db: &TestDb) {
    let s = open_at(db, "main");
    assert!(!s.keys().any().unwrap());
    let created = s.keys().create(&KeySpec { rate: Some("5/s".into()), ..spec("ci-bot", "write") }).unwrap();
    assert!(created.token.starts_with("cortex_"));
    assert_eq!((created.key.state, created.key.role), ("active", Role::Write));
    assert!(s.keys().any().unwrap());

    let holder = s.keys().authenticate(&created.token).unwrap().unwrap();
    assert_eq!((holder.name.as_str(), holder.role), ("ci-bot", Role::Write));
    assert_eq!(
        (holder.bound.org.as_str(), holder.bound.projects.clone()),
        ("acme", vec!["api".into(), "web".into()])
    );
    assert_eq!(holder.rate.unwrap().per_second, 5.0);

    // One character of the secret changed: the same lookup id, the wrong secret.
    let mut wrong = created.token.clone();
    let last = wrong.pop().unwrap();
    wrong.push(if last == '0' { '1' } else { '0' });
    assert_eq!(s.keys().authenticate(&wrong).unwrap(), Err(AuthFailure::Unknown));
    assert_eq!(s.keys().authenticate("Bearer nonsense").unwrap(), Err(AuthFailure::Malformed));
    assert_eq!(
        s.keys().authenticate(&format!("cortex_{}_{}", "0".repeat(16), "0".repeat(64))).unwrap(),
        Err(AuthFailure::Unknown)
    );

    let listed = s.keys().list().unwrap();
    assert_eq!(listed.len(), 1);
    let text = serde_json::to_string(&listed).unwrap();
    assert!(!text.contains(&created.token[24..]), "the list shows no secret: {text}");

    let revoked = s.keys().revoke(None, "ci-bot").unwrap();
    assert_eq!(revoked.state, "revoked");
    assert!(revoked.revoked_at.is_some());
    assert_eq!(s.keys().authenticate(&created.token).unwrap(), Err(AuthFailure::Revoked));
    assert_eq!(invalid_field(s.keys().revoke(None, "ci-bot").unwrap_err()), "name");
    assert_eq!(invalid_field(s.keys().revoke(None, "nobody").unwrap_err()), "name");
    // Another process sees the revocation at once.
    assert_eq!(open_at(db, "main").keys().authenticate(&created.token).unwrap(), Err(AuthFailure::Revoked));
}

fn bad_specs_name_their_flag_and_names_are_unique(db: &TestDb) {
    let s = open_at(db, "main");
    for (bad, flag) in [
        (KeySpec { name: "two words".into(), ..spec("x", "read") }, "--name"),
        (KeySpec { org: " ".into(), ..spec("x", "read") }, "--org"),
        (KeySpec { projects: vec!["a\nb".into()], ..spec("x", "read") }, "--project"),
        (spec("x", "owner"), "--role"),
        (KeySpec { rate: Some("fast".into()), ..spec("x", "read") }, "--rate"),
        (KeySpec { expires: Some("2001-01-01".into()), ..spec("x", "read") }, "--expires"),
    ] {
        assert_eq!(invalid_field(s.keys().create(&bad).unwrap_err()), flag);
    }
    assert!(s.keys().list().unwrap().is_empty(), "nothing refused was stored");
    s.keys().create(&spec("ana", "read")).unwrap();
    assert_eq!(invalid_field(s.keys().create(&spec("ana", "admin")).unwrap_err()), "--name");
    assert_eq!(s.keys().list().unwrap().len(), 1);
}

fn keys_are_audited_and_the_trail_verifies(db: &TestDb) {
    let s = open_at(db, "main");
    let stored = s
        .store_args(&serde_json::json!({"items": [crate::common::section("Before", "before the keys")]}))
        .unwrap();
    assert_eq!(stored.summary.inserted, 1);
    s.keys().create(&spec("ana", "read")).unwrap();
    s.keys().revoke(None, "ana").unwrap();
    let records = s.audit().records(None, None, 100).unwrap();
    let keys: Vec<(String, String)> = records
        .iter()
        .filter(|r| r.kind.as_deref() == Some("api_key"))
        .map(|r| (r.operation.clone(), r.summary.clone()))
        .collect();
    assert_eq!(keys.len(), 2, "{records:?}");
    assert_eq!(keys[0].0, "key_create");
    assert!(keys[0].1.contains("ana") && keys[0].1.contains("read"), "{}", keys[0].1);
    assert_eq!(keys[1], ("key_revoke".to_string(), "revoked API key ana".to_string()));
    assert!(records.iter().filter(|r| r.kind.as_deref() == Some("api_key")).all(|r| r.item_id.is_none()));
    let v = s.audit().verify(&VerifyOptions { full: true, anchor: None }).unwrap();
    assert!(v.ok, "{:?}", v.problems);
    assert_eq!(v.records_checked, 3);
}

fn rows_cannot_be_deleted_or_changed_but_by_revoking(db: &TestDb) {
    let s = open_at(db, "main");
    s.keys().create(&spec("ana", "read")).unwrap();
    for sql in [
        "DELETE FROM api_keys",
        "UPDATE api_keys SET role = 'admin'",
        "UPDATE api_keys SET expires_at = 5, revoked_at = 1",
    ] {
        let e = db.execute_raw(sql).expect_err(sql);
        assert!(e.contains("API key"), "{sql}: {e}");
    }
    s.keys().revoke(None, "ana").unwrap();
    let e = db.execute_raw("UPDATE api_keys SET revoked_at = revoked_at + 1").unwrap_err();
    assert!(e.contains("revoked, once"), "{e}");
    assert_eq!(s.keys().list().unwrap()[0].role, Role::Read);
}

fn a_key_holder_cannot_see_or_make_keys(db: &TestDb) {
    let s = open_at(db, "main");
    let created = s.keys().create(&spec("ana", "admin")).unwrap();
    let holder = s.keys().authenticate(&created.token).unwrap().unwrap();
    let under_key = s.for_caller(&Caller::for_key(holder.bound, None, None).unwrap());
    assert!(matches!(under_key.keys().list(), Err(ServiceError::AdminOnly(_))));
    assert!(matches!(under_key.keys().authenticate(&created.token), Err(ServiceError::AdminOnly(_))));
    assert!(matches!(under_key.keys().create(&spec("eve", "admin")), Err(ServiceError::AdminOnly(_))));
    assert!(matches!(under_key.keys().revoke(None, "ana"), Err(ServiceError::AdminOnly(_))));
    assert_eq!(s.keys().list().unwrap().len(), 1);
    assert_eq!(s.keys().list().unwrap()[0].state, "active");
}

fn a_store_refused_for_its_role_is_audited_on_the_items_it_named(db: &TestDb) {
    let s = open_at(db, "main");
    let stored = s
        .store_args(&serde_json::json!({"items": [
            crate::common::section("Inside", "a section of acme/api"),
            {"kind": "section", "scope": {"org": "globex", "project": "x"}, "data": {"title": "Outside", "body": "another org"}},
        ]}))
        .unwrap();
    let inside = stored.results[0].id.clone().unwrap();
    let outside = stored.results[1].id.clone().unwrap();
    let holder =
        s.keys().authenticate(&s.keys().create(&spec("reader", "read")).unwrap().token).unwrap().unwrap();
    let under_key = s.for_caller(&holder.caller(Some("api"), None).unwrap());
    let request = serde_json::json!({"items": [
        {"kind": "section", "id": inside, "data": {"title": "Inside", "body": "changed"}, "source": {"actor": "eve"}},
        {"operation": "delete", "id": outside},
        {"kind": "todo", "content": "a new item names no stored item"},
        {"operation": "delete", "id": "not-an-id"},
    ]});
    let request = cortex_domain::item::StoreRequest::from_json(&request).unwrap();
    let recorded = under_key.memory_store().audit_refused_store(&request, "refused: role read").unwrap();
    assert_eq!(recorded, 1, "one record for the call");
    let trail = |id: &str| s.audit().records(Some(uuid::Uuid::parse_str(id).unwrap()), None, 10).unwrap();
    let inside_trail = trail(&inside);
    assert_eq!(inside_trail.iter().map(|r| r.operation.as_str()).collect::<Vec<_>>(), ["insert", "blocked"]);
    let record = &inside_trail[1];
    assert_eq!(record.principal.as_deref(), Some("key:acme/reader"));
    assert!(
        record.claimed.is_empty(),
        "the refused items' own claims are not repeated: {:?}",
        record.claimed
    );
    assert_eq!(
        record.summary,
        format!(
            "refused: role read; 4 items: update section {inside}, delete an item out of reach, insert todo, an invalid item"
        )
    );
    assert!(!record.summary.contains(&outside), "nothing outside the bound is named");
    assert_eq!(trail(&outside).len(), 1, "nothing recorded outside the bound");
    let v = s.audit().verify(&VerifyOptions { full: true, anchor: None }).unwrap();
    assert!(v.ok, "{:?}", v.problems);
}

/// A read key sending 100 refused stores of 100 items each used to append
/// 10,000 audit rows; now each refused call is at most one short row, and past the key's
/// records of the minute only a count, carried by its next record.
fn a_read_keys_flood_of_refused_stores_adds_a_bounded_number_of_audit_rows(db: &TestDb) {
    let s = open_at(db, "main");
    let stored = s
        .store_args(&serde_json::json!({"items": [crate::common::section("Target", "what a reader tried to change")]}))
        .unwrap();
    let target = stored.results[0].id.clone().unwrap();
    let holder = s
        .keys()
        .authenticate(&s.keys().create(&spec("flooding-reader", "read")).unwrap().token)
        .unwrap()
        .unwrap();
    let under_key = s.for_caller(&holder.caller(Some("api"), None).unwrap());
    let rows = |s: &cortex_service::MemoryService| s.audit().records(None, None, 10_000).unwrap().len();
    let before = rows(&s);
    let items: Vec<serde_json::Value> = (0..100)
        .map(|i| match i {
            0 => serde_json::json!({"kind": "section", "id": target, "data": {"title": "Target", "body": "changed"}}),
            i => crate::common::section(&format!("Item {i}"), &"a long body ".repeat(200)),
        })
        .collect();
    let request =
        cortex_domain::item::StoreRequest::from_json(&serde_json::json!({ "items": items })).unwrap();
    let mut recorded = 0;
    for _ in 0..100 {
        recorded += under_key.memory_store().audit_refused_store(&request, "refused: role read").unwrap();
    }
    let added = rows(&s) - before;
    assert!(added <= 200, "100 refused 100-item stores added {added} audit rows");
    assert_eq!(added, recorded);
    assert!(recorded >= 1, "the refusals are in the trail");
    let records = s.audit().records(Some(uuid::Uuid::parse_str(&target).unwrap()), None, 1_000).unwrap();
    let blocked: Vec<_> = records.iter().filter(|r| r.operation == "blocked").collect();
    assert_eq!(blocked.len(), recorded);
    for record in &blocked {
        assert!(
            record.summary.starts_with("refused: role read; 100 items: update section "),
            "{}",
            record.summary
        );
        assert!(record.summary.ends_with(" and 90 more"), "{}", record.summary);
        assert!(record.summary.len() < 1_000, "a record stays short: {} bytes", record.summary.len());
    }
    let v = s.audit().verify(&VerifyOptions { full: true, anchor: None }).unwrap();
    assert!(v.ok, "{:?}", v.problems);
}

/// Two orgs may each have a key `ci`; "exists already" names only the org asked about, a
/// revocation reaches only the org's key, and a bound admin never reaches another org's key
/// of the same name.
fn names_are_unique_per_org_and_never_tell_of_another_org(db: &TestDb) {
    let s = open_at(db, "main");
    let in_org = |org: &str, name: &str| KeySpec { org: org.into(), projects: vec![], ..spec(name, "read") };
    let acme = s.keys().create(&in_org("acme", "ci")).unwrap();
    let globex = s.keys().create(&in_org("globex", "ci")).unwrap();
    assert_eq!((acme.key.org.as_str(), globex.key.org.as_str()), ("acme", "globex"));
    let ServiceError::Invalid(again) = s.keys().create(&in_org("globex", "ci")).unwrap_err() else {
        panic!()
    };
    assert_eq!(again.field, "--name");
    assert!(again.message.contains("globex") && !again.message.contains("acme"), "{}", again.message);

    // A bound admin of globex makes, sees and revokes globex's keys only.
    let admin = s.keys().create(&in_org("globex", "globex-admin")).unwrap();
    let bound = s.keys().authenticate(&admin.token).unwrap().unwrap().bound;
    let ServiceError::Invalid(taken) =
        s.keys().create_within(Some(&bound), &in_org("globex", "ci")).unwrap_err()
    else {
        panic!()
    };
    assert!(!taken.message.contains("acme"), "{}", taken.message);
    assert!(s.keys().list_within(Some(&bound)).unwrap().iter().all(|k| k.org == "globex"));
    let revoked = s.keys().revoke_within(Some(&bound), Some("acme"), "ci").unwrap();
    assert_eq!(
        (revoked.org.as_str(), revoked.state),
        ("globex", "revoked"),
        "the admin's own org, whatever the form says"
    );
    assert_eq!(s.keys().authenticate(&globex.token).unwrap(), Err(AuthFailure::Revoked));
    assert!(s.keys().authenticate(&acme.token).unwrap().is_ok(), "acme's ci is untouched");

    // The local user names the org when the name is several orgs'.
    s.keys().create(&in_org("initech", "ci")).unwrap();
    let ServiceError::Invalid(which) = s.keys().revoke(None, "ci").unwrap_err() else { panic!() };
    assert_eq!(which.field, "--org");
    assert_eq!(s.keys().revoke(Some("acme"), "ci").unwrap().org, "acme");
    assert_eq!(s.keys().authenticate(&acme.token).unwrap(), Err(AuthFailure::Revoked));
    assert_eq!(invalid_field(s.keys().revoke(Some("nowhere"), "ci").unwrap_err()), "name");
    assert_eq!(s.keys().list().unwrap().iter().filter(|k| k.name == "ci" && k.state == "active").count(), 1);
}

/// Refused stores are recorded a few a minute per actor; two orgs' keys of one name are two
/// actors, so one org's flood neither silences the other's record nor is told in it.
fn one_orgs_refused_stores_are_counted_apart_from_anothers_key_of_the_same_name(db: &TestDb) {
    let s = open_at(db, "main");
    let in_org = |org: &str| KeySpec { org: org.into(), projects: vec![], ..spec("reader", "read") };
    let caller = |org: &str| {
        let holder = s.keys().authenticate(&s.keys().create(&in_org(org)).unwrap().token).unwrap().unwrap();
        s.for_caller(&holder.caller(Some("api"), None).unwrap())
    };
    let (acme, globex) = (caller("acme"), caller("globex"));
    let request = serde_json::json!({"items": [crate::common::section("Nope", "refused")]});
    let request = cortex_domain::item::StoreRequest::from_json(&request).unwrap();
    for _ in 0..30 {
        acme.memory_store().audit_refused_store(&request, "refused: role read").unwrap();
    }
    assert_eq!(globex.memory_store().audit_refused_store(&request, "refused: role read").unwrap(), 1);
    let records = s.audit().records(None, None, 10_000).unwrap();
    let globex_record = records
        .iter()
        .find(|r| r.operation == "blocked" && r.scope.org.as_deref() == Some("globex"))
        .expect("globex's refusal is recorded");
    assert!(!globex_record.summary.contains("more refused"), "{}", globex_record.summary);
}
