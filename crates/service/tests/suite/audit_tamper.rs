//! The tamper suite: what someone with raw SQL on the database can try against the audit
//! trail, on every backend. Each attempt is either refused by the database or named by
//! `verify_audit` (what `cortex audit --verify` prints); and the limit of a hash chain without
//! a secret, recomputing it whole, is caught by an anchor kept elsewhere.

use crate::common::Tools;
use crate::common::{Memory, id_of, memory, section};
use cortex_service::audit::{AuditVerification, VerifyOptions};
use cortex_store::audit_chain::{ChainBreak, TrailMismatch};
use cortex_testdb::{Backend, TestDb, per_backend};
use serde_json::json;

per_backend!(
    an_untouched_trail_verifies_and_names_its_head,
    a_rewritten_record_is_named,
    a_removed_record_is_named,
    a_record_cannot_be_replaced_in_place,
    a_forged_record_cannot_enter_the_middle_of_the_chain,
    a_dropped_audit_trigger_and_the_change_it_hid_are_found,
    changes_made_around_the_trail_and_hidden_again_are_named_item_by_item,
    keys_changed_around_the_trail_are_named,
    a_recomputed_chain_passes_alone_but_not_against_an_anchor,
    the_change_log_leaves_verification_clean_and_its_triggers_are_watched,
);

/// Three sections stored, one updated, one deleted: six records.
fn history(db: &TestDb) -> (Memory, Vec<String>) {
    let m = memory(db, "main");
    let r = m.store(json!([
        section("One", "first body"),
        section("Two", "second body é"),
        section("Three", "third")
    ]));
    let ids: Vec<String> = (0..3).map(|i| id_of(&r, i)).collect();
    m.store(json!([{"kind": "section", "id": ids[0], "data": {"title": "One", "body": "first body, changed\nover two lines"}}]));
    m.store(json!([{"operation": "delete", "id": ids[1]}]));
    (m, ids)
}

fn verify(m: &Memory, full: bool) -> AuditVerification {
    m.service.audit().verify(&VerifyOptions { full, anchor: None }).unwrap()
}

