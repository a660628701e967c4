"""The item page and curation as a person uses them, in a real headless Chromium on each backend,
at desktop (1400 px) and phone (390 px) widths, on real material: adr-tools' own decision
records (tests/fixtures/ingest) committed to a git repository the test makes and read with
`cortex ingest`. One decision's file then changes in two commits, so its page says it may be out
of date and "Still true" clears that; its body is on the page once; the edit form offers the
status as a select; a refused edit keeps what was typed and saves it as a new version; a delete
is asked for first and undone after; a new todo is stored through the new-item form; a
runbook's steps are edited in the lines the item page shows them in, and the local user reads
the status page's search indexes. Every page's screenshot is saved in the test's tmp folder, and no page scrolls sideways at 390 px."""

import base64
import json
import re
import shutil
import subprocess
from pathlib import Path

import httpx

from conftest import BIN, ROOT, TIMEOUT, server_env
from http_server import serve  # noqa: F401 (a fixture)
from test_ui_browser import chromium  # noqa: F401 (a fixture)

ADRS = ROOT / "tests" / "fixtures" / "ingest" / "npryce+adr-tools" / "doc" / "adr"
ADR = "doc/adr/0004-markdown-format.md"
FIRST_SENTENCE = "The decision records must be stored in a plain text format:"
WIDTHS = (1400, 390)


def git(repo: Path, *args: str):
    subprocess.run(["git", "-c", "user.name=Test", "-c", "user.email=test@example.com", *args], cwd=repo,
                   check=True, capture_output=True, timeout=TIMEOUT)


def project(tmp_path: Path) -> Path:
    """A git repository holding adr-tools' decision records, committed."""
    repo = tmp_path / "project"
    shutil.copytree(ADRS, repo / "doc" / "adr")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "decision records")
    return repo


def run(db, repo: Path, *args: str) -> str:
    out = subprocess.run([BIN, *args], cwd=repo, env=server_env(db), capture_output=True, text=True,
                         timeout=TIMEOUT)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def visible_text(chromium) -> str:
    return chromium.js("document.body.innerText")


