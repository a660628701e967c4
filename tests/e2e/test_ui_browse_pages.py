"""The web UI's browsing pages in a real headless Chromium (the DevTools client of
test_ui_browser.py), as a person sees them at 1400 and 390 px wide: the activity feed names the
items, who changed them and the agent and session the client claimed; search has a project
picker, a heading that says which results it shows, Previous and Next, and the focus in its
field; a snippet starting inside bold text marks what matched; the status page reads as words;
the graph has a legend and arrows. No page scrolls sideways, nothing is blocked by the
Content-Security-Policy, and a screenshot of every page at each width is saved (the test's tmp
folder) for a person to look at."""

import base64
import json

from http_server import cortex, make_key, serve  # noqa: F401 (serve is a fixture)
from test_ui import at, store_as_local
from test_ui_browser import Chromium, chromium, png_size  # noqa: F401 (chromium is a fixture)

WIDTHS = (1400, 390)


def seed(db) -> dict:
    """Two projects of acme: a batch an agent stored in one session, a bold-text section,
    enough tasks for two pages of results, and two linked entities."""
    batch = store_as_local(db, [
        {"kind": "decision", "scope": at("acme"), "source": {"actor": "claude-code", "session": "sess-7f3a"},
         "data": {"title": "Sign webhook payloads with HMAC", "component": "webhooks", "status": "accepted",
                  "rationale": "receivers verify the sender"}},
        {"kind": "todo", "scope": at("acme"), "source": {"actor": "claude-code", "session": "sess-7f3a"},
         "data": {"title": "Rotate the webhook secret", "status": "open"}},
        {"kind": "section", "scope": at("acme", "web"), "source": {"actor": "claude-code", "session": "sess-7f3a"},
         "data": {"title": "Retry policy", "body": " ".join(["Context words before the span."] * 12)
                  + " **The webhook deliveries retry with exponential backoff** and jitter, capped at one hour."}},
    ])
    store_as_local(db, [
        {"kind": "todo", "scope": at("acme"), "dedupe": False, "source": {"actor": "codex", "session": "sess-91bc"},
         "data": {"title": f"Drain queue shard {i:02d}", "status": "open"}} for i in range(26)])
    graph = store_as_local(db, [
        {"kind": "entity", "scope": at("acme"), "data": {"entity_type": "service", "name": "webhook-relay"}}])
    store_as_local(db, [{"kind": "relation", "scope": at("acme"),
                         "data": {"from": batch[0], "to": graph[0], "relation_type": "applies_to"}}])
    return {"decision": batch[0], "graph": graph[0]}


def at_width(chromium, width: int):
    chromium.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600})


def look(chromium, tmp_path, name: str, width: int):
    """The page as shown: no sideways scroll; a screenshot saved."""
    scroll = chromium.js("[document.documentElement.scrollWidth, innerWidth]")
    assert scroll[0] <= scroll[1], f"{name} at {width}px scrolls sideways: {scroll}"
    shot = base64.b64decode(chromium.call("Page.captureScreenshot", {"format": "png"})["data"])
    path = tmp_path / f"{name}-{width}.png"
    path.write_bytes(shot)
    assert png_size(shot)[0] == width, (name, png_size(shot))


def texts(chromium, selector: str) -> list[str]:
    return chromium.js(f"[...document.querySelectorAll({json.dumps(selector)})].map(e => e.textContent.trim())")