/// Runs raw SQL as another process would, failing the test if the database refuses it.
fn raw(db: &TestDb, sql: &str) {
    db.execute_raw(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
}

fn refused(db: &TestDb, sql: &str) -> String {
    match db.execute_raw(sql) {
        Ok(n) => panic!("the database accepted {sql} ({n} rows)"),
        Err(e) => e,
    }
}

/// Lifts the guard that refuses UPDATE and DELETE on audit_log.
fn lift_append_only_guard(db: &TestDb) {
    match db.backend() {
        Backend::Sqlite => {
            raw(db, "DROP TRIGGER audit_log_no_update");
            raw(db, "DROP TRIGGER audit_log_no_delete");
        }
        Backend::Postgres => raw(db, "ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only"),
    }
}

fn an_untouched_trail_verifies_and_names_its_head(db: &TestDb) {
    let (m, _) = history(db);
    for full in [false, true] {
        let v = verify(&m, full);
        assert!(v.ok, "{:?}", v.problems);
        assert_eq!(v.records_checked, 5, "3 inserts, 1 update, 1 delete");
        let head = v.head.unwrap();
        assert_eq!(head.seq, 5);
        assert_eq!(head.hash.len(), 64);
    }
}

fn a_rewritten_record_is_named(db: &TestDb) {
    let (m, _) = history(db);
    lift_append_only_guard(db);
    raw(db, "UPDATE audit_log SET summary = 'inserted nothing' WHERE seq = 2");
    let v = verify(&m, true);
    assert!(!v.ok);
    assert_eq!(v.first_break, Some(ChainBreak::Rewritten { seq: 2 }), "{:?}", v.problems);
    assert!(!v.schema_drift.is_empty(), "the lifted guard is reported too");
    assert!(
        v.problems.iter().any(|p| p.contains("audit record 2 does not match its hash")),
        "{:?}",
        v.problems
    );
}

fn a_removed_record_is_named(db: &TestDb) {
    let (m, _) = history(db);
    lift_append_only_guard(db);
    raw(db, "DELETE FROM audit_log WHERE seq = 3");
    let v = verify(&m, true);
    assert_eq!(v.first_break, Some(ChainBreak::Broken { seq: 4, after: Some(2) }), "{:?}", v.problems);
}

fn a_record_cannot_be_replaced_in_place(db: &TestDb) {
    let (m, _) = history(db);
    let before = db.open().audit_record(1).unwrap().unwrap();
    match db.backend() {
        // REPLACE deletes the old row without firing a DELETE trigger.
        Backend::Sqlite => {
            let e = refused(
                db,
                "INSERT OR REPLACE INTO audit_log (seq, at, operation, summary, prev_hash, hash) \
                 VALUES (1, 0, 'insert', 'forged', '', '')",
            );
            assert!(e.contains("append-only and chained"), "{e}");
        }
        // The chain trigger numbers every insert itself: the row lands at the end, and the
        // record it aimed at stays as it was.
        Backend::Postgres => raw(
            db,
            "INSERT INTO audit_log (seq, at, operation, summary) VALUES (1, 0, 'insert', 'forged') \
             ON CONFLICT (seq) DO UPDATE SET summary = 'forged'",
        ),
    }
    assert_eq!(db.open().audit_record(1).unwrap().unwrap(), before);
    let v = verify(&m, true);
    assert!(v.first_break.is_none(), "{:?}", v.problems);
}

fn a_forged_record_cannot_enter_the_middle_of_the_chain(db: &TestDb) {
    let (m, _) = history(db);
    match db.backend() {
        Backend::Sqlite => {
            for sql in [
                // A hash that does not follow the chain, at the next seq.
                "INSERT INTO audit_log (seq, at, operation, summary, prev_hash, hash) VALUES (6, 0, 'insert', 'forged', 'x', 'y')",
                // No hash at all.
                "INSERT INTO audit_log (at, operation, summary) VALUES (0, 'insert', 'forged')",
                // A seq past the end.
                "INSERT INTO audit_log (seq, at, operation, summary, prev_hash, hash) VALUES (60, 0, 'insert', 'forged', 'x', 'y')",
            ] {
                let e = refused(db, sql);
                assert!(e.contains("append-only and chained"), "{sql}: {e}");
            }
        }
        Backend::Postgres => {
            // Whatever seq and hashes it names, an insert becomes the next link.
            raw(
                db,
                "INSERT INTO audit_log (seq, at, operation, summary, prev_hash, hash) VALUES (3, 0, 'insert', 'forged', 'x', 'y')",
            );
            let forged = db.open().audit_record(6).unwrap().unwrap();
            assert_eq!(forged.summary, "forged");
        }
    }
    // Nothing entered between records 1..=5, which still verify.
    let v = verify(&m, true);
    assert!(v.ok, "{:?}", v.problems);
}

fn a_dropped_audit_trigger_and_the_change_it_hid_are_found(db: &TestDb) {
    let (m, ids) = history(db);
    let drop = match db.backend() {
        Backend::Sqlite => "DROP TRIGGER items_audit_update",
        Backend::Postgres => "DROP TRIGGER items_audit_update ON items",
    };
    raw(db, drop);
    raw(
        db,
        &format!(
            "UPDATE items SET body = 'rewritten quietly', content_hash = 'other' WHERE id = '{}'",
            ids[2]
        ),
    );
    let quick = verify(&m, false);
    assert!(!quick.ok);
    assert!(
        quick.schema_drift.iter().any(|d| d.object.contains("items_audit_update") && d.change == "missing"),
        "{:?}",
        quick.schema_drift
    );
    let full = verify(&m, true);
    assert!(
        full.items_without_trail
            .iter()
            .any(|t| matches!(t, TrailMismatch::ChangedWithoutRecord { item_id, .. } if *item_id == ids[2])),
        "{:?}",
        full.items_without_trail
    );
}

/// Runs `sql` with the triggers that guard and audit its table out of the way and puts them
/// back, as someone with the database's file or its owner's role can: SQLite's triggers
/// dropped and created again from their own text, PostgreSQL's `session_replication_role =
/// replica`. The schema then verifies clean; only the rows themselves can show the change.
fn around_the_trail(db: &TestDb, sql: &str) {
    match db.backend() {
        Backend::Sqlite => {
            let conn = rusqlite::Connection::open(db.sqlite_path().unwrap()).unwrap();
            let mut triggers = Vec::new();
            for name in [
                "items_audit_update",
                "api_keys_revoke_only",
                "api_keys_restore_window",
                "api_keys_audit_create",
                "api_keys_audit_revocation",
            ] {
                let sql: String = conn
                    .query_row("SELECT sql FROM sqlite_schema WHERE name = ?1", [name], |r| r.get(0))
                    .unwrap();
                raw(db, &format!("DROP TRIGGER {name}"));
                triggers.push(sql);
            }
            raw(db, sql);
            for trigger in triggers {
                raw(db, &trigger);
            }
        }
        Backend::Postgres => raw(
            db,
            &format!(
                "DO $$ BEGIN PERFORM set_config('session_replication_role', 'replica', true); {sql}; END $$"
            ),
        ),
    }
}

/// Keys are the tenant boundary: a key raised to admin, moved to another org or to every
/// project, revived after its revocation, or planted, all with the guards lifted and put back,
/// contradicts the key's own records.
fn keys_changed_around_the_trail_are_named(db: &TestDb) {
    let m = memory(db, "main");
    let s = &m.service;
    let spec = |name: &str, role: &str| cortex_service::keys::KeySpec {
        name: name.into(),
        org: "acme".into(),
        projects: vec!["api".into()],
        role: role.into(),
        ..Default::default()
    };
    for name in ["raised", "moved", "widened", "revived"] {
        s.keys().create(&spec(name, "read")).unwrap();
    }
    s.keys().revoke(None, "revived").unwrap();
    assert!(verify(&m, true).ok, "{:?}", verify(&m, true).problems);
    let (everywhere, planted_projects) = match db.backend() {
        Backend::Sqlite => ("'[]'", "'[]'"),
        Backend::Postgres => ("'{}'", "'{}'"),
    };
    around_the_trail(db, "UPDATE api_keys SET role = 'admin' WHERE name = 'raised'");
    around_the_trail(db, "UPDATE api_keys SET org = 'evil' WHERE name = 'moved'");
    around_the_trail(db, &format!("UPDATE api_keys SET projects = {everywhere} WHERE name = 'widened'"));
    around_the_trail(db, "UPDATE api_keys SET revoked_at = NULL WHERE name = 'revived'");
    around_the_trail(
        db,
        &format!(
            "INSERT INTO api_keys (name, lookup, secret_hash, org, projects, role, created_at) \
             VALUES ('planted', 'plantedlookup', 'x', 'acme', {planted_projects}, 'admin', 0)"
        ),
    );
    let v = verify(&m, true);
    assert!(v.schema_drift.is_empty(), "the guards are back: {:?}", v.schema_drift);
    assert!(!v.ok);
    let shown: Vec<String> = v.keys_without_trail.iter().map(|k| format!("{k:?}")).collect();
    for (name, what) in [
        ("raised", "role"),
        ("moved", "org"),
        ("widened", "projects"),
        ("revived", "RevivedWithoutRecord"),
        ("planted", "NoRecord"),
    ] {
        assert!(
            shown.iter().any(|k| k.contains(&format!("\"{name}\"")) && k.contains(what)),
            "{name}: {shown:?}"
        );
    }
}

/// Each change someone could make to an item around the trail, leaving its content hash (the
/// one column the trail's records hold) as it was: named, item by item, with the trigger back
/// in place so the schema itself verifies clean.
fn changes_made_around_the_trail_and_hidden_again_are_named_item_by_item(db: &TestDb) {
    let (m, ids) = history(db);
    let decision = m.store(json!([{"kind": "decision", "data": {"title": "Sessions in Postgres",
        "component": "auth", "status": "accepted", "rationale": "one store to run"}}]));
    let decision = id_of(&decision, 0);
    let four = id_of(&m.store(json!([section("Four", "fourth body")])), 0);
    let [one, two, three] = [&ids[0], &ids[1], &ids[2]];
    assert!(verify(&m, true).ok);
    let rationale = match db.backend() {
        Backend::Sqlite => "json_set(data, '$.rationale', 'it was cheaper')",
        Backend::Postgres => "jsonb_set(data, '{rationale}', '\"it was cheaper\"')",
    };
    around_the_trail(db, &format!("UPDATE items SET body = 'rewritten quietly' WHERE id = '{one}'"));
    around_the_trail(db, &format!("UPDATE items SET org = 'evil' WHERE id = '{three}'"));
    around_the_trail(db, &format!("UPDATE items SET data = {rationale} WHERE id = '{decision}'"));
    around_the_trail(db, &format!("UPDATE items SET deleted_at = NULL WHERE id = '{two}'"));
    around_the_trail(db, &format!("UPDATE items SET deleted_at = 1 WHERE id = '{four}'"));
    let v = verify(&m, true);
    assert!(v.schema_drift.is_empty(), "the trigger is back: {:?}", v.schema_drift);
    assert!(!v.ok);
    let named = |id: &str| v.items_without_trail.iter().find(|t| format!("{t:?}").contains(id)).cloned();
    assert!(
        matches!(named(one), Some(TrailMismatch::Inconsistent { field, .. }) if field == "title or body"),
        "{:?}",
        v.items_without_trail
    );
    assert!(
        matches!(named(three), Some(TrailMismatch::MovedWithoutRecord { found, .. }) if found.starts_with("evil/")),
        "{:?}",
        v.items_without_trail
    );
    assert!(
        matches!(named(&decision), Some(TrailMismatch::Inconsistent { field, .. }) if field == "data"),
        "{:?}",
        v.items_without_trail
    );
    assert!(
        matches!(named(two), Some(TrailMismatch::RestoredWithoutRecord { .. })),
        "{:?}",
        v.items_without_trail
    );
    assert!(
        matches!(named(&four), Some(TrailMismatch::DeletedWithoutRecord { .. })),
        "{:?}",
        v.items_without_trail
    );
    assert!(v.problems.iter().any(|p| p.contains(&decision) && p.contains("its data")), "{:?}", v.problems);
}

/// The limit of a chain without a secret: whoever can write the database can recompute every
/// hash after a rewrite. The chain then verifies; a head anchored before the rewrite does not.
fn a_recomputed_chain_passes_alone_but_not_against_an_anchor(db: &TestDb) {
    let (m, _) = history(db);
    let head = verify(&m, true).head.unwrap();
    lift_append_only_guard(db);
    raw(db, "UPDATE audit_log SET summary = 'inserted nothing' WHERE seq = 1");
    match db.backend() {
        Backend::Sqlite => raw(
            db,
            "WITH RECURSIVE chain (seq, prev_hash, hash) AS (
                 SELECT 0, NULL, '0000000000000000000000000000000000000000000000000000000000000000'
                 UNION ALL
                 SELECT a.seq, c.hash, cortex_audit_hash_v2(c.hash, a.seq, a.at, a.operation, a.item_id, a.kind,
                        a.org, a.project, a.branch, a.service, a.sprint, a.tenant, a.environment, a.actor,
                        a.tool, a.session, a.request_id, a.batch_id, a.hash_before, a.hash_after, a.summary,
                        a.principal, a.via)
                 FROM chain c JOIN audit_log a ON a.seq = c.seq + 1)
             UPDATE audit_log SET prev_hash = chain.prev_hash, hash = chain.hash FROM chain WHERE chain.seq = audit_log.seq",
        ),
        Backend::Postgres => raw(
            db,
            "DO $$ DECLARE r audit_log; prev text := repeat('0', 64); BEGIN
                 FOR r IN SELECT * FROM audit_log ORDER BY seq LOOP
                     UPDATE audit_log SET prev_hash = prev, hash = audit_record_hash_v2(prev, r) WHERE seq = r.seq;
                     prev := audit_record_hash_v2(prev, r);
                 END LOOP; END $$",
        ),
    }
    // Put the guard back, as a careful attacker would.
    match db.backend() {
        Backend::Sqlite => {
            raw(
                db,
                "CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log\nBEGIN\n    SELECT RAISE(ABORT, 'audit records are append-only: UPDATE on audit_log is not allowed');\nEND",
            );
            raw(
                db,
                "CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log\nBEGIN\n    SELECT RAISE(ABORT, 'audit records are append-only: DELETE on audit_log is not allowed');\nEND",
            );
        }
        Backend::Postgres => raw(db, "ALTER TABLE audit_log ENABLE TRIGGER audit_log_append_only"),
    }
    let alone = verify(&m, true);
    assert!(alone.ok, "a consistent recomputed chain verifies on its own: {:?}", alone.problems);
    let anchored = m
        .service
        .audit()
        .verify(&VerifyOptions { full: true, anchor: Some((head.seq, head.hash.clone())) })
        .unwrap();
    assert!(!anchored.ok);
    assert!(
        anchored.problems.iter().any(|p| p.contains(&format!("record {} carries", head.seq))),
        "{:?}",
        anchored.problems
    );
}

