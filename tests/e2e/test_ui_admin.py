"""The web UI's API key administration, from outside on each backend: an admin key makes a key
from the admin page (the token shown on the answer page once, working at once, never shown
again and never in the server's log), sees and revokes the keys of its own org only (another
org's key: the same 404 as an unknown name; a key for another org: refused naming the field),
a revocation answered by a page whose Undo brings the key back; each change recorded in the
audit trail (`key_create`, `key_revoke`, `key_restore`); a key that is not admin
gets 403 for the page and its forms, and a forged POST changes nothing. The audit verification
status is on the page."""

import json
import re

from http_server import INIT
from test_http import cortex, make_key, serve  # noqa: F401 (serve is a fixture)
from test_ui import Browser, assert_loads_nothing_from_elsewhere, assert_ui_headers, signed_in

TOKEN = re.compile(r"cortex_[0-9a-f]{16}_[0-9a-f]{64}")


def key_states(db) -> dict[str, str]:
    return {k["name"]: k["state"] for k in cortex(db, "keys", "list")["keys"]}


def key_records(db) -> list[tuple[str, str]]:
    records = cortex(db, "audit", "--json")["records"]
    return [(r["operation"], r["summary"]) for r in records if r["operation"].startswith("key_")]


def test_an_admin_makes_lists_and_revokes_keys_of_its_org(db, serve):
    cortex(db, "keys", "create", "--name", "globex-admin", "--org", "globex", "--role", "admin")
    admin, server = signed_in(db, serve, "boss", "admin")
    page = admin.get("/admin")
    assert page.status_code == 200, page.text
    assert_ui_headers(page)
    assert_loads_nothing_from_elsewhere(page.text)
    assert "boss" in page.text and "globex-admin" not in page.text, "its org's keys only"
    assert "no problem found" in page.text, "the audit verification status"
    csrf = admin.csrf("/admin")

    made = admin.post("/admin/keys", {"csrf": csrf, "name": "ci-bot", "role": "read", "org": "acme",
                                      "projects": "api, web", "expires": "2099-01-01"},
                      headers={"Origin": server.base})
    assert made.status_code == 200, made.text
    assert_ui_headers(made)
    tokens = TOKEN.findall(made.text)
    assert len(tokens) == 1, made.text
    token = tokens[0]
    assert "api, web" in made.text and "2099-01-01" in made.text
    assert key_states(db)["ci-bot"] == "active"

    bot = Browser(server.base)
    bot.sign_in(token)
    assert bot.get("/").status_code == 200, "the new key works at once"
    listing = admin.get("/admin").text
    assert "ci-bot" in listing and token not in listing and token[:24] not in listing, "shown once"
    assert token not in "".join(server.stderr_lines), "never logged"

    asked = admin.post("/admin/keys/revoke", {"csrf": csrf, "name": "ci-bot"})
    assert asked.status_code == 200 and "Revoke the key ci-bot?" in asked.text, asked.text
    assert 'name="confirm" value="yes"' in asked.text
    assert key_states(db)["ci-bot"] == "active", "asking revokes nothing"
    assert "can be undone for 10 minutes" in asked.text, asked.text
    revoked = admin.post("/admin/keys/revoke", {"csrf": csrf, "name": "ci-bot", "confirm": "yes"})
    assert revoked.status_code == 200 and "Key <code>ci-bot</code> revoked" in revoked.text, revoked.text
    assert 'action="/admin/keys/restore"' in revoked.text and ">Undo</button>" in revoked.text
    assert key_states(db)["ci-bot"] == "revoked"
    ended = bot.get("/")
    assert ended.status_code == 401 and 'name="token"' in ended.text, "its session ended"
    refused = Browser(server.base).post("/login", {"token": token})
    assert refused.status_code != 303 and "revoked" in refused.text, "refused while revoked"
    status, _, body = server.post_mcp(INIT, {"Authorization": f"Bearer {token}"})
    assert (status, body["error"]["code"]) == (401, "revoked_key"), (status, body)
    undone = admin.post("/admin/keys/restore", {"csrf": csrf, "org": "acme", "name": "ci-bot"})
    assert undone.status_code == 303 and undone.headers["location"] == "/admin", undone.text
    assert key_states(db)["ci-bot"] == "active"
    back = Browser(server.base)
    back.sign_in(token)
    assert back.get("/").status_code == 200, "the restored key signs in again"
    status, _, body = server.post_mcp(INIT, {"Authorization": f"Bearer {token}"})
    assert status == 200 and "serverInfo" in json.dumps(body), (status, body)
    revoked = admin.post("/admin/keys/revoke", {"csrf": csrf, "name": "ci-bot", "confirm": "yes"})
    assert revoked.status_code == 200 and key_states(db)["ci-bot"] == "revoked"

    outside = admin.post("/admin/keys/revoke", {"csrf": csrf, "name": "globex-admin", "confirm": "yes"})
    unknown = admin.post("/admin/keys/revoke", {"csrf": csrf, "name": "nobody", "confirm": "yes"})
    assert outside.status_code == unknown.status_code == 404
    assert "globex" not in outside.text.split("</header>")[1].replace("globex-admin", "")
    other_org = admin.post("/admin/keys", {"csrf": csrf, "name": "sneaky", "role": "admin", "org": "globex"})
    assert other_org.status_code == 422 and "org:" in other_org.text, other_org.text
    assert not TOKEN.search(other_org.text)
    assert key_states(db) == {"globex-admin": "active", "boss": "active", "ci-bot": "revoked"}

    ops = [op for op, _ in key_records(db)]
    assert ops == ["key_create", "key_create", "key_create", "key_revoke", "key_restore", "key_revoke"], key_records(db)
    assert cortex(db, "audit", "--verify")["ok"] is True


