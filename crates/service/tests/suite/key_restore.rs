//! Undoing a key's revocation on every backend: within the window the key is live again and
//! a `key_restore` record says so (the chain and the full key check verify); after it the
//! database itself refuses, whoever asks; a key that is not revoked has nothing to undo; a
//! revoked key's other columns stay fixed; and an admin bound to an org restores only its own.

use crate::common::open_at;
use cortex_domain::api_key::RESTORE_WINDOW_MS;
use cortex_service::ServiceError;
use cortex_service::audit::VerifyOptions;
use cortex_service::keys::{AuthFailure, KeySpec};
use cortex_testdb::{TestDb, per_backend};

per_backend!(
    a_key_restored_within_the_window_works_again_and_is_audited,
    a_revocation_older_than_the_window_is_never_undone,
    a_key_that_is_not_revoked_has_nothing_to_restore,
    a_revoked_keys_other_columns_stay_fixed_within_the_window,
    a_bound_admin_restores_only_its_own_orgs_keys,
);

fn spec(org: &str, name: &str) -> KeySpec {
    KeySpec {
        name: name.into(),
        org: org.into(),
        projects: vec!["api".into()],
        role: "write".into(),
        ..KeySpec::default()
    }
}

fn refusal(e: ServiceError) -> cortex_domain::ValidationError {
    match e {
        ServiceError::Invalid(v) => v,
        other => panic!("expected a refusal naming a field, got {other:?}"),
    }
}

fn now_ms() -> i64 {
    cortex_service::now_ms()
}

fn a_key_restored_within_the_window_works_again_and_is_audited(db: &TestDb) {
    let s = open_at(db, "main");
    // A second server over the same database: key lookups are not cached, so it sees each
    // change at its next request.
    let other = open_at(db, "main");
    let made = s.keys().create(&spec("acme", "ana")).unwrap();
    assert!(other.keys().authenticate(&made.token).unwrap().is_ok());
    let revoked = s.keys().revoke(None, "ana").unwrap();
    assert_eq!(s.keys().authenticate(&made.token).unwrap(), Err(AuthFailure::Revoked));
    assert_eq!(other.keys().authenticate(&made.token).unwrap(), Err(AuthFailure::Revoked));
    let until = revoked.restorable_until.expect("restorable for a while");
    let until = cortex_domain::time::parse_instant(&until).unwrap();
    let revoked_at = cortex_domain::time::parse_instant(revoked.revoked_at.as_deref().unwrap()).unwrap();
    assert_eq!(until - revoked_at, RESTORE_WINDOW_MS);
    assert!(s.keys().list().unwrap()[0].restorable_until.is_some(), "listed as restorable");

    let restored = s.keys().restore(None, "ana").unwrap();
    assert_eq!((restored.state, restored.revoked_at.as_deref()), ("active", None));
    let holder = s.keys().authenticate(&made.token).unwrap().expect("the key works again");
    assert!(other.keys().authenticate(&made.token).unwrap().is_ok(), "on the other server too");
    assert_eq!((holder.name.as_str(), holder.bound.org.as_str()), ("ana", "acme"));

    let records = s.audit().records(None, None, 100).unwrap();
    let keys: Vec<(&str, &str, Option<&str>)> = records
        .iter()
        .filter(|r| r.kind.as_deref() == Some("api_key"))
        .map(|r| (r.operation.as_str(), r.summary.as_str(), r.via.as_deref()))
        .collect();
    assert_eq!(keys.len(), 3, "{records:?}");
    assert_eq!(
        &keys[1..],
        [
            ("key_revoke", "revoked API key ana", Some("cortex keys")),
            ("key_restore", "restored API key ana", Some("cortex keys"))
        ]
    );
    let restore = records.iter().find(|r| r.operation == "key_restore").unwrap();
    assert!(restore.principal.is_some() && restore.item_id.is_none(), "{restore:?}");

    // Revoked, restored and revoked again: the trail tells each step and the key check agrees.
    s.keys().revoke(None, "ana").unwrap();
    for full in [false, true] {
        let v = s.audit().verify(&VerifyOptions { full, anchor: None }).unwrap();
        assert!(v.ok, "{:?}", v.problems);
        assert!(v.keys_without_trail.is_empty(), "{:?}", v.keys_without_trail);
    }
    s.keys().restore(Some("acme"), "ana").unwrap();
    let v = s.audit().verify(&VerifyOptions { full: true, anchor: None }).unwrap();
    assert!(v.ok && v.keys_without_trail.is_empty(), "{:?} {:?}", v.problems, v.keys_without_trail);
}