#[test]
fn sqlite_refuses_to_lose_its_audit_context() {
    let db = TestDb::sqlite();
    let (m, _) = history(&db);
    let e = refused(&db, "DELETE FROM audit_context");
    assert!(e.contains("cannot be deleted"), "{e}");
    // Even with its guard dropped, losing the context stops item changes instead of letting
    // them through unaudited.
    raw(&db, "DROP TRIGGER audit_context_no_delete");
    raw(&db, "DELETE FROM audit_context");
    let e = refused(&db, "UPDATE items SET body = 'unaudited', content_hash = 'x'");
    assert!(e.contains("audit_context is missing"), "{e}");
    let stored = m.service.store_args(&json!({"items": [section("Four", "fourth")]}));
    assert!(stored.is_err(), "a store without an audit context fails");
    let v = verify(&m, false);
    assert!(
        v.schema_drift.iter().any(|d| d.object.contains("audit_context_no_delete")),
        "{:?}",
        v.schema_drift
    );
}

#[test]
fn sqlite_items_cannot_be_changed_by_a_tool_without_the_chain_function() {
    // The sqlite3 shell, or any program that is not Cortex, lacks `cortex_audit_hash`: its
    // item changes fail rather than go unaudited.
    let db = TestDb::sqlite();
    let (_m, _) = history(&db);
    let conn = rusqlite::Connection::open(db.sqlite_path().unwrap()).unwrap();
    let e = conn.execute("UPDATE items SET body = 'outside'", []).unwrap_err().to_string();
    assert!(e.contains("cortex_audit_hash"), "{e}");
}

/// The change log's tables and triggers are part of the schema the
/// verifier compares (a healthy store verifies clean), and a dropped change-log trigger, which
/// would leave running servers' indexes stale, is named like an audit trigger.
fn the_change_log_leaves_verification_clean_and_its_triggers_are_watched(db: &TestDb) {
    let (m, _) = history(db);
    assert_eq!(m.service.lifecycle().purge(false).unwrap().purged, 0);
    for full in [false, true] {
        let v = verify(&m, full);
        assert!(v.ok, "{:?}", v.problems);
        assert_eq!(v.records_checked, 5, "the change log adds no audit record");
    }
    let drop = match db.backend() {
        Backend::Sqlite => "DROP TRIGGER item_vectors_change_insert",
        Backend::Postgres => "DROP TRIGGER item_chunks_change_insert ON item_chunks",
    };
    raw(db, drop);
    let v = verify(&m, false);
    assert!(
        v.schema_drift.iter().any(|d| d.object.contains("_change_insert") && d.change == "missing"),
        "{:?}",
        v.schema_drift
    );
}
