"""The web UI of `cortex serve --http` (docs/UI.md), driven from outside over real HTTP on each
backend: the sign-in contract, search and item pages as the signed-in key sees them (another
tenant's item is the same 404 as an unknown id), escaping of stored content, the CSRF and Origin
checks of every form (a refused POST is 403 and changes nothing), a read key's pages without
curation, governance on edits, sessions ending with their key, and pages that load nothing
from elsewhere. `test_ui_browser.py` drives the same pages in headless Chromium."""

import html
import html.parser
import json
import re
import ssl
import uuid

import httpx
import pytest

from conftest import TIMEOUT
from http_server import cortex, make_key, serve  # noqa: F401 (serve is a fixture)
from test_https import https_server  # noqa: F401 (a fixture)
from test_http_isolation import export

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; "
       "frame-ancestors 'none'; base-uri 'none'")
EVIL = "<script>alert(1)</script>"


def at(org: str, project: str = "api") -> dict:
    return {"org": org, "project": project, "branch": "main"}


def store_as_local(db, items: list) -> list[str]:
    out = cortex(db, "store", json.dumps({"items": items}))
    assert all(r["status"] == "inserted" for r in out["results"]), out
    return [r["id"] for r in out["results"]]


@pytest.fixture
def memory(db):
    """acme's items (one titled with a script tag, one accepted decision, a relation between
    two entities) and one of globex, stored by the local user."""
    ids = store_as_local(db, [
        {"kind": "section", "scope": at("acme"), "data": {
            "title": f"{EVIL} Webhook retries",
            "body": "Retry **webhook** deliveries with backoff. [docs](https://example.com/retries) "
                    "[bad](javascript:alert(2)) <img src=x onerror=alert(3)> ![pic](https://example.com/p.png)"}},
        {"kind": "decision", "scope": at("acme"), "data": {
            "component": "webhooks", "status": "accepted", "title": "Sign webhook payloads with HMAC",
            "rationale": "receivers verify the sender"}},
        {"kind": "entity", "scope": at("acme"), "data": {"entity_type": "service", "name": "billing"}},
        {"kind": "entity", "scope": at("acme"), "data": {"entity_type": "service", "name": "ledger"}},
        {"kind": "section", "scope": at("globex"), "data": {
            "title": "Zanzibar webhook relay", "body": "globex keeps its webhook relay private"}},
    ])
    relation = store_as_local(db, [
        {"kind": "relation", "scope": at("acme"), "data": {"from": ids[2], "to": ids[3], "relation_type": "calls"}},
    ])
    return {"section": ids[0], "decision": ids[1], "billing": ids[2], "ledger": ids[3], "other_tenant": ids[4],
            "relation": relation[0]}


class Browser:
    """A user agent: cookies kept, redirects not followed (their status is part of the contract)."""

    def __init__(self, base: str):
        self.base = base
        self.http = httpx.Client(base_url=base, follow_redirects=False, timeout=TIMEOUT)

    def get(self, path: str, **kw) -> httpx.Response:
        return self.http.get(path, **kw)

    def post(self, path: str, form: dict, headers: dict | None = None) -> httpx.Response:
        return self.http.post(path, data=form, headers=headers or {})

    def sign_in(self, token: str) -> httpx.Response:
        response = self.post("/login", {"token": token})
        assert response.status_code == 303, response.text
        assert response.headers["location"] == "/"
        return response

    def csrf(self, path: str = "/") -> str:
        page = self.get(path)
        assert page.status_code == 200, page.text
        found = re.search(r'name="csrf" value="([0-9a-f]{64})"', page.text)
        assert found, f"no CSRF token on {path}"
        return found.group(1)


def signed_in(db, serve, name: str, role: str) -> tuple[Browser, object]:
    """A browser signed in with a new key of this role, on a new server."""
    token = make_key(db, name, role)
    server = serve()
    browser = Browser(server.base)
    browser.sign_in(token)
    return browser, server


class Links(html.parser.HTMLParser):
    """Every URL a page loads, links to or submits to, outside its rendered Markdown."""

    def __init__(self):
        super().__init__()
        self.urls: list[tuple[str, str, str]] = []
        self.depth_in_content = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if self.depth_in_content:
            self.depth_in_content += 1
        elif tag == "section" and attrs.get("class") == "content":
            self.depth_in_content = 1
            return
        if self.depth_in_content:
            return
        for name in ("src", "href", "action", "formaction", "srcset", "poster", "data"):
            if name in attrs:
                self.urls.append((tag, name, attrs[name] or ""))

    def handle_endtag(self, tag):
        if self.depth_in_content:
            self.depth_in_content -= 1


