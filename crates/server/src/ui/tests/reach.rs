//! Tenant bounds in the pages: another org's item, or another project's for a key limited to
//! its projects, does not exist for the key — not on its page, not in search, not in the
//! graph, not for a form; and an admin's reach over keys ends at its org.

use super::assert_status;
use crate::test_support::TestServer;
use axum::http::StatusCode;
use cortex_domain::find::FindRequest;
use cortex_service::keys::KeySpec;
use cortex_testdb::{TestDb, per_backend};

per_backend!(another_orgs_item_is_not_found_anywhere_in_the_pages, a_form_cannot_reach_another_orgs_item);

fn acme_key(server: &TestServer, role: &str, projects: &[&str]) -> String {
    server.key_of(KeySpec {
        name: format!("acme-{role}"),
        org: "acme".into(),
        role: role.into(),
        projects: projects.iter().map(|p| p.to_string()).collect(),
        ..KeySpec::default()
    })
}

fn another_orgs_item_is_not_found_anywhere_in_the_pages(db: &TestDb) {
    let server = TestServer::new(db);
    let theirs =
        server.item("globex", "Globex payroll cutover", "Payroll moves to the new ledger on the 3rd.");
    let ours = server.item("acme", "Acme payroll cutover", "Payroll moves on the 5th.");
    let signed = server.sign_in(&acme_key(&server, "read", &["api"]));
    for path in [format!("/items/{theirs}"), format!("/items/{theirs}/graph")] {
        let page = server.get(&path, Some(&signed.cookie));
        assert_status(&page, StatusCode::NOT_FOUND);
        assert!(!page.text.contains("Globex payroll"), "{path}: {}", page.text);
    }
    let search = server.get("/?q=payroll+cutover+ledger", Some(&signed.cookie));
    assert_status(&search, StatusCode::OK);
    assert!(search.text.contains("Acme payroll cutover"), "its own org's item is found: {}", search.text);
    assert!(!search.text.contains("Globex"), "{}", search.text);
    assert_status(&server.get(&format!("/items/{ours}"), Some(&signed.cookie)), StatusCode::OK);
}

fn a_form_cannot_reach_another_orgs_item(db: &TestDb) {
    let server = TestServer::new(db);
    let theirs = server.item("globex", "Globex escalation path", "Page the duty manager.");
    let signed = server.sign_in(&acme_key(&server, "write", &[]));
    for action in ["delete", "edit", "restore"] {
        let answer = server.post_form(
            &format!("/items/{theirs}/{action}"),
            Some(&signed.cookie),
            &[("csrf", &signed.csrf), ("data.body", "Overwritten")],
        );
        assert_status(&answer, StatusCode::NOT_FOUND);
    }
    let request = FindRequest::from_json(&serde_json::json!({"ids": [theirs]})).unwrap();
    let found = server.service.memory_find().find(&request).unwrap();
    let shown = format!("{:?}", found.hits);
    assert!(shown.contains("Page the duty manager.") && !shown.contains("Overwritten"), "unchanged: {shown}");
}

#[test]
fn a_key_limited_to_a_project_does_not_see_another_projects_item() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let item = serde_json::json!({"items": [{"kind": "section", "scope": {"org": "acme", "project": "billing", "branch": "main"},
        "data": {"title": "Invoice numbering", "heading": "Invoices", "body": "Invoices are numbered per year."}}]});
    let request = cortex_domain::item::StoreRequest::from_json(&item).unwrap();
    let id = server.service.memory_store().store(&request).unwrap().results[0].id.clone().unwrap();
    let api_only = server.sign_in(&acme_key(&server, "read", &["api"]));
    assert_status(&server.get(&format!("/items/{id}"), Some(&api_only.cookie)), StatusCode::NOT_FOUND);
    let org_wide = server.sign_in(&server.key("org-wide", "read"));
    assert_status(&server.get(&format!("/items/{id}"), Some(&org_wide.cookie)), StatusCode::OK);
}

#[test]
fn an_admin_sees_and_revokes_only_its_own_orgs_keys() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let globex = server.key_of(KeySpec {
        name: "globex-ci".into(),
        org: "globex".into(),
        role: "read".into(),
        ..KeySpec::default()
    });
    let admin = server.sign_in(&acme_key(&server, "admin", &[]));
    let page = server.get("/admin", Some(&admin.cookie));
    assert_status(&page, StatusCode::OK);
    assert!(page.text.contains("acme-admin") && !page.text.contains("globex-ci"), "{}", page.text);
    let answer = server.post_form(
        "/admin/keys/revoke",
        Some(&admin.cookie),
        &[("csrf", &admin.csrf), ("org", "globex"), ("name", "globex-ci"), ("confirm", "yes")],
    );
    assert!(!answer.text.contains("Revoked"), "{}: {}", answer.status, answer.text);
    let info = server.service.keys().list().unwrap().into_iter().find(|k| k.name == "globex-ci").unwrap();
    assert_eq!(info.state, "active", "another org's key is untouched");
    let _ = globex;
}

#[test]
fn an_admin_cannot_make_a_key_for_another_org() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let admin = server.sign_in(&acme_key(&server, "admin", &[]));
    let fields = [("csrf", admin.csrf.as_str()), ("name", "sneaky"), ("role", "admin"), ("org", "globex")];
    let answer = server.post_form("/admin/keys", Some(&admin.cookie), &fields);
    assert!(!answer.status.is_success(), "{}: {}", answer.status, answer.text);
    assert!(server.service.keys().list().unwrap().iter().all(|k| k.name != "sneaky"));
}
