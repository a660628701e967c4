"""The official MCP TypeScript SDK client (tests/e2e/ts/client.mjs) against the real binary on
each backend. The SDK validates every tool result against the tool's outputSchema, so this also
proves what the server sends conforms to what it publishes."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import BIN, server_env

TS = Path(__file__).resolve().parent / "ts"


def test_the_typescript_sdk_client_stores_finds_and_validates_every_output(db):
    if shutil.which("node") is None or not (TS / "node_modules").exists():
        pytest.fail("node and tests/e2e/ts/node_modules are needed: run scripts/test (npm ci --prefix tests/e2e/ts)")
    env = server_env(db, CORTEX_BIN=BIN)
    run = subprocess.run(["node", str(TS / "client.mjs")], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr[-3000:]
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    store, find = seen["tools"]
    assert (store["name"], store["destructive"]) == ("memory_store", True)
    assert (find["name"], find["required"]) == ("memory_find", [])
    assert seen["stored"] == ["inserted", "inserted", "inserted"], "the alias adr is a decision"
    assert seen["brief"] and all(set(keys) <= {"id", "kind", "title", "snippet", "scope_match", "updated_at", "status"}
                                 for keys in seen["brief"])
    assert seen["full"][0]["content"].startswith("Restart the billing worker") and seen["full"][0]["score"] > 0
    assert seen["byIds"] == 3
    assert seen["refused"] == {"isError": True, "code": "empty", "field": "query"}
    assert seen["deleted"] == ["deleted"]