def test_bad_key_fields_are_named(db, serve):
    admin, server = signed_in(db, serve, "boss", "admin")
    csrf = admin.csrf("/admin")
    for form, field in [({"name": "", "role": "read"}, "name"), ({"name": "x", "role": "owner"}, "role"),
                        ({"name": "x", "role": "read", "expires": "soon"}, "expires"),
                        ({"name": "boss", "role": "read"}, "name")]:
        answer = admin.post("/admin/keys", {"csrf": csrf, "org": "acme", **form})
        assert answer.status_code == 422, (form, answer.text)
        assert f"{field}:" in answer.text, (form, answer.text)
        assert not TOKEN.search(answer.text)
    assert set(key_states(db)) == {"boss"}


def test_a_key_that_is_not_admin_sees_no_key_pages_and_forged_posts_change_nothing(db, serve):
    admin_token = make_key(db, "boss", "admin")
    writer, server = signed_in(db, serve, "writer", "write")
    assert writer.get("/admin").status_code == 403
    csrf = writer.csrf("/")
    made = writer.post("/admin/keys", {"csrf": csrf, "name": "mine", "role": "admin", "org": "acme"})
    assert made.status_code == 403 and not TOKEN.search(made.text)
    revoke = writer.post("/admin/keys/revoke", {"csrf": csrf, "name": "boss", "confirm": "yes"})
    assert revoke.status_code == 403
    assert writer.post("/admin/keys/restore", {"csrf": csrf, "name": "boss"}).status_code == 403

    admin = Browser(server.base)
    admin.sign_in(admin_token)
    admin_csrf = admin.csrf("/admin")
    assert admin.post("/admin/keys", {"name": "forged", "role": "admin", "org": "acme"}).status_code == 403
    assert admin.post("/admin/keys", {"csrf": "0" * 64, "name": "forged", "role": "admin",
                                      "org": "acme"}).status_code == 403
    cross_site = admin.post("/admin/keys/revoke", {"csrf": admin_csrf, "name": "writer", "confirm": "yes"},
                            headers={"Origin": "https://evil.example"})
    assert cross_site.status_code == 403
    assert key_states(db) == {"boss": "active", "writer": "active"}, "nothing changed"
    cortex(db, "keys", "revoke", "writer")
    forged_undo = admin.post("/admin/keys/restore", {"csrf": admin_csrf, "name": "writer"},
                             headers={"Origin": "https://evil.example"})
    assert forged_undo.status_code == 403
    assert admin.post("/admin/keys/restore", {"name": "writer"}).status_code == 403, "no CSRF token"
    assert admin.get("/admin/keys/restore?name=writer").status_code == 405
    assert key_states(db) == {"boss": "active", "writer": "revoked"}, "still revoked"
    assert admin.post("/admin/keys/restore", {"csrf": admin_csrf, "name": "writer"}).status_code == 303
    assert key_states(db) == {"boss": "active", "writer": "active"}, "the real undo"
    assert [op for op, _ in key_records(db)] == ["key_create", "key_create", "key_revoke", "key_restore"]