fn a_revocation_older_than_the_window_is_never_undone(db: &TestDb) {
    let s = open_at(db, "main");
    let made = s.keys().create(&spec("acme", "old")).unwrap();
    // Revoked eleven minutes ago: a revocation may carry any time, so SQL sets it in the past.
    let past = now_ms() - RESTORE_WINDOW_MS - 60_000;
    db.execute_raw(&format!("UPDATE api_keys SET revoked_at = {past} WHERE name = 'old'")).unwrap();

    let old = s.keys().list().unwrap().into_iter().find(|k| k.name == "old").unwrap();
    assert_eq!((old.state, old.restorable_until), ("revoked", None), "listed as past its window");
    let e = refusal(s.keys().restore(None, "old").unwrap_err());
    assert_eq!(e.field, "name");
    assert!(e.message.contains("more than 10 minutes ago"), "{}", e.message);
    assert!(
        e.human_hint.contains("cortex keys create --name <new name> --org acme --role write --project api"),
        "{}",
        e.human_hint
    );
    // The database refuses it too, whatever path asks.
    let e = db.execute_raw("UPDATE api_keys SET revoked_at = NULL WHERE name = 'old'").unwrap_err();
    assert!(e.contains("more than 10 minutes ago"), "{e}");
    assert_eq!(s.keys().authenticate(&made.token).unwrap(), Err(AuthFailure::Revoked));

    // A revocation stamped ahead of the clock, to stay restorable for a year, never is.
    s.keys().create(&spec("acme", "planted")).unwrap();
    let ahead = now_ms() + 365 * 24 * 3_600_000;
    db.execute_raw(&format!("UPDATE api_keys SET revoked_at = {ahead} WHERE name = 'planted'")).unwrap();
    assert!(refusal(s.keys().restore(None, "planted").unwrap_err()).message.contains("more than 10 minutes"));
    assert!(db.execute_raw("UPDATE api_keys SET revoked_at = NULL WHERE name = 'planted'").is_err());

    let restores = s.audit().records(None, None, 100).unwrap();
    assert!(restores.iter().all(|r| r.operation != "key_restore"), "{restores:?}");
    let listed = s.keys().list().unwrap();
    assert!(listed.iter().all(|k| k.state == "revoked"), "{listed:?}");
}

fn a_key_that_is_not_revoked_has_nothing_to_restore(db: &TestDb) {
    let s = open_at(db, "main");
    s.keys().create(&spec("acme", "live")).unwrap();
    let e = refusal(s.keys().restore(None, "live").unwrap_err());
    assert_eq!(e.field, "name");
    assert!(e.message.contains("is not revoked"), "{}", e.message);
    let e = refusal(s.keys().restore(None, "nobody").unwrap_err());
    assert_eq!((e.field.as_str(), e.code), ("name", cortex_domain::ErrorCode::NotFound));
    // Setting a live key's revoked_at to NULL is no change the guard lets through either.
    let e = db.execute_raw("UPDATE api_keys SET revoked_at = NULL").unwrap_err();
    assert!(e.contains("revoked, once"), "{e}");
    let records = s.audit().records(None, None, 100).unwrap();
    assert!(records.iter().all(|r| r.operation != "key_restore"), "{records:?}");
}

