"""The HTTP team server (`cortex serve --http`) driven by the official `mcp` client over
Streamable HTTP, and by plain HTTP requests for what a well-behaved client never sends, on each
backend: both protocol eras, concurrent clients, API keys and roles, and every refusal of the
gate with its status, headers and JSON body. Time limits, caps and shutdown with calls in
flight: test_http_calls.py."""

import contextlib
import functools
import hashlib
import json
import re
import secrets
import sqlite3
import time

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from conftest import run
from http_server import INIT, cortex, error_code, http_session, make_key, serve  # noqa: F401 (serve is a fixture)

def test_a_session_stores_and_finds_and_ends_with_delete(db, serve):
    server = serve()

    async def body():
        async with http_session(server.url) as c:
            tools = await c.session.list_tools()
            assert sorted(t.name for t in tools.tools) == ["memory_find", "memory_store"]
            stored = await c.store({"kind": "decision", "data": {
                "component": "server", "status": "accepted", "title": "Serve the team over HTTP",
                "rationale": "one server, many agents"}})
            assert stored["summary"]["inserted"] == 1
            found = await c.find(query="team HTTP", mode="fast")
            assert [h["id"] for h in found["hits"]] == [stored["results"][0]["id"]]
            briefing = await c.session.read_resource("cortex://context")
            assert "Serve the team over HTTP" in briefing.contents[0].text

    run(body)
    assert server.stop() == 0
    log = "".join(server.stderr_lines)
    assert "no API keys exist: serving without authentication" in log
    assert re.search(r'method=DELETE path="/mcp" key="local" .*status=202', log), "the client ended its session"
    assert re.search(r'key="local" tool="memory_store" outcome="ok" status=200', log), log


def test_the_local_user_is_not_throttled_and_pages_of_the_server_itself_pass_the_origin_check(db, serve):
    """A keyless loopback server serves one user: many sessions opened at once (the MCP
    conformance suite opens dozens in a second) are all answered; a page served from the
    server's own origin is no other site, while another origin is still refused."""
    server = serve()
    statuses = [server.post_mcp(INIT, {})[0] for _ in range(120)]
    assert statuses == [200] * 120, statuses
    port = server.base.rsplit(":", 1)[1]
    for origin in (server.base, f"http://localhost:{port}"):
        status, _, body = server.post_mcp(INIT, {"Origin": origin})
        assert status == 200, (origin, body)
    status, _, body = server.post_mcp(INIT, {"Origin": "http://127.0.0.1:1"})
    assert (status, body["error"]["code"]) == (403, "forbidden_origin")


def test_the_stateless_era_is_served_without_a_session(db, serve):
    server = serve()

    async def body():
        async with http_session(server.url, era="modern") as c:
            stored = await c.store({"kind": "todo", "content": "stateless requests work"})
            assert stored["summary"]["inserted"] == 1
            found = await c.find(query="stateless", mode="fast")
            assert len(found["hits"]) == 1

    run(body)
    # No session was made: every answer came on its own request.
    assert "create new session" not in "".join(server.stderr_lines)


def test_concurrent_clients_each_get_their_own_answers(db, serve):
    server = serve()
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
    clients = len(words)

    async def one(i: int, results: dict):
        async with http_session(server.url) as c:
            await c.store({"kind": "todo", "content": f"a task for the {words[i]} client"})
            found = await c.find(query=words[i], mode="fast")
            results[i] = [h["snippet"] for h in found["hits"]]

    async def body():
        results: dict = {}
        async with anyio.create_task_group() as tasks:
            for i in range(clients):
                tasks.start_soon(one, i, results)
        assert sorted(results) == list(range(clients))
        for i, snippets in results.items():
            assert len(snippets) == 1 and words[i] in snippets[0], (i, snippets)

    run(body)