def test_browsing_pages_as_a_person_sees_them(db, serve, chromium, tmp_path):
    ids = seed(db)
    token = make_key(db, "boss", "admin")
    server = serve()
    chromium.go(server.base + "/")
    chromium.loads(lambda: chromium.js(
        "document.querySelector('input[name=token]').value = 'not a token';"
        "document.querySelector('form[action=\"/login\"]').requestSubmit()"))
    said = chromium.js("document.querySelector('.problem').textContent")
    assert "not a Cortex token" in said and "Authorization" not in said, said
    chromium.loads(lambda: chromium.js(
        f"document.querySelector('input[name=token]').value = {json.dumps(token)};"
        "document.querySelector('form[action=\"/login\"]').requestSubmit()"))
    assert chromium.js("location.pathname") == "/", chromium.js("document.body.innerText")

    for width in WIDTHS:
        at_width(chromium, width)

        chromium.go(server.base + "/")
        assert chromium.until("document.activeElement.name === 'q'"), "the search field has the focus"
        assert chromium.js("document.querySelector('input[name=q]').accessKey") == "/"
        places = chromium.js("[...document.querySelectorAll('select[name=in] option')].map(o => o.value)")
        assert {"here", "all", "acme/api", "acme/web"} <= set(places), places
        look(chromium, tmp_path, "home", width)

        chromium.go(server.base + "/?q=drain+queue+shard&mode=fast")
        heading = chromium.js("document.querySelector('h1').textContent")
        assert heading == "Results 1–20 for “drain queue shard”, more on the next page", heading
        assert chromium.js("document.querySelector('a[rel=prev]')") is None
        look(chromium, tmp_path, "search", width)
        chromium.loads(lambda: chromium.js("document.querySelector('a[rel=next]').click()"))
        assert chromium.js("document.querySelector('h1').textContent") == "Results 21–26 for “drain queue shard”"
        assert len(texts(chromium, ".hit .title")) == 6
        assert chromium.js("document.querySelector('a[rel=next]')") is None
        chromium.loads(lambda: chromium.js("document.querySelector('a[rel=prev]').click()"))
        assert len(texts(chromium, ".hit .title")) == 20, "Previous goes back to the first page"
        look(chromium, tmp_path, "search-page-1-again", width)
        # An author no one is: nothing found, the field kept and the filters shown open.
        chromium.go(server.base + "/?q=drain+queue+shard&mode=fast&author=key%3Aacme%2Fnobody")
        assert chromium.js("document.querySelector('input[name=author]').value") == "key:acme/nobody"
        assert chromium.js("document.querySelector('form details').open")
        assert texts(chromium, ".hit .title") == []
        look(chromium, tmp_path, "search-author", width)

        # Only acme/web holds the bold section; its snippet marks the words that matched.
        chromium.go(server.base + "/?q=jitter+backoff&mode=fast&in=acme%2Fweb")
        assert texts(chromium, ".hit .title") == ["Retry policy"]
        marked = texts(chromium, ".hit .snippet mark")
        assert sorted(m.lower() for m in marked) == ["backoff", "jitter"], marked
        assert "**" not in chromium.js("document.querySelector('.hit .snippet').textContent")
        chromium.go(server.base + "/?q=jitter+backoff&mode=fast&in=acme%2Fapi")
        assert texts(chromium, ".hit .title") == [], "the picker's project only"

        chromium.go(server.base + "/activity")
        titles = texts(chromium, ".change .title")
        for title in ["Sign webhook payloads with HMAC", "Rotate the webhook secret", "Retry policy"]:
            assert title in titles, titles
        batches = texts(chromium, ".change .batch")
        assert any(b.startswith("26 changes in one batch") for b in batches), batches
        assert all(p for p in texts(chromium, ".change .principal")), "who made each change"
        assert "agent claude-code" in texts(chromium, ".change .agent")
        assert "session sess-7f3a" in texts(chromium, ".change .session")
        hover = chromium.js("document.querySelector('.change time').title")
        assert hover.endswith("Z") and "T" in hover, hover
        assert chromium.js("document.querySelectorAll('svg.chart rect').length") >= 1, "the chart is kept"
        look(chromium, tmp_path, "activity", width)
        chromium.go(server.base + "/activity?agent=codex")
        assert all(t.startswith("Drain queue shard") for t in texts(chromium, ".change .title")), "filtered"
        assert chromium.js("document.querySelector('select[name=agent]').value") == "codex", "kept in the form"
        look(chromium, tmp_path, "activity-filtered", width)

        chromium.go(server.base + "/admin")
        headings = texts(chromium, "h1, h2")
        for h in ["Status", "Items", "Recent refusals", "Requests", "Audit trail", "API keys"]:
            assert h in headings, headings
        routes = texts(chromium, "table.requests td code")
        assert "/activity" in routes and "/" in routes, routes
        look(chromium, tmp_path, "admin", width)

        chromium.go(server.base + f"/items/{ids['graph']}/graph")
        legend = texts(chromium, ".graph-legend .kind")
        assert set(legend) == {"entity", "decision"}, legend
        fills = chromium.js("[...document.querySelectorAll('svg.graph circle')].map(c => c.getAttribute('fill'))")
        assert len(set(fills)) == 2, fills
        assert chromium.js("document.querySelector('svg.graph line').getAttribute('marker-end')") == "url(#arrow)"
        # Each arrowhead (the last 12 px of its line) is clear of every name: relations' and nodes'.
        covered = chromium.js("""(() => {
            const labels = [...document.querySelectorAll('svg.graph text')].map(t => t.getBBox());
            return [...document.querySelectorAll('svg.graph line.edge')].filter(l => {
                const [x1, y1, x2, y2] = ['x1', 'y1', 'x2', 'y2'].map(a => +l.getAttribute(a));
                const len = Math.hypot(x2 - x1, y2 - y1) || 1;
                const pts = [0, 4, 8, 12].map(d => [x2 - (x2 - x1) * d / len, y2 - (y2 - y1) * d / len]);
                return labels.some(b => pts.some(([x, y]) =>
                    x >= b.x - 2 && x <= b.x + b.width + 2 && y >= b.y - 2 && y <= b.y + b.height + 2));
            }).length;
        })()""")
        assert covered == 0, f"{covered} arrowhead(s) under a relation's name"
        look(chromium, tmp_path, "graph", width)

        chromium.go(server.base + "/trash")
        look(chromium, tmp_path, "trash", width)

    assert not chromium.seen("Page.javascriptDialogOpening")
    blocked = [e["params"]["entry"]["text"] for e in chromium.seen("Log.entryAdded")
               if "Content Security Policy" in e["params"]["entry"]["text"]]
    assert not blocked, blocked


