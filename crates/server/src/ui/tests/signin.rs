//! Signing in and sessions: the form and its refusals in a person's words, the cookie's
//! flags, the token kept out of the page and the cookie, and a session that ends with its key
//! or is shared by every server over one PostgreSQL database.

use super::assert_status;
use crate::test_support::TestServer;
use axum::http::{StatusCode, header};
use cortex_testdb::{Backend, TestDb, per_backend};

per_backend!(
    revoking_a_key_ends_its_sessions_at_their_next_page,
    a_session_is_every_servers_over_a_shared_database
);

#[test]
fn a_server_with_keys_shows_the_sign_in_form_and_nothing_else() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    server.key("ana", "read");
    server.item("acme", "Private runbook", "Only for the team.");
    let page = server.get("/?q=private+runbook", None);
    assert_status(&page, StatusCode::OK);
    assert!(
        page.text.contains("<h1>Sign in</h1>") && !page.text.contains("Private runbook"),
        "{}",
        page.text
    );
}

#[test]
fn a_wrong_token_is_refused_on_the_form_in_its_words() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    server.key("ana", "read");
    let unknown = format!("cortex_{}_{}", "0".repeat(16), "0".repeat(64));
    let answer = server.post_form("/login", None, &[("token", &unknown)]);
    assert_status(&answer, StatusCode::UNAUTHORIZED);
    assert!(
        answer.text.contains("no key has this token") && answer.text.contains("<h1>Sign in</h1>"),
        "{}",
        answer.text
    );
    assert!(answer.header(header::SET_COOKIE).is_none(), "no session for a refused token");
    let answer = server.post_form("/login", None, &[("token", "  ")]);
    assert_status(&answer, StatusCode::UNAUTHORIZED);
    assert!(answer.text.contains("no token was given"), "{}", answer.text);
}

#[test]
fn the_session_cookie_is_http_only_strict_and_holds_no_token() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let token = server.key("ana", "read");
    let answer = server.post_form("/login", None, &[("token", &token)]);
    assert_status(&answer, StatusCode::SEE_OTHER);
    let set = answer.header(header::SET_COOKIE).unwrap();
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(set.contains(flag), "{set}");
    }
    assert!(!set.contains("Secure"), "plain HTTP on loopback: a Secure cookie would not come back");
    assert!(!set.contains(&token) && !set.contains(token.split('_').nth(1).unwrap()), "{set}");
    let cookie = answer.cookie().unwrap();
    let home = server.get("/", Some(&cookie));
    assert!(home.text.contains("<span class=\"who\">ana"), "{}", home.text);
    assert!(!home.text.contains(&token), "the token never comes back to the browser");
}

#[test]
fn a_forged_or_stale_cookie_is_asked_to_sign_in() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    server.key("ana", "read");
    for cookie in ["cortex_session=00ff", "cortex_session=", &format!("cortex_session={}", "a".repeat(64))] {
        let page = server.get("/", Some(cookie));
        assert!(page.text.contains("<h1>Sign in</h1>"), "{cookie}: {}", page.text);
    }
}

#[test]
fn sign_in_with_a_revoked_key_is_refused() {
    let db = TestDb::sqlite();
    let server = TestServer::new(&db);
    let token = server.key("ana", "read");
    server.service.keys().revoke(Some("acme"), "ana").unwrap();
    let answer = server.post_form("/login", None, &[("token", &token)]);
    assert_status(&answer, StatusCode::UNAUTHORIZED);
    assert!(answer.text.contains("this key was revoked"), "{}", answer.text);
}

fn revoking_a_key_ends_its_sessions_at_their_next_page(db: &TestDb) {
    let server = TestServer::new(db);
    let signed = server.sign_in(&server.key("ana", "read"));
    let other = server.sign_in(&server.key("bob", "read"));
    server.service.keys().revoke(Some("acme"), "ana").unwrap();
    let page = server.get("/", Some(&signed.cookie));
    assert_status(&page, StatusCode::UNAUTHORIZED);
    assert!(page.text.contains("Your session ended: this key was revoked"), "{}", page.text);
    assert!(page.header(header::SET_COOKIE).is_some_and(|c| c.contains("Max-Age=0")));
    assert_status(&server.get("/", Some(&other.cookie)), StatusCode::OK);
}

fn a_session_is_every_servers_over_a_shared_database(db: &TestDb) {
    let one = TestServer::new(db);
    let token = one.key("ana", "read");
    let two = TestServer::over(crate::test_support::service(db), "127.0.0.1:0", &[]);
    let signed = one.sign_in(&token);
    let page = two.get("/", Some(&signed.cookie));
    match db.backend() {
        Backend::Postgres => {
            assert_status(&page, StatusCode::OK);
            assert!(page.text.contains("<span class=\"who\">ana"), "{}", page.text);
        }
        Backend::Sqlite => {
            assert!(page.text.contains("<h1>Sign in</h1>"), "kept in one server's memory: {}", page.text)
        }
    }
}
