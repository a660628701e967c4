//! Undoing a key's revocation from the web UI: the confirmed revocation answers a page with an
//! Undo button, which brings the key back (over MCP too) and lands on the admin page; the
//! button's route keeps the UI's rules — a session's CSRF token, the admin role, POST only,
//! an admin bound to an org reaching only its own keys and learning nothing of others' — and
//! after the window it is refused by the database, saying how to make a new key.

use super::assert_status;
use crate::test_support::{Signed, TestServer, find};
use axum::http::{StatusCode, header};
use cortex_service::keys::KeySpec;
use cortex_testdb::{TestDb, per_backend};

per_backend!(revoking_answers_an_undo_that_brings_the_key_back, the_undo_refuses_what_the_ui_refuses);

fn key_in(server: &TestServer, org: &str, name: &str, role: &str) -> String {
    server.key_of(KeySpec { name: name.into(), org: org.into(), role: role.into(), ..KeySpec::default() })
}

fn revoke(server: &TestServer, admin: &Signed, org: &str, name: &str) -> crate::test_support::Answer {
    let fields = [("csrf", admin.csrf.as_str()), ("org", org), ("name", name), ("confirm", "yes")];
    server.post_form("/admin/keys/revoke", Some(&admin.cookie), &fields)
}

fn undo(server: &TestServer, signed: &Signed, org: &str, name: &str) -> crate::test_support::Answer {
    let fields = [("csrf", signed.csrf.as_str()), ("org", org), ("name", name)];
    server.post_form("/admin/keys/restore", Some(&signed.cookie), &fields)
}

fn state(server: &TestServer, org: &str, name: &str) -> &'static str {
    let keys = server.service.keys().list().unwrap();
    keys.into_iter().find(|k| k.org == org && k.name == name).unwrap().state
}