def test_a_revoked_key_is_brought_back_by_the_undo_on_the_next_page(db, serve, chromium, tmp_path):
    """The admin page's Revoke asks first, says the revocation can be undone for 10 minutes,
    then answers a page naming the key with an Undo button in view at either width; Undo lands
    on the admin page with the key active again."""
    token = make_key(db, "boss", "admin")
    server = serve()
    chromium.go(server.base + "/")
    chromium.loads(lambda: chromium.js(
        f"document.querySelector('input[name=token]').value = {json.dumps(token)};"
        "document.querySelector('form[action=\"/login\"]').requestSubmit()"))

    def state(name: str) -> str:
        return {k["name"]: k["state"] for k in cortex(db, "keys", "list")["keys"]}[name]

    for width in WIDTHS:
        name = f"ci-bot-{width}"
        make_key(db, name, "read")
        at_width(chromium, width)
        chromium.go(server.base + "/admin")
        revoke = ("[...document.querySelectorAll('form.revoke')]"
                  f".find(f => f.querySelector('input[name=name]').value === {json.dumps(name)})")
        chromium.loads(lambda: chromium.js(f"{revoke}.querySelector('button').click()"))
        assert chromium.js("document.querySelector('h1').textContent") == f"Revoke the key {name}?"
        assert "can be undone for 10 minutes" in chromium.js("document.body.innerText")
        look(chromium, tmp_path, "key-revoke-confirm", width)
        chromium.loads(lambda: chromium.js("document.querySelector('form.revoke button').click()"))
        assert chromium.js("document.querySelector('h1').textContent") == f"Key {name} revoked"
        assert state(name) == "revoked"
        undo = chromium.js("""(() => {
            const b = [...document.querySelectorAll('form.undo button')].find(b => b.textContent === 'Undo');
            const r = b.getBoundingClientRect();
            return [r.left, r.right, r.top, r.bottom, r.width, r.height, innerWidth, innerHeight];
        })()""")
        left, right, top, bottom, w, h, view_w, view_h = undo
        assert w > 0 and h > 0 and left >= 0 and right <= view_w and top >= 0 and bottom <= view_h, undo
        assert chromium.js("[...document.querySelectorAll('main a')].some(a => a.getAttribute('href') === '/admin')")
        assert "until" in chromium.js("document.querySelector('main').innerText")
        look(chromium, tmp_path, "key-revoked", width)
        chromium.loads(lambda: chromium.js("document.querySelector('form.undo button').click()"))
        assert chromium.js("location.pathname") == "/admin", chromium.js("document.body.innerText")
        assert state(name) == "active"
        assert chromium.js(f"{revoke} !== undefined"), "listed active again, with its Revoke button"

    blocked = [e["params"]["entry"]["text"] for e in chromium.seen("Log.entryAdded")
               if "Content Security Policy" in e["params"]["entry"]["text"]]
    assert not blocked, blocked
