"""One slow call never stalls the others (issue 15, item 13): while the embedder holds one
find's query on purpose, other calls of the same MCP session — a lexical find, a find whose
query is embedded at once, a store — are answered; then the held find completes. Ordering is
shown by events, not by timing. And a find under a tiny deadline says so in `notes`."""

import os
from pathlib import Path

import anyio

from conftest import ROOT, TIMEOUT, connect, run
from embedding_server import MODEL_NAME, EmbeddingServer

MODEL_DIR = Path(os.environ.get("CORTEX_MODEL_DIR") or ROOT / ".cache" / "models" / "all-MiniLM-L6-v2")


def openai_env(server: EmbeddingServer) -> dict:
    return {"CORTEX_EMBEDDER": "openai", "CORTEX_OPENAI_BASE_URL": server.base_url,
            "CORTEX_OPENAI_MODEL": MODEL_NAME}


def test_a_find_held_by_a_slow_embedder_stalls_no_other_call_of_the_session(db):
    embeddings = EmbeddingServer(MODEL_DIR, hold="slowpoke")
    try:
        async def body():
            async with connect(db, env=openai_env(embeddings)) as c:
                await c.store({"kind": "section", "content": "Rotate the TLS certificates with certbot"},
                              {"kind": "section", "content": "Sessions live in Postgres, not Redis"})
                order = []
                held_find = {}

                async def slow():
                    held_find["out"] = await c.find(query="slowpoke certificates")
                    order.append("held find")

                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(slow)
                    # The held find's query has reached the embedder and waits there.
                    assert await anyio.to_thread.run_sync(embeddings.held.wait, TIMEOUT)
                    lexical = await c.find(query="certbot", mode="fast")
                    order.append("lexical find")
                    embedded = await c.find(query="where do sessions live")
                    order.append("embedded find")
                    stored = await c.store({"kind": "todo", "content": "renew before expiry"})
                    order.append("store")
                    embeddings.release()
                assert order == ["lexical find", "embedded find", "store", "held find"], order
                assert lexical["hits"] and embedded["route_used"] == "hybrid" and embedded["hits"]
                assert stored["summary"]["inserted"] == 1
                assert held_find["out"]["hits"], held_find
        run(body)
    finally:
        embeddings.close()


def test_a_find_past_its_deadline_answers_lexically_and_says_so(db):
    async def body():
        async with connect(db, env={"CORTEX_FIND_DEADLINE_MS": "0"}) as c:
            await c.store({"kind": "section", "content": "Rotate the TLS certificates with certbot"})
            found = await c.find(query="certbot")
            assert found["route_used"] == "lexical" and len(found["hits"]) == 1
            assert any("find deadline" in note and "semantic search did not finish" in note
                       for note in found["notes"]), found["notes"]
    run(body)