def assert_loads_nothing_from_elsewhere(page: str):
    parser = Links()
    parser.feed(page)
    assert parser.urls, "the page has links"
    for tag, name, url in parser.urls:
        assert url.startswith("/") and not url.startswith("//"), f"<{tag} {name}={url!r}> leaves the server"
    assert "<script" not in page.lower(), "no script at all"
    assert " style=" not in page.lower() and "<style" not in page.lower(), "no inline style"


def assert_ui_headers(response: httpx.Response):
    assert response.headers["content-security-policy"] == CSP
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "same-origin"
    assert response.headers["cache-control"] == "no-store"


def test_sign_in_contract(db, serve, memory):
    token = make_key(db, "reviewer", "write")
    server = serve()
    browser = Browser(server.base)

    first = browser.get("/")
    assert first.status_code == 200
    assert_ui_headers(first)
    form = re.search(r'<form[^>]*method="post"[^>]*action="/login"[^>]*>(.*?)</form>', first.text, re.S)
    assert form, first.text
    assert re.findall(r'<input[^>]*name="([^"]+)"', form.group(1)) == ["token"]
    assert "Webhook" not in first.text, "nothing of the memory before sign-in"

    for wrong in ["cortex_0000000000000000_" + "0" * 64, "not a token", ""]:
        refused = browser.post("/login", {"token": wrong})
        assert refused.status_code == 401, refused.text
        assert refused.headers["content-type"].startswith("text/html")
        assert 'class="problem"' in refused.text and "set-cookie" not in refused.headers
        assert_ui_headers(refused)

    signed = browser.sign_in(token)
    cookie = signed.headers["set-cookie"]
    assert re.match(r"cortex_session=[0-9a-f]{64};", cookie), cookie
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"]:
        assert attribute in cookie, cookie
    assert token not in cookie and token not in signed.headers["location"]

    home = browser.get("/")
    assert home.status_code == 200 and "reviewer" in home.text and "Sign out" in home.text
    assert token not in home.text

    csrf = browser.csrf()
    out = browser.post("/logout", {"csrf": csrf})
    assert out.status_code == 303 and "Max-Age=0" in out.headers["set-cookie"]
    after = browser.get("/")
    assert 'action="/login"' in after.text and "Webhook" not in after.text

    assert server.stop() == 0
    log = "".join(server.stderr_lines)
    assert token not in log and token.split("_")[2] not in log, "the token is never logged"


def test_search_lists_what_the_key_sees(db, serve, memory):
    browser, server = signed_in(db, serve, "reviewer", "read")

    found = browser.get("/", params={"q": "webhook", "mode": "fast"})
    assert found.status_code == 200
    assert_ui_headers(found)
    assert "Sign webhook payloads with HMAC" in found.text
    assert f'href="/items/{memory["decision"]}"' in found.text
    assert "Zanzibar" not in found.text and memory["other_tenant"] not in found.text, "another tenant's item"

    only_decisions = browser.get("/", params=[("q", "webhook"), ("kind", "decision"), ("mode", "deep")])
    assert "Sign webhook payloads with HMAC" in only_decisions.text
    assert memory["section"] not in only_decisions.text

    newest = browser.get("/")
    assert "billing" in newest.text and "Zanzibar" not in newest.text

    bad = browser.get("/", params={"q": "webhook", "mode": "fastest"})
    assert bad.status_code == 400 and "mode" in bad.text and "use fast, auto or deep" in bad.text

    page = browser.get("/", params={"q": "webhook"})
    assert_loads_nothing_from_elsewhere(page.text)

    injected = '"><img src=x onerror=alert(1)> \' onmouseover=\'alert(2)'
    reflected = browser.get("/", params={"q": injected, "status": injected, "tags": injected}).text
    assert "<img src=x" not in reflected and "onmouseover='alert" not in reflected and '"><img' not in reflected
    assert 'value="&#34;&#62;&#60;img src=x onerror=alert(1)&#62; &#39; onmouseover=&#39;alert(2)"' in reflected


