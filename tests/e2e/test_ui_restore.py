"""The web UI's deleted items and their restore, from outside on each backend: a write key
deletes an item, finds it on `/trash`, restores it with the page's form (the item is back in
search and its history says `delete` and `restore`, each by the signed-in key, not by the
item's author); a forged or cross-site restore is 403 and changes nothing; a read key sees the
list without forms and its POST is 403; another tenant's deleted item is neither listed nor
restorable (the same 404 as an unknown id); a restore over a live item that took the deleted
one's name is refused with a page saying which."""

import os
import pwd
import re
import uuid

import httpx

from conftest import TIMEOUT
from test_http import cortex, make_key, serve  # noqa: F401 (serve is a fixture)
from test_http_isolation import export
from test_ui import Browser, assert_loads_nothing_from_elsewhere, assert_ui_headers, memory, signed_in  # noqa: F401


def history_ops(page: str) -> list[tuple[str, str]]:
    timeline = re.search(r'<ol class="timeline">(.*?)</ol>', page, re.S).group(1)
    return [(op, who.strip()) for op, who in re.findall(r'<span class="op">(\w+)</span>(?: by ([^<]*))?', timeline)]


def test_a_deleted_item_is_listed_and_restored_by_the_signed_in_key(db, serve, memory):
    browser, server = signed_in(db, serve, "curator", "write")
    target = f"/items/{memory['section']}"
    csrf = browser.csrf(target)
    assert browser.post(f"{target}/delete", {"csrf": csrf}).status_code == 200
    assert browser.get(target).status_code == 404
    assert "Webhook retries" not in browser.get("/?q=webhook").text

    listed = browser.get("/trash")
    assert listed.status_code == 200, listed.text
    assert_ui_headers(listed)
    assert_loads_nothing_from_elsewhere(listed.text)
    assert 'href="/trash"' in listed.text, "the bar links to the page"
    assert "&#60;script&#62;alert(1)&#60;/script&#62; Webhook retries" in listed.text, "the title, escaped"
    assert "<script>alert" not in listed.text
    form = re.search(r'<form class="restore" method="post" action="(/items/[0-9a-f-]+/restore)">'
                     r'<input type="hidden" name="csrf" value="([0-9a-f]{64})">', listed.text)
    assert form and form.group(1) == f"{target}/restore" and form.group(2) == csrf, listed.text
    assert "curator" in listed.text, "who deleted it"

    restored = browser.post(form.group(1), {"csrf": form.group(2)}, headers={"Origin": server.base})
    assert restored.status_code == 303, restored.text
    assert restored.headers["location"] == target
    page = browser.get(target)
    assert page.status_code == 200
    ops = history_ops(page.text)
    assert [op for op, _ in ops] == ["insert", "delete", "restore"], ops
    # The delete and the restore are the signed-in key's, through the web UI; the insert stays
    # its author's (the local user who stored it).
    assert ops[1][1] == ops[2][1] == "key:acme/curator via web UI", ops
    assert ops[0][1] == f"local:{pwd.getpwuid(os.geteuid()).pw_name} via memory_store", ops
    assert "Webhook retries" in browser.get("/?q=webhook").text, "found again"
    assert f"{target}/restore" not in browser.get("/trash").text, "no longer listed"


def test_forged_restores_are_refused_and_change_nothing(db, serve, memory):
    browser, server = signed_in(db, serve, "curator", "write")
    target = f"/items/{memory['billing']}"
    csrf = browser.csrf(target)
    assert browser.post(f"{target}/delete", {"csrf": csrf}).status_code == 200

    assert browser.post(f"{target}/restore", {}).status_code == 403
    assert browser.post(f"{target}/restore", {"csrf": "0" * 64}).status_code == 403
    cross_site = browser.post(f"{target}/restore", {"csrf": csrf}, headers={"Origin": "https://evil.example"})
    assert cross_site.status_code == 403
    stranger = httpx.post(server.base + f"{target}/restore", data={"csrf": csrf}, timeout=TIMEOUT)
    assert stranger.status_code == 403, "without the session's cookie"
    assert browser.get(target).status_code == 404, "still deleted"

    reader = Browser(server.base)
    reader.sign_in(make_key(db, "reader", "read"))
    listed = reader.get("/trash")
    assert listed.status_code == 200 and "billing" in listed.text
    assert "/restore" not in listed.text and 'name="csrf"' not in listed.text.split("</header>")[1]
    refused = reader.post(f"{target}/restore", {"csrf": reader.csrf("/")})
    assert refused.status_code == 403 and "role write" in refused.text
    assert browser.get(target).status_code == 404, "still deleted"
    ops = cortex(db, "audit", "--json", "--item", memory["billing"])
    assert [r["operation"] for r in ops["records"]] == ["insert", "delete"], ops


def test_another_tenants_deleted_item_is_not_listed_nor_restorable(db, serve, memory, tmp_path):
    other = memory["other_tenant"]
    out = cortex(db, "store", '{"items": [{"operation": "delete", "id": "%s"}]}' % other)
    assert out["results"][0]["status"] == "deleted", out
    before = export(db, tmp_path, [other])
    browser, server = signed_in(db, serve, "curator", "write")
    csrf = browser.csrf("/")
    assert "Zanzibar" not in browser.get("/trash").text
    outside = browser.post(f"/items/{other}/restore", {"csrf": csrf})
    unknown = browser.post(f"/items/{uuid.uuid4()}/restore", {"csrf": csrf})
    assert outside.status_code == unknown.status_code == 404
    assert outside.text.replace(other, "") .count("Not found") == unknown.text.count("Not found")
    assert export(db, tmp_path, [other]) == before, "untouched"


def test_a_restore_over_a_live_holder_of_its_name_is_refused(db, serve, memory):
    browser, server = signed_in(db, serve, "curator", "write")
    old = f"/items/{memory['ledger']}"
    csrf = browser.csrf(old)
    assert browser.post(f"{old}/delete", {"csrf": csrf}).status_code == 200
    again = cortex(db, "store", '{"items": [{"kind": "entity", "scope": {"org": "acme", "project": "api", '
                                '"branch": "main"}, "data": {"entity_type": "service", "name": "ledger"}}]}')
    new_id = again["results"][0]["id"]
    assert again["results"][0]["status"] == "inserted", again

    refused = browser.post(f"{old}/restore", {"csrf": csrf})
    assert refused.status_code == 409, refused.text
    assert 'class="problem"' in refused.text and new_id in refused.text
    assert browser.get(old).status_code == 404, "still deleted"
