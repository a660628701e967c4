"""Embedders end to end, on both backends: the OpenAI-compatible embedder against a real
embeddings server, a memory refused by another embedder until `cortex reindex`, and reindex
keeping every item as it was (times, audit trail) while dense search follows the new model."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import BIN, ROOT, connect, run, server_env
from embedding_server import MODEL_NAME, EmbeddingServer

MODEL_DIR = Path(os.environ.get("CORTEX_MODEL_DIR") or ROOT / ".cache" / "models" / "all-MiniLM-L6-v2")


@pytest.fixture(scope="module")
def embeddings():
    server = EmbeddingServer(MODEL_DIR)
    yield server
    server.close()


def openai_env(server: EmbeddingServer) -> dict:
    return {"CORTEX_EMBEDDER": "openai", "CORTEX_OPENAI_BASE_URL": server.base_url,
            "CORTEX_OPENAI_MODEL": MODEL_NAME}


def cli(db, *args, env=None):
    return subprocess.run([BIN, *args], env=server_env(db, **(env or {})), capture_output=True, text=True,
                          timeout=300)


ITEMS = [
    {"kind": "decision", "data": {"component": "sessions", "status": "accepted", "title": "Sessions live in Postgres",
                                  "rationale": "Redis was one more moving part to operate for little gain"}},
    {"kind": "section", "data": {"title": "Rotate the TLS certificates",
                                 "body": "Renew with certbot renew, then reload nginx."}},
]


def test_switching_embedders_is_refused_until_reindex_then_dense_search_uses_the_new_model(db, embeddings):
    async def store_locally():
        async with connect(db) as c:
            out = await c.store(*ITEMS)
            return [r["id"] for r in out["results"]]
    ids = run_value(store_locally)
    remote = openai_env(embeddings)

    refused = cli(db, "find", "sessions", env=remote)
    assert refused.returncode != 0
    assert "cortex reindex" in refused.stderr and "openai:" + MODEL_NAME in refused.stderr, refused.stderr
    doctor = json.loads(cli(db, "doctor", env=remote).stdout)
    assert doctor["semantic_search"].startswith("refused"), doctor

    before = json.loads(cli(db, "audit", "--json").stdout)["records"]
    reindex = cli(db, "reindex", env=remote)
    assert reindex.returncode == 0, reindex.stderr
    report = json.loads(reindex.stdout)
    assert report["model"] == f"openai:{MODEL_NAME}:384" and report["items"] == len(ITEMS)
    assert json.loads(cli(db, "audit", "--json").stdout)["records"] == before, "a new embedding is not a change"

    async def find_with_the_new_model():
        async with connect(db, env=remote) as c:
            requests = embeddings.requests
            found = await c.find(query="why did we drop redis for sessions?")
            assert found["route_used"] == "hybrid", found
            assert found["hits"][0]["id"] == ids[0]
            assert embeddings.requests > requests, "the query was embedded by the server"
            stored = await c.store({"kind": "todo", "content": "renew the staging certificate"})
            assert stored["results"][0]["status"] == "inserted"
            again = await c.find(ids=[ids[0]])
            return again["hits"][0]["updated_at"]
    updated_at = run_value(find_with_the_new_model)
    doctor = json.loads(cli(db, "doctor", env=remote).stdout)
    assert doctor["semantic_search"].startswith(f"enabled: openai:{MODEL_NAME} (384-d), 3 vectors"), doctor
    # The local model made these vectors' twins: going back needs a reindex too, nothing is lost.
    assert cli(db, "find", "sessions").returncode != 0
    assert cli(db, "reindex").returncode == 0
    found = json.loads(cli(db, "find", "why did we drop redis for sessions", "--json").stdout)
    assert found["hits"][0]["id"] == ids[0] and found["hits"][0]["updated_at"] == updated_at


def test_an_unreachable_embeddings_server_leaves_search_lexical_with_a_note(db, embeddings):
    dead = {"CORTEX_EMBEDDER": "openai", "CORTEX_OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
            "CORTEX_OPENAI_MODEL": MODEL_NAME}

    async def body():
        async with connect(db, env=dead) as c:
            out = await c.store(ITEMS[0])
            assert out["results"][0]["status"] == "inserted", "storing never waits for vectors"
            found = await c.find(query="sessions postgres")
            assert found["route_used"] == "lexical" and found["hits"]
            assert any("cannot reach" in n for n in found["notes"]), found["notes"]
    run(body)


def run_value(fn):
    """Runs an async function and returns its value."""
    box = {}

    async def wrapper():
        box["value"] = await fn()
    run(wrapper)
    return box["value"]
