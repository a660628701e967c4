//! What the pages show, escaped, each with the security headers.

use super::{assert_status, section};
use crate::test_support::TestServer;
use crate::ui::page::CSP;
use axum::http::{StatusCode, header};
use cortex_testdb::TestDb;

#[test]
fn every_page_and_refusal_carries_the_security_headers() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let id = section(&server, "Deploy windows");
    for path in
        ["/", &format!("/items/{id}"), "/activity", "/trash", "/ui/style.css", "/items/nope", "/admin"]
    {
        let answer = server.get(path, None);
        assert_eq!(answer.header(header::CONTENT_SECURITY_POLICY), Some(CSP), "{path}");
        assert_eq!(answer.header(header::X_FRAME_OPTIONS), Some("DENY"), "{path}");
        assert_eq!(answer.header(header::X_CONTENT_TYPE_OPTIONS), Some("nosniff"), "{path}");
        assert_eq!(answer.header(header::CACHE_CONTROL), Some("no-store"), "{path}");
    }
    // The sign-in form of a server with keys, and a refused form, too.
    server.key("ana", "read");
    for answer in [server.get("/", None), server.post_form("/items/x/delete", None, &[])] {
        assert_eq!(answer.header(header::CONTENT_SECURITY_POLICY), Some(CSP), "{}", answer.text);
    }
}

#[test]
fn the_policy_allows_no_script_from_anywhere_but_the_server() {
    assert!(CSP.contains("default-src 'self'") && CSP.contains("script-src 'self'"), "{CSP}");
    assert!(!CSP.contains("unsafe-inline") && !CSP.contains("unsafe-eval"), "{CSP}");
}

#[test]
fn a_keyless_loopback_server_shows_the_local_user_its_search_page() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let home = server.get("/", None);
    assert_status(&home, StatusCode::OK);
    assert!(home.text.contains("<span class=\"who\">local"), "{}", home.text);
    assert!(home.cookie().is_some_and(|c| c.starts_with("cortex_session=")), "a session for the local user");
}

#[test]
fn search_finds_a_stored_item_and_links_its_page() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let id = section(&server, "Rotating the signing keys");
    let _ = section(&server, "Holiday calendar");
    let answer = server.get("/?q=rotating+signing+keys", None);
    assert_status(&answer, StatusCode::OK);
    assert!(answer.text.contains("Rotating the signing keys"), "{}", answer.text);
    assert!(answer.text.contains(&format!("/items/{id}")), "the hit links its page: {}", answer.text);
}

#[test]
fn an_items_page_shows_its_title_body_and_history() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let id = section(&server, "Release checklist");
    let page = server.get(&format!("/items/{id}"), None);
    assert_status(&page, StatusCode::OK);
    assert!(page.text.contains("Release checklist"), "{}", page.text);
    assert!(page.text.contains("what the team agreed, written down once."), "{}", page.text);
    assert!(page.text.contains("<h2>History</h2>") && page.text.contains("insert"), "{}", page.text);
}

#[test]
fn a_script_in_a_title_or_body_is_shown_as_text_never_run() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let title = "<script>alert('title')</script> Incident";
    let body = "Look: <script>steal(document.cookie)</script> <img src=x onerror=alert(1)> [click](javascript:alert(2))";
    let id = server.item("acme", title, body);
    for path in [format!("/items/{id}"), "/?q=incident".to_string()] {
        let page = server.get(&path, None);
        assert_status(&page, StatusCode::OK);
        assert!(!page.text.contains("<script"), "{path}: {}", page.text);
        assert!(!page.text.contains("<img"), "{path}: {}", page.text);
        assert!(!page.text.contains("href=\"javascript:"), "{path}: {}", page.text);
        assert!(
            page.text.contains("&#60;script&#62;alert(&#39;title&#39;)"),
            "{path}: the text is shown: {}",
            page.text
        );
    }
}

#[test]
fn an_unknown_or_malformed_item_id_is_not_found_in_the_pages_words() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    for id in ["0190a1b2-0000-7000-8000-000000000000", "not-an-id"] {
        let page = server.get(&format!("/items/{id}"), None);
        assert_status(&page, StatusCode::NOT_FOUND);
        assert!(page.text.contains("no item with this id is within your reach"), "{}", page.text);
    }
}

#[test]
fn the_stylesheet_is_css_from_the_server_itself() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let css = server.get("/ui/style.css", None);
    assert_status(&css, StatusCode::OK);
    assert_eq!(css.header(header::CONTENT_TYPE), Some("text/css; charset=utf-8"));
    assert!(!css.text.contains("@import") && !css.text.contains("url(http"), "nothing loaded from elsewhere");
}

#[test]
fn an_items_graph_page_draws_it() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let id = section(&server, "Queue sizing");
    let page = server.get(&format!("/items/{id}/graph"), None);
    assert_status(&page, StatusCode::OK);
    assert!(page.text.contains("Queue sizing") && page.text.contains("<svg"), "{}", page.text);
}

#[test]
fn the_activity_page_shows_what_was_stored() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    section(&server, "Cache eviction policy");
    let page = server.get("/activity", None);
    assert_status(&page, StatusCode::OK);
    assert!(page.text.contains("section"), "the stored kind is counted: {}", page.text);
}

#[test]
fn a_loopback_server_answers_no_page_addressed_to_another_name() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    section(&server, "Secrets policy");
    let request = axum::http::Request::get("/?q=secrets")
        .header(header::HOST, "evil.example.com:8787")
        .body(axum::body::Body::empty())
        .unwrap();
    let page = server.send(request);
    assert_status(&page, StatusCode::FORBIDDEN);
    assert!(!page.text.contains("Secrets policy"), "{}", page.text);
    assert!(page.text.contains("evil.example.com"), "says what it was addressed to: {}", page.text);
}
