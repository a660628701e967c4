"""The HTTP team server (`cortex serve --http`, issue 18) driven by the official `mcp` client over
Streamable HTTP, and by plain HTTP requests for what a well-behaved client never sends, on each
backend: both protocol eras, concurrent clients, API keys and roles, and every refusal of the
gate with its status, headers and JSON body."""

import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import sqlite3
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared._httpx_utils import create_mcp_http_client

from conftest import BIN, ROOT, TIMEOUT, Client, initialize_at, run, server_env
from embedding_server import MODEL_NAME, EmbeddingServer

MODEL_DIR = Path(os.environ.get("CORTEX_MODEL_DIR") or ROOT / ".cache" / "models" / "all-MiniLM-L6-v2")

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}


class HttpServer:
    """`cortex serve --http 127.0.0.1:0` on the test's database; the port is read from the line
    the server logs when it listens. stderr is kept for assertions about the access log."""

    def __init__(self, db, args=(), env=None, addr="127.0.0.1:0", prefix=()):
        self.db = db
        self.proc = subprocess.Popen(
            [*prefix, BIN, "serve", "--http", addr, *args],
            env=server_env(db, **{"CORTEX_LOG": "info", **(env or {})}),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        self.stderr_lines: list[str] = []
        listening = threading.Event()
        self.base = None

        def drain():
            for line in self.proc.stderr:
                self.stderr_lines.append(line)
                found = re.search(r"at (http://127\.0\.0\.1:\d+)/mcp", line)
                if found and self.base is None:
                    self.base = found.group(1)
                    listening.set()
            listening.set()

        self._drain = threading.Thread(target=drain, daemon=True)
        self._drain.start()
        assert listening.wait(TIMEOUT) and self.base, f"server did not start: {''.join(self.stderr_lines)}"

    @property
    def url(self) -> str:
        return self.base + "/mcp"

    def request(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
        """(status, headers, JSON body or text) of one plain HTTP request."""
        req = urllib.request.Request(self.base + path, data=body, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:
                status, head, raw = resp.status, resp.headers, resp.read()
        except urllib.error.HTTPError as e:
            status, head, raw = e.code, e.headers, e.read()
        text = raw.decode()
        try:
            return status, head, json.loads(text)
        except json.JSONDecodeError:
            return status, head, text

    def post_mcp(self, message: dict, headers: dict | None = None):
        return self.request("POST", "/mcp", json.dumps(message).encode(), {
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **(headers or {})})

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=TIMEOUT)
        self._drain.join(timeout=TIMEOUT)
        return code


@pytest.fixture
def serve(db):
    """Starts HTTP servers on the test's database (`serve(args=..., env=...)`); stopped at the end."""
    servers: list[HttpServer] = []

    def start(args=(), env=None, addr="127.0.0.1:0", prefix=()) -> HttpServer:
        """`prefix` runs the server under another command (`prlimit --nofile=512`)."""
        server = HttpServer(db, args, env, addr, prefix)
        servers.append(server)
        return server

    yield start
    for server in servers:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait(timeout=TIMEOUT)


def cortex(db, *args: str) -> dict:
    """Runs a `cortex` command on the test's database and returns its JSON output."""
    out = subprocess.run([BIN, *args], env=server_env(db), capture_output=True, text=True, timeout=TIMEOUT)
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout)


def make_key(db, name: str, role: str, *extra: str) -> str:
    return cortex(db, "keys", "create", "--name", name, "--org", "acme", "--role", role, *extra)["token"]


@contextlib.asynccontextmanager
async def http_session(url: str, token: str | None = None, era: str = "handshake", headers: dict | None = None):
    """An MCP session over Streamable HTTP: `handshake` runs initialize (an `Mcp-Session-Id`
    session, ended by DELETE when it closes), `modern` runs server/discover (2026-07-28)."""
    all_headers = dict(headers or {})
    if token:
        all_headers["Authorization"] = f"Bearer {token}"
    async with create_mcp_http_client(headers=all_headers) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=TIMEOUT) as session:
                with anyio.fail_after(TIMEOUT):
                    if era == "modern":
                        await session.discover()
                    else:
                        await initialize_at(session, "2025-06-18")
                yield Client(session)


def error_code(structured: dict) -> str:
    return structured["error"]["code"]


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
            is_error, out = await r.call("memory_store", {"items": [{"kind": "todo", "content": "nope"}]})
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
    trail = cortex(db, "audit", "--item", written)["records"]
    assert [r["operation"] for r in trail] == ["insert", "blocked"], "the refused delete is on the item's trail"
    assert "reader" in trail[1]["summary"] and "role read" in trail[1]["summary"]
    assert cortex(db, "find", "write key", "--mode", "fast", "--json")["hits"], "and nothing was deleted"
    log = "".join(server.stderr_lines)
    assert re.search(r'key="reader" tool="memory_store" outcome="forbidden"', log), log
    # Both refused stores are in the audit trail as blocked attempts by that key (the new item
    # as the item it would have been, the delete on the item it named), and the trail still
    # verifies.
    records = cortex(db, "audit", "--limit", "100")["records"]
    blocked = [r for r in records if r["operation"] == "blocked"]
    assert len(blocked) == 2, records
    assert all(b["actor"] == "key:reader" and "role write" in b["summary"] for b in blocked), blocked
    assert blocked[0]["kind"] == "todo" and blocked[0]["item_id"] != written, blocked
    assert blocked[1]["item_id"] == written, blocked
    assert cortex(db, "audit", "--verify")["ok"] is True