fn a_revoked_keys_other_columns_stay_fixed_within_the_window(db: &TestDb) {
    let s = open_at(db, "main");
    s.keys().create(&spec("acme", "ana")).unwrap();
    s.keys().revoke(None, "ana").unwrap();
    for sql in [
        "UPDATE api_keys SET role = 'admin', revoked_at = NULL",
        "UPDATE api_keys SET org = 'globex', revoked_at = NULL",
        "UPDATE api_keys SET expires_at = 5, revoked_at = NULL",
        "UPDATE api_keys SET revoked_at = revoked_at + 1",
        "UPDATE api_keys SET role = 'admin'",
        "DELETE FROM api_keys",
    ] {
        let e = db.execute_raw(sql).expect_err(sql);
        assert!(e.contains("API key"), "{sql}: {e}");
    }
    let key = &s.keys().list().unwrap()[0];
    assert_eq!(
        (key.state, key.org.as_str(), key.role),
        ("revoked", "acme", cortex_domain::api_key::Role::Write)
    );
    // The restore alone passes, by SQL as by the service, and is recorded all the same.
    assert_eq!(db.execute_raw("UPDATE api_keys SET revoked_at = NULL").unwrap(), 1);
    let records = s.audit().records(None, None, 100).unwrap();
    assert_eq!(records.last().map(|r| r.operation.as_str()), Some("key_restore"));
    let v = s.audit().verify(&VerifyOptions { full: true, anchor: None }).unwrap();
    assert!(v.ok && v.keys_without_trail.is_empty(), "{:?} {:?}", v.problems, v.keys_without_trail);
}

fn a_bound_admin_restores_only_its_own_orgs_keys(db: &TestDb) {
    let s = open_at(db, "main");
    let acme = s.keys().create(&spec("acme", "ci")).unwrap();
    s.keys().create(&spec("globex", "ci")).unwrap();
    let admin = s
        .keys()
        .create(&KeySpec { projects: vec![], role: "admin".into(), ..spec("globex", "boss") })
        .unwrap();
    let bound = s.keys().authenticate(&admin.token).unwrap().unwrap().bound;
    s.keys().revoke(Some("acme"), "ci").unwrap();
    s.keys().revoke(Some("globex"), "ci").unwrap();
    s.keys().create(&spec("acme", "theirs")).unwrap();
    s.keys().revoke(None, "theirs").unwrap();

    // Asked for acme's key, globex's admin reaches its own org's key of that name.
    let restored = s.keys().restore_within(Some(&bound), Some("acme"), "ci").unwrap();
    assert_eq!((restored.org.as_str(), restored.state), ("globex", "active"));
    assert_eq!(
        s.keys().authenticate(&acme.token).unwrap(),
        Err(AuthFailure::Revoked),
        "acme's stays revoked"
    );
    // A name only acme has is as unknown as one nobody has: nothing tells that it exists.
    let theirs = refusal(s.keys().restore_within(Some(&bound), Some("acme"), "theirs").unwrap_err());
    let nobody = refusal(s.keys().restore_within(Some(&bound), None, "nobody").unwrap_err());
    assert_eq!((theirs.code, theirs.field.as_str()), (nobody.code, nobody.field.as_str()));
    assert_eq!(theirs.code, cortex_domain::ErrorCode::NotFound);
    assert!(!theirs.message.contains("acme") && !theirs.human_hint.contains("acme"), "{theirs:?}");
    assert_eq!(theirs.message.replace("theirs", "X"), nobody.message.replace("nobody", "X"));
    let theirs_key = s.keys().list().unwrap().into_iter().find(|k| k.name == "theirs").unwrap();
    assert_eq!(theirs_key.state, "revoked");

    // An admin limited to acme's project api: a key of project web is as unknown as no key.
    let api_admin = s.keys().create(&KeySpec { role: "admin".into(), ..spec("acme", "api-admin") }).unwrap();
    let api_bound = s.keys().authenticate(&api_admin.token).unwrap().unwrap().bound;
    s.keys().create(&KeySpec { projects: vec!["web".into()], ..spec("acme", "web-bot") }).unwrap();
    s.keys().revoke(None, "web-bot").unwrap();
    let outside = refusal(s.keys().restore_within(Some(&api_bound), None, "web-bot").unwrap_err());
    let unknown = refusal(s.keys().restore_within(Some(&api_bound), None, "no-bot").unwrap_err());
    assert_eq!(
        (outside.code, outside.message.replace("web-bot", "X"), outside.human_hint),
        (unknown.code, unknown.message.replace("no-bot", "X"), unknown.human_hint)
    );
    let web_bot = s.keys().list().unwrap().into_iter().find(|k| k.name == "web-bot").unwrap();
    assert_eq!(web_bot.state, "revoked");
}
