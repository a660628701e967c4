"""Secrets and principals from outside, on each backend, through the real binary: an edit in the
web UI carrying a credential is stored redacted (the page, a find and the SQLite file never
hold it); `cortex import` of an export made under `CORTEX_SECRETS=off` stores it redacted;
`cortex secrets scan` lists what an `off` server stored (never the secret) and `--redact`
replaces it as an audited update, after which SQLite's file holds it no more once `VACUUM` has
run. A writer's forged `source.actor` over MCP (the official Python client, Streamable HTTP) is
kept as a claim while the audit names the real key; keys made and revoked in the web UI carry
the admin's principal."""

import json
import random
import string
import subprocess
from pathlib import Path

import anyio

from conftest import BIN, TIMEOUT, server_env
from http_server import cortex, http_session, make_key, serve  # noqa: F401 (serve is a fixture)
from test_ui import Browser, signed_in

# Made at run time, so no scanner of a code host sees a token-shaped string in the source.
TOKEN = "ghp_" + "".join(random.Random(46).choices(string.ascii_letters + string.digits, k=36))
PASSWORD = "Tr0ub4dor&3x"
TEXT = f"The deploy bot pushes with {TOKEN}; the database is postgres://cortex:{PASSWORD}@db.internal/memory"


def in_file(db: str, needle: str) -> bool:
    """Whether a SQLite database's file (and its log) holds the bytes; False on PostgreSQL."""
    if db.startswith("postgres"):
        return False
    return any(p.exists() and needle.encode() in p.read_bytes() for p in (Path(db), Path(db + "-wal")))


def run_cortex(db: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([BIN, *args], env=server_env(db, **env), capture_output=True, text=True, timeout=TIMEOUT)


def assert_gone(db: str):
    for needle in (TOKEN, PASSWORD):
        assert cortex(db, "find", needle, "--mode", "fast", "--json")["hits"] == [], needle
        assert needle not in json.dumps(cortex(db, "audit", "--json")), needle
        assert not in_file(db, needle), f"the database file holds {needle}"


def test_a_ui_edit_carrying_a_secret_is_stored_redacted(db, serve):
    ids = cortex(db, "store", json.dumps({"kind": "section", "data": {"title": "Deploy", "body": "how we deploy"}}))
    item = f"/items/{ids['results'][0]['id']}"
    browser, server = signed_in(db, serve, "curator", "write")
    saved = browser.post(f"{item}/edit", {"csrf": browser.csrf(item), "data.body": TEXT})
    assert saved.status_code == 200, saved.text
    assert TOKEN not in saved.text and PASSWORD not in saved.text
    assert "[redacted:github-pat]" in saved.text and "[redacted:password-in-url]" in saved.text
    assert_gone(db)


def test_import_redacts_and_secrets_scan_finds_and_replaces(db, tmp_path):
    # An `off` store keeps the text as given; its export carries the secrets.
    stored = json.loads(run_cortex(db, "store", json.dumps(
        {"kind": "todo", "content": TEXT, "tags": ["deploy", TOKEN]}), CORTEX_SECRETS="off").stdout)
    held = stored["results"][0]["id"]
    assert cortex(db, "find", PASSWORD, "--mode", "fast", "--json")["hits"], "stored in clear under off"
    export = tmp_path / "memory.jsonl"
    assert run_cortex(db, "export", "--out", str(export)).returncode == 0
    assert TOKEN in export.read_text()

    target = str(tmp_path / "imported.db")
    refused = run_cortex(target, "import", str(export), CORTEX_SECRETS="refuse")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert held in refused.stderr and "`content` holds a secret" in refused.stderr and TOKEN not in refused.stderr
    assert cortex(target, "stats", "--json")["items"] == 0, "a refused import writes nothing"
    imported = cortex(target, "import", str(export))
    assert (imported["imported"], imported["redacted"]) == (1, 1), imported
    assert_gone(target)

    listed = run_cortex(db, "secrets", "scan", "--json")
    assert listed.returncode == 1, "secrets are stored"
    report = json.loads(listed.stdout)
    assert [i["id"] for i in report["items"]] == [held] and TOKEN not in listed.stdout and PASSWORD not in listed.stdout
    assert {(f["field"], f["rule"]) for f in report["items"][0]["found"]} >= {
        ("content", "github-pat"), ("content", "password-in-url"), ("tags[1]", "github-pat")}
    human = run_cortex(db, "secrets", "scan")
    assert f"{held} todo" in human.stdout and "tags[1]: github-pat" in human.stdout and TOKEN not in human.stdout
    assert run_cortex(db, "secrets", "scan", "--org", "globex", "--json").returncode == 0, "another org holds none"

    redacted = run_cortex(db, "secrets", "scan", "--redact")
    assert redacted.returncode == 0 and "1 redacted" in redacted.stdout, redacted.stdout + redacted.stderr
    trail = cortex(db, "audit", "--json", "--item", held)["records"]
    update = next(r for r in trail if r["operation"] == "update")
    assert update["via"] == "cortex secrets scan" and update["hash_before"] != update["hash_after"], update
    assert cortex(db, "audit", "--verify")["ok"] is True
    if not db.startswith("postgres"):
        import sqlite3
        with sqlite3.connect(db) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        with sqlite3.connect(db, isolation_level=None) as conn:
            conn.execute("VACUUM")
    assert_gone(db)
    assert run_cortex(db, "secrets", "scan").returncode == 0


def test_a_forged_actor_is_a_claim_and_ui_key_changes_carry_the_admin(db, serve):
    writer = make_key(db, "writer", "write", "--project", "api")
    cortex(db, "keys", "create", "--name", "globex-admin", "--org", "globex", "--role", "admin")
    server = serve()

    async def body():
        async with http_session(server.url, writer) as w:
            forged = {"kind": "todo", "content": "rotate the certificates",
                      "source": {"actor": "key:globex/globex-admin", "tool": "admin-console"}}
            stored = await w.store(forged)
            assert stored["summary"]["inserted"] == 1, stored
            return stored["results"][0]["id"]

    written = anyio.run(body)
    record = cortex(db, "audit", "--json", "--item", written)["records"][0]
    assert (record["principal"], record["via"]) == ("key:acme/writer", "memory_store"), record
    claimed = {k: v for k, v in record["claimed"].items() if v is not None}
    assert claimed == {"actor": "key:globex/globex-admin", "tool": "admin-console"}, record
    unclaimed = json.dumps({k: v for k, v in record.items() if k != "claimed"})
    assert "globex" not in unclaimed, record

    admin = Browser(server.base)
    admin.sign_in(make_key(db, "boss", "admin"))
    csrf = admin.csrf("/admin")
    assert admin.post("/admin/keys", {"csrf": csrf, "name": "ci-bot", "role": "read", "org": "acme"}).status_code == 200
    assert admin.post("/admin/keys/revoke", {"csrf": csrf, "name": "ci-bot", "confirm": "yes"}).status_code == 200
    assert admin.post("/admin/keys/restore", {"csrf": csrf, "org": "acme", "name": "ci-bot"}).status_code == 303
    records = cortex(db, "audit", "--json")["records"]
    by_ui = [(r["operation"], r["principal"], r["via"]) for r in records
             if r["operation"] in ("key_create", "key_revoke", "key_restore") and "ci-bot" in r["summary"]]
    assert sorted(by_ui) == [("key_create", "key:acme/boss", "web UI"), ("key_restore", "key:acme/boss", "web UI"),
                             ("key_revoke", "key:acme/boss", "web UI")], records
    assert cortex(db, "audit", "--verify")["ok"] is True
