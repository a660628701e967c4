//! Governance and lifecycle through `MemoryService`, on each backend: accepted decisions stay
//! as accepted, supersede chains, natural keys, lifetimes and purge, and the audit trail that
//! records every one of them.

use crate::common::Tools;
use crate::common::{DAY_MS, Lcg, days_ago, id_of, memory, section};
use cortex_service::response::ItemStatus;
use cortex_testdb::{TestDb, per_backend};
use serde_json::{Value, json};

per_backend!(
    an_accepted_decision_keeps_its_rationale_and_the_attempt_is_audited,
    an_accepted_decision_stays_accepted_whatever_its_status_goes_through,
    a_decision_accepted_by_import_stays_accepted,
    a_superseded_decision_leaves_finds_and_points_to_its_successor,
    expired_items_hide_stay_listable_and_purge_removes_them_with_audit,
    each_kind_gets_its_lifetime_and_stale_runbooks_are_flagged,
    ttl_sets_an_expiry,
    an_issue_stored_again_updates_the_same_item,
    a_pull_request_is_its_number,
    a_migration_never_changes_once_stored,
    a_change_is_its_subject_and_summary,
    an_approved_section_is_locked_until_a_new_version_supersedes_it,
    every_mutation_and_refusal_leaves_exactly_one_unchanging_audit_record,
);

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
    assert_eq!(m.operations(&id), ["insert", "blocked", "update"]);
    let history = m.service.audit().records(Some(uuid), None, 100).unwrap();
    assert_eq!(history[1].claimed.actor.as_deref(), Some("eve"), "what the edit claimed, kept as its claim");
    assert!(
        history[1].principal.as_deref().is_some_and(|p| p.starts_with("local")),
        "{:?}",
        history[1].principal
    );
    assert!(history[1].summary.contains("cannot change"), "{}", history[1].summary);
    assert!(history[1].batch_id.is_some());
}

/// The status flip: `proposed`, the edit, `accepted` again — refused at the edit, in three
/// requests or in one, and the decision keeps its rationale.
fn an_accepted_decision_stays_accepted_whatever_its_status_goes_through(db: &TestDb) {
    let m = memory(db, "main");
    let adr = |status: &str, rationale: &str| {
        json!({"component": "queue", "status": status, "title": "Jobs on the database queue",
               "rationale": rationale})
    };
    let id = id_of(&m.store(json!([{"kind": "decision", "data": adr("accepted", "one system to run")}])), 0);
    let back = m.store(json!([{"kind": "decision", "id": id, "data": adr("proposed", "one system to run")}]));
    assert_eq!(back.results[0].status, ItemStatus::Updated, "its status may move");
    let edit = m.store(json!([{"kind": "decision", "id": id, "data": adr("proposed", "Kafka after all")}]));
    assert_eq!(edit.results[0].status, ItemStatus::BusinessRuleBlocked, "{:?}", edit.results[0]);
    let error = edit.results[0].error.as_ref().unwrap();
    assert_eq!(error.field, "items[0].data.rationale");
    assert!(error.message.contains("was accepted on"), "{}", error.message);
    let again =
        m.store(json!([{"kind": "decision", "id": id, "data": adr("accepted", "one system to run")}]));
    assert_eq!(again.results[0].status, ItemStatus::Updated);

    // All three in one request: the edit is judged against the stored, once-accepted item.
    let batch = m.store(json!([
        {"kind": "decision", "id": id, "data": adr("proposed", "one system to run")},
        {"kind": "decision", "id": id, "data": adr("proposed", "Kafka after all")},
        {"kind": "decision", "id": id, "data": adr("accepted", "Kafka after all")},
    ]));
    assert_eq!(batch.results[1].status, ItemStatus::BusinessRuleBlocked);
    assert_eq!(batch.results[2].status, ItemStatus::BusinessRuleBlocked);
    let stored = m.find(json!({"ids": [id]})).hits.remove(0);
    assert_eq!(stored.data.as_ref().unwrap()["rationale"], "one system to run");
    assert_eq!(m.operations(&id), ["insert", "update", "blocked", "update", "update", "blocked", "blocked"]);

    // A proposal never accepted is still free to edit.
    let draft = id_of(&m.store(json!([{"kind": "decision", "data": adr("proposed", "a first idea")}])), 0);
    let edited =
        m.store(json!([{"kind": "decision", "id": draft, "data": adr("proposed", "a better idea")}]));
    assert_eq!(edited.results[0].status, ItemStatus::Updated);
}