fn revoking_answers_an_undo_that_brings_the_key_back(db: &TestDb) {
    let server = TestServer::new(db);
    let ci = key_in(&server, "acme", "ci", "write");
    let admin = server.sign_in(&key_in(&server, "acme", "ops", "admin"));
    assert_status(&server.send(find(Some(&ci))), StatusCode::OK);

    let asked = server.post_form(
        "/admin/keys/revoke",
        Some(&admin.cookie),
        &[("csrf", &admin.csrf), ("org", "acme"), ("name", "ci")],
    );
    assert!(asked.text.contains("can be undone for 10 minutes"), "{}", asked.text);
    assert!(!asked.text.contains("cannot be brought back"), "{}", asked.text);

    let revoked = revoke(&server, &admin, "acme", "ci");
    assert_status(&revoked, StatusCode::OK);
    for shown in [
        "Key <code>ci</code> revoked",
        "action=\"/admin/keys/restore\"",
        ">Undo</button>",
        "href=\"/admin\"",
        "10 minutes after the revocation",
    ] {
        assert!(revoked.text.contains(shown), "{shown}: {}", revoked.text);
    }
    assert!(revoked.text.contains(&format!("value=\"{}\"", admin.csrf)), "the session's CSRF token");
    assert_eq!(state(&server, "acme", "ci"), "revoked");
    assert_status(&server.send(find(Some(&ci))), StatusCode::UNAUTHORIZED);
    let listed = server.get("/admin", Some(&admin.cookie));
    assert!(
        listed.text.contains(
            "<input type=\"hidden\" name=\"name\" value=\"ci\"><button type=\"submit\" title=\"until "
        ),
        "the admin page offers the undo too while it lasts: {}",
        listed.text
    );

    let undone = undo(&server, &admin, "acme", "ci");
    assert_status(&undone, StatusCode::SEE_OTHER);
    assert_eq!(undone.header(header::LOCATION), Some("/admin"));
    assert_eq!(state(&server, "acme", "ci"), "active");
    let page = server.get("/admin", Some(&admin.cookie));
    assert!(
        page.text.contains("<input type=\"hidden\" name=\"name\" value=\"ci\"><button type=\"submit\" class=\"danger\">Revoke</button>"),
        "the key is listed active again, with its Revoke button: {}",
        page.text
    );
    assert_status(&server.send(find(Some(&ci))), StatusCode::OK);

    let records = server.service.audit().records(None, None, 100).unwrap();
    let restore = records.iter().rev().find(|r| r.operation == "key_restore").expect("a key_restore record");
    assert_eq!(restore.summary, "restored API key ci");
    assert_eq!(
        (restore.principal.as_deref(), restore.via.as_deref()),
        (Some("key:acme/ops"), Some("web UI"))
    );

    // Undone twice: nothing to undo, said as such.
    let again = undo(&server, &admin, "acme", "ci");
    assert_status(&again, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(again.text.contains("is not revoked"), "{}", again.text);
}

fn the_undo_refuses_what_the_ui_refuses(db: &TestDb) {
    let server = TestServer::new(db);
    key_in(&server, "acme", "ci", "write");
    key_in(&server, "acme", "acme-bot", "read");
    let admin = server.sign_in(&key_in(&server, "acme", "ops", "admin"));
    assert_status(&revoke(&server, &admin, "acme", "ci"), StatusCode::OK);
    assert_status(&revoke(&server, &admin, "acme", "acme-bot"), StatusCode::OK);

    // Without the session's CSRF token.
    for fields in
        [vec![("org", "acme"), ("name", "ci")], vec![("csrf", "0123"), ("org", "acme"), ("name", "ci")]]
    {
        let answer = server.post_form("/admin/keys/restore", Some(&admin.cookie), &fields);
        assert_status(&answer, StatusCode::FORBIDDEN);
    }
    assert_status(
        &server.post_form("/admin/keys/restore", None, &[("org", "acme"), ("name", "ci")]),
        StatusCode::FORBIDDEN,
    );
    // Read and write keys of the same org.
    for role in ["read", "write"] {
        let signed = server.sign_in(&key_in(&server, "acme", role, role));
        assert_status(&undo(&server, &signed, "acme", "ci"), StatusCode::FORBIDDEN);
    }
    // Not by a link or a prefetch.
    assert_status(
        &server.get("/admin/keys/restore?org=acme&name=ci", Some(&admin.cookie)),
        StatusCode::METHOD_NOT_ALLOWED,
    );
    assert_eq!(state(&server, "acme", "ci"), "revoked");

    // A bound admin of globex: acme's key is as unknown as a name nobody has.
    let globex = server.sign_in(&key_in(&server, "globex", "boss", "admin"));
    let theirs = undo(&server, &globex, "acme", "acme-bot");
    let nobody = undo(&server, &globex, "acme", "nobody-bot");
    assert_status(&theirs, StatusCode::NOT_FOUND);
    assert_status(&nobody, StatusCode::NOT_FOUND);
    assert_eq!(theirs.text.replace("acme-bot", "X"), nobody.text.replace("nobody-bot", "X"));
    assert!(!theirs.text.replace("acme-bot", "X").contains("acme"), "{}", theirs.text);
    assert_eq!(state(&server, "acme", "acme-bot"), "revoked");

    // Revoked longer ago than the window: the database refuses, the page says what to do.
    let past = cortex_service::now_ms() - cortex_domain::api_key::RESTORE_WINDOW_MS - 1_000;
    key_in(&server, "acme", "old", "read");
    db.execute_raw(&format!("UPDATE api_keys SET revoked_at = {past} WHERE name = 'old'")).unwrap();
    let late = undo(&server, &admin, "acme", "old");
    assert_status(&late, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(late.text.contains("more than 10 minutes ago"), "{}", late.text);
    assert!(
        late.text.contains("cortex keys create --name &#60;new name&#62; --org acme --role read"),
        "{}",
        late.text
    );
    assert_eq!(state(&server, "acme", "old"), "revoked");
    let listed = server.get("/admin", Some(&admin.cookie));
    assert!(listed.text.contains("<td>old</td>"), "{}", listed.text);
    assert!(!listed.text.contains("name=\"name\" value=\"old\""), "no undo for it: {}", listed.text);
}
