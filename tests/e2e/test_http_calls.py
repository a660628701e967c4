"""The HTTP team server's calls in flight: a call over the time limit answered with `timeout`,
a key at its cap of calls refused until one is answered, SIGTERM letting a call finish, and the
TypeScript SDK's HTTP client."""

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import anyio
import pytest

from conftest import ROOT, TIMEOUT, run
from embedding_server import MODEL_NAME, EmbeddingServer
from http_server import INIT, cortex, error_code, http_session, make_key, serve  # noqa: F401 (serve is a fixture)

MODEL_DIR = Path(os.environ.get("CORTEX_MODEL_DIR") or ROOT / ".cache" / "models" / "all-MiniLM-L6-v2")


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


async def while_a_store_is_held(c, embeddings, meanwhile) -> dict:
    """Stores a todo the embedder holds, runs `meanwhile` once it is held, then releases it:
    returns the store's answer."""
    result = {}
    async with anyio.create_task_group() as tasks:

        async def held_store():
            result["out"] = await c.store({"kind": "todo", "content": "slowpoke task"})

        tasks.start_soon(held_store)
        assert await anyio.to_thread.run_sync(embeddings.held.wait, TIMEOUT)
        await meanwhile()
        embeddings.release()
    return result["out"]


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
            async def refused_at_the_cap():
                status, head, refused = await anyio.to_thread.run_sync(server.post_mcp, INIT)
                assert (status, refused["error"]["code"]) == (429, "too_many_calls"), refused
                assert int(head["Retry-After"]) >= 1

            async with http_session(server.url) as c:
                stored = await while_a_store_is_held(c, embeddings, refused_at_the_cap)
                assert stored["summary"]["inserted"] == 1
                # The answer was sent: the key's place is free again.
                status, _, _ = await anyio.to_thread.run_sync(server.post_mcp, INIT)
                assert status == 200

        run(body)


def test_sigterm_lets_a_call_in_flight_finish_then_exits_0(db, serve):
    with held_embedder() as (embeddings, env):
        server = serve(env=env)

        async def stopped_taking_connections():
            server.proc.send_signal(signal.SIGTERM)
            await anyio.to_thread.run_sync(
                wait_for, lambda: "stopping: no new connections" in "".join(server.stderr_lines), "stop")
            with pytest.raises(OSError):
                urllib.request.urlopen(server.base + "/health", timeout=TIMEOUT)

        async def body():
            async with http_session(server.url) as c:
                # The client checks results against the tools' output schemas, which it lists
                # once: before the server stops taking requests.
                await c.session.list_tools()
                stored = await while_a_store_is_held(c, embeddings, stopped_taking_connections)
                assert stored["summary"]["inserted"] == 1

        run(body)
        assert server.proc.wait(timeout=TIMEOUT) == 0
    assert cortex(db, "stats", "--json")["items"] == 1, "the call in flight was written"


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