/// An export carries when a decision was accepted: imported elsewhere after its status moved
/// on, it is still governed there.
fn a_decision_accepted_by_import_stays_accepted(db: &TestDb) {
    let m = memory(db, "main");
    let adr = |status: &str, rationale: &str| json!({"component": "cache", "status": status, "title": "Cache in process", "rationale": rationale});
    let id = id_of(&m.store(json!([{"kind": "decision", "data": adr("accepted", "no network hop")}])), 0);
    m.store(json!([{"kind": "decision", "id": id, "data": adr("proposed", "no network hop")}]));
    let lines = m.service.transfer().export_page(None, 100).unwrap();
    let other = TestDb::new(db.backend());
    let there = crate::common::open_at(&other, "main");
    there.transfer().import_batch(lines).unwrap();
    let edit = there
        .store_args(
            &json!({"items": [{"kind": "decision", "id": id, "data": adr("proposed", "a shared cache")}]}),
        )
        .unwrap();
    assert_eq!(edit.results[0].status, ItemStatus::BusinessRuleBlocked, "{:?}", edit.results[0]);
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
    let all = m.find(json!({"query": "sessions", "include_superseded": true, "detail": "full"}));
    let former = all.hits.iter().find(|h| h.id.to_string() == old).expect("asked for, it comes back");
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

    assert_eq!(m.operations(&old), ["insert", "supersede"]);
    let history = m.service.audit().records(Some(uuid::Uuid::parse_str(&old).unwrap()), None, 10).unwrap();
    assert_eq!(history[1].summary, format!("superseded by {new}"));
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

    let dry = m.service.lifecycle().purge(true).unwrap();
    assert_eq!((dry.dry_run, dry.purged), (true, 1));
    assert_eq!((dry.by_kind[0].kind.as_str(), dry.by_kind[0].items), ("pr_context", 1));
    assert_eq!(
        m.ids(json!({"query": "zeppelin", "mode": "fast", "include_expired": true})).len(),
        2,
        "dry run keeps"
    );

    let done = m.service.lifecycle().purge(false).unwrap();
    assert_eq!((done.dry_run, done.purged), (false, 1));
    assert_eq!(m.ids(json!({"query": "zeppelin", "mode": "fast", "include_expired": true})), vec![live]);
    assert!(m.find(json!({"ids": [gone]})).hits.is_empty(), "removed for good");
    assert_eq!(m.operations(&gone), ["insert", "purge"]);
    let history = m.service.audit().records(Some(uuid::Uuid::parse_str(&gone).unwrap()), None, 10).unwrap();
    assert_eq!(history[1].via.as_deref(), Some("purge"));
    assert_eq!(m.service.lifecycle().purge(false).unwrap().purged, 0, "nothing left to purge");
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
    let hit = &m.find(json!({"query": "wombat", "detail": "full"})).hits[0];
    assert!(hit.expires_at.is_some());
}

fn issue(external_id: &str, title: &str, status: &str) -> Value {
    json!({"kind": "issue", "data": {"tracker": "Jira", "external_id": external_id, "title": title,
        "status": status}})
}

fn an_issue_stored_again_updates_the_same_item(db: &TestDb) {
    let m = memory(db, "main");
    let first = m.store(json!([issue("OPS-7", "Login fails on Safari", "open")]));
    let id = id_of(&first, 0);
    let again = m.store(json!([
        issue("OPS-7", "Login fails on Safari 17", "in_progress"),
        issue("OPS-8", "Another issue", "open"),
    ]));
    assert_eq!(again.results[0].status, ItemStatus::Updated);
    assert_eq!(id_of(&again, 0), id, "same tracker + external_id: same item");
    assert!(again.results[0].reason.as_deref().unwrap_or("").contains("external_id"));
    assert_eq!(again.results[1].status, ItemStatus::Inserted);
    let stored = m.find(json!({"ids": [id]})).hits.remove(0);
    assert_eq!(stored.data.as_ref().unwrap()["status"], "in_progress");
    assert_eq!(stored.title, "Login fails on Safari 17");

    // Within one batch too, and whatever the branch: the key is the project's.
    let other_branch = memory(db, "feature-x");
    let batch = other_branch
        .store(json!([issue("OPS-9", "Flaky test", "open"), issue("OPS-9", "Flaky test", "closed")]));
    assert_eq!(
        (batch.results[0].status, batch.results[1].status),
        (ItemStatus::Inserted, ItemStatus::Updated)
    );
    assert_eq!(id_of(&batch, 0), id_of(&batch, 1));
    let on_main = m.store(json!([issue("OPS-9", "Flaky test", "resolved")]));
    assert_eq!(id_of(&on_main, 0), id_of(&batch, 0));
    assert_eq!(m.operations(&id), ["insert", "update"]);
}