def test_roles_a_read_key_finds_but_may_not_store(db, serve):
    writer = make_key(db, "writer", "write", "--project", "api")
    reader = make_key(db, "reader", "read", "--project", "api")
    server = serve()

    async def body():
        async with http_session(server.url, writer) as w:
            stored = await w.store({"kind": "todo", "content": "written with a write key"})
            assert stored["summary"]["inserted"] == 1
        async with http_session(server.url, reader) as r:
            found = await r.find(query="write key", mode="fast")
            assert len(found["hits"]) == 1
            # The item claims to come from the writer: a claim, which names no principal.
            forged = {"kind": "todo", "content": "nope", "source": {"actor": "key:acme/writer", "tool": "forged"}}
            is_error, out = await r.call("memory_store", {"items": [forged]})
            assert is_error and error_code(out) == "forbidden_role"
            assert "role write" in out["error"]["message"] and "reader" in out["error"]["message"]
            again = await r.find(query="nope", mode="fast")
            assert again["hits"] == [], "the refused store wrote nothing"
            written = found["hits"][0]["id"]
            is_error, out = await r.call("memory_store", {"items": [{"operation": "delete", "id": written}]})
            assert is_error and error_code(out) == "forbidden_role"
            # A name that is not exactly a tool's is no tool at all: refused before any role
            # question, so it cannot reach a write by falling through to a reader's default.
            for name in ["Memory_Store", "memory_store ", "memory_delete", "memory_store\u0000"]:
                with pytest.raises(MCPError) as refused:
                    await r.session.call_tool(name, {"items": [{"kind": "todo", "content": "sneaked in"}]})
                assert "unknown tool" in str(refused.value) and "memory_store" in str(refused.value), name
            assert (await r.find(query="sneaked", mode="fast"))["hits"] == [], "no name variant wrote"
            return written

    written = anyio.run(body)
    trail = cortex(db, "audit", "--json", "--item", written)["records"]
    assert [r["operation"] for r in trail] == ["insert", "blocked"], "the refused delete is on the item's trail"
    assert "reader" in trail[1]["summary"] and "role read" in trail[1]["summary"]
    assert cortex(db, "find", "write key", "--mode", "fast", "--json")["hits"], "and nothing was deleted"
    log = "".join(server.stderr_lines)
    assert re.search(r'key="reader" tool="memory_store" outcome="forbidden"', log), log
    # Both refused stores are in the audit trail as blocked attempts by that key (the new item
    # as the item it would have been, the delete on the item it named), and the trail still
    # verifies.
    records = cortex(db, "audit", "--json")["records"]
    blocked = [r for r in records if r["operation"] == "blocked"]
    assert len(blocked) == 2, records
    # Each is by the key presented, through the tool it called; the forged source is at most
    # what the client claimed (under `claimed`), never who made the change.
    assert all(b["principal"] == "key:acme/reader" and b["via"] == "memory_store" for b in blocked), blocked
    assert all("role write" in b["summary"] and "actor" not in b for b in blocked), blocked
    for b in blocked:
        unclaimed = json.dumps({field: value for field, value in b.items() if field != "claimed"})
        assert "key:acme/writer" not in unclaimed and "forged" not in unclaimed, b
    assert blocked[0]["kind"] == "todo" and blocked[0]["item_id"] != written, blocked
    assert blocked[1]["item_id"] == written, blocked
    assert cortex(db, "audit", "--verify")["ok"] is True


def audit_hash(version: int, prev, *fields):
    """The audit chain's hash (crates/store/src/audit_chain.rs), which the SQLite triggers call
    as `cortex_audit_hash` (canonical form version 1, 20 fields) and `cortex_audit_hash_v2`
    (version 2: those fields, then principal and via): a writer other than cortex must register
    them to write at all."""
    if prev is None:
        return None
    h = hashlib.sha256(prev.encode() + f"\ncortex-audit-v{version}".encode())
    for f in fields:
        value = None if f is None else str(f).encode()
        h.update(b"\n-" if value is None else b"\n" + str(len(value)).encode() + b":" + value)
    return h.hexdigest()


