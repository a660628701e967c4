"""Issue 33: logs an operator can ship. With CORTEX_LOG_FORMAT=json every line the server writes
to stderr is one JSON object; a tool call's line carries its time, level, request id, key, tool,
mode, outcome, duration and item count; an idempotency key, an actor and a token sent in a
request never appear in the log; on stdio, stdout stays pure JSON-RPC. Run from outside on the
real binary, over stdio and HTTP, on each backend."""

import json

from conftest import run
from http_server import http_session, make_key, serve  # noqa: F401 (a fixture)

IDEMPOTENCY_KEY = "idem-5f0c1e-never-logged"
ACTOR = "actor-3b9d7a-never-logged"
ITEM = {"kind": "section", "idempotency_key": IDEMPOTENCY_KEY, "source": {"actor": ACTOR},
        "data": {"title": "Backups", "body": "nightly pangolin snapshot"}}


def parsed(lines: list[str]) -> list[dict]:
    """Every non-empty line as JSON (a line that is not fails the test, naming it)."""
    out = []
    for line in lines:
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                raise AssertionError(f"not a JSON line: {line!r}") from None
    return out


def assert_redacted(lines: list[str], *secrets: str) -> None:
    text = "".join(lines)
    for secret in secrets:
        assert secret not in text, f"{secret!r} appears in the log"


def calls(entries: list[dict], tool: str) -> list[dict]:
    return [e for e in entries if e.get("tool") == tool]


def assert_call_line(entry: dict, key: str, mode: str, items: int) -> None:
    for field in ("timestamp", "level", "request_id", "key", "tool", "mode", "outcome", "duration_ms", "items"):
        assert field in entry, f"{field} missing from {entry}"
    assert entry["key"] == key and entry["mode"] == mode and entry["outcome"] == "ok", entry
    # A call over 200 ms (the first store loads the model) is a warning.
    assert entry["items"] == items and entry["level"] in ("INFO", "WARN"), entry
    assert isinstance(entry["duration_ms"], int), entry


def test_stdio_logs_one_json_object_per_line_and_stdout_stays_json_rpc(spawn):
    server = spawn(env={"CORTEX_LOG_FORMAT": "json", "CORTEX_LOG": "info"})
    server.initialize("2025-11-25")
    server.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                 "params": {"name": "memory_store", "arguments": {"items": [ITEM]}}})
    stored = server.response(2)
    assert stored["result"]["structuredContent"]["summary"]["inserted"] == 1, stored
    server.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                 "params": {"name": "memory_find", "arguments": {"query": "pangolin", "mode": "fast"}}})
    found = server.response(3)
    assert len(found["result"]["structuredContent"]["hits"]) == 1, found
    assert server.stderr_shows(lambda line: '"memory_find"' in line)
    assert server.close() == 0
    for line in server.stdout_lines:
        assert json.loads(line)["jsonrpc"] == "2.0", line
    entries = parsed(server.stderr_lines)
    [store] = calls(entries, "memory_store")
    assert_call_line(store, "local", "store", 1)
    assert store["request_id"] == "2", store
    [find] = calls(entries, "memory_find")
    assert_call_line(find, "local", "fast", 1)
    assert_redacted(server.stderr_lines, IDEMPOTENCY_KEY, ACTOR)


def test_http_access_lines_are_json_with_the_key_name_never_its_token(db, serve):  # noqa: F811
    token = make_key(db, "ci-writer", "write", "--project", "api")
    server = serve(env={"CORTEX_LOG_FORMAT": "json"})

    async def body():
        async with http_session(server.url, token) as c:
            out = await c.store(ITEM)
            assert out["summary"]["inserted"] == 1, out
            found = await c.find(query="pangolin", mode="fast")
            assert len(found["hits"]) == 1, found
    run(body)
    assert server.stop() == 0
    entries = parsed(server.stderr_lines)
    [store] = calls(entries, "memory_store")
    assert_call_line(store, "ci-writer", "store", 1)
    [find] = calls(entries, "memory_find")
    assert_call_line(find, "ci-writer", "fast", 1)
    secret = token.rsplit("_", 1)[-1]
    assert_redacted(server.stderr_lines, token, secret, IDEMPOTENCY_KEY, ACTOR)
