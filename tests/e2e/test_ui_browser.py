"""The web UI (issue 35) in a real headless Chromium, driven through its DevTools protocol over a
websocket, on each backend: sign in through the form, search, open an item, edit it, see its
history, the graph and activity pages; the page's own stylesheet applies under the Content-Security-Policy, nothing is blocked
or run (a stored `<script>` title opens no dialog), the session cookie is out of script's reach;
and a screenshot of the signed-in search page."""

import base64
import itertools
import json
import os
import shutil
import struct
import subprocess
import time
import urllib.request

import pytest
import websocket

from conftest import TIMEOUT
from http_server import make_key, serve  # noqa: F401 (serve is a fixture)
from test_ui import EVIL, at, store_as_local

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class Chromium:
    """A headless Chromium with one page, and a DevTools client for it."""

    def __init__(self, profile):
        assert CHROMIUM, "Chromium is needed: apt-get install -y --no-install-recommends chromium (scripts/test does)"
        args = [CHROMIUM, "--headless=new", "--remote-debugging-port=0", f"--user-data-dir={profile}",
                "--no-first-run", "--no-default-browser-check", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-extensions", "--window-size=1280,900", "about:blank"]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")  # Chromium refuses to run as root inside its sandbox.
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + TIMEOUT
        while not (port_file.exists() and port_file.read_text().strip()):
            assert self.proc.poll() is None, "Chromium exited at start"
            assert time.monotonic() < deadline, "Chromium did not open its DevTools port"
            time.sleep(0.1)
        port = port_file.read_text().split()[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=TIMEOUT) as r:
            pages = [t for t in json.load(r) if t["type"] == "page"]
        self.ws = websocket.create_connection(pages[0]["webSocketDebuggerUrl"], timeout=TIMEOUT,
                                                suppress_origin=True)  # DevTools refuses pages' origins
        self.ids = itertools.count(1)
        self.events: list[dict] = []
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")

    def call(self, method: str, params: dict | None = None) -> dict:
        ident = next(self.ids)
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params or {}}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == ident:
                assert "error" not in message, (method, message["error"])
                return message["result"]
            self.events.append(message)

    def wait_for(self, event: str) -> dict:
        deadline = time.monotonic() + TIMEOUT
        while True:
            for e in self.events:
                if e.get("method") == event:
                    self.events.remove(e)
                    return e
            assert time.monotonic() < deadline, f"no {event}"
            self.events.append(json.loads(self.ws.recv()))

    def loads(self, action):
        """Runs `action` (which navigates) and waits until the next page has loaded."""
        self.events = [e for e in self.events if e.get("method") != "Page.loadEventFired"]
        action()
        self.wait_for("Page.loadEventFired")

    def go(self, url: str):
        self.loads(lambda: self.call("Page.navigate", {"url": url}))

    def js(self, expression: str):
        """Evaluated by DevTools (not by the page, whose policy allows no script of its own)."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        assert "exceptionDetails" not in result, result
        return result["result"].get("value")

    def until(self, expression: str):
        """`expression`'s value once it is truthy: for what the browser does after the load
        event, such as an `autofocus` applied at the next rendering."""
        deadline = time.monotonic() + TIMEOUT
        while not (value := self.js(expression)):
            assert time.monotonic() < deadline, f"never true: {expression}"
            time.sleep(0.05)
        return value

    def seen(self, method: str) -> list[dict]:
        return [e for e in self.events if e.get("method") == method]

    def close(self):
        self.ws.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def chromium(tmp_path):
    browser = Chromium(tmp_path / "chromium-profile")
    yield browser
    browser.close()


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "a PNG"
    return struct.unpack(">II", data[16:24])


def test_sign_in_search_open_edit_in_chromium(db, serve, chromium, tmp_path):
    ids = store_as_local(db, [
        {"kind": "section", "scope": at("acme"), "data": {
            "title": f"{EVIL} Webhook retries", "body": "Retry **webhook** deliveries with backoff."}},
        {"kind": "section", "scope": at("acme"), "data": {
            "title": "Webhook signatures", "body": "Receivers check the HMAC of each webhook."}},
        {"kind": "decision", "scope": at("acme"), "data": {
            "component": "webhooks", "status": "accepted", "title": "Sign webhook payloads with HMAC",
            "rationale": "receivers verify the sender"}},
    ])
    graph = store_as_local(db, [
        {"kind": "entity", "scope": at("acme"), "data": {"entity_type": "service", "name": "webhook-relay"}},
        {"kind": "entity", "scope": at("acme"), "data": {"entity_type": "service", "name": "billing"}},
        {"kind": "entity", "scope": at("acme"), "data": {"entity_type": "service", "name": "ledger"}},
    ])
    store_as_local(db, [
        {"kind": "relation", "scope": at("acme"), "data": {"from": graph[1], "to": graph[0], "relation_type": "calls"}},
        {"kind": "relation", "scope": at("acme"), "data": {"from": graph[0], "to": graph[2], "relation_type": "writes"}},
    ])
    token = make_key(db, "curator", "write")
    server = serve()

    chromium.go(server.base + "/")
    assert chromium.js("document.title").startswith("Sign in")
    chromium.loads(lambda: chromium.js(
        f"document.querySelector('input[name=token]').value = {json.dumps(token)};"
        "document.querySelector('form[action=\"/login\"]').requestSubmit()"))
    assert chromium.js("location.pathname") == "/", chromium.js("document.body.innerText")
    assert "curator" in chromium.js("document.querySelector('.who').textContent")
    assert chromium.js("document.cookie") == "", "the session cookie is HttpOnly"

    chromium.loads(lambda: chromium.js(
        "document.querySelector('input[name=q]').value = 'webhook';"
        "document.querySelector('form.search').requestSubmit()"))
    assert chromium.js("location.search").startswith("?q=webhook")
    titles = chromium.js("[...document.querySelectorAll('.hit .title')].map(a => a.textContent)")
    assert f"{EVIL} Webhook retries" in titles and "Webhook signatures" in titles, titles
    assert chromium.js("document.querySelectorAll('script').length") == 0
    assert chromium.js("getComputedStyle(document.querySelector('.bar')).borderBottomStyle") == "solid", \
        "the server's own stylesheet applies under the CSP"
    shot = base64.b64decode(chromium.call("Page.captureScreenshot", {"format": "png"})["data"])
    screenshot = tmp_path / "search.png"
    screenshot.write_bytes(shot)
    width, height = png_size(screenshot.read_bytes())
    assert width >= 800 and height >= 600 and screenshot.stat().st_size > 10_000, (width, height)

    chromium.loads(lambda: chromium.js(
        f"document.querySelector('a[href=\"/items/{ids[1]}\"]').click()"))
    assert chromium.js("location.pathname") == f"/items/{ids[1]}"
    assert chromium.js("document.querySelector('h1').textContent") == "Webhook signatures"
    assert chromium.js("document.querySelector('.timeline .op').textContent") == "insert"

    chromium.loads(lambda: chromium.js("document.querySelector('.actions a[href$=\"/edit\"]').click()"))
    chromium.loads(lambda: chromium.js(
        "document.querySelector('input[name=\"data.title\"]').value = 'Webhook signatures (HMAC-SHA256)';"
        "document.querySelector('form.edit').requestSubmit()"))
    assert chromium.js("document.querySelector('h1').textContent") == "Webhook signatures (HMAC-SHA256)"
    ops = chromium.js("[...document.querySelectorAll('.timeline .op')].map(td => td.textContent)")
    assert ops == ["insert", "update"], ops

    chromium.go(server.base + f"/items/{ids[0]}")
    assert chromium.js("document.querySelector('h1').textContent") == f"{EVIL} Webhook retries"

    chromium.go(server.base + f"/items/{graph[0]}")
    chromium.loads(lambda: chromium.js("document.querySelector('.graph-link a').click()"))
    assert chromium.js("document.querySelectorAll('svg.graph circle').length") == 3
    assert chromium.js("document.querySelector('svg.graph').getBoundingClientRect().width") > 300, "drawn"
    (tmp_path / "graph.png").write_bytes(
        base64.b64decode(chromium.call("Page.captureScreenshot", {"format": "png"})["data"]))

    chromium.loads(lambda: chromium.js("document.querySelector('nav a[href=\"/activity\"]').click()"))
    assert chromium.js("document.querySelectorAll('.activity meter').length") == 14
    assert chromium.js("document.querySelector('.activity meter').value") >= 4, "today's changes drawn"
    activity = base64.b64decode(chromium.call("Page.captureScreenshot", {"format": "png"})["data"])
    (tmp_path / "activity.png").write_bytes(activity)

    assert chromium.js("document.querySelectorAll('svg.chart rect').length") >= 1, "the per-kind chart"

    # Delete, find it among the deleted items, restore it.
    chromium.go(server.base + f"/items/{ids[1]}")
    chromium.loads(lambda: chromium.js("document.querySelector('.actions a[href$=\"/delete\"]').click()"))
    chromium.loads(lambda: chromium.js("document.querySelector('form.delete').requestSubmit()"))
    assert chromium.js("document.querySelector('h1').textContent") == "Deleted"
    chromium.loads(lambda: chromium.js("document.querySelector('nav a[href=\"/trash\"]').click()"))
    assert "Webhook signatures (HMAC-SHA256)" in chromium.js("document.querySelector('table.deleted').textContent")
    chromium.loads(lambda: chromium.js(
        f"document.querySelector('form.restore[action=\"/items/{ids[1]}/restore\"]').requestSubmit()"))
    assert chromium.js("location.pathname") == f"/items/{ids[1]}", chromium.js("document.body.innerText")
    ops = chromium.js("[...document.querySelectorAll('.timeline .op')].map(td => td.textContent)")
    assert ops == ["insert", "update", "delete", "restore"], ops

    assert not chromium.seen("Page.javascriptDialogOpening"), "no stored script ran"
    blocked = [e["params"]["entry"]["text"] for e in chromium.seen("Log.entryAdded")
               if "Content Security Policy" in e["params"]["entry"]["text"]]
    assert not blocked, blocked