def insert_expired_key(db, name: str) -> str:
    """A key whose expiry has passed, written straight into the table (`cortex keys create`
    refuses a past date), audited like any insert: returns its token."""
    lookup, secret = secrets.token_hex(8), secrets.token_hex(32)
    row = (name, lookup, hashlib.sha256(secret.encode()).hexdigest(), "acme", "read", 1, 2)
    sql = "INSERT INTO api_keys (name, lookup, secret_hash, org, role, created_at, expires_at) VALUES "
    if str(db).startswith("postgres"):
        import psycopg

        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute(sql + "(%s, %s, %s, %s, %s, %s, %s)", row)
    else:
        with contextlib.closing(sqlite3.connect(db)) as conn:
            conn.create_function("cortex_audit_hash", 21, functools.partial(audit_hash, 1), deterministic=True)
            conn.create_function("cortex_audit_hash_v2", 23, functools.partial(audit_hash, 2), deterministic=True)
            # The triggers stamp records with unixepoch('subsec') (SQLite 3.42); Python's own
            # SQLite may be older.
            conn.create_function("unixepoch", 1, lambda _: time.time())
            conn.execute(sql + "(?, ?, ?, ?, ?, ?, ?)", row)
            conn.commit()
    return f"cortex_{lookup}_{secret}"


def test_refusals_before_mcp_say_why_with_their_status(db, serve):
    live = make_key(db, "live", "write")
    revoked = make_key(db, "gone", "write")
    cortex(db, "keys", "revoke", "gone")
    server = serve(env={"CORTEX_HTTP_MAX_BODY_BYTES": "4096"})

    def unauthorized(headers: dict, code: str):
        status, head, body = server.post_mcp(INIT, headers)
        assert status == 401, (status, body)
        assert head["WWW-Authenticate"].startswith("Bearer")
        assert body["error"]["code"] == code, body
        assert body["error"]["message"] and body["error"]["human_hint"]
        assert "live" not in json.dumps(body), "a refusal says nothing of other keys"

    unauthorized({}, "missing_key")
    unauthorized({"Authorization": "Basic dXNlcjpwYXNz"}, "malformed_key")
    unauthorized({"Authorization": "Bearer not-a-cortex-token"}, "malformed_key")
    unauthorized({"Authorization": f"Bearer cortex_{'0' * 16}_{'0' * 64}"}, "unknown_key")
    unauthorized({"Authorization": f"Bearer {live[:-1]}{'1' if live[-1] == '0' else '0'}"}, "unknown_key")
    unauthorized({"Authorization": f"Bearer {revoked}"}, "revoked_key")

    ok = {"Authorization": f"Bearer {live}"}
    status, head, _ = server.post_mcp(INIT, ok)
    assert status == 200 and head["Mcp-Session-Id"]

    status, _, body = server.post_mcp(INIT, {**ok, "Origin": "http://evil.example"})
    assert (status, body["error"]["code"]) == (403, "forbidden_origin")
    assert "--allow-origin" in body["error"]["human_hint"]

    big = {**INIT, "params": {**INIT["params"], "clientInfo": {"name": "x" * 8000, "version": "1"}}}
    status, _, body = server.post_mcp(big, ok)
    assert (status, body["error"]["code"]) == (413, "too_large")
    assert "4096" in body["error"]["message"]

    status, _, body = server.post_mcp(INIT, {**ok, "X-Cortex-Project": "x" * 200})
    assert (status, body["error"]["code"]) == (400, "invalid_header")

    status, _, health = server.request("GET", "/health")
    assert (status, health) == (200, {"status": "ok"})
    status, _, ready = server.request("GET", "/ready")
    assert status == 200 and ready["ready"] is True and ready["schema_version"] > 0
    assert ready["embedder"]["state"] in ("none", "not_loaded", "ready", "unavailable")

    # From this machine, /metrics needs no key; a write key may not read it from anywhere.
    status, head, text = server.request("GET", "/metrics")
    assert status == 200 and head["Content-Type"].startswith("text/plain")
    assert 'cortex_http_refused_total{reason="missing_key"} 1' in text
    assert 'cortex_http_refused_total{reason="too_large"} 1' in text
    assert re.search(r"^cortex_process_resident_memory_bytes [1-9]\d+$", text, re.M)
    assert re.search(r"^cortex_vectors_indexed \d+$", text, re.M), text
    status, _, body = server.request("GET", "/metrics", headers=ok)
    assert (status, body["error"]["code"]) == (403, "forbidden_role")


