//! Forms: refused (changing nothing) without a live session, without its CSRF token, with
//! another session's, from another site's page, or from a key whose role does not reach; done
//! for the role that does.

use super::{assert_status, section};
use crate::test_support::{HOST, Signed, TestServer, browser};
use axum::body::Body;
use axum::http::{StatusCode, header};
use cortex_testdb::TestDb;

/// Whether the item's page is still there for the local user.
pub(super) fn exists(server: &TestServer, id: &str) -> bool {
    let answer = server.service.memory_find().find(&find_ids(id)).unwrap();
    !answer.hits.is_empty()
}

fn find_ids(id: &str) -> cortex_domain::find::FindRequest {
    cortex_domain::find::FindRequest::from_json(&serde_json::json!({"ids": [id]})).unwrap()
}

#[test]
fn a_form_without_a_live_session_is_refused() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let id = section(&server, "Branch naming");
    let answer = server.post_form(&format!("/items/{id}/delete"), None, &[("csrf", "anything")]);
    assert_status(&answer, StatusCode::FORBIDDEN);
    assert!(answer.text.contains("not sent from a live session"), "{}", answer.text);
    assert!(exists(&server, &id));
}

#[test]
fn a_form_without_the_sessions_csrf_token_is_refused_and_changes_nothing() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let token = server.key("writer", "write");
    let id = section(&server, "Code review rules");
    let signed = server.sign_in(&token);
    for fields in [vec![], vec![("csrf", "")], vec![("csrf", "0123")]] {
        let answer = server.post_form(&format!("/items/{id}/delete"), Some(&signed.cookie), &fields);
        assert_status(&answer, StatusCode::FORBIDDEN);
        assert!(answer.text.contains("does not carry this session&#39;s CSRF token"), "{}", answer.text);
    }
    assert!(exists(&server, &id), "nothing was deleted");
}

#[test]
fn another_sessions_csrf_token_does_not_pass() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let token = server.key("writer", "write");
    let id = section(&server, "Logging levels");
    let (one, two) = (server.sign_in(&token), server.sign_in(&token));
    assert_ne!(one.csrf, two.csrf, "each session has its own token");
    let answer = server.post_form(&format!("/items/{id}/delete"), Some(&one.cookie), &[("csrf", &two.csrf)]);
    assert_status(&answer, StatusCode::FORBIDDEN);
    assert!(exists(&server, &id));
}

/// The item's delete form of `signed`'s session, posted from a page at `origin`.
fn delete_from(server: &TestServer, id: &str, signed: &Signed, origin: &str) -> crate::test_support::Answer {
    let request = browser("POST", &format!("/items/{id}/delete"), Some(&signed.cookie))
        .header(header::ORIGIN, origin)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(format!("csrf={}", signed.csrf)))
        .unwrap();
    server.send(request)
}

#[test]
fn a_form_posted_from_another_sites_page_is_refused_by_its_origin() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let token = server.key("writer", "write");
    let id = section(&server, "On-call handover");
    let signed = server.sign_in(&token);
    let answer = delete_from(&server, &id, &signed, "https://evil.example.net");
    assert_eq!((answer.status, answer.code().as_deref()), (StatusCode::FORBIDDEN, Some("forbidden_origin")));
    assert!(exists(&server, &id));
}

#[test]
fn a_form_from_the_servers_own_page_passes_and_deletes() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let token = server.key("writer", "write");
    let id = section(&server, "Dependency updates");
    let signed = server.sign_in(&token);
    let answer = delete_from(&server, &id, &signed, &format!("http://{HOST}"));
    assert!(
        answer.status.is_success() || answer.status.is_redirection(),
        "{}: {}",
        answer.status,
        answer.text
    );
    assert!(!exists(&server, &id), "deleted");
    let page = server.get(&format!("/items/{id}"), Some(&signed.cookie));
    assert_status(&page, StatusCode::NOT_FOUND);
}