def test_item_page_with_history_relations_and_safe_content(db, serve, memory):
    browser, server = signed_in(db, serve, "reviewer", "write")

    item = browser.get(f"/items/{memory['section']}")
    assert item.status_code == 200
    assert_ui_headers(item)
    page = item.text
    assert EVIL not in page and "&#60;script&#62;alert(1)&#60;/script&#62;" in page
    assert "<img" not in page, "raw HTML in content is text, images become links"
    assert 'href="javascript' not in page.lower(), "a javascript: link is not kept"
    assert '<a href="https://example.com/retries">docs</a>' in page, "web links in Markdown are kept"
    assert '<a href="https://example.com/p.png">' in page
    assert '<strong>webhook</strong>' in page
    history = re.search(r'<ol class="timeline">(.*?)</ol>', page, re.S).group(1)
    assert '<span class="op">insert</span>' in history
    assert_loads_nothing_from_elsewhere(page)

    billing = browser.get(f"/items/{memory['billing']}").text
    assert f'href="/items/{memory["ledger"]}"' in billing and "calls" in billing
    ledger = browser.get(f"/items/{memory['ledger']}").text
    assert f'href="/items/{memory["billing"]}"' in ledger, "relations show both ways"

    graph = browser.get(f"/items/{memory['billing']}/graph")
    assert graph.status_code == 200
    svg = re.search(r"<svg.*?</svg>", graph.text, re.S).group(0)
    assert f'<a href="/items/{memory["ledger"]}">' in svg and ">calls</text>" in svg
    assert svg.count("<circle") == 2
    assert_loads_nothing_from_elsewhere(graph.text)
    assert browser.get(f"/items/{memory['ledger']}/graph", params={"depth": "2"}).status_code == 200

    for other in [memory["other_tenant"], str(uuid.uuid4()), "not-an-id"]:
        assert browser.get(f"/items/{other}/graph").status_code == 404, other
        missing = browser.get(f"/items/{other}")
        assert missing.status_code == 404, other
        assert "Zanzibar" not in missing.text and "globex" not in missing.text
    assert browser.get(f"/items/{memory['other_tenant']}").text == browser.get(f"/items/{uuid.uuid4()}").text, \
        "another tenant's id answers exactly as an unknown one"


def test_forged_posts_are_refused_and_change_nothing(db, serve, memory):
    browser, server = signed_in(db, serve, "curator", "write")
    target = f"/items/{memory['section']}"
    csrf = browser.csrf(target)
    before = browser.get(target).text

    assert browser.post(f"{target}/delete", {}).status_code == 403
    assert browser.post(f"{target}/delete", {"csrf": "0" * 64}).status_code == 403
    assert browser.post(f"{target}/edit", {"data.title": "hijacked"}).status_code == 403
    other_site = browser.post(f"{target}/delete", {"csrf": csrf}, headers={"Origin": "https://evil.example"})
    assert other_site.status_code == 403
    stranger = httpx.post(server.base + f"{target}/delete", data={"csrf": csrf}, timeout=TIMEOUT)
    assert stranger.status_code == 403, "without the session's cookie"
    after = browser.get(target).text
    assert after.replace(csrf, "") == before.replace(csrf, ""), "nothing changed"
    assert "hijacked" not in after and '<span class="op">delete</span>' not in after

    own = browser.post(f"{target}/delete", {"csrf": csrf}, headers={"Origin": server.base})
    assert own.status_code == 200 and f'action="{target}/restore"' in own.text, own.text
    assert browser.get(target).status_code == 404


def test_curation_goes_through_the_store_with_its_governance(db, serve, memory, tmp_path):
    before = export(db, tmp_path, [memory["other_tenant"]])
    browser, server = signed_in(db, serve, "curator", "write")

    section = f"/items/{memory['section']}"
    csrf = browser.csrf(section)
    saved = browser.post(f"{section}/edit", {"csrf": csrf, "data.title": "Webhook retries, curated"})
    assert saved.status_code == 200, saved.text
    assert "Webhook retries, curated" in saved.text
    history = re.search(r'<ol class="timeline">(.*?)</ol>', saved.text, re.S).group(1)
    # By the signed-in key, through the web UI; the UI's own name for the change is its claim.
    assert ('<span class="op">update</span> by key:acme/curator via web UI '
            '<span class="help">(claims agent curator, tool cortex-ui)</span>') in history, history

    decision = f"/items/{memory['decision']}"
    refused = browser.post(f"{decision}/edit", {"csrf": csrf, "data.rationale": "cheaper"})
    assert refused.status_code == 422, refused.text
    assert 'class="problem"' in refused.text and "rationale" in refused.text and "supersede" in refused.text
    assert "receivers verify the sender" in browser.get(decision).text, "the decision is unchanged"

    newer = browser.post(f"{decision}/supersede", {"csrf": csrf, "data.rationale": "receivers verify the sender and "
                                                  "replay is refused"})
    assert newer.status_code == 303, newer.text
    new_page = browser.get(newer.headers["location"])
    assert new_page.status_code == 200 and "replay is refused" in new_page.text
    new_id = newer.headers["location"].removeprefix("/items/")
    old_page = browser.get(decision).text
    assert f'<a href="/items/{new_id}">' in old_page, "the old version links to the new one"
    assert '<span class="badge status-superseded">superseded</span>' in old_page
    ops = re.findall(r'<span class="op">(\w+)</span>(?: by ([^<]*))?', old_page)
    assert [op for op, _ in ops] == ["insert", "blocked", "supersede"], ops
    assert ops[1][1] == "key:acme/curator via web UI ", "the refused edit is audited as the key"

    assert browser.post(f"/items/{memory['other_tenant']}/delete", {"csrf": csrf}).status_code == 404
    assert browser.post(f"/items/{memory['other_tenant']}/edit", {"csrf": csrf, "data.title": "x"}).status_code == 404
    assert export(db, tmp_path, [memory["other_tenant"]]) == before, "another tenant's item is untouched"