def audit_hash(prev, *fields):
    """The audit chain's hash (crates/store/src/audit_chain.rs), which the SQLite triggers call
    as `cortex_audit_hash`: a writer other than cortex must register it to write at all."""
    if prev is None:
        return None
    h = hashlib.sha256(prev.encode() + b"\ncortex-audit-v1")
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
            conn.create_function("cortex_audit_hash", 21, audit_hash, deterministic=True)
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


@contextlib.contextmanager
def held_embedder():
    """An OpenAI-compatible embedder that holds any text with the word `slowpoke` until
    released: a call that takes as long as the test wants, without timing anything."""
    embeddings = EmbeddingServer(MODEL_DIR, hold="slowpoke")
    env = {"CORTEX_EMBEDDER": "openai", "CORTEX_OPENAI_BASE_URL": embeddings.base_url,
           "CORTEX_OPENAI_MODEL": MODEL_NAME}
    try:
        yield embeddings, env
    finally:
        embeddings.release()
        embeddings.close()


def wait_for(condition, what: str):
    """Polls `condition` (an event seen in the server's log) for at most TIMEOUT seconds."""
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        assert time.monotonic() < deadline, f"no {what} within {TIMEOUT}s"
        time.sleep(0.01)


def test_a_call_over_the_time_limit_is_answered_with_timeout(db, serve):
    with held_embedder() as (embeddings, env):
        server = serve(env={**env, "CORTEX_HTTP_CALL_TIMEOUT_MS": "300"})

        async def body():
            async with http_session(server.url) as c:
                is_error, out = await c.call("memory_store", {"items": [{"kind": "todo", "content": "slowpoke task"}]})
                assert is_error and error_code(out) == "timeout", out
                assert "300 ms" in out["error"]["message"]
                assert embeddings.held.is_set()
                found = await c.find(query="other", mode="fast")
                assert found["hits"] == [], "the session goes on after a timeout"

        run(body)
    assert re.search(r'tool="memory_store" outcome="timeout"', "".join(server.stderr_lines))


def test_a_key_at_its_cap_of_calls_gets_429_until_one_is_answered(db, serve):
    with held_embedder() as (embeddings, env):
        server = serve(env={**env, "CORTEX_HTTP_MAX_CONCURRENT": "1"})

        async def body():
            async with http_session(server.url) as c:
                async with anyio.create_task_group() as tasks:
                    result = {}

                    async def held_store():
                        result["out"] = await c.store({"kind": "todo", "content": "slowpoke task"})

                    tasks.start_soon(held_store)
                    assert await anyio.to_thread.run_sync(embeddings.held.wait, TIMEOUT)
                    status, head, refused = await anyio.to_thread.run_sync(server.post_mcp, INIT)
                    assert (status, refused["error"]["code"]) == (429, "too_many_calls"), refused
                    assert int(head["Retry-After"]) >= 1
                    embeddings.release()
                assert result["out"]["summary"]["inserted"] == 1
                # The answer was sent: the key's place is free again.
                status, _, _ = await anyio.to_thread.run_sync(server.post_mcp, INIT)
                assert status == 200

        run(body)


def test_sigterm_lets_a_call_in_flight_finish_then_exits_0(db, serve):
    with held_embedder() as (embeddings, env):
        server = serve(env=env)

        async def body():
            async with http_session(server.url) as c:
                # The client checks results against the tools' output schemas, which it lists
                # once: before the server stops taking requests.
                await c.session.list_tools()
                async with anyio.create_task_group() as tasks:
                    result = {}

                    async def held_store():
                        result["out"] = await c.store({"kind": "todo", "content": "slowpoke task"})

                    tasks.start_soon(held_store)
                    assert await anyio.to_thread.run_sync(embeddings.held.wait, TIMEOUT)
                    server.proc.send_signal(signal.SIGTERM)
                    await anyio.to_thread.run_sync(
                        wait_for, lambda: "stopping: no new connections" in "".join(server.stderr_lines), "stop")
                    with pytest.raises(OSError):
                        urllib.request.urlopen(server.base + "/health", timeout=TIMEOUT)
                    embeddings.release()
                assert result["out"]["summary"]["inserted"] == 1

        run(body)
        assert server.proc.wait(timeout=TIMEOUT) == 0
    assert cortex(db, "stats")["items"] == 1, "the call in flight was written"


def test_the_typescript_sdk_http_client_stores_finds_and_is_refused_by_role(db, serve):
    ts = Path(__file__).resolve().parent / "ts"
    if shutil.which("node") is None or not (ts / "node_modules").exists():
        pytest.fail("node and tests/e2e/ts/node_modules are needed: run scripts/test (npm ci --prefix tests/e2e/ts)")
    env = {**os.environ, "CORTEX_WRITE_TOKEN": make_key(db, "ts-writer", "write", "--project", "api"),
           "CORTEX_READ_TOKEN": make_key(db, "ts-reader", "read", "--project", "api")}
    server = serve()
    env["CORTEX_URL"] = server.url
    out = subprocess.run(["node", str(ts / "http_client.mjs")], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen == {"sessionId": True, "stored": ["inserted"], "found": 1, "readerFound": 1,
                    "refused": {"isError": True, "code": "forbidden_role"}}, seen
    wait_for(lambda: re.search(r'method=DELETE path="/mcp" key="ts-writer" .*status=20[02]', "".join(server.stderr_lines)),
             "the log line of the session's DELETE")