def test_an_expired_key_is_refused_as_expired(db, serve):
    cortex(db, "migrate")
    expired = insert_expired_key(db, "old")
    assert cortex(db, "audit", "--verify")["ok"], "the outside insert is on the audit chain"
    # Nothing established who wrote it: the record names no principal rather than a guess.
    [record] = [r for r in cortex(db, "audit", "--json")["records"] if r["operation"] == "key_create"]
    assert (record["principal"], record["via"]) == (None, None) and "old" in record["summary"], record
    assert cortex(db, "keys", "list")["keys"][0]["state"] == "expired"
    server = serve()
    status, head, body = server.post_mcp(INIT, {"Authorization": f"Bearer {expired}"})
    assert (status, body["error"]["code"]) == (401, "expired_key")
    assert head["WWW-Authenticate"].startswith("Bearer")


def test_a_key_over_its_rate_gets_429_with_retry_after(db, serve):
    slow = make_key(db, "slow", "write", "--rate", "1/min")
    server = serve()
    headers = {"Authorization": f"Bearer {slow}"}
    status, _, _ = server.post_mcp(INIT, headers)
    assert status == 200
    status, head, body = server.post_mcp(INIT, headers)
    assert (status, body["error"]["code"]) == (429, "rate_limited")
    assert 1 <= int(head["Retry-After"]) <= 60
    assert head["Connection"] == "close", "the connection carries no other request"
    assert "slow" in body["error"]["message"]
    # Another key has its own bucket.
    other = make_key(db, "other", "write")
    status, _, _ = server.post_mcp(INIT, {"Authorization": f"Bearer {other}"})
    assert status == 200


def test_a_header_names_the_project_within_the_keys_bound(db, serve):
    key = make_key(db, "two", "write", "--project", "api", "--project", "web")
    server = serve()
    status, _, body = server.post_mcp(INIT, {"Authorization": f"Bearer {key}", "X-Cortex-Project": "ops"})
    assert (status, body["error"]["code"]) == (403, "forbidden_scope")

    async def body_fn():
        async with http_session(server.url, key, headers={"X-Cortex-Project": "web"}) as c:
            stored = await c.store({"kind": "todo", "content": "lands in web"})
            assert stored["summary"]["inserted"] == 1
        found = cortex(db, "find", "lands", "--org", "acme", "--project", "web", "--json")
        assert len(found["hits"]) == 1

    run(body_fn)


def test_an_org_wide_key_is_told_which_header_names_the_project_and_is_briefed_on_its_org(db, serve):
    """Issue 33: a key bound to an org but no project, storing without `X-Cortex-Project`, is
    told exactly which header (or scope field) to send; its briefing names the org, not `acme/?`."""
    key = make_key(db, "org-wide", "write")
    server = serve()

    async def body():
        async with http_session(server.url, key) as c:
            stored = await c.store({"kind": "todo", "content": "where does this go"})
            assert stored["summary"]["validation_error"] == 1, stored
            error = stored["results"][0]["error"]
            assert (error["code"], error["field"]) == ("missing_field", "items[0].scope.project")
            assert "every project of org `acme`" in error["message"], error
            assert "X-Cortex-Project: <project>" in error["human_hint"], error
            assert '"scope": {"project": "<project>"}' in error["human_hint"], error
            briefing = (await c.session.read_resource("cortex://context")).contents[0].text
            assert briefing.startswith("# Project memory: org acme @ main (no project chosen"), briefing
            assert "X-Cortex-Project" in briefing and "/?" not in briefing, briefing
            # The field the hint names works, and so does the header.
            stored = await c.store({"kind": "todo", "content": "named in the item", "scope": {"project": "api"}})
            assert stored["summary"]["inserted"] == 1, stored
        async with http_session(server.url, key, headers={"X-Cortex-Project": "api"}) as c:
            stored = await c.store({"kind": "todo", "content": "named by the header"})
            assert stored["summary"]["inserted"] == 1, stored
            briefing = (await c.session.read_resource("cortex://context")).contents[0].text
            assert briefing.startswith("# Project memory: acme/api @ main"), briefing

    run(body)


def test_sigterm_stops_the_server_with_exit_0(db, serve):
    server = serve()
    status, _, _ = server.request("GET", "/health")
    assert status == 200
    assert server.stop() == 0
    assert "stopping: no new connections" in "".join(server.stderr_lines)