def test_a_read_key_sees_no_curation_and_may_not_post(db, serve, memory):
    browser, server = signed_in(db, serve, "reader", "read")
    target = f"/items/{memory['section']}"
    page = browser.get(target).text
    assert "/edit" not in page and "/delete" not in page and 'name="csrf"' not in page.replace(
        re.search(r'<form class="logout".*?</form>', page, re.S).group(0), "")
    csrf = browser.csrf("/")
    refused = browser.post(f"{target}/delete", {"csrf": csrf})
    assert refused.status_code == 403 and "role read" in refused.text
    assert browser.get(target).status_code == 200, "still there"


def test_a_session_dies_with_its_key(db, serve, memory):
    browser, server = signed_in(db, serve, "temp", "write")
    assert "Webhook" in browser.get("/").text
    cortex(db, "keys", "revoke", "temp")
    after = browser.get("/")
    assert after.status_code == 401 and 'action="/login"' in after.text, after.text
    assert "revoked" in after.text and "Webhook" not in after.text
    assert browser.get(f"/items/{memory['section']}").status_code == 200
    assert 'action="/login"' in browser.get(f"/items/{memory['section']}").text, "signed out everywhere"


def test_a_keyless_loopback_server_shows_the_memory_directly_to_this_machine_only(db, serve, memory):
    server = serve()
    browser = Browser(server.base)
    home = browser.get("/")
    assert home.status_code == 200 and "billing" in home.text and 'action="/login"' not in home.text
    assert ">local <" in home.text
    assert browser.get(f"/items/{memory['other_tenant']}").status_code == 200, "the local user owns every item"
    style = browser.get("/ui/style.css")
    assert style.status_code == 200 and style.headers["content-type"].startswith("text/css")

    port = server.base.rsplit(":", 1)[1]
    for name in ["evil.example", f"evil.example:{port}", f"127.0.0.1.nip.example:{port}"]:
        rebound = httpx.get(server.base + "/", headers={"Host": name}, timeout=TIMEOUT)
        assert rebound.status_code == 403, name
        assert "billing" not in rebound.text and "set-cookie" not in rebound.headers, "DNS rebinding reads nothing"
    assert httpx.get(f"http://localhost:{port}/", timeout=TIMEOUT).status_code == 200


def test_activity_counts_what_the_key_sees(db, serve, memory):
    browser, _ = signed_in(db, serve, "reviewer", "read")
    page = browser.get("/activity")
    assert page.status_code == 200
    assert_ui_headers(page)
    today = re.search(r'<tbody>\s*<tr><td><a href="[^"]+"><time datetime="[0-9-]+">[0-9-]+</time></a></td>'
                      r"<td><meter[^>]*>.*?</td><td>(\d+)</td>", page.text)
    assert today and int(today.group(1)) == 5, "acme's five inserts today (globex's is not counted)"
    for name in ["section", "decision", "billing", "ledger", "relation"]:
        assert f'href="/items/{memory[name]}"' in page.text, name
    assert memory["other_tenant"] not in page.text
    assert_loads_nothing_from_elsewhere(page.text)


def test_over_https_the_session_cookie_is_secure(https_server):  # noqa: F811 (the fixture)
    url, ca = https_server
    trust = ssl.create_default_context()
    ca.configure_trust(trust)
    home = httpx.get(url.removesuffix("/mcp") + "/", verify=trust, timeout=TIMEOUT)
    assert home.status_code == 200, home.text
    cookie = home.headers["set-cookie"]
    assert "; Secure" in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie, cookie