def shoot(chromium, tmp_path: Path, name: str):
    """Each width's screenshot of the page, and no sideways scroll at any."""
    for width in WIDTHS:
        chromium.call("Emulation.setDeviceMetricsOverride",
                      {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600})
        # A phone's layout viewport widens to the content, so the page is measured against the
        # device's width (clientWidth), not innerWidth.
        wide = chromium.js("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert wide[0] <= wide[1] <= width, f"{name} scrolls sideways at {width} px: {wide}"
        shot = base64.b64decode(chromium.call("Page.captureScreenshot", {"format": "png"})["data"])
        (tmp_path / f"{name}-{width}.png").write_bytes(shot)
    chromium.call("Emulation.clearDeviceMetricsOverride")


def click(chromium, selector: str):
    chromium.loads(lambda: chromium.js(f"document.querySelector({selector!r}).click()"))


def test_an_item_read_confirmed_edited_deleted_and_undone_in_chromium(db, serve, chromium, tmp_path):
    repo = project(tmp_path)
    run(db, repo, "ingest", "doc/adr")
    # An agent's note about the file (ingested documents name no files it concerns), written
    # in the checkout at its commit.
    note = {"kind": "section", "data": {"title": "How adr-tools formats its records",
                                        "body": (repo / ADR).read_text().split("## Context", 1)[1]},
            "source": {"actor": "claude", "session": "s-42", "files": [ADR]}}
    stored = json.loads(run(db, repo, "store", json.dumps({"items": [note]})))
    note_page = f"/items/{stored['results'][0]['id']}"
    # The file changes after that, in two commits.
    for n in (1, 2):
        with open(repo / ADR, "a") as f:
            f.write(f"\nRevised {n}.\n")
        git(repo, "commit", "-q", "-am", f"revise the Markdown decision {n}")
    server = serve(cwd=repo)  # a server reads the history of its checkout when it starts
    found = httpx.get(server.base + "/", params={"q": "Markdown format"}, timeout=TIMEOUT).text
    item = re.search(r'href="(/items/[0-9a-f-]+)">Markdown format<', found).group(1)

    chromium.go(server.base + item)
    assert chromium.js("document.querySelector('h1').textContent") == "Markdown format"
    text = visible_text(chromium)
    assert text.count(FIRST_SENTENCE) == 1, "the body once"
    assert chromium.js("document.querySelector('.meta .badge').textContent") == "accepted"
    assert chromium.js("document.querySelector('details.search-text').open") is False, "the search text hidden"
    exact = chromium.js("document.querySelector('dl.facts time').getAttribute('title')")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", exact), exact
    assert chromium.js("document.querySelector('dl.facts time').textContent") in ("just now", "1 minute ago")
    origin = chromium.js("document.querySelector('dl.origin').innerText")
    assert "via cortex ingest" in origin and ADR in origin, origin
    shoot(chromium, tmp_path, "item")

    chromium.go(server.base + note_page)
    assert visible_text(chromium).count(FIRST_SENTENCE) == 1, "the body once"
    stale = chromium.js("document.querySelector('.stale').innerText")
    assert "changed in 2 commits" in stale and ADR in stale, stale
    origin = chromium.js("document.querySelector('dl.origin').innerText")
    assert "claims agent claude" in origin and "session s-42" in origin and ADR in origin, origin
    shoot(chromium, tmp_path, "item-stale")

    click(chromium, "form.confirm button")
    assert "Confirmed" in chromium.js("document.querySelector('.notice').textContent")
    assert chromium.js("document.querySelector('.stale')") is None, "the flag is cleared"
    ops = chromium.js("[...document.querySelectorAll('.timeline .op')].map(e => e.textContent)")
    assert ops[-1] == "confirm", ops
    chromium.go(server.base + note_page)
    assert chromium.js("document.querySelector('.stale')") is None, "and stays cleared"

    chromium.go(server.base + item)
    click(chromium, ".actions a[href$='/edit']")
    assert chromium.js("document.querySelector('select[name=\"data.status\"]').value") == "accepted"
    options = chromium.js("[...document.querySelectorAll('select[name=\"data.status\"] option')].map(o => o.value)")
    assert options == ["proposed", "accepted", "rejected", "deprecated", "superseded"], options
    shoot(chromium, tmp_path, "edit")
    typed = "Markdown, and AsciiDoc where a project already writes it."
    chromium.js(f"document.querySelector('textarea[name=\"data.rationale\"]').value = {typed!r}")
    click(chromium, "form.edit button[type=submit]")
    assert chromium.js("document.querySelector('textarea[name=\"data.rationale\"]').value") == typed, \
        "a refused edit keeps what was typed"
    problem = chromium.js("document.querySelector('.problem').innerText")
    assert "this decision is accepted" in problem and "Save as a new version" in problem, problem
    first = chromium.js("document.querySelector('form.edit .actions button').textContent")
    assert first == "Save as a new version", first
    shoot(chromium, tmp_path, "edit-refused")
    click(chromium, "form.edit .actions button")
    newer = chromium.js("location.pathname")
    assert newer != item and typed in visible_text(chromium)
    assert chromium.js(f"!!document.querySelector('ol.chain a[href=\"{item}\"]')"), "the chain links back"

    click(chromium, ".actions a[href$='/delete']")
    assert chromium.js("document.querySelector('h1').textContent") == "Delete this decision?"
    shoot(chromium, tmp_path, "delete-confirm")
    click(chromium, "form.delete button")
    assert chromium.js("document.querySelector('h1').textContent") == "Deleted"
    assert httpx.get(server.base + newer, timeout=TIMEOUT).status_code == 404, "deleted"
    shoot(chromium, tmp_path, "deleted-undo")
    click(chromium, "form.undo button")
    assert chromium.js("location.pathname") == newer, "undone: back on its page"
    assert typed in visible_text(chromium)

    # Only the status changes: every other field goes back as it came (an accepted decision's
    # rationale may not change, so a field altered on the way would be refused).
    found = httpx.get(server.base + "/", params={"q": "Help comments"}, timeout=TIMEOUT).text
    help_page = re.search(r'href="(/items/[0-9a-f-]+)">Help comments<', found).group(1)
    chromium.go(server.base + help_page + "/edit")
    chromium.js("document.querySelector('select[name=\"data.status\"]').value = 'deprecated'")
    click(chromium, "form.edit .actions button[type=submit]")
    assert chromium.js("location.pathname") == help_page + "/edit"  # the form posts to itself
    assert chromium.js("document.querySelector('.notice').textContent") == "Saved.", visible_text(chromium)
    assert chromium.js("document.querySelector('.meta .badge').textContent") == "deprecated"

    chromium.go(server.base + "/new?kind=todo")
    shoot(chromium, tmp_path, "new-todo")
    chromium.js("document.querySelector('input[name=\"data.title\"]').value = 'Render ADRs in the docs site'")
    click(chromium, "form.edit button[type=submit]")
    problem = chromium.js("document.querySelector('.field.refused') && document.querySelector('.field.refused').innerText")
    assert problem and "status" in problem, "the missing field named beside it"
    assert chromium.js("document.querySelector('input[name=\"data.title\"]').value") == "Render ADRs in the docs site"
    chromium.js("document.querySelector('select[name=\"data.status\"]').value = 'open'")
    click(chromium, "form.edit button[type=submit]")
    assert chromium.js("document.querySelector('h1').textContent") == "Render ADRs in the docs site"
    assert chromium.js("document.querySelector('.meta .badge').textContent") == "open"

    assert not chromium.seen("Page.javascriptDialogOpening")
    blocked = [e["params"]["entry"]["text"] for e in chromium.seen("Log.entryAdded")
               if "Content Security Policy" in e["params"]["entry"]["text"]]
    assert not blocked, blocked


def test_an_empty_memory_says_how_to_seed_it(db, serve, chromium, tmp_path):
    server = serve()
    chromium.go(server.base + "/")
    text = visible_text(chromium)
    assert "This memory is empty" in text and "cortex ingest docs CHANGELOG.md --git" in text, text
    assert "cortex install claude-code" in text
    shoot(chromium, tmp_path, "empty")


def test_a_runbooks_steps_edited_as_lines_and_the_status_page_in_chromium(db, serve, chromium, tmp_path):
    """The local user edits a runbook's steps in the lines the item page shows them in, is
    refused a command before any description (what was typed kept), and reads the status
    page's search indexes."""
    runbook = {"kind": "runbook", "data": {"title": "Restart a Kubernetes node", "service": "cluster", "steps": [
        {"description": "Cordon and drain the node",
         "command": "kubectl cordon node-1\nkubectl drain node-1 --ignore-daemonsets --delete-emptydir-data",
         "expected_outcome": "node/node-1 cordoned"},
        {"description": "Restart the kubelet", "command": "sudo systemctl restart kubelet"},
        {"description": "Check that the node is Ready again", "command": "kubectl get node node-1 -o wide",
         "expected_outcome": "STATUS Ready"}]}}
    stored = json.loads(run(db, tmp_path, "store", json.dumps({"items": [runbook]})))
    page = f"/items/{stored['results'][0]['id']}"
    server = serve(cwd=tmp_path)

    chromium.go(server.base + page + "/edit")
    steps = chromium.js("document.querySelector('textarea[name=\"data.steps\"]').value")
    assert steps.startswith("Cordon and drain the node\n$ kubectl cordon node-1\n$ kubectl drain"), steps
    assert "\nexpect: node/node-1 cordoned\n\nRestart the kubelet\n" in steps, steps
    hint = chromium.js("document.querySelector('textarea[name=\"data.steps\"] ~ .help').textContent")
    assert "$ " in hint and "expect:" in hint, hint
    shoot(chromium, tmp_path, "edit-runbook")
    added = steps + "\n\nLet pods be scheduled on it again\n$ kubectl uncordon node-1\nexpect: node/node-1 uncordoned"
    chromium.js(f"document.querySelector('textarea[name=\"data.steps\"]').value = {json.dumps(added)}")
    click(chromium, "form.edit .actions button[type=submit]")
    assert chromium.js("document.querySelector('.notice').textContent") == "Saved.", visible_text(chromium)
    chromium.go(server.base + page)
    shown = chromium.js("[...document.querySelectorAll('ol li pre')].map(p => p.textContent)")
    assert shown[-1] == "kubectl uncordon node-1", shown
    shoot(chromium, tmp_path, "item-runbook")

    chromium.go(server.base + page + "/edit")
    typed = "$ kubectl delete node node-1\nRemove the node"
    chromium.js(f"document.querySelector('textarea[name=\"data.steps\"]').value = {json.dumps(typed)}")
    click(chromium, "form.edit .actions button[type=submit]")
    problem = chromium.js("document.querySelector('.field.refused').innerText")
    assert "`steps[0].description` is required" in problem, problem
    assert "every step needs a description" in chromium.js("document.querySelector('.problem').innerText")
    assert chromium.js("document.querySelector('textarea[name=\"data.steps\"]').value") == typed
    shoot(chromium, tmp_path, "edit-runbook-refused")

    chromium.go(server.base + "/admin")
    headings = chromium.js("[...document.querySelectorAll('h1, h2')].map(h => h.textContent)")
    assert "Search indexes" in headings, headings
    indexes = chromium.js("document.querySelector('dl.indexes').innerText")
    assert "sound" in indexes and "vectors" in indexes and "items" in indexes, indexes
    shoot(chromium, tmp_path, "admin-local")