fn a_pull_request_is_its_number(db: &TestDb) {
    let m = memory(db, "main");
    let pr = |status: &str| {
        json!({"kind": "pr_context", "data": {"pr_number": 311, "title": "Cache warmer", "status": status,
            "base_branch": "main", "head_branch": "cache-warmer"}})
    };
    let id = id_of(&m.store(json!([pr("open")])), 0);
    let merged = m.store(json!([pr("merged")]));
    assert_eq!((merged.results[0].status, id_of(&merged, 0)), (ItemStatus::Updated, id));
}

fn ddl(migration_id: &str, text: &str) -> Value {
    json!({"kind": "ddl", "data": {"migration_id": migration_id, "ddl_text": text}})
}

fn a_migration_never_changes_once_stored(db: &TestDb) {
    let m = memory(db, "main");
    let first = m.store(json!([ddl("0007_users", "CREATE TABLE users (id bigint)")]));
    let id = id_of(&first, 0);
    let stored = m.find(json!({"ids": [id]})).hits.remove(0);
    let checksum = stored.data.as_ref().unwrap()["checksum"].as_str().unwrap().to_string();
    assert_eq!(checksum.len(), 64, "the server computes the SHA-256");

    let same = m.store(json!([ddl("0007_users", "CREATE TABLE users (id bigint)")]));
    assert_eq!((same.results[0].status, id_of(&same, 0)), (ItemStatus::SkippedDedupe, id.clone()));

    let changed = m.store(json!([ddl("0007_users", "CREATE TABLE users (id uuid)")]));
    assert_eq!(changed.results[0].status, ItemStatus::BusinessRuleBlocked);
    let error = changed.results[0].error.as_ref().unwrap();
    assert_eq!(
        (error.code.as_str(), error.field.as_str()),
        ("business_rule_blocked", "items[0].data.ddl_text")
    );
    assert!(error.human_hint.contains("new migration"), "{}", error.human_hint);
    let kept = m.find(json!({"ids": [id]})).hits.remove(0);
    assert_eq!(kept.data.as_ref().unwrap()["ddl_text"], "CREATE TABLE users (id bigint)");

    let wrong_sum = m.store(json!([{"kind": "ddl", "data": {"migration_id": "0008", "ddl_text": "SELECT 1",
        "checksum": "0000"}}]));
    assert_eq!(wrong_sum.results[0].error.as_ref().unwrap().field, "items[0].data.checksum");

    assert_eq!(m.operations(&id), ["insert", "blocked"]);
}

fn a_change_is_its_subject_and_summary(db: &TestDb) {
    let m = memory(db, "main");
    let change = |summary: &str| {
        json!({"kind": "change", "data": {"change_type": "feature", "subject_ref": "billing-api",
            "summary": summary}, "content": format!("details written differently each time {}", uuid::Uuid::now_v7())})
    };
    let id = id_of(&m.store(json!([change("Add invoice export")])), 0);
    let again = m.store(json!([change("Add invoice export"), change("Add invoice import")]));
    assert_eq!((again.results[0].status, id_of(&again, 0)), (ItemStatus::SkippedDedupe, id));
    assert!(again.results[0].reason.as_deref().unwrap_or("").contains("subject_ref"));
    assert_eq!(again.results[1].status, ItemStatus::Inserted);
}

fn an_approved_section_is_locked_until_a_new_version_supersedes_it(db: &TestDb) {
    let m = memory(db, "main");
    let approved = |body: &str| {
        json!({"kind": "section", "data": {"title": "Log retention", "body": body, "status": "approved",
            "document": "Data policy"}})
    };
    let id = id_of(&m.store(json!([approved("Keep request logs 30 days")])), 0);
    let edit = m.store(json!([{"kind": "section", "id": id,
        "data": {"title": "Log retention", "body": "Keep request logs 60 days", "status": "approved",
                 "document": "Data policy"}}]));
    assert_eq!(edit.results[0].status, ItemStatus::BusinessRuleBlocked);
    let error = edit.results[0].error.as_ref().unwrap();
    assert_eq!((error.code.as_str(), error.field.as_str()), ("business_rule_blocked", "items[0].data"));
    assert!(error.human_hint.contains(&format!("\"supersedes\": \"{id}\"")), "{}", error.human_hint);
    let delete = m.store(json!([{"operation": "delete", "id": id}]));
    assert_eq!(delete.results[0].status, ItemStatus::BusinessRuleBlocked);
    assert_eq!(delete.results[0].error.as_ref().unwrap().field, "items[0].id");
    assert_eq!(m.ids(json!({"query": "retention"})), vec![id.clone()], "still there, unchanged");

    // A new version, for any kind, through the item-level `supersedes`.
    let mut next = approved("Keep request logs 60 days");
    next["supersedes"] = json!(id);
    let r = m.store(json!([next]));
    assert_eq!(r.results[0].status, ItemStatus::Inserted);
    let new = id_of(&r, 0);
    assert_eq!(m.ids(json!({"query": "retention"})), vec![new.clone()]);
    let old = m.find(json!({"ids": [id]})).hits.remove(0);
    assert_eq!(old.superseded_by.as_deref(), Some(new.as_str()));

    let mut bad = approved("Keep them forever");
    bad["supersedes"] = json!("not-an-id");
    assert_eq!(m.store(json!([bad])).results[0].error.as_ref().unwrap().field, "items[0].supersedes");
    let mut twice = approved("Keep them a year");
    twice["supersedes"] = json!(id);
    let again = m.store(json!([twice]));
    let error = again.results[0].error.as_ref().unwrap();
    assert_eq!(error.field, "items[0].supersedes");
    assert!(error.message.contains("already superseded"), "{}", error.message);

    assert_eq!(m.operations(&id), ["insert", "blocked", "blocked", "supersede"]);
}