def test_the_admin_page_is_for_admin_keys(db, serve, memory):
    admin_key = make_key(db, "boss", "admin")
    browser, server = signed_in(db, serve, "reader", "read")
    assert 'href="/admin"' not in browser.get("/").text
    refused = browser.get("/admin")
    assert refused.status_code == 403 and "role admin" in refused.text

    admin = Browser(server.base)
    admin.sign_in(admin_key)
    page = admin.get("/admin")
    assert page.status_code == 200, page.text
    assert_ui_headers(page)
    assert re.search(r"<dt>ready</dt><dd[^>]*>yes</dd>", page.text)
    assert "cortex_http_requests_total" in page.text, "the metrics /metrics exposes"
    assert "reader" in page.text, "the keys of its org (tests/e2e/test_ui_admin.py)"
    assert "cortex audit --verify" in page.text


def test_the_local_user_sees_keys_and_audit_on_the_admin_page(db, serve, memory):
    server = serve()
    page = Browser(server.base).get("/admin")
    assert page.status_code == 200 and "No key exists" in page.text
    assert "no problem found" in page.text, page.text


def test_a_text_longer_than_a_page_reads_is_never_written_back_cut(db, serve, tmp_path):
    paragraphs = "\n\n".join(f"## Part {i}\n\nQueue consumers retry step {i} with backoff and jitter." * 3
                               for i in range(200))
    assert len(paragraphs) > 25_000
    [long_id] = store_as_local(db, [{"kind": "section", "scope": at("acme"), "content": paragraphs}])
    before = export(db, tmp_path, [long_id])
    browser, _ = signed_in(db, serve, "curator", "write")
    page = browser.get(f"/items/{long_id}").text
    assert 'name="content"' not in page and "too long to edit here" in page
    refused = browser.post(f"/items/{long_id}/edit", {"csrf": browser.csrf(f"/items/{long_id}"), "content": "short"})
    assert refused.status_code == 422 and "memory_store" in refused.text
    assert export(db, tmp_path, [long_id]) == before, "the whole text is kept"


def test_search_pages_and_filters(db, serve):
    items = [{"kind": "todo", "scope": at("acme"), "dedupe": False, "tags": ["queue"] if i % 2 else ["ops"],
              "data": {"title": f"Drain queue shard {i:02d}", "status": "open" if i < 20 else "done"}}
             for i in range(26)]
    store_as_local(db, items)
    browser, _ = signed_in(db, serve, "reviewer", "read")

    def titles(page: str) -> list[str]:
        return re.findall(r'class="title" href="/items/[^"]+">([^<]+)</a>', page)

    first = browser.get("/", params={"q": "drain queue shard", "mode": "fast"}).text
    seen = titles(first)
    assert len(seen) == 20, seen
    next_link = html.unescape(re.search(r'<a rel="next" href="([^"]+)">', first).group(1))
    assert "mode=fast" in next_link and "cursor=" in next_link
    second = browser.get(next_link).text
    assert len(titles(second)) == 6 and not set(titles(second)) & set(seen), "the next page goes on"
    assert 'rel="next"' not in second
    assert len(set(seen + titles(second))) == 26

    done = titles(browser.get("/", params={"q": "drain queue shard", "status": "done"}).text)
    assert sorted(done) == [f"Drain queue shard {i}" for i in range(20, 26)], done
    tagged = titles(browser.get("/", params={"q": "drain queue shard", "tags": "queue"}).text)
    assert len(tagged) == 13 and all(int(t[-2:]) % 2 for t in tagged), tagged
    future = browser.get("/", params={"q": "drain queue shard", "since": "2999-01-01"})
    assert future.status_code == 200 and titles(future.text) == []
    bad_date = browser.get("/", params={"q": "drain", "since": "yesterday-ish"})
    assert bad_date.status_code == 400 and "since" in bad_date.text


def test_newest_lists_what_happened_last_first(db, serve):
    # Stored in this order; what they record happened in another.
    changes = [("Move sessions to Postgres", "2020-03-01T10:00:00Z"), ("Drop the v1 API", "2024-06-01T10:00:00Z"),
               ("Cache price lists", "2022-01-15T10:00:00Z")]
    store_as_local(db, [{"kind": "change", "scope": at("acme"), "occurred_at": when,
                         "data": {"change_type": "feature", "subject_ref": f"c{i}", "title": title, "summary": title}}
                        for i, (title, when) in enumerate(changes)])
    browser, _ = signed_in(db, serve, "reviewer", "read")
    page = browser.get("/").text
    titles = re.findall(r'class="title" href="/items/[^"]+">([^<]+)</a>', page)
    assert titles[:3] == ["Drop the v1 API", "Cache price lists", "Move sessions to Postgres"], titles
