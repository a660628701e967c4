"""Issue 33: vectors follow the embedder. Items stored while no model was installed have no
vectors; `doctor` says how many and what to do, and the next `cortex serve` with the model embeds
them in the background, without a manual `cortex reindex`, until a paraphrase finds them
densely. Run from outside on the real binary, on each backend."""

import json
import os
import subprocess
import time
from pathlib import Path

import anyio

from conftest import BIN, connect, run, server_env

SESSIONS = "We moved user sessions from Redis to PostgreSQL because running Redis cost more than it saved."
PARAPHRASE = "why did we stop using the in-memory cache for login state"
ITEMS = [
    {"kind": "decision", "data": {"component": "sessions", "status": "accepted", "title": "Sessions in Postgres",
                                  "rationale": SESSIONS}},
    {"kind": "section", "content": "The billing worker charges customers every night at 02:00 UTC."},
    {"kind": "runbook", "data": {"title": "Rotate TLS certificates", "service": "gateway",
                                 "steps": [{"description": "renew with certbot"}]}},
]


def doctor(db, env=None) -> dict:
    out = subprocess.run([BIN, "doctor"], env=server_env(db, **(env or {})), capture_output=True, text=True,
                         timeout=120)
    return json.loads(out.stdout)


def test_items_stored_without_a_model_are_embedded_in_the_background(db, tmp_path):
    no_model = {"CORTEX_MODEL_DIR": str(tmp_path / "no-model-here")}
    stored = {}

    async def store_without_model():
        async with connect(db, env=no_model) as c:
            out = await c.store(*ITEMS)
            assert out["summary"]["inserted"] == len(ITEMS), out
            stored["ids"] = [r["id"] for r in out["results"]]
    run(store_without_model)

    before = doctor(db)["semantic_search"]
    assert f"0 of {len(ITEMS)} items embedded" in before and "warning" in before, before
    assert "cortex reindex" in before, before

    log = tmp_path / "serve.log"

    async def serve_with_model(errlog):
        async with connect(db, env={"CORTEX_LOG": "info"}, errlog=errlog) as c:
            # Bounded: the background embedding of three items takes well under a second.
            deadline = time.monotonic() + 30
            while True:
                found = await c.find(query=PARAPHRASE)
                if found["hits"] and found["hits"][0]["id"] == stored["ids"][0]:
                    break
                assert time.monotonic() < deadline, f"never found densely: {found}"
                await anyio.sleep(0.2)
            assert found["route_used"] == "hybrid", found
            assert not any("partial" in n for n in found.get("notes", [])), found["notes"]
    with open(log, "w") as errlog:
        run(lambda: serve_with_model(errlog))
    text = log.read_text()
    assert f"items={len(ITEMS)}" in next(
        line for line in text.splitlines() if "the items stored without vectors are embedded" in line), text

    after = doctor(db)["semantic_search"]
    assert f"{len(ITEMS)} of {len(ITEMS)} items embedded" in after and "warning" not in after, after


def test_a_model_installed_while_the_server_runs_embeds_what_waits(db, tmp_path):
    """The model appears in CORTEX_MODEL_DIR while `cortex serve` runs: the server picks it up
    (a find tries a missing model again every few seconds) and embeds what was stored before."""
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    installed = Path(server_env(db)["CORTEX_MODEL_DIR"])

    async def body():
        async with connect(db, env={"CORTEX_MODEL_DIR": str(model_dir)}) as c:
            out = await c.store(*ITEMS)
            first = out["results"][0]["id"]
            found = await c.find(query=PARAPHRASE)
            assert found["route_used"] == "lexical", found
            assert any("unavailable" in n for n in found["notes"]), found["notes"]
            for name in os.listdir(installed):
                os.symlink(installed / name, model_dir / name)
            # A functional bound, not a timing: the retry comes within seconds.
            deadline = time.monotonic() + 60
            while True:
                found = await c.find(query=PARAPHRASE)
                if found["route_used"] == "hybrid" and found["hits"] and found["hits"][0]["id"] == first:
                    break
                assert time.monotonic() < deadline, f"never found densely: {found}"
                await anyio.sleep(0.5)
    run(body)
    after = doctor(db)["semantic_search"]
    assert f"{len(ITEMS)} of {len(ITEMS)} items embedded" in after, after