/// Property: over a random sequence of stores, updates, deletes, supersedes, refused edits
/// and purges, the audit trail holds exactly one record per mutation and per blocked attempt,
/// and no record, once written, ever changes.
fn every_mutation_and_refusal_leaves_exactly_one_unchanging_audit_record(db: &TestDb) {
    let m = memory(db, "main");
    let mut rng = Lcg(0xa0d17);
    let words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"];
    let mut todos: Vec<String> = Vec::new();
    let mut decisions: Vec<String> = Vec::new();
    let mut expected = 0usize;
    let mut seen: Vec<cortex_store::AuditRecord> = Vec::new();
    for step in 0..120 {
        let text = format!("{} {}", words[rng.below(words.len())], words[rng.below(words.len())]);
        let pick = |rng: &mut Lcg, ids: &[String]| ids.get(rng.below(ids.len().max(1))).cloned();
        let request = match rng.below(8) {
            0 | 1 => {
                let mut todo = json!({"kind": "todo", "content": format!("todo {text}")});
                if rng.below(3) == 0 {
                    todo["expires_at"] = json!(days_ago(1));
                }
                Some(todo)
            }
            2 => pick(&mut rng, &todos).map(|id| json!({"kind": "todo", "id": id, "content": format!("edited {text}")})),
            3 => pick(&mut rng, &todos).map(|id| json!({"operation": "delete", "id": id})),
            4 => Some(json!({"kind": "decision", "data": {"component": "c", "status": "accepted",
                "title": format!("decide {text} {step}"), "rationale": "because"}})),
            5 => pick(&mut rng, &decisions).map(|id| json!({"kind": "decision", "id": id, "data": {"component": "c",
                "status": "accepted", "title": "rewritten", "rationale": "other"}})),
            6 => pick(&mut rng, &decisions).map(|old| json!({"kind": "decision", "supersedes": old, "data": {
                "component": "c", "status": "proposed", "title": format!("replace {text} {step}"), "rationale": "r"}})),
            _ => {
                expected += m.service.lifecycle().purge(false).unwrap().purged as usize;
                None
            }
        };
        if let Some(item) = request {
            let supersedes = item.get("supersedes").is_some();
            let kind = item["kind"].as_str().unwrap_or("").to_string();
            let r = m.store(json!([item]));
            let result = &r.results[0];
            expected += match result.status {
                ItemStatus::Inserted if supersedes => 2,
                ItemStatus::Inserted | ItemStatus::Updated | ItemStatus::BusinessRuleBlocked => 1,
                ItemStatus::Deleted if result.reason.is_none() => 1,
                _ => 0,
            };
            if result.status == ItemStatus::Inserted {
                let id = result.id.clone().unwrap();
                if kind == "todo" { todos.push(id) } else { decisions.push(id) }
            }
        }
        let trail = m.service.audit().records(None, None, 10_000).unwrap();
        assert_eq!(trail.len(), expected, "step {step}: one record per mutation and refusal");
        assert_eq!(&trail[..seen.len()], &seen[..], "step {step}: earlier records unchanged");
        seen = trail;
    }
    let ops: std::collections::BTreeSet<&str> = seen.iter().map(|r| r.operation.as_str()).collect();
    for op in ["insert", "update", "delete", "blocked", "supersede", "purge"] {
        assert!(ops.contains(op), "the sequence exercised {op}: {ops:?}");
    }
}