#[test]
fn a_read_key_is_refused_a_change_in_words_naming_the_role_it_needs() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let token = server.key("reader", "read");
    let id = section(&server, "Feature flags");
    let signed = server.sign_in(&token);
    for action in ["delete", "edit", "supersede"] {
        let answer = server.post_form(
            &format!("/items/{id}/{action}"),
            Some(&signed.cookie),
            &[("csrf", &signed.csrf), ("data.title", "Changed")],
        );
        assert_status(&answer, StatusCode::FORBIDDEN);
        assert!(answer.text.contains("needs a key with role write"), "{action}: {}", answer.text);
    }
    assert!(exists(&server, &id));
    let page = server.get(&format!("/items/{id}"), Some(&signed.cookie));
    assert!(!page.text.contains("Delete this item"), "a read key is offered no curation: {}", page.text);
}

#[test]
fn a_deleted_item_is_in_the_trash_and_a_write_key_restores_it() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let token = server.key("writer", "write");
    let id = section(&server, "Backup schedule");
    let signed = server.sign_in(&token);
    server.post_form(&format!("/items/{id}/delete"), Some(&signed.cookie), &[("csrf", &signed.csrf)]);
    assert!(!exists(&server, &id));
    let trash = server.get("/trash", Some(&signed.cookie));
    assert!(trash.text.contains("Backup schedule"), "{}", trash.text);
    let answer =
        server.post_form(&format!("/items/{id}/restore"), Some(&signed.cookie), &[("csrf", &signed.csrf)]);
    assert!(
        answer.status.is_success() || answer.status.is_redirection(),
        "{}: {}",
        answer.status,
        answer.text
    );
    assert!(exists(&server, &id), "restored");
}

#[test]
fn a_write_key_edits_an_item_through_its_form() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let token = server.key("writer", "write");
    let id = section(&server, "Retry policy");
    let signed = server.sign_in(&token);
    let answer = server.post_form(
        &format!("/items/{id}/edit"),
        Some(&signed.cookie),
        &[
            ("csrf", &signed.csrf),
            ("data.title", "Retry policy"),
            ("data.heading", "Retry policy"),
            ("data.body", "Retry three times with jittered backoff."),
        ],
    );
    assert!(
        answer.status.is_success() || answer.status.is_redirection(),
        "{}: {}",
        answer.status,
        answer.text
    );
    let page = server.get(&format!("/items/{id}"), Some(&signed.cookie));
    assert!(page.text.contains("Retry three times with jittered backoff."), "{}", page.text);
    assert!(page.text.contains("writer"), "the history names who changed it: {}", page.text);
}

#[test]
fn keys_are_made_by_admins_only() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let make = |signed: &Signed| {
        let fields = [("csrf", signed.csrf.as_str()), ("name", "new-ci"), ("role", "read"), ("org", "acme")];
        server.post_form("/admin/keys", Some(&signed.cookie), &fields)
    };
    let writer = server.sign_in(&server.key("writer", "write"));
    assert_status(&make(&writer), StatusCode::FORBIDDEN);
    assert_status(&server.get("/admin", Some(&writer.cookie)), StatusCode::FORBIDDEN);
    let admin = server.sign_in(&server.key("ops", "admin"));
    let made = make(&admin);
    assert_status(&made, StatusCode::OK);
    let token = made.text.split("cortex_").nth(1).map(|rest| format!("cortex_{}", &rest[..16 + 1 + 64]));
    let token = token.unwrap_or_else(|| panic!("the new token is shown: {}", made.text));
    let listed = server.service.keys().list().unwrap();
    assert!(listed.iter().any(|k| k.name == "new-ci" && k.org == "acme"), "{listed:?}");
    server.sign_in(&token);
}

#[test]
fn signing_out_ends_the_session_for_good() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let signed = server.sign_in(&server.key("reader", "read"));
    let answer = server.post_form("/logout", Some(&signed.cookie), &[("csrf", &signed.csrf)]);
    assert_status(&answer, StatusCode::SEE_OTHER);
    assert!(
        answer.header(header::SET_COOKIE).is_some_and(|c| c.contains("Max-Age=0")),
        "{:?}",
        answer.headers
    );
    let after = server.get("/", Some(&signed.cookie));
    assert!(after.text.contains("<h1>Sign in</h1>"), "the old cookie opens nothing: {}", after.text);
}
